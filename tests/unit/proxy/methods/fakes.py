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
"""What the cache and merge tests stand in for: the proxy app right of
Mass (a tiny Swift), an auth middleware's swift.authorize, a logger, and
Mass filters of several proxies sharing one Redis (fakeredis, see
tests/unit/conftest.py)."""
import os

from swift.common.request_helpers import resolve_etag_is_at_header
from swift.common.swob import HTTPForbidden, HTTPOk, Request, Response
from swift.common.utils import Timestamp, md5
from swift.proxy.controllers.base import update_headers

from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.redis_store import RedisStore
from swift_mass.generations import object_key
from swift_mass.generations.writer import GenerationWriter
from swift_mass.proxy import middleware as proxy
from swift_mass.proxy.conf import MassConf  # noqa: F401 (for the tests)
from swift_mass.proxy.methods import base
from tests.unit.helpers import REDIS_URL, Logger

DOWN_REDIS_URL = 'redis://127.0.0.1:1/15'  # connection refused
DOWN_CLUSTER_URL = 'redis+cluster://127.0.0.1:1,127.0.0.1:2'
PATH = '/v1/AUTH_t/c/o'
BODY = b'0123456789' * 10
# The one device of the tiny Swift's object ring, its object server
# registered as bumping generations.
DEVICE = '127.0.0.1:6200/sdb1'
# The gap after which a generation call takes Redis for one that hung and
# replaces the epoch (2 s in a proxy, where heartbeats every half second
# keep it from lapsing): here no heartbeat runs, and on a loaded machine
# a test's steps (a second proxy's filter built, say) can be seconds
# apart.  Tests of the gap itself set their own.
TEST_GAP_MS = 60000


def authorize_as(user):
    """An auth middleware's swift.authorize, tempauth-like: the owner may
    do anything, others what the container's ACL grants them."""
    def authorize(req):
        if user == 'owner':
            return None
        acl = req.acl or ''
        if '.r:*' in acl or user in acl.split(','):
            return None
        return HTTPForbidden(request=req)
    return authorize


