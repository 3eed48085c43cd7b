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
"""How a cache miss reads the backend (runs in the proxy,
:mod:`swift_mass.proxy.methods.cache`): one replica under a fence sealed
in the reader's era, else the newest one (X-Newest), and past the
replicas that missed a write acknowledged before the read, which Swift
alone would serve.
"""
from swift.common.swob import HTTPNotFound, Request
from swift.common.utils import Timestamp, close_if_possible, md5
from swift.common.wsgi import WSGIContext

from swift_mass.proxy.methods import base

# How many plain reads a miss makes at most while replicas that missed a
# write answer (MissReads.read_past).
LAGGING_READS = 4


class MissReads(object):
    """The backend reads of a miss; ``count(env, result)`` counts
    ``cache.<result>`` (``cache.lagging_replica`` for each answer of a
    replica that missed a write)."""

    def __init__(self, count):
        self.count = count

    def read(self, env, app, newest, written=None):
        """The backend's answer to a miss: ``(a WSGIContext that started
        it, its body, whether it was read from the newest replica)``;
        from the newest replica (X-Newest) if ``newest``, or if the replica
        read is older than ``written`` (a sealed :class:`~swift_mass.
        generations.reader.Written`), and left in ``env`` if it answered
        so."""
        if newest:
            env['HTTP_X_NEWEST'] = 'true'
        ctx = WSGIContext(app)
        app_iter = ctx._app_call(env)
        found = ctx._get_status_int() == 200
        if not newest and written is not None and written.sealed and \
                found and not written.covers(*version(ctx._response_headers)):
            # A replica that missed a write acknowledged before this read
            # answered: Swift alone would serve it; the newest replica has
            # that write, and its answer may be cached.
            self.count(env, 'lagging_replica')
            close_if_possible(app_iter)
            return self.read(without_policy_index(env), app, True, written)
        if newest and found and set_aside(ctx._response_headers):
            # Swift's X-Newest read that meets a DELETE newer than some
            # replica's version answers 200 with no body and the deleted
            # version's ETag (its best_response, once the newer tombstone
            # set the 200s aside): the object is deleted; the client gets
            # a plain read's answer past the replicas that missed it, and
            # nothing is cached.
            close_if_possible(app_iter)
            del env['HTTP_X_NEWEST']
            ctx, app_iter = self.past_deleted(
                env, app, data_time(ctx._response_headers),
                None if written is None else written.timestamp)
        elif newest and found and written is not None and \
                not written.covers(*version(ctx._response_headers)):
            return self.past_older_metadata(env, app, ctx, app_iter,
                                            written)
        return ctx, app_iter, newest

    def past_older_metadata(self, env, app, ctx, app_iter, written):
        """Swift's newest read (``ctx``, ``app_iter``) answered with a
        version older than the fence ``written``: it orders replicas by
        their data's time alone and, of those with the same data, keeps
        the last to answer, often the replica slow to take a POST
        (swift_mass.proxy.methods.replicas).  Plain reads, as Swift alone
        sends them, reach the others (:meth:`read_past`): the first that
        shows the fence, with data no older than the newest read's, is
        answered instead (and, under a sealed fence, cached as any plain
        read is).  If none does, the newest read's answer, which has the
        newest data: what Swift's X-Newest serves, not cached.  ``(ctx,
        app_iter, whether it was read from the newest replica)``."""
        self.count(env, 'lagging_replica')
        newest_data = data_time(ctx._response_headers)
        plain_env = dict(env)
        del plain_env['HTTP_X_NEWEST']

        def current(plain):
            data = data_time(plain._response_headers)
            return plain._get_status_int() == 200 and data is not None and \
                newest_data is not None and data.raw >= newest_data.raw and \
                written.covers(*version(plain._response_headers))
        plain, plain_iter, shown = self.read_past(plain_env, app, current)
        if not shown:
            close_if_possible(plain_iter)
            return ctx, app_iter, True
        close_if_possible(app_iter)
        del env['HTTP_X_NEWEST']
        return plain, plain_iter, not written.sealed

    def read_past(self, env, app, current, attempts=LAGGING_READS):
        """Plain reads until one answers ``current(ctx)``: Swift picks the
        replica it reads first at random, so the replicas that missed a
        write are read past sooner or later, and a few reads bound what
        that costs.  ``(ctx, app_iter, whether it answered so)``, the last
        read's if none did."""
        for attempt in range(attempts):
            ctx = WSGIContext(app)
            app_iter = ctx._app_call(without_policy_index(env))
            if current(ctx):
                return ctx, app_iter, True
            self.count(env, 'lagging_replica')
            if attempt + 1 < attempts:
                close_if_possible(app_iter)
        return ctx, app_iter, False

    def past_deleted(self, env, app, set_aside, recorded=None,
                     attempts=LAGGING_READS):
        """A plain read, once X-Newest showed a tombstone newer than the
        data (of time ``set_aside``) some replicas still hold: an answer
        whose data is no newer than that, or older than the last write
        recorded (``recorded``; the tombstone's time is not in the
        answer), is read again (:meth:`read_past`), and then answered as
        a replica with the tombstone would have: 404."""
        def current(ctx):
            data = data_time(ctx._response_headers)
            # by time alone (raw): the copy `swift-mass migrate` stages
            # of a version has that version's time, with an offset below
            # the move's own fence and delete, which were recorded
            return ctx._get_status_int() != 200 or data is None or (
                (set_aside is None or data > set_aside) and
                (recorded is None or data.raw >= recorded.raw))
        ctx, app_iter, shown = self.read_past(env, app, current, attempts)
        if shown:
            return ctx, app_iter
        close_if_possible(app_iter)
        ctx = WSGIContext(HTTPNotFound(request=Request(env)))
        return ctx, ctx._app_call(env)


