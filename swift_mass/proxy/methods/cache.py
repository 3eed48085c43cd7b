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
"""``cache``: read-dominated tenants' small objects served from the proxy.

Correctness comes first; a stale read is a bug.

* **Generations** (:mod:`swift_mass.generations`): the object servers
  give an object a new generation each time they write it, before they
  answer, whoever sent the write.  A body is stored with the generation
  read before it was fetched, and only if the generation read after the
  whole body arrived is still the same and no newer write was recorded; a
  hit is served only while the object's generation is the stored one.  So
  a read that began before a write cannot put the old body back, and once
  a write has been acknowledged no proxy serves what it replaced.  The
  proxy trusts generations only while every device of its object rings
  has an object server that bumps them.  A fill reads one replica only
  when the object's recorded write is a fence sealed in the reader's era
  (the same epoch, the same membership of the tenant); else it reads the
  newest replica (``X-Newest``), and a HEAD of every primary
  (:mod:`swift_mass.proxy.methods.replicas`) must show the answer is the
  newest version before it is cached and seals the fence: a replica
  that missed a write acknowledged earlier never fills the cache
  (docs/cache.md, "Why no fill is older than an acknowledged write").
* **Without generations** (Redis unreachable or not to be trusted, a
  device without an object server that bumps, or ``store`` is not redis),
  a hit is served only after a HEAD of every primary shows the cached
  version is the newest one, and a miss that may be cached reads the
  newest replica, and is cached only if those HEADs show it is the
  newest version.
* **Authorisation first**: before the cache reads a generation or a body,
  a read passes the check Swift's object controller makes before it
  reads an object: ``swift.authorize`` first as the proxy calls it, then,
  if that denies, again with ``req.acl`` set to the container's read ACL
  (container info from the same caches the proxy uses).  A read that does
  not pass, or that cannot be checked here, goes to Swift, which answers
  it; nothing is read from Redis or stored for it.  Requests whose
  authorisation is not the plain one are never served from the cache:
  ``swift.authorize_override`` (tempurl, staticweb), a query string, an
  Origin header (CORS headers come from container info), middlewares'
  subrequests.  S3 clients' reads, which s3api translates (``swift.source``
  ``S3``), are client reads: served as the Swift API's, authorised by the
  callback the proxy would call (the auth middleware's with ``s3_acl``
  off, s3api's own with it on, after s3api's TEST request authenticated
  the client; :func:`s3api_preauthorised`).
* **Never cached**: anything but the 200 answer to a plain GET (no Range,
  no conditions, no X-Newest), bodies over ``cache_max_object_size``,
  SLO and DLO manifests, symlinks and objects with X-Delete-At.
* **Encryption at rest**: Mass sits right of ``encryption`` in the
  pipeline, so what it caches is what the object servers sent: an
  encrypted object's ciphertext with its crypto sysmeta.  A hit goes back
  through the decrypter exactly as a backend response does (AES-CTR
  decrypts any range given its offset, which the hit's Content-Range
  carries), so Redis and memcache never hold plaintext of an encrypted
  object, and conditional requests resolve against the HMAC'd ETag that
  ``encryption`` names in X-Backend-Etag-Is-At, as the object server
  does.
* **Conditional and range requests** on a hit are answered by a swob
  Response with ``conditional_response=True`` built from the headers Swift
  sent with the body, the same machinery the object server answers with.

Responses to requests the cache considered carry ``X-Mass-Cache: hit`` or
``miss``; statsd counters ``cache.hit``, ``cache.miss``, ``cache.stored``,
``cache.stale``, ``cache.denied``, ``cache.validated``,
``cache.backend_errors``, ``cache.backend_skipped``,
``cache.lagging_replica`` (a miss that reached a replica older than the
object's fence, and read another one instead), and ``cache.not_newest``
(a newest read's answer that the primaries did not show to be the
newest version: not cached).
"""
import time

import cachetools
import eventlet
from swift.common.http import is_success
from swift.common.memcached import load_memcache
from swift.common.request_helpers import get_sys_meta_prefix
from swift.common.constraints import check_utf8
from swift.common.swob import Request, wsgi_to_str
from swift.proxy.controllers.base import get_container_info

from swift_mass import metrics, tags
from swift_mass.redis_client import key_prefix
from swift_mass.generations import object_key
from swift_mass.generations.reader import GenerationReader
from swift_mass.proxy.methods import base
from swift_mass.proxy.methods.bodies import MemcacheBodies, RedisBodies, \
    LocalBodies