class Swift(object):
    """The proxy app right of Mass: accounts and containers exist, object
    requests are authorised as Swift's object controller does and
    answered by swob as the object server answers them."""

    def __init__(self):
        #: the object servers' generations (their mass_queue), if any
        self.generations = None
        self.objects = {}
        self.read_acl = {}
        #: more headers of a container's HEAD (s3api's ACL sysmeta), by
        #: path
        self.container_headers = {}
        #: the paths of the containers there are (None: any container)
        self.containers = None
        self.requests = []
        self.during_get = None  # called between a GET's two chunks
        #: what a replica that missed the newest writes holds, by path: a
        #: read without X-Newest gets it, as when the proxy picks that
        #: replica first
        self.lagging = {}
        #: how many plain reads the lagging replica answers, by path (the
        #: proxy reaches another replica first after that; none: all)
        self.lagging_reads = {}
        #: paths whose X-Newest GET meets a DELETE between its reads of
        #: the replicas: the DELETE happens, and the GET gets what Swift's
        #: best_response makes of two 200s its newer 404 set aside
        self.deleted_during_newest = set()
        #: the Content-Length that answer carries once a server counted
        #: its empty body ('0'), with swob's default type; None: none
        self.set_aside_length = None
        #: the version whose headers that answer carries, by path, where
        #: it is not the lagging replica's (the first 200 set aside)
        self.set_aside = {}
        #: the version Swift's X-Newest GET answers with, by path, where
        #: it keeps a replica behind a POST (of the replicas with the
        #: newest data, the last to answer) other than the lagging one
        self.newest_kept = {}
        #: the time of each deleted object's tombstone, by path
        self.tombstones = {}
        #: the paths whose primaries Mass asked directly, one per round
        #: of HEADs (swift_mass.proxy.methods.replicas)
        self.replica_reads = []
        #: the storage policy index of each container, by path, where a
        #: test moves objects between policies (others: 0); an object's
        #: ``policy`` says where it is
        self.policies = {}

    def object_requests(self, method=None):
        return [r for r in self.requests if r[1].count('/') == 4 and
                (method is None or r[0] == method)]

    def __call__(self, env, start_response):
        req = Request(env)
        if req.path.count('/') < 4:
            # as Swift's account and container controllers, which ask
            # swift.authorize before they reach a server
            authorize = env.get('swift.authorize')
            denial = authorize and authorize(req)
            if denial:
                return denial(env, start_response)
            self._record(req)
            headers = {}
            if req.path.count('/') == 3 and self.containers is not None \
                    and req.path not in self.containers:
                return Response(status=404)(env, start_response)
            if req.path.count('/') == 3:
                headers['X-Container-Read'] = self.read_acl.get(req.path, '')
                headers.update(self.container_headers.get(req.path, {}))
            return Response(status=204, headers=headers)(env, start_response)
        authorize = env.get('swift.authorize')
        if authorize is not None:
            req.acl = self.read_acl.get(req.path.rsplit('/', 1)[0])
            denial = authorize(req)
            if denial:
                return denial(env, start_response)
        # As Swift's object controller: the policy index a request
        # carries, else its container's, written into the request (and so
        # into the environ it was called with).  An object in another
        # policy is not on the object servers it asks.
        index = req.headers.setdefault(
            'X-Backend-Storage-Policy-Index',
            str(self.policies.get(req.path.rsplit('/', 1)[0], 0)))
        self._record(req)
        if req.method in ('GET', 'HEAD') and req.path in self.objects and \
                str(self.objects[req.path].get('policy', 0)) != index:
            return Response(status=404, request=req)(env, start_response)
        return getattr(self, req.method)(req)(env, start_response)

    def _record(self, req):
        self.requests.append((req.method, req.path,
                              req.environ.get('swift.source'),
                              dict(req.headers)))

    def OPTIONS(self, req):
        # the proxy answers a preflight without Origin itself
        return Response(status=200, request=req, headers={
            'Allow': 'DELETE, GET, HEAD, OPTIONS, POST, PUT'})

    def write(self, path, body, headers=None):
        """What a PUT does on the object servers."""
        ts = Timestamp.now()
        self.objects[path] = {'body': body, 'ts': ts,
                              'headers': dict(headers or {})}
        return ts

    def bump(self, req):
        """What the object servers' mass_queue does once they wrote."""
        path = base.object_path(req.environ)
        if self.generations is not None and \
                self.generations.bumps_writes_of(path[0]):
            self.generations.bump([object_key(*path)],
                                  req.headers.get('X-Timestamp'),
                                  data=req.method != 'POST')

    def PUT(self, req):
        body = req.body
        # what Swift's object controller does once it read the body: ask
        # the middlewares for their footers (encryption's crypto sysmeta)
        footers = {}
        update_footers = req.environ.get('swift.callback.update_footers')
        if update_footers is not None:
            update_footers(footers)
        req.headers.update(footers)
        req.headers['X-Timestamp'] = self.write(
            req.path, body, {k: v for k, v in req.headers.items()
                             if k.startswith(('X-Object-', 'X-Delete',
                                              'X-Static', 'Content-T'))
                             }).internal
        self.objects[req.path]['policy'] = int(
            req.headers.get('X-Backend-Storage-Policy-Index', 0))
        self.bump(req)
        # as the proxy answers a PUT (s3api's CopyObject reads both)
        resp = Response(status=201)
        resp.etag = md5(body, usedforsecurity=False).hexdigest()
        resp.last_modified = int(float(req.headers['X-Timestamp'])) + 1
        return resp

    def POST(self, req):
        obj = self.objects.get(req.path)
        if obj is None:
            return Response(status=404)
        obj.setdefault('data_ts', obj['ts'])
        obj['ts'] = Timestamp.now()
        req.headers['X-Timestamp'] = obj['ts'].internal
        obj['headers'] = {k: v for k, v in obj['headers'].items()
                          if not k.startswith('X-Object-Meta-')}
        obj['headers'].update((k, v) for k, v in req.headers.items()
                              if k.startswith('X-Object-Meta-'))
        self.bump(req)
        return Response(status=202)

    def DELETE(self, req):
        req.headers['X-Timestamp'] = Timestamp.now().internal
        self.tombstones[req.path] = req.headers['X-Timestamp']
        found = self.objects.pop(req.path, None) is not None
        self.bump(req)
        return Response(status=204 if found else 404)

    def headers_of(self, obj):
        # as the object server: the metadata's time (a POST's) and the
        # data's
        headers = {'Content-Type': 'application/octet-stream',
                   'X-Timestamp': obj['ts'].normal,
                   'X-Backend-Timestamp': obj['ts'].internal,
                   'X-Backend-Data-Timestamp': obj.get(
                       'data_ts', obj['ts']).internal,
                   'Accept-Ranges': 'bytes'}
        headers.update(obj['headers'])
        return headers

    def GET(self, req):
        newest = req.headers.get('X-Newest', '').lower() == 'true'
        if req.path in self.lagging and not newest and \
                self.lagging_reads.get(req.path, 1) > 0:
            if req.path in self.lagging_reads:
                self.lagging_reads[req.path] -= 1
            return self.respond(req, self.lagging[req.path])
        if newest and req.method == 'GET' and \
                req.path in self.lagging and req.path not in self.objects:
            # the newer tombstone sets the lagging replicas' 200s aside
            return self._best_of_set_aside(req, self.set_aside.get(
                req.path, self.lagging[req.path]))
        if newest and req.path in self.newest_kept:
            return self.respond(req, self.newest_kept[req.path])
        if newest and req.path in self.lagging and \
                req.path in self.objects and \
                self._data_time(self.lagging[req.path]) == \
                self._data_time(self.objects[req.path]):
            # Swift orders the replicas by their data's time alone, and of
            # those with the same data keeps the last to answer: the slow
            # one, which missed the POST
            return self.respond(req, self.lagging[req.path])
        if newest and req.method == 'GET' and \
                req.path in self.deleted_during_newest:
            self.deleted_during_newest.discard(req.path)
            obj = self.objects[req.path]
            self.DELETE(Request.blank(req.environ['PATH_INFO'],
                                      method='DELETE'))
            return self._best_of_set_aside(req, obj)
        return self.respond(req, self.objects.get(req.path))

    @staticmethod
    def _data_time(obj):
        return obj.get('data_ts', obj['ts'])

    def replica_answers(self, path):
        """What a HEAD of each of the three primaries of ``path`` answers:
        the lagging replica's version on the first, if one lags."""
        def answer(obj):
            if obj is not None:
                return 200, self.headers_of(obj)
            if path in self.tombstones:
                return 404, {'X-Backend-Timestamp': self.tombstones[path]}
            return 404, {}
        current = answer(self.objects.get(path))
        first = answer(self.lagging[path]) if path in self.lagging \
            else current
        return [first, current, current]

    def primary_answers(self, env):
        """:meth:`swift_mass.proxy.methods.replicas.Replicas.answers` of
        these object servers."""
        path = env['PATH_INFO']
        self.replica_reads.append(path)
        return self.replica_answers(path)

    def _best_of_set_aside(self, req, obj):
        """What Swift's X-Newest GET answers once a newer tombstone set the
        200s of ``obj`` aside."""
        # swift.proxy.controllers.base.Controller.best_response: the first
        # 200's headers (its Content-Length dropped), no body
        resp = HTTPOk(request=req)
        resp.body = None
        update_headers(resp, dict(
            self.headers_of(obj), **{
                'Content-Length': str(len(obj['body'])),
                'Etag': md5(obj['body'], usedforsecurity=False).hexdigest()}))
        if self.set_aside_length is not None:
            resp.headers['Content-Length'] = self.set_aside_length
            resp.headers['Content-Type'] = 'text/html; charset=UTF-8'
        return resp

    def respond(self, req, obj):
        if obj is None:
            return Response(status=404, request=req)
        headers = self.headers_of(obj)
        # as the object server: encryption names the ETag to match in
        # X-Backend-Etag-Is-At
        resp = Response(request=req, conditional_response=True,
                        headers=headers,
                        conditional_etag=resolve_etag_is_at_header(
                            req, headers))
        if self.during_get is not None:
            resp.app_iter = self._racing(obj['body'])
            resp.content_length = len(obj['body'])
        else:
            resp.body = obj['body']
        resp.etag = md5(obj['body'], usedforsecurity=False).hexdigest()
        resp.last_modified = int(float(obj['ts'])) + 1
        return resp

    HEAD = GET

    def _racing(self, body):
        yield body[:10]
        self.during_get()
        yield body[10:]


