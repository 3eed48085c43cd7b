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
"""The cache for S3 clients: boto3 through Swift's s3api on the SAIO, with
tempauth, ``s3_acl`` on (the SAIO's proxies: 8081 with Mass, 8082
without, 8080 with Mass and encryption) and off (two more proxies this
module starts from those configs with ``s3_acl = no``: 8085 with Mass,
8086 without).  s3api drops ``X-Mass-Cache``, so hits are counted from the
proxies' statsd.  ``AUTH_test`` (tempauth's ``test:tester``, the S3 user)
is pinned to the cache for the module; each test has buckets of its own.

Every answer an S3 client gets through a proxy with Mass is compared with
the answer the same request gets through the proxy without it: status,
headers (less the request's ids and date) and body, denials included."""
import configparser
import contextlib
import io
import subprocess
import time
import urllib.parse
import uuid

import boto3
import botocore
import pytest
import requests
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from swift.common import direct_client
from swift.common.storage_policy import POLICIES

from tests import s3_answers
from tests.functional.conftest import Tenant
from tests.functional.test_cache import PROXY, PROXY2, pin, \
    tenant_trusted, generations_trusted
from tests.functional.test_lagging_replica import one_object_server_down
from tests.functional.test_never_stale import PROXY3
from tests.functional.waiting import until

ACCOUNT = 'AUTH_test'
REGION = 'us-east-1'
# tempauth's S3 users (tools/saio.d/proxy-server.conf): the owner of
# AUTH_test, a user of AUTH_test who is not its admin, and the owner of
# another account
OWNER = ('test:tester', 'testing')
OTHER_USER = ('test:tester3', 'testing3')
OTHER_ACCOUNT = ('test2:tester2', 'testing2')
# (8083 is tools/saio keystone's proxy)
S3_ACL_OFF = {'http://127.0.0.1:8085': '/etc/swift/proxy-server/2.conf',
              'http://127.0.0.1:8086': '/etc/swift/proxy-server/3.conf'}


def swift_api(method, proxy, container, obj=None, **kwargs):
    """A Swift API request of tempauth's test:tester to AUTH_test."""
    global _token
    if _token is None:
        _token = Tenant(*OWNER).token
    kwargs.setdefault('timeout', 30)
    kwargs['headers'] = dict(kwargs.get('headers') or {},
                             **{'X-Auth-Token': _token})
    path = '/'.join(part for part in (ACCOUNT, container, obj) if part)
    return requests.request(method, '%s/v1/%s' % (proxy, path), **kwargs)


_token = None


def s3_client(endpoint, user=OWNER, signature='s3v4'):
    """boto3's S3 client of ``endpoint``; ``user`` is (access key,
    secret), or a Keystone user of accounts.json with its EC2
    credential."""
    if isinstance(user, dict):
        user = (user['ec2_access'], user['ec2_secret'])
    return boto3.client(
        's3', endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id=user[0], aws_secret_access_key=user[1],
        config=Config(signature_version=signature, retries={
            'max_attempts': 1}, s3={'addressing_style': 'path'}))


def signed(method, url, user=OWNER, headers=None):
    """The headers of ``method url`` signed as an S3 client (SigV4) signs
    them, to send with requests: the raw answer, byte for byte."""
    request = AWSRequest(method=method, url=url, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(*user), 's3', REGION).add_auth(request)
    return dict(request.prepare().headers)


def raw(method, url, user=OWNER, headers=None):
    return requests.request(method, url, headers=signed(
        method, url, user, headers), timeout=30)


def same_for_a_client(resp):
    """What an S3 client gets from ``resp``, less what differs between any
    two answers (tests/s3_answers.py)."""
    return s3_answers.same_for_a_client(resp.status_code, resp.headers,
                                        resp.content)


