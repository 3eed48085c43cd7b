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
"""``merge``: mixed tenants' concurrent identical reads collapse into one.

* **Single flight**: in each proxy worker, GETs and HEADs of one object
  with the same method and the same request headers (but those that never
  change an object's answer: the token, User-Agent, Host...; see
  :meth:`MergeMethod.flight_key`) that arrive while one of them (the
  leader) is at the backend wait for the leader's answer instead of
  sending their own.  Every read is authorised first, as a cache hit is
  (:mod:`swift_mass.proxy.methods.cache`), before it reads a generation or
  joins a flight; a waiter only joins while the object's generation is
  the one the leader read before it set off: a read that arrives after a
  write was acknowledged never gets the answer of a read that began
  before it.  The leader reads the whole answer (at most
  ``cache_max_object_size`` bytes) before sending it on, so its client
  going away does not cut the others off; larger answers,
  denials (401, 403) and answers that do not come within
  ``merge_wait_seconds`` send each waiter to the backend on its own.
  Without generations (Redis unreachable) nothing is merged.
* **Write-through**: once a small PUT (at most ``cache_max_object_size``
  bytes) has succeeded, its body is put into the cache with the headers of
  a HEAD of the object (Mass's own, right of auth), if that HEAD shows this
  very write (its X-Timestamp and the body's MD5) and the object's
  generation did not change meanwhile; the same rules as any other fill
  (without a fence sealed in the reader's era, a HEAD of every primary
  must show this write is the newest).
  It is done in a green thread of its own once the PUT's answer is
  closed: the client never waits for it.
* Reads also use the cache, as the ``cache`` method does.
"""
import functools

import eventlet
from eventlet.timeout import Timeout

from swift.common.swob import Request, wsgi_quote
from swift.common.utils import ClosingIterator, Timestamp, \
    close_if_possible, md5

from swift_mass import metrics, tags
from swift_mass.proxy.methods import base
from swift_mass.generations import object_key
from swift_mass.proxy.methods.cache import cacheable_headers

MERGE_HEADER = tags.MERGE_RESPONSE_HEADER
# Request headers that never change what Swift answers for an object (see
# MergeMethod.flight_key).
_SAME_ANSWER_HEADERS = frozenset((
    'HTTP_X_AUTH_TOKEN', 'HTTP_X_STORAGE_TOKEN', 'HTTP_AUTHORIZATION',
    'HTTP_USER_AGENT', 'HTTP_HOST', 'HTTP_ACCEPT', 'HTTP_ACCEPT_ENCODING',
    'HTTP_ACCEPT_LANGUAGE', 'HTTP_CONNECTION', 'HTTP_KEEP_ALIVE', 'HTTP_TE',
    'HTTP_REFERER', 'HTTP_X_TRANS_ID_EXTRA', 'HTTP_X_FORWARDED_FOR',
    'HTTP_X_REAL_IP', 'HTTP_X_TRANS_ID', 'HTTP_COOKIE'))
# Answers whose body does not depend on who asked, once authorised.
_SHARED = (200, 206, 304, 404, 412, 416)


def _count(logger, entry, result):
    """merge.<result>, labeled with the class of the tenant's policy
    ``entry``."""
    metrics.increment(logger, 'merge.' + result, 'merge',
                      dict(metrics.policy_labels(entry), result=result))


class Flight(object):
    """One leader's backend request and the waiters it answers."""

    def __init__(self, validity):
        self.validity = validity
        self.done = eventlet.event.Event()
        self.waiters = 0

    def land(self, result):
        if not self.done.ready():
            self.done.send(result)