from swift_mass.proxy.methods.entries import Entries
from swift_mass.proxy.methods.hits import Hits
from swift_mass.proxy.methods import misses
from swift_mass.proxy.methods.misses import MissReads
from swift_mass.proxy.methods.replicas import Replicas
from swift_mass.proxy.methods.validity import CONDITIONS, ValidityCheck
from swift_mass.proxy.tenant import tenant_of
from swift_mass.ring_devices import ring_devices

CACHE_HEADER = tags.CACHE_RESPONSE_HEADER
# swift.source of every request Swift's s3api builds from an S3 client's
# (s3api/s3request.py, S3Request.to_swift_req)
S3API_SOURCE = 'S3'
# Objects a worker found it cannot cache (manifests, symlinks,
# too large...), remembered with their generation so that their reads skip
# the body store's round trip until someone writes them, or for at most
# UNCACHEABLE_SECONDS: a move's fence gives an object an X-Delete-At, and
# takes it away, without a new generation (docs/cache.md, "A move keeps
# cached bodies"), and a read in between must not keep it uncached.
UNCACHEABLE_MEMO = 10000
UNCACHEABLE_SECONDS = 60

# Backend headers a request may carry on a hit: Mass's own tags, and the
# two that only matter for metadata a cached object never has (or that
# the hit resolves as the object server would).  Any other X-Backend-*
# header, set by a middleware left of Mass, asks the backend for
# something a hit cannot be sure to honour.
_BACKEND_SAFE = (tags.BACKEND_TAG_PREFIX, 'HTTP_X_BACKEND_ETAG_IS_AT',
                 'HTTP_X_BACKEND_IGNORE_RANGE_IF_METADATA_PRESENT')
# Response headers of objects that are not plain bodies.
_NOT_PLAIN = ('x-static-large-object', 'x-object-manifest',
              'x-symlink-target', 'x-delete-at')
_NOT_PLAIN_PREFIXES = tuple(get_sys_meta_prefix('object') + name
                            for name in ('slo-', 'symlink-', 'dlo-'))
# Response headers that belong to one response, not to the object.
_NOT_STORED = ('content-length', 'content-range', 'transfer-encoding',
               'connection', 'date', 'x-trans-id', 'x-openstack-request-id',
               CACHE_HEADER.lower())


def cacheable_headers(headers):
    """Whether a 200 response's headers show a plain object body, and the
    headers to keep with it."""
    kept = []
    for name, value in headers:
        lower = name.lower()
        if lower in _NOT_PLAIN or lower.startswith(_NOT_PLAIN_PREFIXES):
            return None
        if lower not in _NOT_STORED:
            kept.append((name, value))
    return kept


def s3api_preauthorised(env):
    """Whether a request whose auth middleware was told to stand aside
    (``swift.authorize_override``) is an object read of s3api with
    ``s3_acl`` on: authenticated by s3api's TEST request (which deletes
    ``s3api.auth_details``), its S3 ACL checked by s3api on the answer,
    carrying s3api's own ``swift.authorize``, which the proxy calls and
    :meth:`CacheMethod.authorize` calls the same way.  An override with
    ``s3api.auth_details`` still present was set left of s3api
    (tempurl, container_sync), and a pre-authorised subrequest or a
    tempurl names itself in ``REMOTE_USER``: those stay Swift's."""
    remote_user = env.get('REMOTE_USER')  # keystoneauth's is a tuple
    return env.get('swift.source') == S3API_SOURCE and \
        's3api.auth_details' not in env and \
        env.get('swift_owner') is True and \
        not (isinstance(remote_user, str) and
             remote_user.startswith('.wsgi.'))


def refused_before_authorisation(app, env):
    """Whether Swift's proxy app ``app`` answers a request itself before
    it authorises it: the checks of its ``handle_request`` (a path that
    is not UTF-8, a path or API version it serves no controller for, a
    Host in ``deny_host_headers``).  A hit must not answer such a request
    in its place."""
    req = Request(env)
    try:
        if not check_utf8(wsgi_to_str(req.path_info),
                          internal=req.allow_reserved_names):
            return True
    except UnicodeError:
        return True
    get_controller = getattr(app, 'get_controller', None)
    if get_controller is not None:
        try:
            controller, _parts = get_controller(req)
        except Exception:
            return True
        if not controller:
            return True
    deny = getattr(app, 'deny_host_headers', None)
    return bool(deny) and req.host.split(':')[0] in deny


