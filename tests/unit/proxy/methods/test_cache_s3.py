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
"""The ``cache`` method for S3 clients: Swift's own s3api and tempauth in
front of Mass and the tiny Swift of fakes.py, requests signed by botocore
as an S3 client signs them, with ``s3_acl`` off and on.  What an S3
client gets from a hit must be what it gets without Mass, denials
included, and a denied read leaves nothing behind."""
import base64
import time
import urllib.parse

import pytest
from botocore.auth import HmacV1Auth, S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from swift.common.middleware import copy
from swift.common.middleware import crypto as encryption
from swift.common.middleware import tempauth
from swift.common.middleware.crypto import keymaster
from swift.common.middleware.s3api import s3api
from swift.common.middleware.s3api.subresource import ACL, Grant, Owner, \
    User, encode_acl
from swift.common.swob import Request

from swift_mass.generations import object_key
from tests import s3_answers
from tests.unit.proxy.methods.fakes import BODY, PATH, Swift, make

# S3 wants bucket names of 3 characters or more
BUCKET = '/bucket'
KEY = '/bucket/o'
SWIFT_PATH = '/v1/AUTH_t/bucket/o'
# tempauth's users of the account AUTH_t: the owner (.admin), and another
# user, who reads only what a container ACL grants
USERS = {'owner': ('t:owner', 'secret'), 'reader': ('t:reader', 'rsecret')}
REGION = 'us-east-1'


def pipeline(app, s3_acl, encrypted=False):
    """What the SAIO's proxy runs left of Mass, the parts an S3 read
    passes: s3api, tempauth, copy and, if ``encrypted``, keymaster and
    encryption."""
    if encrypted:
        secret = base64.b64encode(b'k' * 32).decode('ascii')
        app = encryption.filter_factory({})(app)
        app = keymaster.filter_factory(
            {'encryption_root_secret': secret})(app)
    app = copy.filter_factory({})(app)
    users = {'user_%s_%s' % tuple(access.split(':')): secret
             for access, secret in USERS.values()}
    users['user_t_owner'] += ' .admin'
    app = tempauth.filter_factory(users)(app)
    return s3api.filter_factory({
        's3_acl': 'true' if s3_acl else 'false', 'location': REGION})(app)


def signed(app, method, path=KEY, user='owner', headers=None, body=b'',
           signer='v4', expires=3600, secret=None):
    """An S3 client's request, signed by botocore (``signer`` 'v2', 'v4'
    or 'presigned', SigV4 in the query), to send to ``app``: a callable
    that sends it and answers the response, read to its end."""
    access, key = USERS[user]
    credentials = Credentials(access, secret or key)
    request = AWSRequest(method=method, url='http://localhost:8080' + path,
                         headers=dict(headers or {}), data=body)
    if signer == 'v2':
        HmacV1Auth(credentials).add_auth(request)
    elif signer == 'v4':
        S3SigV4Auth(credentials, 's3', REGION).add_auth(request)
    else:
        S3SigV4QueryAuth(credentials, 's3', REGION,
                         expires=expires).add_auth(request)
    prepared = request.prepare()
    url = urllib.parse.urlsplit(prepared.url)

    def send():
        req = Request.blank(
            url.path + ('?' + url.query if url.query else ''),
            method=method, headers=dict(prepared.headers),
            environ={'HTTP_HOST': 'localhost:8080'})
        if body:
            req.body = body
        resp = req.get_response(app)
        resp.body  # the client reads all of it
        return resp
    return send


def s3(app, method, path=KEY, **kwargs):
    """An S3 client's request, signed (:func:`signed`) and sent."""
    return signed(app, method, path, **kwargs)()


def presigned(app, method, path=KEY, **kwargs):
    return signed(app, method, path, signer='presigned', **kwargs)


def same_for_a_client(resp):
    """What an S3 client gets from ``resp``, less what differs between any
    two answers (tests/s3_answers.py)."""
    return s3_answers.same_for_a_client(resp.status, resp.headers, resp.body)


