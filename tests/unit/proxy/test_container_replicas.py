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
"""A reseller admin's container HEAD or GET that asks for the container's
replicas (swift_mass.proxy.container_replicas), through the mass filter
in front of a proxy app with a container ring."""
import json

import pytest

from swift.common.exceptions import ClientException
from swift.common.header_key_dict import HeaderKeyDict
from swift.common.swob import HTTPForbidden, Request

from swift_mass import tags
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import RecordingApp

NODES = [{'ip': '127.0.0.%d' % n, 'port': 6201 + 10 * n,
          'device': 'sdb%d' % n} for n in (1, 2, 3)]


class Ring(object):
    def get_nodes(self, account, container):
        assert (account, container) == ('AUTH_t', 'c')
        return 7, NODES


class ProxyApp(RecordingApp):
    """The proxy app right of Mass, with its container ring."""
    container_ring = Ring()


def heads(answers):
    """A direct HEAD of each node: its headers, or the exception."""
    def head(node, part, account, container, **kwargs):
        assert part == 7
        answer = answers[node['device']]
        if isinstance(answer, Exception):
            raise answer
        # as direct_client answers: headers whatever their case
        return HeaderKeyDict(answer)
    return head


def gets(listings, asked):
    """A direct GET of each node: its rows after the marker, the limit at
    most, or the exception; ``asked`` keeps each call's arguments."""
    def get(node, part, account, container, marker=None, limit=None,
            **kwargs):
        assert part == 7
        asked.append((node['device'], marker, limit))
        rows = listings[node['device']]
        if isinstance(rows, Exception):
            raise rows
        rows = [r for r in rows if r['name'] > (marker or '')][:limit]
        return HeaderKeyDict({'X-Container-Object-Count': str(len(rows))}), \
            rows
    return get


def make(answers, listings=None, asked=None):
    app = ProxyApp()
    mass = proxy.filter_factory({}, urgent_recheck_seconds='0')(app)
    mass.container_replicas.head = heads(answers)
    mass.container_replicas.get = gets(
        listings or {}, [] if asked is None else asked)
    return mass, app


def ask(mass, path='/v1/AUTH_t/c', method='HEAD', reseller=True,
        authorize=None):
    env = {'swift.authorize': authorize or (lambda req: None)}
    if reseller:
        env['reseller_request'] = True
    return Request.blank(path, method=method, environ=env, headers={
        tags.REPLICAS_REQUEST_HEADER: 'true'}).get_response(mass)


ANSWERS = {
    'sdb1': {'X-Container-Object-Count': '0',
             'X-Backend-Storage-Policy-Index': '2'},
    'sdb2': {'X-Container-Object-Count': '0',
             'X-Backend-Storage-Policy-Index': '2'},
    # a replica that missed the DELETE of its objects' rows and the
    # container's new policy
    'sdb3': {'X-Container-Object-Count': '5',
             'X-Backend-Storage-Policy-Index': '0'},
}


def test_a_reseller_admin_sees_each_replica():
    mass, app = make(ANSWERS)
    resp = ask(mass)
    assert resp.status_int == 200
    shown = {k: v for k, v in resp.headers.items()
             if k.startswith(tags.REPLICA_RESPONSE_PREFIX)}
    assert shown == {'X-Mass-Replica-0': '200 0 2',
                     'X-Mass-Replica-1': '200 0 2',
                     'X-Mass-Replica-2': '200 5 0'}
    assert [tags.parse_replica_value(v) for _, v in sorted(
        shown.items())][2] == (200, 5, 0)
    assert app.environs == []  # answered by the filter


def test_a_replica_that_does_not_answer_is_shown_so():
    answers = dict(ANSWERS, sdb2=ClientException('gone', http_status=507),
                   sdb3=OSError('refused'))
    resp = ask(make(answers)[0])
    assert resp.headers['X-Mass-Replica-1'] == '507 0 -1'
    assert resp.headers['X-Mass-Replica-2'] == '0 0 -1'


@pytest.mark.parametrize('request_kwargs', [
    {'reseller': False},  # anyone else: the header is a forged tag
    {'authorize': lambda req: HTTPForbidden(request=req)},
    {'method': 'GET', 'reseller': False},
    {'method': 'GET', 'authorize': lambda req: HTTPForbidden(request=req)},
    {'method': 'PUT'},
    {'path': '/v1/AUTH_t/c/o'},
    {'path': '/v1/AUTH_t/c/o', 'method': 'GET'},
    {'path': '/v1/AUTH_t'},
])
def test_anything_else_is_swifts(request_kwargs):
    mass, app = make(ANSWERS)
    resp = ask(mass, **request_kwargs)
    assert not any(k.startswith(tags.REPLICA_RESPONSE_PREFIX)
                   for k in resp.headers)
    if app.environs:
        # the question does not reach Swift either
        assert all(tags.environ_key(tags.REPLICAS_REQUEST_HEADER) not in env
                   for env in app.environs)