class Recorder(object):
    """``wsgi.input`` that keeps what the proxy reads of a small body."""

    def __init__(self, wsgi_input, limit):
        self.wsgi_input = wsgi_input
        self.limit = limit
        self.chunks = []
        self.size = 0

    def _keep(self, data):
        self.size += len(data)
        if self.size <= self.limit:
            self.chunks.append(data)
        return data

    def read(self, *args, **kwargs):
        return self._keep(self.wsgi_input.read(*args, **kwargs))

    def readline(self, *args, **kwargs):
        return self._keep(self.wsgi_input.readline(*args, **kwargs))

    def __getattr__(self, name):
        # anything else the server's input offers (100-continue...)
        return getattr(self.wsgi_input, name)

    @property
    def body(self):
        return b''.join(self.chunks) if self.size <= self.limit else None


class AfterClose(ClosingIterator):
    """A response body that calls ``then()`` once it is closed (which
    ClosingIterator does once, at the latest when it is iterated to its
    end)."""
    __slots__ = ('then',)

    def __init__(self, app_iter, then):
        super(AfterClose, self).__init__(app_iter)
        self.then = then

    def close(self):
        if not self.closed:
            super(AfterClose, self).close()
            self.then()


class MergeMethod(base.Method):
    name = 'merge'

    def __init__(self, cache, logger, wait=10.0, spawn=eventlet.spawn_n):
        self.cache = cache
        self.logger = logger
        self.wait = float(wait)
        self.spawn = spawn
        self.flights = {}

    @classmethod
    def from_conf(cls, cache, mass_conf, logger):
        """The merge ``[filter:mass]`` asks for (its ``merge_*`` options,
        parsed: ``mass_conf.merge``), on top of ``cache``."""
        return cls(cache, logger, mass_conf.merge.wait_seconds)

    # -- reads ----------------------------------------------------------

    def decide(self, env):
        return self.writes_through(env) or self.cache.decide(env)

    @staticmethod
    def flight_key(env, key):
        """Reads share a flight only if Swift would answer them alike: the
        same method and every request header the same, but those that
        never change an object's answer (who asks, over what connection:
        authorisation is checked for each read on its own).  A header
        Swift may honour (Range, If-*, X-Open-Expired, any X-Backend-*
        set left of Mass, and any this list does not know) keeps reads
        apart."""
        relevant = sorted((name, value) for name, value in env.items()
                          if name.startswith('HTTP_') and
                          name not in _SAME_ANSWER_HEADERS)
        return (key, env['REQUEST_METHOD'], tuple(relevant))

    def wrap(self, env, start_response, app, request):
        if self.writes_through(env):
            return self.write(env, start_response, app, request)
        return self.cache.read(env, start_response, app, functools.partial(
            self._miss, entry=request.entry), request)

    def _miss(self, env, start_response, app, key, read, entry):
        """A read the cache could not answer: join the flight of the same
        read under the same validity, or lead one."""
        validity = read[0]
        if validity is None:
            return self.cache.fetch(env, start_response, app, key, read)
        fkey = self.flight_key(env, key)
        flight = self.flights.get(fkey)
        if flight is not None and flight.validity == validity:
            answer = self._follow(env, start_response, flight, entry)
            if answer is not None:
                return answer
            return self.cache.fetch(env, start_response, app, key, read)
        return self._lead(env, start_response, app, key, fkey, read)

    def _follow(self, env, start_response, flight, entry):
        flight.waiters += 1
        result = None
        with Timeout(self.wait, False):
            result = flight.done.wait()
        if result is None:
            _count(self.logger, entry, 'alone')
            return None
        status, headers, body = result
        _count(self.logger, entry, 'merged')
        start_response(status, headers + [(MERGE_HEADER, 'merged')])
        return [body]

    def _lead(self, env, start_response, app, key, fkey, read):
        flight = Flight(read[0])
        self.flights[fkey] = flight
        try:
            seen = {}

            def capture(status, headers, exc_info=None):
                seen.update(status=status, headers=headers,
                            exc_info=exc_info)
            app_iter = self.cache.fetch(env, capture, app, key, read)
            status = int(seen['status'].split(' ', 1)[0])
            length = base.content_length(seen['headers'])
            small = env['REQUEST_METHOD'] == 'HEAD' or (
                length is not None and
                length <= self.cache.settings.max_object_size)
            if status not in _SHARED or not small:
                flight.land(None)
                start_response(seen['status'], seen['headers'],
                               seen['exc_info'])
                return app_iter
            try:
                body = b''.join(app_iter)
            finally:
                close_if_possible(app_iter)
            result = None
            if env['REQUEST_METHOD'] == 'HEAD' or len(body) == length:
                result = (seen['status'], list(seen['headers']), body)
            flight.land(result)
            start_response(seen['status'], seen['headers'], seen['exc_info'])
            return [body]
        finally:
            flight.land(None)
            if self.flights.get(fkey) is flight:
                del self.flights[fkey]

    # -- writes ---------------------------------------------------------

    def writes_through(self, env):
        if env.get('REQUEST_METHOD') != 'PUT' or \
                env.get('QUERY_STRING') or base.object_path(env) is None:
            return False
        try:
            length = int(env.get('CONTENT_LENGTH'))
        except (TypeError, ValueError):
            return False
        return 0 <= length <= self.cache.settings.max_object_size

    def write(self, env, start_response, app, request):
        recorder = Recorder(env['wsgi.input'],
                            self.cache.settings.max_object_size)
        env['wsgi.input'] = recorder
        seen = {}

        def capture(status, headers, exc_info=None):
            seen['status'] = int(status.split(' ', 1)[0])
            return start_response(status, headers, exc_info)
        app_iter = app(env, capture)
        if seen.get('status') != 201 or recorder.body is None or \
                request.opted_out:
            return app_iter
        timestamp = env.get('HTTP_X_TIMESTAMP')
        key = object_key(*base.object_path(env))
        head_env = {'REQUEST_METHOD': 'HEAD', 'PATH_INFO': env['PATH_INFO'],
                    'swift.source': 'MASS', 'HTTP_USER_AGENT': 'Swift Mass'}
        for name in ('swift.cache', 'swift.infocache', 'swift.trans_id'):
            if name in env:
                head_env[name] = env[name]
        # In a green thread of its own: the server sends an empty body's
        # answer only once the body is closed, and the client must not
        # wait for Redis or the HEAD.
        return AfterClose(app_iter, lambda: self.spawn(
            self._write_through, head_env, key, recorder.body, timestamp,
            request.entry))

    def _write_through(self, head_env, key, body, timestamp, entry=None):
        try:
            written = Timestamp(timestamp).internal
        except (TypeError, ValueError):
            return
        validity, recorded = self.cache.validity(head_env, key)
        if validity is None:
            return
        if recorded is not None and recorded.timestamp > Timestamp(written):
            # a later write was acknowledged (and recorded) first
            return
        sealed = recorded is not None and recorded.sealed
        try:
            resp = Request.blank(wsgi_quote(head_env['PATH_INFO']),
                                 environ=head_env).get_response(self.cache.app)
        except Exception as err:
            self.logger.warning('mass merge: write-through HEAD failed: %s',
                                err)
            return
        etag = (resp.headers.get('ETag') or '').strip('"')
        if resp.status_int != 200 or \
                resp.headers.get('X-Backend-Timestamp') != written or \
                etag != md5(body, usedforsecurity=False).hexdigest() or \
                resp.headers.get('Content-Length') != str(len(body)):
            return
        kept = cacheable_headers(resp.headers.items())
        if kept is None:
            return
        newest = None
        if not sealed:
            # No fence sealed in this era: a later write acknowledged
            # before this one ran may be missing from the replica the
            # HEAD reached, so every primary must show this PUT is the
            # current version (not Swift's newest read, which may answer
            # with a replica that missed a POST: see
            # swift_mass.proxy.methods.replicas); that seals the fence.
            replicas_hold = self.cache.replicas.newest(head_env)
            if replicas_hold is None or \
                    not replicas_hold.shown_by(written, written):
                return
            newest = (written, written)
        if self.cache.fill(head_env, key, validity, kept, body, newest):
            # the HEAD's environ is Mass's own, without the policy
            _count(self.logger, entry, 'written_through')