class S3Cluster(object):
    """One proxy with Mass and the same proxy without it, both behind
    s3api and tempauth, in front of one tiny Swift whose bucket ``bucket``
    belongs to t:owner."""

    def __init__(self, prefix, s3_acl, encrypted=False):
        self.swift = Swift()
        self.mass, _, self.logger = make(prefix, self.swift)
        self.with_mass = pipeline(self.mass, s3_acl, encrypted)
        self.without_mass = pipeline(self.swift, s3_acl, encrypted)
        owner = Owner('t:owner', 't:owner')
        self.swift.containers = {'/v1/AUTH_t/bucket'}
        self.swift.container_headers['/v1/AUTH_t/bucket'] = encode_acl(
            'container', ACL(owner, [Grant(User('t:owner'),
                                           'FULL_CONTROL')]))
        del self.logger.counters[:]

    def hits(self):
        return self.logger.counters.count('cache.hit')

    def stored(self):
        return self.mass.methods.cache.entries.bodies.get(
            object_key('AUTH_t', 'bucket', 'o'))


@pytest.fixture(params=[False, True], ids=['s3_acl_off', 's3_acl_on'])
def s3_acl(request):
    return request.param


def reads_per_request(s3_acl, method):
    """The object reads s3api sends for one S3 client's GET or HEAD:
    with s3_acl, a HEAD for the object's ACL before a GET."""
    return 2 if s3_acl and method == 'GET' else 1


def put_object(cluster, body=BODY, headers=None):
    resp = s3(cluster.with_mass, 'PUT', headers=headers, body=body)
    assert resp.status_int == 200, resp.body
    return resp


# -- which requests the cache serves ----------------------------------------

class Seen(object):
    """What Mass's cache decided of each request that reached it."""

    def __init__(self, prefix, s3_acl):
        self.cluster = S3Cluster(prefix, s3_acl)
        method = self.cluster.mass.methods.cache
        decide = method.decide
        self.decided = []

        def recorded(env):
            yes = decide(env)
            self.decided.append((env['REQUEST_METHOD'], env['PATH_INFO'],
                                 env.get('QUERY_STRING', ''), yes))
            return yes
        method.decide = recorded


def test_an_s3_clients_reads_are_what_the_cache_serves(prefix, s3_acl):
    cluster = S3Cluster(prefix, s3_acl)
    put_object(cluster)
    for method in ('GET', 'HEAD'):
        for signer in ('v2', 'v4', 'presigned'):
            resp = s3(cluster.with_mass, method, signer=signer)
            assert resp.status_int == 200, (method, signer, resp.body)
    # the first GET filled the cache; every later read was a hit, with
    # s3_acl s3api's HEAD for the ACL before each GET too
    assert cluster.hits() == (7 if s3_acl else 5), cluster.logger.counters
    assert cluster.stored() is not None


@pytest.mark.parametrize('source', ['SLO', 'DLO', 'SYM', 'SSC', 'OV', 'VW',
                                    'MASS', 'TU'])
def test_a_middlewares_subrequest_is_not_an_s3_read(prefix, source):
    method = S3Cluster(prefix, False).mass.methods.cache
    env = Request.blank(PATH, environ={'swift.source': source}).environ
    assert not method.decide(env)
    env['swift.source'] = 'S3'
    assert method.decide(env)


@pytest.mark.parametrize('override', [
    # tempurl's and a pre-authorised subrequest's own REMOTE_USER
    {'REMOTE_USER': '.wsgi.tempurl'},
    {'REMOTE_USER': '.wsgi.pre_authed'},
    # an override set left of s3api: the client's S3 credentials are
    # still there, s3api has not authenticated it with its TEST request
    {'s3api.auth_details': {'access_key': 't:owner'}},
    # no swift_owner: not s3api's s3_acl shape
    {'swift_owner': False},
])
def test_an_override_that_is_not_s3apis_is_left_to_swift(prefix, override):
    method = S3Cluster(prefix, True).mass.methods.cache
    s3acl = {'swift.source': 'S3', 'swift.authorize_override': True,
             'swift_owner': True, 'REMOTE_USER': 'AUTH_t,t:owner'}
    assert method.decide(Request.blank(PATH, environ=s3acl).environ)
    env = Request.blank(PATH, environ=dict(s3acl, **override)).environ
    assert not method.decide(env)
    # keystoneauth's REMOTE_USER is a tuple
    keystone = dict(s3acl, REMOTE_USER=('project-id', 'project'))
    assert method.decide(Request.blank(PATH, environ=keystone).environ)