def object_servers(swift, prefix):
    """Give ``swift``'s object servers generations under ``prefix``, as
    their mass_queue does, registered for the one DEVICE."""
    swift.generations = GenerationWriter(REDIS_URL, Logger(),
                                         prefix=prefix + 'cache:')
    swift.generations.gap_ms = TEST_GAP_MS
    swift.generations.names = lambda: {DEVICE}
    assert swift.generations.heartbeat()
    return swift.generations


def make(prefix, swift=None, conf=None, store_url=REDIS_URL, pin='cache'):
    """One proxy's Mass filter in front of ``swift`` (a new one if None);
    its shared store (and so its generations, which ``swift``'s object
    servers bump) is Redis under ``prefix``."""
    swift = swift or Swift()
    if swift.generations is None and store_url == REDIS_URL:
        object_servers(swift, prefix)
    logger = Logger()
    store = RedisStore(store_url, prefix=prefix)
    # the cache's Redis is the configured store's, under the test's prefix
    conf = dict(conf or {}, redis_url=store_url)
    mass_conf = MassConf(conf)
    mass_conf.store.redis_prefix = prefix
    mass = proxy.MassMiddleware(swift, conf, logger=logger, store=store,
                                mass_conf=mass_conf)
    cache = mass.methods.cache
    cache.validity_check.devices = lambda: {DEVICE}
    cache.replicas.answers = swift.primary_answers
    if cache.generations is not None:
        # no heartbeat thread: the object servers' registration and a
        # test's calls keep Redis's clock fresh enough
        cache.generations._beating_pid = os.getpid()
        cache.generations.gap_ms = TEST_GAP_MS
    if pin:
        if store_url == REDIS_URL:
            store.set_pin('AUTH_t', {'class': 'read', 'method': pin})
            mass.agent.tick()
            if swift.generations is not None:
                # the object servers apply the tenants the leader published
                swift.generations.heartbeat()
        else:
            mass.agent.table = {'AUTH_t': PolicyEntry(
                'read', substore='', method=pin)}
    mass._loop_pid = os.getpid()  # no control loop thread
    # merge's write-through at once (it has a green thread of its own in
    # a proxy; test_merge shows the client does not wait for it)
    mass.methods.merge.spawn = lambda fn, *args: fn(*args)
    # the same for the fill of shared bodies after a miss
    cache.entries.spawn = lambda fn, *args: fn(*args)
    del swift.requests[:], logger.counters[:]
    return mass, swift, logger


def call(mass, path=PATH, method='GET', headers=None, user='owner',
         environ=None, body=None):
    env = {'swift.authorize': authorize_as(user)}
    env.update(environ or {})
    req = Request.blank(path, method=method, headers=headers or {},
                        environ=env)
    if body is not None:
        req.body = body
    resp = req.get_response(mass)
    resp.body  # the client reads all of it
    return resp


def put(mass, body=BODY, path=PATH, headers=None, **kwargs):
    resp = call(mass, path, 'PUT', headers=headers, body=body, **kwargs)
    assert resp.status_int == 201
    return resp