def without_policy_index(env):
    """``env``, made fit to be sent to the proxy app again: without the
    storage policy index Swift's object controller wrote into it when it
    served it before (X-Backend-Storage-Policy-Index, from the container's
    info then), which would send the read to the policy the container had
    then, not the one ``swift-mass migrate`` may have moved it to since
    (Swift's symlink middleware drops it from a request it sends on, for
    the same reason).  No client sets it: the gatekeeper removes
    X-Backend-* headers from clients' requests."""
    env.pop(POLICY_INDEX_ENV, None)
    return env


# the environ key of the X-Backend-Storage-Policy-Index header
POLICY_INDEX_ENV = 'HTTP_X_BACKEND_STORAGE_POLICY_INDEX'
# the ETag of an empty body
EMPTY_ETAG = md5(b'', usedforsecurity=False).hexdigest()


def set_aside(headers):
    """Whether an X-Newest 200's headers are those Swift answers when a
    newer tombstone set a quorum of replicas' 200s aside: their ETag and
    timestamps, with no body (no Content-Length inside the pipeline, 0
    once a server counted it)."""
    length = base.content_length(headers)
    if length is None:
        return True
    etag = dict((k.lower(), v) for k, v in headers).get('etag', '')
    return length == 0 and etag.strip('"') not in ('', EMPTY_ETAG)


def data_time(headers):
    """The Timestamp of a response's data (X-Backend-Data-Timestamp, or
    X-Backend-Timestamp without it), or None."""
    timestamp, data = version(headers)
    try:
        return Timestamp(data or timestamp)
    except (TypeError, ValueError):
        return None


def version(headers):
    """``(X-Backend-Timestamp, X-Backend-Data-Timestamp)`` of a
    response's headers (a list of pairs): its metadata's and data's."""
    found = dict((k.lower(), v) for k, v in headers)
    return (found.get('x-backend-timestamp'),
            found.get('x-backend-data-timestamp'))
