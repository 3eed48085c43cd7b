# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Whether a cached body is the object's current version
(:mod:`swift_mass.proxy.methods.cache`, "Generations" and "Without
generations"): the validity a body is fetched, stored and served under,
read from the object's generation (:mod:`swift_mass.generations`) while
generations can be trusted; without them, a HEAD of every primary shows
whether the cached version is the current one.
"""
from swift_mass.proxy.methods import base

# Request headers that make an answer other than the whole object.
CONDITIONS = ('HTTP_RANGE', 'HTTP_IF_MATCH', 'HTTP_IF_NONE_MATCH',
              'HTTP_IF_MODIFIED_SINCE', 'HTTP_IF_UNMODIFIED_SINCE')


class ValidityCheck(object):
    """The cache's check of an object's version: its validity now
    (:meth:`read`, :meth:`current`), whether no write overtook a body
    (:meth:`still_current`) and, without generations, whether the backend
    shows the cached version (:meth:`backend_agrees`).

    ``count(env, result)`` counts ``cache.<result>``.
    """

    def __init__(self, app, settings, logger, generations, count,
                 devices=None, replicas=None):
        self.app = app  # the proxy app: validation reads
        self.settings = settings
        self.logger = logger
        self.generations = generations
        self.count = count
        #: ``devices()``: every device of the object rings, each of which
        #: needs an object server that bumps generations (a benchmark or a
        #: test sets its own here)
        self.devices = devices
        #: what an object's primaries hold (validation without
        #: generations: :meth:`backend_agrees`)
        self.replicas = replicas

    def read(self, env, key):
        """``(validity, write_timestamp)`` of the object ``env`` reads
        (``key`` its :func:`~swift_mass.generations.object_key`) now, as
        :meth:`~swift_mass.generations.reader.GenerationReader.read` tells;
        ``(None, None)`` without generations, or while a device of the
        object rings has no object server that bumps them."""
        if self.generations is None:
            return None, None
        self.generations.start()
        if self.devices is not None and \
                self.generations.uncovered(self.devices) != frozenset():
            self.count(env, 'uncovered')
            return None, None
        return self.generations.read(key, base.object_path(env)[0])

    def current(self, env, key):
        """:meth:`read`, unless ``cache_ttl_only`` (no validity)."""
        if self.settings.ttl_only:
            return None, None
        return self.read(env, key)

    def still_current(self, env, key, validity, newest=None):
        """Whether no write overtook a body fetched under ``validity``
        (not asked under ``cache_ttl_only`` when none was read).
        ``newest``: the body was read from the newest replica (X-Newest)
        and has these ``(X-Backend-Timestamp, X-Backend-Data-Timestamp)``;
        the object's fence is then sealed with them, and the answer is
        whether that succeeded
        (:meth:`~swift_mass.generations.reader.GenerationReader.seal`)."""
        if validity is None and self.settings.ttl_only:
            return True
        if self.read(env, key)[0] != validity:
            return False
        if newest is None or validity is None:
            return True
        return self.generations.seal(
            key, base.object_path(env)[0], validity, *newest)

    def backend_agrees(self, env, entry):
        """A HEAD of every primary
        (:class:`~swift_mass.proxy.methods.replicas.Replicas`) shows the
        cached version is the newest one: no replica holds newer metadata,
        data or a newer tombstone.  With no generation to tell, a replica
        that missed a write acknowledged before may be the one a plain
        read reaches, and would vouch for the version it replaced; and
        Swift's newest read (X-Newest) may answer with the older metadata
        of a replica that missed a POST."""
        try:
            shown = self.replicas.newest(env)
        except Exception as err:
            self.logger.warning('mass cache: validation read failed: %s',
                                err)
            return False
        return shown is not None and shown.shown_by(
            entry.header('X-Backend-Timestamp'),
            entry.header('X-Backend-Data-Timestamp'))