def row(name, when='2026-12-06T20:00:00.000000'):
    return {'name': name, 'hash': 'd41d8cd98f00b204e9800998ecf8427e',
            'bytes': 0, 'content_type': 'text/plain', 'last_modified': when}


def test_a_reseller_admin_reads_the_union_of_the_replicas_listings():
    """One replica still lists rows the others dropped (it missed the
    move's DELETEs), another an older version of a row: the proxy's
    listing reads one replica, this the union, newest row of each name,
    and each replica's answer."""
    newer = row('b', '2026-12-06T20:00:01.000000')
    listings = {'sdb1': [row('b'), row('c')], 'sdb2': [row('a'), newer],
                'sdb3': ClientException('gone', http_status=507)}
    asked = []
    mass, app = make(ANSWERS, listings, asked)
    resp = ask(mass, method='GET')
    assert resp.status_int == 200
    assert resp.content_type == 'application/json'
    assert json.loads(resp.body) == [row('a'), newer, row('c')]
    assert (resp.headers['X-Mass-Replica-0'],
            resp.headers['X-Mass-Replica-1'],
            resp.headers['X-Mass-Replica-2']) == ('200 2 -1', '200 2 -1',
                                                  '507 0 -1')
    # no marker: from the first row; no limit: Swift's listing limit
    assert sorted(asked) == [('sdb1', None, 10000), ('sdb2', None, 10000),
                             ('sdb3', None, 10000)]
    assert app.environs == []  # answered by the filter


def test_the_union_is_paged_as_swifts_listing():
    """A page of the union is its first ``limit`` rows after the marker,
    whole; paging by the last name reads every row once."""
    listings = {'sdb1': [row('a'), row('b'), row('c'), row('d')],
                'sdb2': [row('b'), row('e')], 'sdb3': [row('c'), row('f')]}
    mass, _ = make(ANSWERS, listings)
    names, marker = [], ''
    while True:
        page = json.loads(ask(mass, '/v1/AUTH_t/c?limit=2&marker=' + marker,
                              method='GET').body)
        names += [r['name'] for r in page]
        if len(page) < 2:
            break
        marker = page[-1]['name']
    assert names == ['a', 'b', 'c', 'd', 'e', 'f']


def test_slo_and_symlink_read_the_union_as_swifts_listing():
    """The middlewares left of Mass that rewrite a listing's rows (the
    500 a CI run met when the answer was not rows)."""
    from swift.common.middleware import slo, symlink
    listings = {'sdb1': [dict(row('m'), hash='abc; slo_etag=def')],
                'sdb2': [dict(row('s'), hash='%s; symlink_target=c/t' %
                              row('s')['hash'])], 'sdb3': []}
    mass, _ = make(ANSWERS, listings)
    pipeline = slo.filter_factory({})(symlink.filter_factory({})(mass))
    resp = ask(pipeline, '/v1/AUTH_t/c?format=json', method='GET')
    assert resp.status_int == 200, resp.body
    shown = {r['name']: r for r in json.loads(resp.body)}
    assert shown['m']['slo_etag'] == '"def"'
    assert shown['s']['symlink_path'] == '/v1/AUTH_t/c/t'


def test_limit_and_marker_are_taken_as_swifts_listing_takes_them():
    asked = []
    mass, app = make(ANSWERS, {'sdb1': [row('a')], 'sdb2': [], 'sdb3': []},
                     asked)
    resp = ask(mass, '/v1/AUTH_t/c?limit=10001', method='GET')
    assert resp.status_int == 412
    assert b'Maximum limit is 10000' in resp.body
    resp = ask(mass, '/v1/AUTH_t/c?marker=%FF', method='GET')
    assert resp.status_int == 400
    assert asked == []  # no replica asked
    # not a number: Swift's default
    resp = ask(mass, '/v1/AUTH_t/c?limit=x', method='GET')
    assert json.loads(resp.body) == [row('a')]
    assert asked[-1][2] == 10000
    resp = ask(mass, '/v1/AUTH_t/c?limit=0', method='GET')
    assert json.loads(resp.body) == []
