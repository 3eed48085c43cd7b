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
"""Where the cache keeps its entries
(:class:`~swift_mass.proxy.methods.bodies.Entry`) and finds them again:
this worker's LRU in front of the bodies every proxy shares (Redis,
memcache), or the worker's own LRU alone when nothing is shared.  A
shared store that fails is a miss, not an error.
"""
import eventlet

from swift_mass.proxy.methods.bodies import Entry, LocalBodies, \
    MemcacheBodies, RedisBodies


class Entries(object):
    """The cache's entries, each under the validity its body was fetched
    under: :meth:`get` finds a hit's, :meth:`store` and :meth:`fill` keep
    a fetched body, and share it only if no write overtook it
    (``validity_check``, a
    :class:`~swift_mass.proxy.methods.validity.ValidityCheck`).

    ``count(env, result)`` counts ``cache.<result>``.
    """

    def __init__(self, bodies, local, generations, validity_check, logger,
                 count, spawn=eventlet.spawn_n):
        #: where bodies are shared (Redis, memcache), or this worker's
        #: own LRU when nothing is shared
        self.bodies = bodies
        #: this worker's LRU in front of shared ``bodies`` (None: none):
        #: a hit it answers moves no body over the network
        self.local = local
        self.generations = generations
        self.validity_check = validity_check
        self.logger = logger
        self.count = count
        # a fill of the shared bodies runs off the client's path
        self.spawn = spawn

    def get(self, env, key, validity):
        """The entry cached for ``key``: this worker's if it is the
        current one (``validity``; any under None: the backend then
        judges it), else the shared one, kept here if it is current."""
        if self.local is not None:
            entry = self.local.get(key)
            if entry is not None:
                if validity is None or entry.validity == validity:
                    return entry
                self.local.delete(key)
        entry = self._call(env, 'get', key)
        if entry is not None and self.local is not None and \
                validity is not None and entry.validity == validity:
            self.local.put(key, entry)
        return entry

    def store(self, env, key, validity, headers, chunks, newest=None):
        """A miss's body arrived whole: keep it in this worker at once
        (fetched under ``validity``, a hit compares that with the
        object's current one, so a write meanwhile only makes it unused),
        and share it from a green thread of its own, off the client's
        path (:meth:`fill`: only if no write overtook it).  ``newest``:
        the body was read from the newest replica and has these
        ``(X-Backend-Timestamp, X-Backend-Data-Timestamp)``: the object's
        fence is sealed with them in that
        green thread (:meth:`ValidityCheck.still_current
        <swift_mass.proxy.methods.validity.ValidityCheck.still_current>`)."""
        entry = Entry(validity, headers, chunks)
        local = isinstance(self.bodies, LocalBodies)
        if local:
            self.bodies.put(key, entry)
        elif self.local is not None:
            self.local.put(key, entry)
        if local and newest is None:
            return
        shared = {name: env[name] for name in (
            'PATH_INFO', 'swift.cache') if name in env}
        self.spawn(self._share, shared, key, entry, newest, local)

    def fill(self, env, key, validity, headers, body, newest=None):
        """Cache ``body`` (with ``headers``, as
        :func:`~swift_mass.proxy.methods.cache.cacheable_headers` kept
        them), fetched when the object's validity was ``validity``,
        unless the object was written since (not asked under
        ``cache_ttl_only`` when no validity was read); whether it was
        stored.  ``newest`` as :meth:`store` takes it."""
        if not self.validity_check.still_current(env, key, validity,
                                                 newest):
            return False
        entry = Entry(validity, headers, body)
        if self.local is not None:
            self.local.put(key, entry)
        self._call(env, 'put', key, entry)
        return True

    def _share(self, env, key, entry, newest=None, local=False):
        if self.validity_check.still_current(env, key, entry.validity,
                                             newest) and not local:
            self._call(env, 'put', key, entry)

    def _call(self, env, name, *args):
        """A body store call; a failing backend is a miss, not an error.
        Bodies in the generations' Redis share their breaker: while that
        Redis fails, no read waits for it (a hung Redis would otherwise
        cost every read its timeout)."""
        shared = self.generations is not None and \
            isinstance(self.bodies, RedisBodies)
        if shared and not self.generations.available():
            self.count(env, 'backend_skipped')
            return None
        try:
            return getattr(self._bodies(env), name)(*args)
        except Exception as err:
            if shared:
                self.generations.failed(err)
            self.count(env, 'backend_errors')
            self.logger.debug('mass cache: %s %s failed: %s',
                              self.bodies.name, name, err)
            return None

    def _bodies(self, env):
        """The body store: memcache bodies without servers of their own
        are kept in Swift's, which only a request names
        (``swift.cache``)."""
        if isinstance(self.bodies, MemcacheBodies) and \
                self.bodies.memcache is None:
            self.bodies.memcache = env.get('swift.cache')
        return self.bodies