def test_s3_requests_the_cache_leaves_to_swift(prefix, s3_acl):
    seen = Seen(prefix, s3_acl)
    put_object(seen.cluster)
    del seen.decided[:]
    s3(seen.cluster.with_mass, 'GET')
    s3(seen.cluster.with_mass, 'GET', KEY + '?versionId=null')
    s3(seen.cluster.with_mass, 'GET', KEY + '?partNumber=1')
    s3(seen.cluster.with_mass, 'GET', BUCKET)  # a listing
    served = {(m, q) for m, p, q, yes in seen.decided
              if yes and p == SWIFT_PATH}
    refused = {(m, p, q) for m, p, q, yes in seen.decided if not yes}
    assert ('GET', '') in served
    # s3api's TEST request (s3_acl), a version, a part, the listing
    assert ('GET', SWIFT_PATH, 'version-id=null') in refused
    assert ('GET', SWIFT_PATH, 'part-number=1') in refused
    assert any(m == 'GET' and p == '/v1/AUTH_t/bucket' for m, p, _ in refused)
    if s3_acl:
        assert any(m == 'TEST' for m, _, _ in refused)


# -- what a client gets -----------------------------------------------------

def _s3_conditions(etag, last_modified):
    return [
        {}, {'Range': 'bytes=0-9'}, {'Range': 'bytes=-5'},
        {'Range': 'bytes=95-'}, {'Range': 'bytes=500-'},
        {'Range': 'bytes=0-1,5-7'},
        {'If-Match': etag}, {'If-Match': etag.strip('"')},
        {'If-Match': '"nope"'}, {'If-None-Match': etag},
        {'If-None-Match': '"nope"'}, {'If-None-Match': etag + '-2'},
        {'If-Modified-Since': last_modified},
        {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Unmodified-Since': last_modified},
        {'If-Unmodified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Match': etag, 'Range': 'bytes=2-4'},
    ]


@pytest.mark.parametrize('encrypted', [False, True],
                         ids=['plain', 'encrypted'])
@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_an_s3_hit_is_byte_for_byte_what_swift_gives(prefix, s3_acl,
                                                     method, encrypted):
    cluster = S3Cluster(prefix, s3_acl, encrypted)
    put_object(cluster, headers={'x-amz-meta-colour': 'blue',
                                 'Content-Type': 'text/plain'})
    first = s3(cluster.with_mass, 'GET')
    assert cluster.stored() is not None
    if encrypted:
        assert BODY not in cluster.stored().body
    for headers in _s3_conditions(first.headers['ETag'],
                                  first.headers['Last-Modified']):
        for signer in ('v4', 'presigned'):
            hits = cluster.hits()
            from_cache = s3(cluster.with_mass, method, headers=headers,
                            signer=signer)
            from_swift = s3(cluster.without_mass, method, headers=headers,
                            signer=signer)
            assert same_for_a_client(from_cache) == \
                same_for_a_client(from_swift), headers
            # a failed precondition is Swift's proxy's to answer
            assert cluster.hits() == hits + (
                0 if from_swift.status_int == 412 else
                reads_per_request(s3_acl, method)), headers
    assert first.headers['x-amz-meta-colour'] == 'blue'


# -- denials ----------------------------------------------------------------

def _denials(cluster):
    """Each denial an S3 client can meet here, as (what, response)."""
    app = cluster.with_mass
    return [
        ("another user's private object", s3(app, 'GET', user='reader')),
        ("another user's private object, HEAD",
         s3(app, 'HEAD', user='reader')),
        ('a bucket the account does not have',
         s3(app, 'GET', '/other/o')),
        ('a bad signature', s3(app, 'GET', secret='wrong')),
        ('a bad presigned signature',
         s3(app, 'GET', signer='presigned', secret='wrong')),
    ]


def test_every_denial_is_swifts_and_leaves_nothing(prefix, s3_acl):
    cluster = S3Cluster(prefix, s3_acl)
    put_object(cluster)
    s3(cluster.with_mass, 'GET')  # the owner's read fills the cache
    entries_before = cluster.stored()
    reads_before = len(cluster.swift.object_requests())
    counters_before = list(cluster.logger.counters)
    with_mass = _denials(cluster)
    cluster.with_mass, saved = cluster.without_mass, cluster.with_mass
    without_mass = _denials(cluster)
    cluster.with_mass = saved
    for (what, resp), (_, swift_resp) in zip(with_mass, without_mass):
        assert resp.status_int in (403, 404), (what, resp.status)
        assert same_for_a_client(resp) == same_for_a_client(swift_resp), \
            what
    # no hit served but, with s3_acl, s3api's ACL HEADs of the other
    # user's reads, which the proxy authorises (s3api's own check is on
    # their answer); nothing stored or read for them
    assert cluster.hits() == counters_before.count('cache.hit') + (
        2 if s3_acl else 0)
    assert cluster.stored() is entries_before or \
        cluster.stored().validity == entries_before.validity
    # reads a denied request made reached Swift only as Swift's own
    # checks (s3_acl: s3api's ACL HEAD, which Swift answers)
    mass_reads = [r for r in cluster.swift.object_requests()[reads_before:]
                  if r[2] == 'MASS']
    assert not mass_reads


def test_an_expired_presigned_url_never_reaches_mass(prefix, s3_acl):
    cluster = S3Cluster(prefix, s3_acl)
    put_object(cluster)
    with_mass = presigned(cluster.with_mass, 'GET', expires=1)
    without_mass = presigned(cluster.without_mass, 'GET', expires=1)
    # X-Amz-Date has whole seconds
    time.sleep(2.1)
    before = len(cluster.swift.requests)
    resp = with_mass()
    assert resp.status_int == 403 and b'Request has expired' in resp.body
    assert same_for_a_client(resp) == same_for_a_client(without_mass())
    assert len(cluster.swift.requests) == before


def test_a_public_read_object_admits_another_user(prefix, s3_acl):
    cluster = S3Cluster(prefix, s3_acl)
    put_object(cluster, headers={'x-amz-acl': 'public-read'})
    if not s3_acl:
        # s3api without s3_acl turns a public-read bucket into
        # Swift's read ACL
        cluster.swift.read_acl['/v1/AUTH_t/bucket'] = '.r:*,.rlistings'
    s3(cluster.with_mass, 'GET')
    hits = cluster.hits()
    resp = s3(cluster.with_mass, 'GET', user='reader')
    assert (resp.status_int, resp.body) == (200, BODY)
    assert cluster.hits() == hits + reads_per_request(s3_acl, 'GET')


def test_s3_acl_hits_keep_the_objects_acl(prefix):
    cluster = S3Cluster(prefix, True)
    put_object(cluster)
    s3(cluster.with_mass, 'GET')
    kept = dict((k.lower(), v) for k, v in cluster.stored().headers)
    assert 'x-object-sysmeta-s3api-acl' in kept
    # s3api decides the reader's HEAD and GET from the ACL a hit carries
    hits = cluster.hits()
    assert s3(cluster.with_mass, 'GET', user='reader').status_int == 403
    assert s3(cluster.with_mass, 'HEAD').status_int == 200
    assert cluster.hits() == hits + 2  # the two ACL HEADs


# -- S3 writes fence the cache ----------------------------------------------

def test_s3_writes_are_seen_at_once(prefix, s3_acl):
    cluster = S3Cluster(prefix, s3_acl)
    put_object(cluster)
    assert s3(cluster.with_mass, 'GET').body == BODY
    assert s3(cluster.with_mass, 'GET').body == BODY  # a hit
    put_object(cluster, body=b'v2')
    assert s3(cluster.with_mass, 'GET').body == b'v2'
    # CopyObject onto the key
    s3(cluster.with_mass, 'PUT', '/bucket/src', body=b'v3')
    resp = s3(cluster.with_mass, 'PUT', headers={
        'x-amz-copy-source': '/bucket/src'})
    assert resp.status_int == 200, resp.body
    assert s3(cluster.with_mass, 'GET').body == b'v3'
    assert s3(cluster.with_mass, 'DELETE').status_int == 204
    resp = s3(cluster.with_mass, 'GET')
    assert resp.status_int == 404 and b'NoSuchKey' in resp.body