class Collector(object):
    """The body of a response on its way to the client, kept as it goes;
    ``on_complete(chunks)`` is called at close if all of it was sent (the
    chunks as the app sent them, not joined: see
    :class:`swift_mass.proxy.methods.bodies.Entry`).

    Not a ClosingIterator: that one adds a call per chunk and closes at
    the end of the iteration, which would store the body before the server
    has finished the client's answer (a chunked one's last chunk)."""

    def __init__(self, app_iter, length, on_complete):
        self.app_iter = app_iter
        self.iterator = iter(app_iter)
        self.length = length
        self.on_complete = on_complete
        self.chunks = []
        self.received = 0
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        chunk = next(self.iterator)
        self.received += len(chunk)
        if self.received <= self.length:
            self.chunks.append(chunk)
        return chunk

    def close(self):
        if self.closed:
            return
        self.closed = True
        close = getattr(self.app_iter, 'close', None)
        if close is not None:
            close()
        chunks, self.chunks = self.chunks, []
        if self.received == self.length:
            self.on_complete(chunks)


class CacheMethod(base.Method):
    """The ``cache`` method of this module: the reads it acts on
    (:meth:`decide`), each authorised as Swift would (:meth:`authorized`),
    then answered by ``hits`` (:class:`~swift_mass.proxy.methods.hits.Hits`)
    from ``entries``
    (:class:`~swift_mass.proxy.methods.entries.Entries`) or sent to the
    backend, whose answer is cached on its way to the client
    (:meth:`fetch`) under the validity ``validity_check`` read before
    (:class:`~swift_mass.proxy.methods.validity.ValidityCheck`)."""
    name = 'cache'

    def __init__(self, app, settings, logger, bodies, generations,
                 clock=time.time, devices=None, local=None,
                 spawn=eventlet.spawn_n, replicas=None, policy_of=None):
        self.app = app  # the proxy app: its own checks, container info
        #: a tenant's policy entry as the policy table has it now (None:
        #: none), for the class label of the cache's counts
        self.policy_of = policy_of or (lambda tenant: None)
        self.settings = settings
        self.logger = logger
        self.generations = generations
        self.clock = clock
        #: what an object's primaries hold, asked of each
        #: (:class:`~swift_mass.proxy.methods.replicas.Replicas`)
        self.replicas = replicas
        self.validity_check = ValidityCheck(
            app, settings, logger, generations, self._count, devices,
            replicas)
        self.miss_reads = MissReads(self._count)
        self.entries = Entries(bodies, local, generations,
                               self.validity_check, logger, self._count,
                               spawn)
        self.hits = Hits(settings, self.entries, self.validity_check,
                         self._count)
        # key -> the generation under which it was found uncacheable;
        # forgetting one only costs a lookup, so worker-local and bounded
        # is enough
        self._uncacheable = cachetools.TTLCache(
            UNCACHEABLE_MEMO, UNCACHEABLE_SECONDS, timer=time.monotonic)

    @classmethod
    def from_conf(cls, app, mass_conf, logger, policy_of=None):
        """The cache ``[filter:mass]`` asks for (its ``cache_*`` options,
        parsed: ``mass_conf.cache``); generations and Redis bodies use the
        Redis of the shared store, when ``store`` is redis
        (``mass_conf.store``: its ``redis_url``, keys under its
        ``redis_prefix`` and ``cache:``)."""
        settings = mass_conf.cache
        store = mass_conf.store
        backend = settings.backend
        if backend == 'redis' and store.kind != 'redis':
            logger.warning('mass cache: cache_backend = redis, but the '
                           'store is not Redis; caching in worker memory')
            backend = 'local'
        generations = None
        if store.kind == 'redis':
            generations = GenerationReader(
                store.redis_url, logger,
                prefix=key_prefix(store.redis_url, store.redis_prefix) +
                'cache:',
                ttl=settings.generation_ttl, timeout=settings.redis_timeout)
        if backend == 'redis':
            bodies = RedisBodies(generations.client, settings.budget,
                                 settings.ttl, prefix=generations.prefix)
        elif backend == 'memcache' and settings.memcache_servers:
            bodies = MemcacheBodies(settings.ttl, load_memcache(
                {'memcache_servers': ','.join(settings.memcache_servers)},
                logger))
        elif backend == 'memcache':
            logger.warning(
                'mass cache: bodies are kept in Swift\'s own memcache, where '
                'they evict tokens and account and container info (more '
                'auth and info requests); set cache_memcache_servers to '
                'memcached servers of their own')
            bodies = MemcacheBodies(settings.ttl)
        else:
            bodies = LocalBodies(settings.budget, settings.ttl)
        local = None
        if backend != 'local' and settings.local_budget:
            local = LocalBodies(settings.local_budget, settings.ttl)
        return cls(app, settings, logger, bodies, generations,
                   devices=lambda: ring_devices(mass_conf.swift_dir),
                   local=local,
                   replicas=Replicas(app, mass_conf.swift_dir, logger),
                   policy_of=policy_of)

    def _count(self, env, result):
        """cache.<result>, labeled with the class of the request's tenant
        (the policy table's, as the count is made)."""
        tenant = tenant_of(env.get('PATH_INFO', ''))
        entry = None if tenant is None else self.policy_of(tenant)
        metrics.increment(self.logger, 'cache.' + result, 'cache',
                          dict(metrics.policy_labels(entry), result=result))

    # -- what merge shares -------------------------------------------

    def validity(self, env, key):
        """``(validity, write_timestamp)`` of the object ``env`` reads
        (``key`` its :func:`object_key`) now:
        :meth:`ValidityCheck.read
        <swift_mass.proxy.methods.validity.ValidityCheck.read>`."""
        return self.validity_check.read(env, key)

    def hit(self, env, key):
        """The answer to an authorised read (:meth:`authorized`) from the
        cached body (a swob Response), or None when the backend must
        answer: not cached, stale, or a request only Swift's proxy answers
        right."""
        return self.hits.answer(
            env, key, self.validity_check.current(env, key)[0])

    def fill(self, env, key, validity, headers, body, newest=None):
        """Cache ``body`` fetched under ``validity``, unless the object
        was written since; whether it was stored: :meth:`Entries.fill
        <swift_mass.proxy.methods.entries.Entries.fill>`."""
        return self.entries.fill(env, key, validity, headers, body, newest)

    # -- reads ---------------------------------------------------------

    def decide(self, env):
        if env.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            return False
        # s3api's translation of an S3 client's read ('S3') is a client
        # read; every other swift.source marks a middleware's subrequest
        # (SLO, DLO, SYM, SSC, OV, VW...), whose answer is not the object
        # the client named.
        if env.get('swift.source') not in (None, S3API_SOURCE):
            return False
        if env.get('QUERY_STRING') or \
                'HTTP_X_NEWEST' in env or 'HTTP_ORIGIN' in env:
            return False
        if env.get('swift.authorize_override') and \
                not s3api_preauthorised(env):
            return False
        for name in env:
            if name.startswith('HTTP_X_BACKEND_') and \
                    not name.startswith(_BACKEND_SAFE):
                return False
        return base.object_path(env) is not None and \
            not refused_before_authorisation(self.app, env)

    def wrap(self, env, start_response, app, request):
        return self.read(env, start_response, app, self.fetch, request)

    def read(self, env, start_response, app, miss, request):
        """Answer a read this method acts on (:meth:`decide`): Swift's
        answer if it would not authorise it (or its account is opted out:
        ``request``, its :class:`~swift_mass.proxy.request.MassRequest`,
        knows once it is authorised), else a hit, else
        ``miss(env, start_response, app, key, read)``, ``read`` being
        what :meth:`validity` answered before anything was looked up."""
        if not self.authorized(env) or request.opted_out:
            return app(env, start_response)
        key = object_key(*base.object_path(env))
        # Validity first, in one small round trip: no body moves before
        # it is known to be the current one.
        read = self.validity_check.current(env, key)
        found_under = self._uncacheable.get(key)
        if found_under is not None:
            if read[0] == found_under:
                # Not written since (by any proxy): still uncacheable, and
                # skipping the cache is always correct: Swift answers.
                def uncached(status, headers, exc_info=None):
                    return start_response(
                        status, headers + [(CACHE_HEADER, 'miss')],
                        exc_info)
                return app(env, uncached)
            # pop, not del: another green thread may have dropped it while
            # this one waited for the generation
            self._uncacheable.pop(key, None)
        resp = self.hits.answer(env, key, read[0])
        if resp is not None:
            return resp(env, start_response)
        return miss(env, start_response, app, key, read)

    def authorized(self, env):
        """Whether Swift's proxy would read the object for this request;
        if not, or it cannot tell here, Swift answers the request itself
        and the cache neither reads a generation nor stores anything for
        it (nothing before authorisation: swift_mass.proxy.authorization;
        the request's hooks run in this check)."""
        if self.authorize(env) is None:
            return True
        self._count(env, 'denied')
        return False

    def authorize(self, env):
        """What Swift's proxy would answer instead of the object (a
        denial), None if it would read it, or False if it could not tell
        here (no container info): let Swift answer."""
        authorize = env.get('swift.authorize')
        # a copy: the checks must leave nothing behind (swob.ACL) for the
        # proxy, should the request go on to it after all
        check_env = dict(env)
        info = get_container_info(check_env, self.app, swift_source='MASS')
        if not is_success(info.get('status') or 0):
            return False
        # as Swift's object controller writes it into the request it
        # serves: s3api and proxy-logging read it from there, a hit too
        env.setdefault(misses.POLICY_INDEX_ENV,
                       str(info.get('storage_policy') or 0))
        if authorize is None:
            return None
        req = Request(check_env)
        denial = authorize(req)
        if not denial:
            return None
        req.acl = info.get('read_acl')
        return authorize(req)

    def _plain_get(self, env):
        return env['REQUEST_METHOD'] == 'GET' and \
            not any(name in env for name in CONDITIONS)

    def fetch(self, env, start_response, app, key, read=None):
        """Send a read to ``app`` as a miss, and cache the answer on its
        way to the client if it is a plain GET's whole, cacheable 200;
        ``read``: what :meth:`validity` answered before (None: ask now)."""
        self._count(env, 'miss')
        storing = self._plain_get(env)
        validity = written = None
        if storing:
            validity, written = read if read is not None else \
                self.validity_check.current(env, key)
        # No fence sealed in this era: a write acknowledged before may
        # have missed the replica the proxy would read (one made while the
        # tenant was out of the bumped set, or whose record Redis lost),
        # and what is cached here is served by every proxy, where Swift
        # alone would serve it only from that replica until replication
        # repaired it.  The newest replica's version seals the fence.
        # Without generations (Redis down, a device not covered), nothing
        # tells either: the newest replica answers, and a hit is checked
        # against it too (ValidityCheck.backend_agrees).
        newest = storing and not self.settings.ttl_only and \
            (written is None or not written.sealed)
        ctx, app_iter, newest = self.miss_reads.read(
            env, app, newest, written if storing else None)
        if newest and 'HTTP_X_NEWEST' not in env:
            storing = False  # answered as Swift alone would: see there
        headers = [(k, v) for k, v in ctx._response_headers
                   if k.lower() != CACHE_HEADER.lower()]
        headers.append((CACHE_HEADER, 'miss'))
        start_response(ctx._response_status, headers, ctx._response_exc_info)
        if not storing or ctx._get_status_int() != 200:
            return app_iter
        kept = cacheable_headers(ctx._response_headers)
        length = base.content_length(ctx._response_headers)
        if kept is None or length is None or \
                length > self.settings.max_object_size:
            if validity is not None:
                self._uncacheable[key] = validity
            return app_iter
        entry_headers = dict((k.lower(), v) for k, v in kept)
        version = misses.version(kept)
        if not version[0] or 'etag' not in entry_headers:
            return app_iter
        if written is not None and not written.covers(*version):
            # a replica the last write has not reached answered
            return app_iter
        return self._collect(env, key, validity, kept, app_iter, length,
                             version if newest else None)

    def _collect(self, env, key, validity, kept, app_iter, length, newest):
        """``app_iter``, whose body is cached once it was all sent; if it
        was read from the newest replica with the version ``newest``, only
        if every primary shows that version is the newest one: Swift's
        newest read cannot show the newest metadata (see
        swift_mass.proxy.methods.replicas).  They are asked while the
        body is on its way."""
        shown = None if newest is None else \
            eventlet.spawn(self.replicas.newest, dict(env))

        def store(chunks):
            if shown is not None:
                replicas_hold = shown.wait()
                if replicas_hold is None or \
                        not replicas_hold.shown_by(*newest):
                    self._count(env, 'not_newest')
                    return
            self.entries.store(env, key, validity, kept, chunks, newest)
            self._count(env, 'stored')
        return Collector(app_iter, length, store)