@contextlib.contextmanager
def proxy_with_s3_acl_off(url, conf_path, directory):
    """A proxy from ``conf_path`` listening at ``url``'s port, with
    ``s3_acl = no``, one worker, and its own log name."""
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(conf_path)
    port = urllib.parse.urlsplit(url).port
    conf['DEFAULT']['bind_port'] = str(port)
    conf['DEFAULT']['workers'] = '1'
    conf['DEFAULT']['log_name'] = 'proxy-server-%d' % port
    conf['filter:s3api']['s3_acl'] = 'no'
    path = directory / ('proxy-%d.conf' % port)
    with open(path, 'w') as f:
        conf.write(f)
    log = open(directory / ('proxy-%d.log' % port), 'wb')
    proc = subprocess.Popen(['swift-proxy-server', str(path)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        def answers():
            try:
                return requests.get(url + '/healthcheck', timeout=2).ok
            except requests.ConnectionError:
                assert proc.poll() is None, \
                    'the proxy on %d exited: see %s' % (port, log.name)
                return False
        until(answers, 30, 'a proxy with s3_acl off on %d' % port)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture(scope='module')
def proxies(cluster, store, tmp_path_factory):  # noqa: F811
    """The pairs (with Mass, without Mass, s3_acl) this module compares,
    once AUTH_test is pinned to the cache and its generations trusted."""
    directory = tmp_path_factory.mktemp('s3-acl-off')
    generations_trusted(store)
    pin(ACCOUNT, 'cache')
    with contextlib.ExitStack() as stack:
        for url, conf_path in S3_ACL_OFF.items():
            stack.enter_context(
                proxy_with_s3_acl_off(url, conf_path, directory))
        tenant_trusted(ACCOUNT)
        yield {'s3_acl_on': (PROXY2, PROXY3, True),
               's3_acl_off': tuple(S3_ACL_OFF) + (False,)}
    store.delete_pin(ACCOUNT)


@pytest.fixture(params=['s3_acl_on', 's3_acl_off'])
def pair(proxies, request):
    return proxies[request.param]


class Bucket(object):
    """A bucket of AUTH_test made through the proxy without Mass of a
    pair (with s3_acl, s3api gives it its ACL), emptied and deleted
    afterwards."""

    def __init__(self, pair):
        self.with_mass, self.without_mass, self.s3_acl = pair
        self.name = 'mass-s3-%s' % uuid.uuid4().hex[:12]
        self.owner = s3_client(self.without_mass)
        self.owner.create_bucket(Bucket=self.name)

    def url(self, proxy, key):
        return '%s/%s/%s' % (proxy, self.name, key)

    def remove(self):
        for obj in self.owner.list_objects(Bucket=self.name).get(
                'Contents', []):
            self.owner.delete_object(Bucket=self.name, Key=obj['Key'])
        self.owner.delete_bucket(Bucket=self.name)


@pytest.fixture
def bucket(pair):
    made = Bucket(pair)
    yield made
    made.remove()


def hits_of(statsd, reads):
    """The ``cache.hit`` statsd lines the proxies sent while ``reads()``
    ran (nothing else reads the SAIO meanwhile)."""
    statsd.metrics(wait=0.3, limit=2.0)  # what came before
    reads()
    return sum(1 for name in statsd.metrics(wait=1.0)
               if name.endswith('cache.hit'))


def test_an_s3_clients_reads_are_served_from_the_cache(bucket, statsd):
    client = s3_client(bucket.with_mass)
    client.put_object(Bucket=bucket.name, Key='o', Body=b'x' * 4096)

    def reads():
        for _ in range(5):
            got = client.get_object(Bucket=bucket.name, Key='o')
            assert got['Body'].read() == b'x' * 4096
            client.head_object(Bucket=bucket.name, Key='o')
    hits = hits_of(statsd, reads)
    # the first GET fills it: the other 4 GETs and the 5 HEADs are hits,
    # and with s3_acl the HEAD s3api sends for the object's ACL before
    # each of those 4 GETs too
    expected = 4 + 5 + (4 if bucket.s3_acl else 0)
    print('%d S3 reads (s3_acl %s): %d hits'
          % (10, 'on' if bucket.s3_acl else 'off', hits))
    assert hits >= expected


def _conditions(etag, last_modified):
    return [
        {}, {'Range': 'bytes=0-9'}, {'Range': 'bytes=-5'},
        {'Range': 'bytes=4000-'}, {'Range': 'bytes=9000-'},
        {'Range': 'bytes=0-1,5-7'},
        {'If-Match': etag}, {'If-Match': '"nope"'},
        {'If-None-Match': etag}, {'If-None-Match': '"nope"'},
        {'If-Modified-Since': last_modified},
        {'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Unmodified-Since': last_modified},
        {'If-Unmodified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT'},
        {'If-Match': etag, 'Range': 'bytes=2-4'},
    ]


@pytest.mark.parametrize('written_via', ['with_mass', 'encrypting'])
def test_an_s3_hit_is_byte_for_byte_what_swift_gives(bucket, statsd,
                                                     written_via):
    """With and without encryption at rest (8080 encrypts what it writes;
    every proxy decrypts)."""
    body = bytes(range(256)) * 16
    if written_via == 'with_mass':
        s3_client(bucket.with_mass).put_object(
            Bucket=bucket.name, Key='o', Body=body, ContentType='text/plain',
            Metadata={'colour': 'blue'})
    elif bucket.s3_acl:
        s3_client(PROXY).put_object(
            Bucket=bucket.name, Key='o', Body=body, ContentType='text/plain',
            Metadata={'colour': 'blue'})
    else:
        # 8080 has s3_acl on, and the bucket no S3 ACL: the Swift API
        resp = swift_api('PUT', PROXY, bucket.name, 'o', data=body, headers={
            'Content-Type': 'text/plain', 'X-Object-Meta-Colour': 'blue'})
        assert resp.status_code == 201
    reader = bucket.with_mass
    first = raw('GET', bucket.url(reader, 'o'))
    assert first.content == body
    compared = []

    def reads():
        for headers in _conditions(first.headers['ETag'],
                                   first.headers['Last-Modified']):
            for method in ('GET', 'HEAD'):
                from_cache = raw(method, bucket.url(reader, 'o'),
                                 headers=headers)
                from_swift = raw(method, bucket.url(bucket.without_mass,
                                                    'o'), headers=headers)
                assert same_for_a_client(from_cache) == \
                    same_for_a_client(from_swift), (method, headers)
                compared.append(from_cache.status_code)
    hits = hits_of(statsd, reads)
    print('%d answers compared (%s), %d hits' % (
        len(compared), ', '.join(sorted(set(map(str, compared)))), hits))
    assert hits >= len(compared) - compared.count(412)


def _denials(bucket, proxy):
    """Each denial an S3 client meets, as (what, raw answer)."""
    url = bucket.url(proxy, 'o')
    presigned = s3_client(proxy).generate_presigned_url(
        'get_object', Params={'Bucket': bucket.name, 'Key': 'o'},
        ExpiresIn=1)
    time.sleep(2.1)  # its X-Amz-Date has whole seconds
    return [
        ("another user's private object", raw('GET', url, OTHER_USER)),
        ("another user's private object, HEAD",
         raw('HEAD', url, OTHER_USER)),
        ('a bucket of another account',
         raw('GET', url, OTHER_ACCOUNT)),
        ('a bad signature', raw('GET', url, (OWNER[0], 'wrong'))),
        ('an expired presigned URL', requests.get(presigned, timeout=30)),
        ('an anonymous read of a public-read object',
         requests.get(bucket.url(proxy, 'public'), timeout=30)),
    ]


def test_every_denial_is_what_swift_answers(bucket, statsd):
    client = s3_client(bucket.with_mass)
    client.put_object(Bucket=bucket.name, Key='o', Body=b'private')
    client.put_object(Bucket=bucket.name, Key='public', Body=b'public',
                      ACL='public-read')
    for key in ('o', 'public'):
        client.get_object(Bucket=bucket.name, Key=key)['Body'].read()
        client.get_object(Bucket=bucket.name, Key=key)['Body'].read()
    with_mass = _denials(bucket, bucket.with_mass)
    without_mass = _denials(bucket, bucket.without_mass)
    for (what, resp), (_, swift_resp) in zip(with_mass, without_mass):
        print('%s: %d %s' % (what, resp.status_code, resp.content[:120]))
        assert resp.status_code >= 400, what
        assert same_for_a_client(resp) == same_for_a_client(swift_resp), \
            what


def test_s3_writes_through_any_proxy_are_read_at_once(bucket, statsd):
    """PutObject, CopyObject, CompleteMultipartUpload and DeleteObject,
    through the proxy with Mass and the one without, each read back
    through the proxy with Mass twice (a hit the second time, but after
    an MPU: an SLO is never cached) by an S3 client and a Swift client."""
    writers = [s3_client(bucket.with_mass), s3_client(bucket.without_mass)]
    reader = s3_client(bucket.with_mass)
    name = bucket.name
    writers[1].put_object(Bucket=name, Key='src', Body=b'copied')
    expected = None
    steps = []

    def read_back():
        for _ in range(2):
            try:
                got = reader.get_object(Bucket=name, Key='o')['Body'].read()
            except botocore.exceptions.ClientError as err:
                assert err.response['Error']['Code'] == 'NoSuchKey'
                got = None
            assert got == expected, steps

    def reads():
        nonlocal expected
        for round_ in range(3):
            for writer in writers:
                expected = b'put %d' % round_
                writer.put_object(Bucket=name, Key='o', Body=expected)
                steps.append('put')
                read_back()
                writer.copy_object(Bucket=name, Key='o', CopySource={
                    'Bucket': name, 'Key': 'src'})
                expected = b'copied'
                steps.append('copy')
                read_back()
                upload = writer.create_multipart_upload(Bucket=name,
                                                        Key='o')
                part = writer.upload_part(
                    Bucket=name, Key='o', PartNumber=1, Body=b'part',
                    UploadId=upload['UploadId'])
                writer.complete_multipart_upload(
                    Bucket=name, Key='o', UploadId=upload['UploadId'],
                    MultipartUpload={'Parts': [
                        {'PartNumber': 1, 'ETag': part['ETag']}]})
                expected = b'part'
                steps.append('mpu')
                read_back()
                writer.delete_object(Bucket=name, Key='o')
                expected = None
                steps.append('delete')
                read_back()
    hits = hits_of(statsd, reads)
    print('%d S3 writes, each read back twice: %d hits' % (len(steps), hits))
    assert hits > 0


def lagging_keys(bucket, keys, server):
    """The keys whose replica on object server ``server`` holds v1 (a
    direct GET of its device)."""
    policy = POLICIES.get_by_name(swift_api(
        'HEAD', PROXY3, bucket.name).headers['X-Storage-Policy'])
    ring = POLICIES.get_object_ring(int(policy), '/etc/swift')
    lagging = []
    for key in keys:
        part, nodes = ring.get_nodes(ACCOUNT, bucket.name, key)
        for node in nodes:
            if object_server_of(node) != server:
                continue
            _, body = direct_client.direct_get_object(
                node, part, ACCOUNT, bucket.name, key, headers={
                    'X-Backend-Storage-Policy-Index': str(int(policy))})
            if body == b'v1':
                lagging.append(key)
    return ring, lagging


def object_server_of(node):
    """tools/saio's object server N listens on 62N0 (62N6 for its
    HDD-class device)."""
    return node['port'] // 10 % 10


def test_an_s3_write_a_replica_missed_is_never_read_stale(bucket):
    """v1 written through the proxy without Mass and cached; v2 written
    by an S3 client through the proxy with Mass while an object server
    holding replicas of the bucket is down, so its replicas keep v1: every
    read through the proxy with Mass is v2."""
    keys = ['o%02d' % i for i in range(12)]
    writer = s3_client(bucket.without_mass)
    reader = s3_client(bucket.with_mass)
    for key in keys:
        writer.put_object(Bucket=bucket.name, Key=key, Body=b'v1')
    for key in keys:
        for _ in range(2):
            assert reader.get_object(Bucket=bucket.name, Key=key)[
                'Body'].read() == b'v1'
    ring, _ = lagging_keys(bucket, [], 0)
    server = object_server_of([d for d in ring.devs if d][-1])
    with one_object_server_down(server):
        for key in keys:
            s3_client(bucket.with_mass).put_object(
                Bucket=bucket.name, Key=key, Body=io.BytesIO(b'v2'))
    _, lagging = lagging_keys(bucket, keys, server)
    assert lagging, 'no replica lags: the fault did not happen'
    stale = [(key, got) for _ in range(3) for key in keys
             for got in [reader.get_object(Bucket=bucket.name, Key=key)[
                 'Body'].read()] if got != b'v2']
    print('%d reads of %d objects after v2, %d of them lagging on object '
          'server %d: %d stale' % (3 * len(keys), len(keys), len(lagging),
                                   server, len(stale)))
    assert stale == []
