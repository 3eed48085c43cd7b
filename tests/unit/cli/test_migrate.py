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
"""swift-mass migrate: the pure decisions and the procedure against an
in-memory Swift that crashes at every possible step (the proxy's refusal
of writes to a container being moved: tests/unit/proxy/test_marks.py)."""
import argparse
import hashlib
import json
import socket
import time
import urllib.parse
from unittest import mock

import pytest
from swift.common.middleware import gatekeeper
from swift.common.swob import Request, Response
from swift.common.utils import Timestamp
from swiftclient.exceptions import ClientException

from swift_mass import tags
from swift_mass.cli import client as cli_client, control, main as cli, migrate
from swift_mass.control.entry import PolicyEntry
from swift_mass.proxy import container_replicas, marks, \
    middleware as proxy

EMPTY = hashlib.md5(b'').hexdigest()
POLICIES = [{'name': 'standard', 'default': True},
            {'name': 'fast', 'aliases': 'fast, ssd'}, {'name': 'bulk'}]


# --- an in-memory account behind swiftclient's Connection API -------------

class Crash(Exception):
    """The process died: every later call of the run fails too."""


class FakeSwift(object):
    """One account, with the semantics migrate relies on: policies fixed
    at creation, 409 on a non-empty container DELETE, server-side copy of
    manifests and symlinks only with the right query, a new timestamp for
    every write, expiring objects, If-None-Match, marks kept apart from
    what HEAD shows (sysmeta).

    Like the object servers, each policy keeps the newest write of every
    object, data or tombstone (``tombstones``, by policy, container and
    name): a write dated before it is answered 202 (a PUT), 409 (a DELETE
    of older data) or 404 (a DELETE of something deleted later), and
    changes nothing."""

    def __init__(self):
        self.containers = {}
        self.tombstones = {}
        #: {container: how many rows of objects deleted the listing of its
        #: third replica still holds (object updates it has not had yet)},
        #: and for how many more of the run's sleeps (None: for good)
        self.lagging_rows = {}
        self.lagging_for = None
        #: {container: {name: listing entry}} of the objects deleted last
        self.deleted_rows = {}
        #: {container: names} whose fenced DELETE the third replica alone
        #: still lists until the object is written again (with
        #: ``fences_late_on_one``: the object replica that should have told
        #: it took the fence after the DELETE; a probe reaches it)
        self.minority_rows = {}
        self.fences_late_on_one = False
        #: {container: {name: listing entry}}: rows of objects deleted in
        #: the containers of ``holding_updates`` that a majority of
        #: replicas still lists (the DELETEs' container updates wait in
        #: async pendings) until the clock reaches ``updates_arrive_at``
        #: (None: never), or, with ``fences_late``, rows of fenced DELETEs
        #: only, until the object is written again (an object replica took
        #: the fence after the DELETE, which it refused while a quorum took
        #: it; a probe reaches it)
        self.held_rows = {}
        self.holding_updates = set()
        self.updates_arrive_at = None
        self.fences_late = False
        self.now = 1000.0
        self.ts = 0
        self.crash_at = None
        self.mutations = 0
        self.crashed = False

    def sleep(self, seconds):
        self.now += seconds
        if self.lagging_for is not None:
            self.lagging_for -= 1
            if self.lagging_for <= 0:
                self.lagging_rows.clear()

    def replicas(self, name):
        """What a direct HEAD of each of the container's three replicas
        answers: (status, object count, policy index)."""
        container = self.containers[name]
        index = [p['name'] for p in POLICIES].index(container['policy'])
        return [(204, len(rows), index)
                for rows in self.replica_listings(name)]

    def replica_listings(self, name):
        """The rows each of the container's three replicas lists: the
        proxy's listing reads the first two."""
        listing = self.listing(name)
        deleted = self.deleted_rows.get(name, {})
        behind = [deleted[n] for n in sorted(deleted)
                  if n not in self.containers[name]['objects']]
        third = behind[:self.lagging_rows.get(name, 0)] + [
            e for e in behind
            if e['name'] in self.minority_rows.get(name, ())]
        return [listing, listing, sorted(
            listing + [e for e in third if e not in listing],
            key=lambda e: e['name'])]

    def clock(self):
        return self.now

    def tick(self):
        """The proxy's clock: a later time for every write."""
        self.ts += 1
        return Timestamp(self.now, delta=self.ts)

    def newest(self, container, name):
        """The time of the newest write of an object of ``container`` in
        its policy, data or tombstone (None: none)."""
        found = self.containers[container]
        obj = found['objects'].get(name)
        if obj is not None:
            return obj['ts']
        return self.tombstones.get((found['policy'], container, name))

    def mutate(self):
        if self.crashed:
            raise Crash()
        self.mutations += 1
        if self.crash_at is not None and self.mutations >= self.crash_at:
            self.crashed = True
            raise Crash()

    def alive(self):
        if self.crashed:
            raise Crash()

    # helpers for tests
    def add_container(self, name, policy='standard', headers=None):
        self.containers[name] = {'policy': policy, 'headers': dict(
            headers or {}), 'objects': {}, 'mark': None}

    def add_object(self, container, name, **obj):
        obj.setdefault('kind', 'plain')
        obj.setdefault('content_type', 'application/octet-stream')
        obj.setdefault('meta', {})
        obj.setdefault('body', b'')
        obj['ts'] = self.tick()
        if obj['kind'] == 'plain':
            obj['etag'] = hashlib.md5(obj['body']).hexdigest()
        self.containers[container]['objects'][name] = obj
        if obj['kind'] == 'slo':
            self._manifest(obj)

    def _find(self, path):
        container, name = path.lstrip('/').split('/', 1)
        obj = self.containers.get(container, {}).get('objects', {}).get(name)
        if obj is None or self._expired(obj):
            return None
        return obj

    def _expired(self, obj, at=None):
        """Whether ``obj`` is expired now, or at the time of a write
        (``at``), as the object servers judge a write."""
        when = self.now if at is None else float(at)
        return obj.get('delete_at') is not None and \
            obj['delete_at'] <= when

    def _manifest(self, obj):
        segments = [self._find(p) for p in obj['segments']]
        if any(s is None for s in segments):
            raise ClientException('segment missing', http_status=400)
        # like SLO: the stored manifest records each segment's
        # last-modified, the SLO's ETag only their ETags
        obj['manifest_hash'] = hashlib.md5(json.dumps(
            [[p, s['ts'].internal] for p, s in zip(obj['segments'],
                                                   segments)]
        ).encode()).hexdigest()
        obj['slo_etag'] = hashlib.md5(''.join(
            s['etag'] for s in segments).encode()).hexdigest()
        obj['bytes'] = sum(len(s['body']) for s in segments)

    def entry(self, name, obj):
        entry = {'name': name, 'content_type': obj['content_type'],
                 'last_modified': obj['ts'].isoformat}
        if obj['kind'] == 'slo':
            entry.update(hash=obj['manifest_hash'], bytes=obj['bytes'],
                         slo_etag='"%s"' % obj['slo_etag'])
        elif obj['kind'] == 'plain':
            entry.update(hash=obj['etag'], bytes=len(obj['body']))
        else:
            entry.update(hash=EMPTY, bytes=0)
        if obj['kind'] == 'symlink':
            entry['symlink_path'] = '/v1/AUTH_t/' + obj['target']
        return entry

    def listing(self, container):
        objects = self.containers[container]['objects']
        entries = [self.entry(n, objects[n]) for n in objects
                   if not self._expired(objects[n])]
        if self.updates_arrive_at is not None and \
                self.now >= self.updates_arrive_at:
            self.held_rows.clear()
        entries += [e for n, e in self.held_rows.get(container, {}).items()
                    if n not in objects]
        return sorted(entries, key=lambda e: e['name'])


class FakeConn(object):
    """swiftclient's Connection on the account; listings come a page of
    ``page`` entries at a time, whole only with ``full_listing``.

    ``mass``: whether the proxy runs the mass filter (a proxy without it
    refuses nobody's writes); ``keeps_timestamps``: whether it gives a
    reseller admin's X-Timestamp back (gatekeeper shunts everybody's)."""

    def __init__(self, swift, reseller=True, page=10000, mass=True,
                 keeps_timestamps=True):
        self.swift = swift
        self.reseller = reseller
        self.page = page
        self.mass = mass
        self.keeps_timestamps = keeps_timestamps

    def _container(self, name):
        container = self.swift.containers.get(name)
        if container is None:
            raise ClientException('no container', http_status=404)
        return container

    def _refuse(self, container):
        if self.mass and not self.reseller and self.swift.containers.get(
                container, {}).get('mark'):
            raise ClientException('migrating', http_status=503)

    def get_capabilities(self):
        return {'mass_migrate': {}, 'swift': {'policies': POLICIES}}

    def _listed(self, entries, limit, full_listing):
        # as Swift and swiftclient: a page at most per request, and with
        # full_listing every page, asked for from the last name on
        if full_listing:
            return entries
        return entries[:min(limit or self.page, self.page)]

    def get_account(self, marker='', limit=None, full_listing=False):
        self.swift.alive()
        names = sorted(n for n in self.swift.containers if n > marker)
        return {}, self._listed([{'name': n, 'count': len(
            self.swift.containers[n]['objects'])} for n in names], limit,
            full_listing)

    def head_container(self, name, headers=None):
        self.swift.alive()
        container = self._container(name)
        if self.mass and self.reseller and \
                (headers or {}).get(tags.REPLICAS_REQUEST_HEADER):
            # the mass filter's answer (swift_mass.proxy.container_replicas)
            return {'%s%d' % (tags.REPLICA_RESPONSE_PREFIX, i):
                    tags.replica_value(*answer) for i, answer in
                    enumerate(self.swift.replicas(name))}
        objects = [o for o in container['objects'].values()
                   if not self.swift._expired(o)]
        shown = {'X-Mass-Migrating': container['mark']} \
            if self.reseller and container['mark'] else {}
        return dict(container['headers'], **dict(shown, **{
            'X-Storage-Policy': container['policy'],
            'X-Container-Object-Count': str(len(objects)),
            'X-Container-Bytes-Used': str(sum(
                len(o['body']) for o in objects))}))

    def get_container(self, name, marker='', limit=None, prefix='',
                      full_listing=False, headers=None):
        self.swift.alive()
        self._container(name)
        if self.mass and self.reseller and \
                (headers or {}).get(tags.REPLICAS_REQUEST_HEADER):
            # the mass filter's answer (swift_mass.proxy.container_replicas)
            listings = self.swift.replica_listings(name)
            answers = container_replicas.replica_headers(
                self.swift.replicas(name))
            limit = min(limit or self.page, self.page)

            def page(after):
                return container_replicas.merged_listing(
                    [[e for e in rows if e['name'] > after][:limit]
                     for rows in listings], limit)
            rows = page(marker or '')
            # swiftclient's full_listing: the next page after the last name
            # until one is empty
            while full_listing and rows and len(rows) % limit == 0:
                more = page(rows[-1]['name'])
                if not more:
                    break
                rows += more
            return answers, rows
        entries = [e for e in self.swift.listing(name)
                   if e['name'] > marker and e['name'].startswith(prefix)]
        return {}, self._listed(entries, limit, full_listing)

    def _timestamp(self, headers):
        """The time of a write: the X-Timestamp a reseller admin sent
        through a proxy that keeps it, else the proxy's clock."""
        sent = headers.get('x-timestamp')
        if sent and self.reseller and self.mass and self.keeps_timestamps:
            return Timestamp(sent)
        return self.swift.tick()

    @staticmethod
    def _answer(response_dict, status):
        if response_dict is not None:
            response_dict['status'] = status

    def put_container(self, name, headers=None):
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._refuse(name)
        self.swift.mutate()
        policy = headers.pop('x-storage-policy', None)
        mark = headers.pop('x-mass-migrating', None)
        container = self.swift.containers.get(name)
        if container is None:
            self.swift.add_container(name, policy or 'standard')
            container = self.swift.containers[name]
        elif policy and policy != container['policy']:
            raise ClientException('policy conflict', http_status=409)
        for key, value in headers.items():
            if value:
                container['headers'][key] = value
            else:
                container['headers'].pop(key, None)
        if mark is not None and self.reseller:
            container['mark'] = mark or None

    def post_container(self, name, headers):
        self._refuse(name)
        self.swift.mutate()
        container = self._container(name)
        for key, value in headers.items():
            key = key.lower()
            if key == 'x-mass-migrating':
                container['mark'] = (value or None) if self.reseller \
                    else container['mark']
            elif key.startswith('x-remove-'):
                container['headers'].pop('x-' + key[len('x-remove-'):],
                                         None)
            elif value:
                container['headers'][key] = value
            else:
                container['headers'].pop(key, None)

    def delete_container(self, name):
        self._refuse(name)
        self.swift.mutate()
        self._container(name)
        if self.swift.listing(name):
            raise ClientException('not empty', http_status=409)
        del self.swift.containers[name]

    def _object(self, container, name):
        obj = self._container(container)['objects'].get(name)
        if obj is None or self.swift._expired(obj):
            raise ClientException('no object', http_status=404)
        return obj

    def head_object(self, container, name, query_string=None,
                    headers=None):
        # one replica: X-Newest (in ``headers``) changes nothing
        self.swift.alive()
        obj = self._object(container, name)
        query = query_string or ''
        headers = {'Content-Type': obj['content_type'],
                   'X-Timestamp': written(obj).normal}
        headers.update({'X-Object-Meta-' + k: v
                        for k, v in obj['meta'].items()})
        if obj.get('delete_at'):
            headers['X-Delete-At'] = str(int(obj['delete_at']))
        kind = obj['kind']
        if kind == 'symlink' and 'symlink=get' not in query:
            return self.head_object(*obj['target'].split('/', 1))
        if kind == 'plain':
            headers.update(Etag=obj['etag'],
                           **{'Content-Length': str(len(obj['body']))})
        elif kind == 'slo' and 'multipart-manifest=get' in query:
            # like SLO: a manifest GET/HEAD is application/json
            headers.update({'Etag': obj['manifest_hash'],
                            'Content-Length': '300',
                            'Content-Type': 'application/json; '
                                            'charset=utf-8',
                            'X-Static-Large-Object': 'True'})
        elif kind == 'slo':
            headers.update({'Etag': '"%s"' % obj['slo_etag'],
                            'Content-Length': str(obj['bytes'])})
        elif kind == 'dlo':
            headers.update({'Etag': EMPTY, 'Content-Length': '0',
                            'X-Object-Manifest': obj['prefix']})
        else:
            headers.update({'Etag': EMPTY, 'Content-Length': '0',
                            'X-Symlink-Target': obj['target']})
        return headers

    def get_object(self, container, name):
        self.swift.alive()
        obj = self._object(container, name)
        return self.head_object(container, name), obj['body']

    def put_object(self, container, name, contents, content_length=None,
                   headers=None, query_string=None, response_dict=None):
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._refuse(container)
        self.swift.mutate()
        target = self._container(container)
        timestamp = self._timestamp(headers)
        existing = target['objects'].get(name)
        if headers.get('if-none-match') == '*' and existing is not None \
                and not self.swift._expired(existing):
            raise ClientException('exists', http_status=412)
        query = query_string or ''
        if 'x-copy-from' in headers:
            source = self.swift._find(
                urllib.parse.unquote(headers['x-copy-from']))
            if source is None:
                raise ClientException('no source', http_status=404)
            obj = json.loads(json.dumps(
                {k: v for k, v in source.items()
                 if k not in ('body', 'ts', 'meta_ts')}))
            obj['body'] = source['body']
            if source['kind'] == 'symlink' and 'symlink=get' not in query:
                obj = dict(self.swift._find(source['target']))
            elif source['kind'] in ('slo', 'dlo') and \
                    'multipart-manifest=get' not in query:
                obj = {'kind': 'plain', 'body': b'concatenated',
                       'content_type': source['content_type'],
                       'meta': dict(source['meta'])}
            if obj['kind'] == 'plain':
                obj['etag'] = hashlib.md5(obj['body']).hexdigest()
            if obj['kind'] == 'slo':
                self.swift._manifest(obj)
        else:
            body = contents.encode() if isinstance(contents, str) \
                else contents
            obj = {'kind': 'plain', 'body': body,
                   'etag': hashlib.md5(body).hexdigest(), 'meta': {},
                   'content_type': headers.get('content-type',
                                               'application/octet-stream')}
            if 'x-delete-after' in headers:
                obj['delete_at'] = self.swift.now + int(
                    headers['x-delete-after'])
            elif 'x-delete-at' in headers:
                obj['delete_at'] = int(headers['x-delete-at'])
        newest = self.swift.newest(container, name)
        if newest is not None and newest >= timestamp:
            # Swift's answer to the 409 of the object servers
            return self._answer(response_dict, 202)
        obj['ts'] = timestamp
        target['objects'][name] = obj
        self.swift.held_rows.get(container, {}).pop(name, None)
        self.swift.minority_rows.get(container, set()).discard(name)
        self.swift.tombstones.pop((target['policy'], container, name), None)
        self._answer(response_dict, 201)

    def post_object(self, container, name, headers, response_dict=None):
        """Swift's fast POST: the user metadata and X-Delete-At replaced,
        dated apart from the data (``meta_ts``), which a DELETE does not
        compare; a symlink's answered with a redirect, once made."""
        self._refuse(container)
        self.swift.mutate()
        self._container(container)
        obj = self._object(container, name)
        headers = {k.lower(): v for k, v in headers.items()}
        timestamp = self._timestamp(headers)
        if written(obj) >= timestamp:
            raise ClientException('a later write', http_status=409)
        obj['meta'] = {k[len('x-object-meta-'):].title(): v
                       for k, v in headers.items()
                       if k.startswith('x-object-meta-')}
        obj['delete_at'] = int(headers['x-delete-at']) \
            if 'x-delete-at' in headers else None
        obj['meta_ts'] = timestamp
        if obj['kind'] == 'symlink':
            raise ClientException('Object POST failed', http_status=307)
        self._answer(response_dict, 202)

    def delete_object(self, container, name, headers=None,
                      response_dict=None):
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._refuse(container)
        self.swift.mutate()
        target = self._container(container)
        timestamp = self._timestamp(headers)
        obj = target['objects'].get(name)
        live = obj is not None and not self.swift._expired(obj, timestamp)
        if live and obj['ts'] >= timestamp:
            raise ClientException('a later version', http_status=409)
        if 'x-if-delete-at' in headers:
            if not live:
                raise ClientException('no object', http_status=404)
            if int(headers['x-if-delete-at']) != obj.get('delete_at'):
                raise ClientException('X-If-Delete-At and X-Delete-At do '
                                      'not match', http_status=412)
        key = (target['policy'], container, name)
        tombstone = self.swift.tombstones.get(key)
        if tombstone is None or tombstone < timestamp:
            self.swift.tombstones[key] = timestamp
            if live:
                self.swift.deleted_rows.setdefault(container, {})[name] = \
                    self.swift.entry(name, obj)
            if live and self.swift.fences_late_on_one and \
                    'x-if-delete-at' in headers:
                self.swift.minority_rows.setdefault(container, set()).add(
                    name)
            elif live and container in self.swift.holding_updates and (
                    'x-if-delete-at' in headers or
                    not self.swift.fences_late):
                self.swift.held_rows.setdefault(container, {})[name] = \
                    self.swift.entry(name, obj)
            target['objects'].pop(name, None)
        if not live:
            raise ClientException('no object', http_status=404)
        self._answer(response_dict, 204)


def written(obj):
    """When an object was last written, a POST included: the X-Timestamp
    HEAD shows."""
    return max(obj['ts'], obj.get('meta_ts') or obj['ts'])


def populate(swift, n=12):
    """A container of every kind, with segments in it and beside it."""
    swift.add_container('c', 'standard', {
        'x-container-read': '.r:*', 'x-container-meta-color': 'blue',
        'x-versions-location': 'c-versions'})
    swift.add_container('segs', 'standard')
    for i in range(2):
        swift.add_object('segs', 'seg%d' % i, body=b'outside-%d' % i)
    for i in range(n):
        swift.add_object('c', 'obj%03d' % i, body=b'data %d' % i,
                         content_type='text/x-%d' % i,
                         meta={'Index': str(i)})
    swift.add_object('c', 'inner/seg', body=b'inner segment')
    swift.add_object('c', 'slo-inside', kind='slo',
                     segments=['/c/inner/seg', '/c/obj000'],
                     content_type='video/mp4')
    swift.add_object('c', 'slo-outside', kind='slo',
                     segments=['/segs/seg0', '/segs/seg1'],
                     content_type='application/x-slo')
    swift.add_object('c', 'dlo', kind='dlo', prefix='segs/seg',
                     content_type='application/x-dlo')
    swift.add_object('c', 'link', kind='symlink', target='c/obj001',
                     content_type='application/symlink')


def snapshot(swift, container):
    """What must survive a move: each object's listing identity and the
    metadata a HEAD shows."""
    conn = FakeConn(swift)
    return {e['name']: (migrate.listing_key(e), conn.head_object(
        container, e['name'], migrate.RAW_QUERY).get('Content-Type'),
        sorted((k, v) for k, v in conn.head_object(
            container, e['name'], migrate.RAW_QUERY).items()
            if k.startswith('X-Object-Meta-') or k == 'X-Delete-At'))
        for e in swift.listing(container)}


def migrator(swift, **kwargs):
    kwargs.setdefault('workers', 1)
    kwargs.setdefault('settle', 5)
    messages = []
    m = migrate.Migrator(lambda: FakeConn(swift), 'bulk', messages.append,
                         sleep=swift.sleep, clock=swift.clock, **kwargs)
    m.messages = messages
    return m


def assert_moved(swift, before):
    assert swift.containers['c']['policy'] == 'bulk'
    assert_given_back(swift, before)


def assert_given_back(swift, before):
    """``c`` holds what it held, unmarked, with its headers, and the
    migration's own containers are gone."""
    assert snapshot(swift, 'c') == before
    assert swift.containers['c']['mark'] is None
    assert swift.containers['c']['headers'] == {
        'x-container-read': '.r:*', 'x-container-meta-color': 'blue',
        'x-versions-location': 'c-versions'}
    assert set(swift.containers) == {'c', 'segs'}


# --- pure decisions ---------------------------------------------------------

def test_staging_name_is_deterministic_and_fits():
    assert migrate.staging_name('photos') == '.mass-migrate-photos'
    long_name = 'x' * 250
    staged = migrate.staging_name(long_name)
    assert staged == migrate.staging_name(long_name)
    assert len(staged) <= 256 and staged.startswith('.mass-migrate-h-')
    assert migrate.is_ours(staged) and migrate.is_ours('.mass-migrate')
    assert not migrate.is_ours('photos')


def test_target_from_option_table_or_default_policy():
    table = {'AUTH_a': PolicyEntry('write', substore='bulk'),
             'AUTH_b': PolicyEntry('mixed', substore='')}
    assert migrate.resolve_target('AUTH_a', table, None, POLICIES)[0] == \
        'bulk'
    assert migrate.resolve_target('AUTH_b', table, None, POLICIES)[0] == \
        'standard'
    assert migrate.resolve_target('AUTH_c', {}, 'ssd', POLICIES)[0] == \
        'fast'
    with pytest.raises(migrate.MigrationError, match='no Mass policy'):
        migrate.resolve_target('AUTH_c', table, None, POLICIES)
    with pytest.raises(migrate.MigrationError, match='not one of'):
        migrate.resolve_target('AUTH_a', table, 'gold', POLICIES)


def test_an_opted_out_tenant_has_no_target_of_its_own():
    # its entry says only that Mass leaves it alone: moving it to the
    # default policy on that account would be a move nobody asked for
    table = {'AUTH_o': PolicyEntry('unknown', substore='', opted_out=True)}
    with pytest.raises(migrate.MigrationError, match='opted out'):
        migrate.resolve_target('AUTH_o', table, None, POLICIES)
    assert migrate.resolve_target('AUTH_o', table, 'bulk', POLICIES)[0] == \
        'bulk'


def test_refused_and_saved_container_headers():
    assert 'versioning' in migrate.refusal({'x-versions-enabled': 'True'})
    assert 'sync' in migrate.refusal({'x-container-sync-to': '//r/a/c'})
    assert migrate.refusal({'x-versions-location': 'v'}) is None
    assert migrate.saved_headers({
        'X-Container-Read': '.r:*', 'x-container-meta-quota-bytes': '10',
        'x-container-object-count': '3', 'x-storage-policy': 'standard',
        'x-history-location': 'h', 'x-timestamp': '1'}) == {
        'x-container-read': '.r:*', 'x-container-meta-quota-bytes': '10',
        'x-history-location': 'h'}


def test_kinds_and_copy_queries():
    assert migrate.kind_of({'x-symlink-target': 'c/o'}) == 'symlink'
    assert migrate.kind_of({'x-static-large-object': 'True'}) == 'slo'
    assert migrate.kind_of({'x-object-manifest': 'c/p'}) == 'dlo'
    assert migrate.kind_of({'etag': 'x'}) == 'plain'
    assert migrate.copy_query('plain') is None
    assert migrate.copy_query('slo') == 'multipart-manifest=get'
    assert migrate.copy_query('symlink') == 'symlink=get'


def test_fingerprint_compares_data_and_metadata_not_time():
    src = {'etag': '"abc"', 'content-length': '3', 'content-type': 't/x',
           'x-object-meta-a': '1', 'last-modified': 'then',
           'x-timestamp': '1'}
    same = dict(src, **{'last-modified': 'now', 'x-timestamp': '2',
                        'etag': 'abc'})
    assert migrate.mismatches(migrate.fingerprint(src),
                              migrate.fingerprint(same)) == []
    lost = dict(same)
    del lost['x-object-meta-a']
    lost['content-type'] = 'application/octet-stream'
    assert migrate.mismatches(migrate.fingerprint(src),
                              migrate.fingerprint(lost)) == [
        'content-type', 'x-object-meta-a']
    # an SLO is judged by its plain HEAD's ETag and size
    raw = {'etag': 'manifest1', 'x-static-large-object': 'True',
           'content-type': 'application/json; charset=utf-8'}
    raw2 = dict(raw, etag='manifest2')
    plain = {'etag': '"slo"', 'content-length': '10',
             'content-type': 'video/mp4'}
    assert migrate.mismatches(migrate.fingerprint(raw, plain),
                              migrate.fingerprint(raw2, plain)) == []
    assert migrate.mismatches(migrate.fingerprint(raw, plain),
                              migrate.fingerprint(raw2, dict(
                                  plain, **{'content-type': 'x/y'}))) == [
        'content-type']


def test_listing_identity_and_copy_order():
    slo = {'name': 'm', 'hash': 'h1', 'slo_etag': '"s"', 'bytes': 9,
           'content_type': 'a/b'}
    assert migrate.listing_key(slo) == migrate.listing_key(
        dict(slo, hash='h2'))
    assert migrate.listing_key({'name': 'x', 'hash': 'a'}) != \
        migrate.listing_key({'name': 'x', 'hash': 'b'})
    entries = [{'name': 'l', 'symlink_path': '/v1/a/c/o', 'hash': EMPTY},
               slo, {'name': 'z', 'hash': 'z'}, {'name': 'a', 'hash': 'a'}]
    assert [e['name'] for e in migrate.in_copy_order(entries)] == \
        ['a', 'z', 'm', 'l']
    other = migrate.index([{'name': 'a', 'hash': 'a'},
                           {'name': 'z', 'hash': 'other'}])
    assert [e['name'] for e in migrate.not_in(entries, other)] == \
        ['l', 'm', 'z']


def test_phase_decisions():
    entry = {'name': 'o', 'hash': 'a', 'bytes': 1}
    assert migrate.empty_action(entry, migrate.index([entry])) == 'delete'
    assert migrate.empty_action(entry, {}) == 'copy'
    assert migrate.empty_action(entry, migrate.index(
        [dict(entry, hash='b')])) == 'copy'
    assert migrate.restore_action(entry, {}) == 'copy'
    assert migrate.restore_action(entry, migrate.index([entry])) == 'skip'
    assert migrate.restore_action(entry, migrate.index(
        [dict(entry, hash='newer')])) == 'keep'
    assert migrate.container_step('empty', None, 'standard', 'bulk') == \
        'create'
    assert migrate.container_step('empty', 'bulk', 'standard', 'bulk') == \
        'restore'
    assert migrate.container_step('empty', 'standard', 'standard',
                                  'bulk') == 'empty'
    assert migrate.container_step('empty', 'fast', 'standard', 'bulk') == \
        'empty'


def test_rows_of_the_runs_own_deletes_are_not_objects_written_since():
    deleted = {name: migrate.Deletion(Timestamp(100).normal, 3)
               for name in 'ab'}
    rows = [{'name': 'a', 'last_modified': Timestamp(100).isoformat},
            {'name': 'b', 'last_modified': Timestamp(101).isoformat},
            {'name': 'c', 'last_modified': Timestamp(99).isoformat}]
    assert [e['name'] for e in migrate.written_since(rows, deleted)] == \
        ['b', 'c']
    assert migrate.written_since(rows[:1], deleted) == []


# --- the procedure ----------------------------------------------------------

def test_moves_every_kind_of_object_with_its_metadata():
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    summary = migrator(swift, workers=4).run('c')
    assert summary['status'] == 'moved'
    assert (summary['from'], summary['to']) == ('standard', 'bulk')
    assert summary['copied'] == len(before) == summary['restored']
    assert_moved(swift, before)
    # the manifest of the SLO whose segments moved with it was rebuilt
    # from their copies: a new manifest hash, the same SLO ETag
    assert swift.containers['c']['objects']['slo-inside']['kind'] == 'slo'


def test_copies_that_never_show_up_stop_the_run_after_the_passes(
        monkeypatch):
    swift = FakeSwift()
    swift.add_container('c%b', 'standard')
    swift.add_object('c%b', 'o', body=b'data')
    real_listing = FakeSwift.listing

    def unlisted_copies(self, container):
        # copies are made and verified, but never listed
        if container == migrate.staging_name('c%b'):
            return []
        return real_listing(self, container)
    monkeypatch.setattr(FakeSwift, 'listing', unlisted_copies)
    with pytest.raises(migrate.MigrationError) as caught:
        migrator(swift).run('c%b')
    assert str(caught.value).startswith(
        'c%%b: 1 objects still differ in %s after %d passes' % (
            migrate.staging_name('c%b'), migrate.PASSES))
    # the original is untouched
    assert [e['name'] for e in swift.listing('c%b')] == ['o']


def test_a_container_in_its_target_policy_is_left_alone():
    swift = FakeSwift()
    swift.add_container('c', 'bulk')
    swift.add_object('c', 'o', body=b'x')
    written = swift.containers['c']['objects']['o']['ts']
    summary = migrator(swift).run('c')
    assert summary['status'] == 'already in bulk'
    assert set(swift.containers) == {'c'}
    assert swift.containers['c']['objects']['o']['ts'] == written


def test_plan_changes_nothing():
    swift = FakeSwift()
    populate(swift)
    swift.add_container('done', 'bulk')
    swift.add_container('synced', 'standard',
                        {'x-container-sync-to': '//r/a/c'})
    m = migrator(swift)
    rows = {c: m.plan(c) for c in ('c', 'done', 'synced')}
    assert rows['c']['move'] == 'yes' and rows['c']['objects'] == 17
    assert rows['c']['policy'] == 'standard' and rows['c']['target'] == \
        'bulk'
    assert rows['done']['move'] == 'no: already in bulk'
    assert rows['synced']['move'].startswith('no: container sync')
    assert swift.mutations == 0
    with pytest.raises(migrate.MigrationError, match='container sync'):
        m.run('synced')


def test_writes_are_refused_while_moving_and_allowed_after():
    swift = FakeSwift()
    populate(swift)
    client = FakeConn(swift, reseller=False)
    seen = []

    def write_meanwhile(message):
        if 'restore' in message and not seen:
            with pytest.raises(ClientException) as err:
                client.put_object('c', 'new', 'x')
            seen.append(err.value.http_status)
    m = migrate.Migrator(lambda: FakeConn(swift), 'bulk', write_meanwhile,
                         workers=1, settle=0, sleep=swift.sleep,
                         clock=swift.clock)
    m.run('c')
    assert seen == [503]
    client.put_object('c', 'new', 'x')  # unmarked again


def test_nothing_moves_where_the_mark_does_not_take():
    """Credentials that are not a reseller admin's (or a proxy without
    the filter): the proxy would not refuse client writes."""
    swift = FakeSwift()
    populate(swift, n=2)
    before = snapshot(swift, 'c')
    m = migrate.Migrator(lambda: FakeConn(swift, reseller=False), 'bulk',
                         sleep=swift.sleep, clock=swift.clock)
    with pytest.raises(migrate.MigrationError, match='did not take'):
        m.run('c')
    assert set(swift.containers) == {'c', 'segs'}
    assert snapshot(swift, 'c') == before


def test_a_run_never_takes_a_live_lock():
    swift = FakeSwift()
    populate(swift)
    holder = migrator(swift)
    holder.account.ensure_container(migrate.JOURNAL_CONTAINER, None)
    lock = migrate.Lock(lambda: FakeConn(swift), 'c', 30, 35, swift.sleep,
                        swift.clock)
    lock.acquire(lambda m: None)
    try:
        waiter = migrator(swift, lock_ttl=30, lock_wait=10)
        with pytest.raises(migrate.LockHeld):
            waiter.run('c')
        assert swift.containers['c']['policy'] == 'standard'
    finally:
        lock.release()


def test_the_lock_is_renewed_and_a_lost_lock_stops_the_run():
    swift = FakeSwift()
    FakeConn(swift).put_container(migrate.JOURNAL_CONTAINER)
    lock = migrate.Lock(lambda: FakeConn(swift), 'c', 0.3, 1, swift.sleep,
                        swift.clock)
    lock.acquire(lambda m: None)
    try:
        first = swift.containers[migrate.JOURNAL_CONTAINER]['objects'][
            'lock/c']['ts']
        deadline = time.time() + 5
        while swift.containers[migrate.JOURNAL_CONTAINER]['objects'][
                'lock/c']['ts'] == first and time.time() < deadline:
            time.sleep(0.02)
        assert swift.containers[migrate.JOURNAL_CONTAINER]['objects'][
            'lock/c']['ts'] != first
        lock.check()
        # someone broke the lock and took it
        FakeConn(swift).put_object(migrate.JOURNAL_CONTAINER, 'lock/c',
                                   json.dumps({'owner': 'other'}))
        while lock.lost is None and time.time() < deadline:
            time.sleep(0.02)
        with pytest.raises(migrate.MigrationError, match='other'):
            lock.check()
    finally:
        lock.release()
    # not ours: left alone
    assert 'lock/c' in swift.containers[migrate.JOURNAL_CONTAINER][
        'objects']


# --- client writes through a proxy without Mass ---------------------------

def without_mass(swift):
    """The tenant writing through a proxy that does not run the mass
    filter: nothing is refused, and every write is dated by the proxy's
    clock."""
    return FakeConn(swift, reseller=False, mass=False)


def on_journal(m, phase, act):
    """Call ``act()`` once, right after ``m`` first journals ``phase``."""
    write = m.account.write_journal
    done = []

    def write_journal(journal):
        written = write(journal)
        if journal.phase == phase and not done:
            done.append(phase)
            act()
        return written
    m.account.write_journal = write_journal
    return done


class Hooked(FakeConn):
    """The move's own connection; ``before(method, container, name)`` runs
    before each of its object writes, ``after(...)`` after each."""

    def __init__(self, swift, before=None, after=None):
        super(Hooked, self).__init__(swift)
        self.before = before or (lambda *a: None)
        self.after = after or (lambda *a: None)

    def put_object(self, container, name, *args, **kwargs):
        self.before('PUT', container, name)
        result = super(Hooked, self).put_object(container, name, *args,
                                                **kwargs)
        self.after('PUT', container, name)
        return result

    def post_object(self, container, name, *args, **kwargs):
        self.before('POST', container, name)
        return super(Hooked, self).post_object(container, name, *args,
                                               **kwargs)

    def delete_object(self, container, name, *args, **kwargs):
        self.before('DELETE', container, name)
        return super(Hooked, self).delete_object(container, name, *args,
                                                 **kwargs)


class ReaderWatch(FakeConn):
    """The move's own connection, checking each of its object writes
    to C that says it keeps the version (KEEPS_VERSION, which the object
    servers then leave unbumped: cached bodies stay hits): a reader of
    the object sees the same version after it as before, read from C or,
    where C has none, from the staging container (marks.StagedRead).
    Only plain objects are watched: the cache holds no manifest or
    symlink.  ``tagged`` and ``untagged``: ``(method, container, name)`` of the
    writes with and without the header; ``before(method, container,
    name)`` runs before each."""

    def __init__(self, swift, before=None):
        super(ReaderWatch, self).__init__(swift)
        self.before = before or (lambda *a: None)
        self.tagged = []
        self.untagged = []

    def _seen(self, name):
        for container in ('c', migrate.staging_name('c')):
            try:
                found = {k.lower(): v for k, v in self.head_object(
                    container, name).items()}
            except ClientException as err:
                if migrate.decisions.http_status(err) == 404:
                    continue
                raise
            # the fence's X-Delete-At aside: the cache never holds an
            # object with one (CacheMethod: never cached)
            return {k: v for k, v in found.items()
                    if k not in ('x-timestamp', 'x-delete-at')}
        return None

    def _write(self, method, container, name, write, *args, **kwargs):
        headers = kwargs.get('headers') or {}
        keeps = headers.get(tags.KEEPS_VERSION_REQUEST_HEADER) == 'true'
        self.before(method, container, name)
        watched = container == 'c' and (name.startswith('obj') or
                                        name == 'inner/seg')
        before = self._seen(name) if watched else None
        try:
            return write(container, name, *args, **kwargs)
        finally:
            (self.tagged if keeps else self.untagged).append(
                (method, container, name))
            if keeps:
                assert container == 'c'
            if keeps and watched:
                assert self._seen(name) == before, (method, name)

    def put_object(self, container, name, *args, **kwargs):
        return self._write('PUT', container, name,
                           super(ReaderWatch, self).put_object,
                           *args, **kwargs)

    def post_object(self, container, name, *args, **kwargs):
        return self._write('POST', container, name,
                           super(ReaderWatch, self).post_object,
                           *args, **kwargs)

    def delete_object(self, container, name, *args, **kwargs):
        return self._write('DELETE', container, name,
                           super(ReaderWatch, self).delete_object,
                           *args, **kwargs)


def test_a_moves_writes_that_say_they_keep_the_version_keep_it():
    """The move tags its fences, deletes and restores of C's objects
    X-Mass-Keeps-Version; mass_queue bumps no generation for them, so a
    proxy keeps serving the bodies it cached before.  None of them changes
    what a reader sees, also where a client wrote meanwhile through a
    proxy without the filter (its writes are bumped: a fence it refused
    is made again on its version)."""
    swift = FakeSwift()
    populate(swift, n=4)
    client = without_mass(swift)

    def client_writes(method, container, name):
        # once every object is copied, before the first fence
        if (method, container, name) == ('POST', 'c', 'obj000'):
            client.post_object('c', 'obj001',
                               headers={'X-Object-Meta-Index': 'changed'})
            client.put_object('c', 'obj002', b'overwritten')
    hooks = ReaderWatch(swift, once_each(client_writes))
    messages = []
    m = migrate.Migrator(lambda: hooks, 'bulk', messages.append, workers=1,
                         settle=5, sleep=swift.sleep, clock=swift.clock)
    assert m.run('c')['status'] == 'moved'
    fenced = {n for verb, c, n in hooks.tagged if verb == 'POST'}
    deleted = {n for verb, c, n in hooks.tagged if verb == 'DELETE'}
    restored = {n for verb, c, n in hooks.tagged if verb == 'PUT'}
    names = {e['name'] for e in swift.listing('c')}
    assert fenced == deleted == restored == names
    # and nothing else of the move: its copies into the staging
    # container, the journal, its lock
    assert all(c != 'c' for verb, c, n in hooks.untagged)
    assert swift.containers['c']['objects']['obj001']['meta'] == {
        'Index': 'changed'}
    assert swift.containers['c']['objects']['obj002']['body'] == \
        b'overwritten'


def hooked_migrator(swift, before=None, after=None):
    messages = []
    m = migrate.Migrator(lambda: Hooked(swift, before, after), 'bulk',
                         messages.append, workers=1, settle=5,
                         sleep=swift.sleep, clock=swift.clock)
    m.messages = messages
    return m


def once_each(hook):
    """``hook`` once for each (method, container, name)."""
    seen = set()

    def call(*args):
        if args not in seen:
            seen.add(args)
            hook(*args)
    return call


def assert_moved_but(swift, before, gone=(), replaced=None):
    """``c`` moved, holding what it held but the objects a client deleted
    (``gone``) or replaced (``replaced``: {name: body})."""
    replaced = replaced or {}
    assert swift.containers['c']['policy'] == 'bulk'
    assert swift.containers['c']['mark'] is None
    objects = swift.containers['c']['objects']
    for name in gone:
        assert name not in objects, name
    for name, body in replaced.items():
        assert objects[name]['body'] == body, name
    after = snapshot(swift, 'c')
    expected = {k: v for k, v in before.items()
                if k not in gone and k not in replaced}
    assert {k: v for k, v in after.items() if k not in replaced} == expected
    assert set(swift.containers) == {'c', 'segs'}


def test_the_copy_starts_at_once_and_lists_again_after_the_settle():
    """What C holds is copied as soon as C is marked; only the listing
    that ends the copy phase waits ``settle`` seconds for writes admitted
    before the mark reached every proxy, and what they wrote is moved."""
    swift = FakeSwift()
    populate(swift, n=4)
    before = snapshot(swift, 'c')
    client = without_mass(swift)
    copied_at = []

    def first_copy(method, container, name):
        if container == migrate.staging_name('c') and not copied_at:
            copied_at.append(swift.now)
    marked = []

    def sleep(seconds):
        if seconds > 20 and 'late' not in swift.containers['c']['objects']:
            # the wait ends 30 s after C was marked
            marked.append(swift.now + seconds - 30)
            # in flight when the mark was set: a proxy admitted them
            client.put_object('c', 'obj002', b'written late')
            client.put_object('c', 'late', b'new late')
        swift.sleep(seconds)
    m = migrate.Migrator(lambda: Hooked(swift, first_copy), 'bulk',
                         [].append, workers=1, settle=30, sleep=sleep,
                         clock=swift.clock)
    assert m.run('c')['status'] == 'moved'
    assert copied_at[0] < marked[0] + 30
    objects = swift.containers['c']['objects']
    assert objects['late']['body'] == b'new late'
    del before['obj002']
    assert_moved_but(swift, dict(before, late=snapshot(swift, 'c')['late']),
                     replaced={'obj002': b'written late'})


def test_client_writes_after_the_copy_hold():
    """A DELETE and a PUT through a proxy without Mass once every object
    is staged: the deleted object is not restored, the new one is moved."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)
    m = migrator(swift)

    def write():
        client.delete_object('c', 'obj001')
        client.put_object('c', 'obj002', 'newer')
        client.put_object('c', 'fresh', 'new')
    on_journal(m, 'empty', write)
    assert m.run('c')['status'] == 'moved'
    assert_moved_but(swift, dict(before, fresh=None), gone=['obj001'],
                     replaced={'obj002': b'newer', 'fresh': b'new'})


@pytest.mark.parametrize('copy_answer', [None, 422])
def test_an_object_deleted_while_it_is_copied_is_gone(copy_answer):
    """A client deletes an object (through a proxy without Mass) after the
    move read it and before its copy: the copy finds no source, the object
    stays deleted, and the run goes on instead of stopping on a 404.  Or
    (422) the DELETE lands between the reads of the replicas Swift's copy
    makes (X-Newest), which then gets a 200 with no body and the deleted
    version's ETag, and the copy's PUT a 422 (a CI run's migrate stopped
    on it): the copy is made again from its HEAD, which finds it gone."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)

    def delete_first(method, container, name):
        if method == 'PUT' and container != 'c' and name == 'obj001':
            client.delete_object('c', 'obj001')
            if copy_answer:
                raise ClientException('Object PUT failed',
                                      http_status=copy_answer)
    m = hooked_migrator(swift, before=once_each(delete_first))
    assert m.run('c')['status'] == 'moved'
    assert_moved_but(swift, before, gone=['obj001'])


def test_client_writes_after_the_empty_phase_listed_hold():
    """The container is listed, then a client replaces one object and
    deletes another before the move deletes them: its DELETE, dated by the
    staged version, loses to both."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)

    def before_write(method, container, name):
        if method != 'DELETE' or container != 'c':
            return
        if name == 'obj005':
            client.put_object('c', 'obj005', 'newer')
        elif name == 'obj006':
            client.delete_object('c', 'obj006')
    m = hooked_migrator(swift, before=once_each(before_write))
    summary = m.run('c')
    assert summary['status'] == 'moved'
    assert summary['dropped'] == 1
    assert_moved_but(swift, before, gone=['obj006'],
                     replaced={'obj005': b'newer'})


def test_a_clients_post_after_the_copy_holds():
    """A POST (metadata only) through a proxy without Mass once the
    object is staged, and another once the empty phase listed the
    container: Swift's DELETE compares data times only, and would delete
    each with its new metadata; the move copies the POSTed version to the
    staging container first, and both POSTs hold."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)
    posted = {'X-Object-Meta-Index': 'posted', 'X-Object-Meta-New': 'yes'}

    def post_later_one(method, container, name):
        if (method, container, name) == ('DELETE', 'c', 'obj004'):
            client.post_object('c', 'obj005', posted)
    m = hooked_migrator(swift, before=once_each(post_later_one))
    on_journal(m, 'empty', lambda: client.post_object('c', 'obj003',
                                                      posted))
    summary = m.run('c')
    assert summary['status'] == 'moved'
    after = snapshot(swift, 'c')
    for name in ('obj003', 'obj005'):
        assert after.pop(name)[2] == sorted(posted.items()), name
        del before[name]
    assert after == before
    assert swift.containers['c']['policy'] == 'bulk'
    assert set(swift.containers) == {'c', 'segs'}


def test_a_clients_post_in_the_moment_before_the_delete_holds():
    """A POST through a proxy without Mass after the move's fence and
    before its DELETE (obj005), and another before the fence (obj006):
    the fence (409) or the DELETE,
    which names the fence's X-Delete-At (412), is refused, the move reads
    the object again, and both POSTs hold."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)
    posted = {'X-Object-Meta-Index': 'posted'}

    def post_first(method, container, name):
        if (method, container, name) in (('DELETE', 'c', 'obj005'),
                                         ('POST', 'c', 'obj006')):
            client.post_object('c', name, posted)
    m = hooked_migrator(swift, before=once_each(post_first))
    assert m.run('c')['status'] == 'moved'
    after = snapshot(swift, 'c')
    for name in ('obj005', 'obj006'):
        assert after.pop(name)[2] == sorted(posted.items()), name
        del before[name]
    assert after == before


class FenceAnswerLost(Hooked):
    """The move's connection, whose first fence POST of ``name`` in C is
    taken by the object servers but its answer lost (a 503: the devices
    busy): swiftclient sends it again, with its X-Timestamp, and Swift
    answers the retry 409, as it answers a POST no newer than the
    metadata a replica holds, its own first attempt's."""

    def __init__(self, swift, name):
        super(FenceAnswerLost, self).__init__(swift)
        self.name = name
        self.lost = False

    def post_object(self, container, name, headers, *args, **kwargs):
        result = super(FenceAnswerLost, self).post_object(
            container, name, headers, *args, **kwargs)
        if (container, name) == ('c', self.name) and not self.lost:
            self.lost = True
            return super(FenceAnswerLost, self).post_object(
                container, name, headers, *args, **kwargs)
        return result


def test_a_fence_whose_answer_was_lost_is_the_moves_own():
    """A fence POST retried after a lost answer is refused (409) by the
    replicas its first attempt reached, as a client's later write would
    be: the DELETE, which deletes only where this run's fence is, still
    goes, and the move neither takes its own fence for a client's write
    nor stages it (a staged X-Delete-At would be restored to C)."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    m = migrate.Migrator(lambda: FenceAnswerLost(swift, 'obj004'), 'bulk',
                         [].append, workers=1, settle=5, sleep=swift.sleep,
                         clock=swift.clock)
    assert m.run('c')['status'] == 'moved'
    assert snapshot(swift, 'c') == before
    assert swift.containers['c']['policy'] == 'bulk'


def test_a_fence_that_missed_a_quorum_is_not_staged():
    """The fence's DELETE refused (412) by a quorum of replicas that have
    not taken the fence yet (busy devices): C's object is read again, and
    a replica that shows this run's fence holds the staged version, so
    nothing is copied (the fence is never staged); the fence is sent
    again, and the DELETE."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')

    def refuse_first_delete(method, container, name):
        if (method, container, name) == ('DELETE', 'c', 'obj004'):
            raise ClientException('X-If-Delete-At and X-Delete-At do not '
                                  'match', http_status=412)
    m = hooked_migrator(swift, before=once_each(refuse_first_delete))
    assert m.run('c')['status'] == 'moved'
    assert snapshot(swift, 'c') == before


def test_a_fence_is_the_runs_own_and_keeps_the_metadata():
    """A fence's X-Delete-At is one no client sets (after any expiry a
    client means, below Swift's greatest) and differs from run to run; its
    POST sends again what a POST replaces, but the X-Delete-At; a killed
    run's fence shows as one until a client writes."""
    base = migrate.decisions.stamp_base(1764300000.123456)
    fence = migrate.decisions.fence_delete_at(base)
    assert 9000000000 <= fence <= 9999999999
    assert migrate.decisions.fence_delete_at(
        migrate.decisions.stamp_base(1764300000.123457)) != fence
    head = {'x-timestamp': '1000.00000', 'x-object-meta-a': '1',
            'content-disposition': 'inline', 'content-type': 'text/plain',
            'etag': 'abc', 'content-length': '3', 'x-delete-at': '2000',
            'x-static-large-object': 'True', 'x-object-manifest': 'c/p'}
    assert migrate.decisions.fence_headers(head, fence) == {
        'x-object-meta-a': '1', 'content-disposition': 'inline',
        'x-object-manifest': 'c/p', 'x-delete-at': str(fence)}
    assert 'x-delete-at' not in migrate.decisions.fence_headers(head, None)
    fenced = dict(head, **{'x-delete-at': str(fence)})
    assert migrate.decisions.is_fenced(fenced, head)
    assert not migrate.decisions.is_fenced(head, head)
    assert not migrate.decisions.is_fenced(
        dict(fenced, **{'x-timestamp': '1001.00000'}), head)


def test_a_restore_sorts_after_its_runs_writes_before_any_later_write():
    """The restore's offset is the last of a run's (its copy is the run's
    last write of a name) and below ROLES, so a later run's writes of the
    same version (one started a microsecond later, or the next run of the
    same move whatever its host's clock: Migrator._take_base) and a
    client's write dated later still sort after it."""
    decisions = migrate.decisions
    version = '1764300000.12345'
    base = decisions.stamp_base(1764300000.123456)
    restore = Timestamp(decisions.stamp(version, base, decisions.RESTORE))
    for role in (decisions.COPY, decisions.FENCE, decisions.DELETE,
                 decisions.PROBE, decisions.UNPROBE, decisions.UNFENCE):
        assert Timestamp(decisions.stamp(version, base, role)) < restore
    assert decisions.RESTORE < decisions.ROLES
    for later in (decisions.stamp_base(1764300000.123457),
                  base + decisions.ROLES):
        assert restore < Timestamp(decisions.stamp(version, later,
                                                   decisions.COPY))
    # offsets aside: what a reader's 404 compares (marks.deleted_later)
    assert restore.raw == Timestamp(version).raw
    assert restore < Timestamp(version, delta=1)


def test_client_writes_to_the_container_created_again_hold():
    """Once the container is in the target policy, a client's PUT and
    DELETE (of an object not restored yet) win over the restore, which
    counts them as kept, whether they come before its copy or between
    its copy and its check."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    client = without_mass(swift)

    def write():
        client.put_object('c', 'obj003', 'newer')
        with pytest.raises(ClientException) as caught:
            client.delete_object('c', 'obj004')
        assert caught.value.http_status == 404

    def after_write(method, container, name):
        if (method, container, name) == ('PUT', 'c', 'obj007'):
            client.put_object('c', 'obj007', 'newest')
    m = hooked_migrator(swift, after=once_each(after_write))
    on_journal(m, 'restore', write)
    summary = m.run('c')
    assert summary['status'] == 'moved'
    assert summary['kept_newer'] == 3
    assert_moved_but(swift, before, gone=['obj004'], replaced={
        'obj003': b'newer', 'obj007': b'newest'})


def killed_while_emptying():
    """A cluster whose move of ``c`` was killed as it deleted obj005 (the
    objects before it deleted, staged), and what ``c`` held before."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')

    def crash(method, container, name):
        if (method, container, name) == ('DELETE', 'c', 'obj005'):
            swift.crashed = True
            raise Crash()
    with pytest.raises(Crash):
        hooked_migrator(swift, before=crash).run('c')
    swift.crashed = False
    return swift, before


def test_a_resumed_run_tells_its_own_deletes_from_a_clients():
    """A run killed while emptying, then a client's DELETE of an object
    the run had not reached: the next run restores what the killed run
    deleted, not what the client did."""
    swift, before = killed_while_emptying()
    assert 'obj000' not in swift.containers['c']['objects']
    without_mass(swift).delete_object('c', 'obj008')
    probes = []

    def read_the_probe(method, container, name):
        obj = swift.containers[container]['objects'].get(name)
        if obj is not None and obj['content_type'] == migrate.PROBE_TYPE:
            probes.append(name)
            # expired as it landed: a reader gets a 404, then the
            # staged copy (marks.StagedRead), never the probe
            with pytest.raises(ClientException) as caught:
                FakeConn(swift, reseller=False).head_object(container, name)
            assert caught.value.http_status == 404
    summary = hooked_migrator(swift, after=read_the_probe).run('c')
    assert summary['status'] == 'moved'
    assert summary['dropped'] == 1
    # what the killed run had deleted, in name order
    assert probes == ['dlo', 'inner/seg'] + ['obj%03d' % i for i in range(5)]
    assert_moved_but(swift, before, gone=['obj008'])


def test_an_abort_keeps_a_clients_delete_too():
    """An abort restores into the container in its old policy, where the
    client's tombstone is: the restore loses to it."""
    swift, before = killed_while_emptying()
    without_mass(swift).delete_object('c', 'obj008')
    summary = migrator(swift).abort('c')
    assert summary['status'] == 'aborted: restored in standard'
    assert summary['kept_newer'] == 1
    del before['obj008']
    assert_given_back(swift, before)


def test_a_journal_of_the_previous_version_is_read():
    stored = json.dumps({
        'container': 'c', 'staging': '.mass-migrate-c',
        'source_policy': 'standard', 'target': 'bulk', 'phase': 'restore',
        'saved': {'x-container-read': '.r:*',
                  'x-container-meta-color': 'blue'},
        'marked_at': 1000.0, 'updated': 1010.0}, sort_keys=True)
    journal = migrate.Journal.load('c', stored)
    assert (journal.phase, journal.target, journal.mark, journal.base) == (
        'restore', 'bulk', 'target=bulk; since=1000', 0)
    assert migrate.Journal.load('c', journal.dump()).to_dict() == dict(
        json.loads(stored), base=0)


class LosesAnAnswer(FakeConn):
    """swiftclient's retries: the answer to the first write ``lost(method,
    container, name)`` picks is lost once it is done; while ``retries``
    the write is sent again (and answered as the first left things), else
    the error is raised."""

    retries = 5

    def __init__(self, swift, lost):
        super(LosesAnAnswer, self).__init__(swift)
        self.lost = lost

    def _sent(self, method, write, container, name, *args, **kwargs):
        result = write(container, name, *args, **kwargs)
        if self.lost(method, container, name):
            self.lost = lambda *a: False
            if not self.retries:
                raise socket.timeout('the answer was lost')
            return write(container, name, *args, **kwargs)
        return result

    def put_object(self, container, name, *args, **kwargs):
        return self._sent('PUT', super(LosesAnAnswer, self).put_object,
                          container, name, *args, **kwargs)

    def delete_object(self, container, name, *args, **kwargs):
        return self._sent('DELETE', super(LosesAnAnswer, self).delete_object,
                          container, name, *args, **kwargs)


@pytest.mark.parametrize('lost', [('PUT', 'c', 'obj000'),
                                  ('DELETE', 'c', 'obj000')])
def test_a_lost_answer_to_a_probe_is_not_taken_for_a_clients_write(lost):
    """A probe sent again after its answer was lost would find itself (a
    202, or a 404 for its removal) and take it for a client's write: it
    is not retried, the run stops, and the next run decides."""
    swift, before = killed_while_emptying()
    swift.sleep(1)
    losing = migrate.Migrator(
        lambda: LosesAnAnswer(swift, lambda *write: write == lost), 'bulk',
        workers=1, settle=5, sleep=swift.sleep, clock=swift.clock)
    with pytest.raises(socket.timeout):
        losing.run('c')
    assert swift.containers['c']['mark'] is None
    assert migrator(swift).run('c')['status'] == 'moved'
    assert_moved(swift, before)


def test_a_run_on_a_host_whose_clock_is_behind_dates_after_the_last():
    """A run killed while emptying, resumed from a host whose clock is
    ten seconds behind: its writes still sort after the killed run's (the
    journal keeps the last run's offsets), so it does not take the killed
    run's deletes for a client's and drops nothing."""
    swift, before = killed_while_emptying()
    behind = migrate.Migrator(lambda: FakeConn(swift), 'bulk', workers=1,
                              settle=5, sleep=swift.sleep,
                              clock=lambda: swift.now - 10)
    summary = behind.run('c')
    assert (summary['status'], summary['dropped']) == ('moved', 0)
    assert_moved(swift, before)


def test_moves_back_and_forth_find_their_own_tombstones_older():
    """Each policy keeps the tombstones of the moves before (the old
    container's, the staging container's): a later move's writes of the
    same versions sort after them."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    written = swift.containers['c']['objects']['obj001']['ts']
    for target in ('bulk', 'standard', 'bulk', 'standard'):
        m = migrate.Migrator(lambda: FakeConn(swift), target, workers=1,
                             settle=5, sleep=swift.sleep, clock=swift.clock)
        assert m.run('c')['status'] == 'moved'
        assert swift.containers['c']['policy'] == target
        assert snapshot(swift, 'c') == before
        # clients see the time they wrote it
        assert FakeConn(swift).head_object('c', 'obj001')['X-Timestamp'] \
            == written.normal


class Recorded(FakeConn):
    """The move's connection, keeping in ``times`` the X-Timestamp the
    in-memory Swift takes for each write of ``c/o``, in whichever policy
    ``c`` is: what the object servers' mass_queue keeps the newest of for
    that name.  ``killed_after``: (method, container, name) of the write
    after which the process dies."""

    def __init__(self, swift, times, killed_after=None):
        super(Recorded, self).__init__(swift)
        self.times = times
        self.killed_after = killed_after
        self.writing = None

    def _timestamp(self, headers):
        taken = super(Recorded, self)._timestamp(headers)
        if self.writing == ('c', 'o'):
            self.times.append(taken)
        return taken

    def _write(self, method, write, container, name, *args, **kwargs):
        self.writing = (container, name)
        try:
            result = write(container, name, *args, **kwargs)
        finally:
            self.writing = None
        if (method, container, name) == self.killed_after:
            self.swift.crashed = True
            raise Crash()
        return result

    def put_object(self, container, name, *args, **kwargs):
        return self._write('PUT', super(Recorded, self).put_object,
                           container, name, *args, **kwargs)

    def post_object(self, container, name, *args, **kwargs):
        return self._write('POST', super(Recorded, self).post_object,
                           container, name, *args, **kwargs)

    def delete_object(self, container, name, *args, **kwargs):
        return self._write('DELETE', super(Recorded, self).delete_object,
                           container, name, *args, **kwargs)


@pytest.mark.parametrize('how', ['run', 'resumed', 'aborted'])
def test_a_restored_object_is_dated_after_the_moves_every_write_of_it(how):
    """The object servers record the newest X-Timestamp written to each
    object name (mass_queue, whatever the policy) and the proxy cache fills
    no body dated before it.  A restore dated before the move's own fence
    and DELETE of the object in the old policy, or a resumed run's probe
    of it and the probe's removal, would make every read of the moved
    object a miss until a client wrote it again or the record expired (a
    day).  Resumed and aborted: after a run killed once it deleted the
    object from the old policy."""
    swift = FakeSwift()
    swift.add_container('c', 'standard')
    swift.add_object('c', 'o', body=b'data')
    times = []

    def mover(killed_after=None):
        return migrate.Migrator(
            lambda: Recorded(swift, times, killed_after), 'bulk',
            workers=1, settle=5, sleep=swift.sleep, clock=swift.clock)
    if how != 'run':
        with pytest.raises(Crash):
            mover(('DELETE', 'c', 'o')).run('c')
        swift.crashed = False
        swift.sleep(1)
    summary = mover().abort('c') if how == 'aborted' else mover().run('c')
    assert summary['restored'] == 1
    restored = swift.containers['c']['objects']['o']['ts']
    others = [taken for taken in times if taken != restored]
    assert len(others) == len(times) - 1
    assert max(others) < restored, (restored.internal, sorted(
        taken.internal for taken in times))


def test_nothing_is_deleted_where_the_proxy_drops_the_timestamp():
    """A mass filter that does not give a reseller admin's X-Timestamp
    back (gatekeeper shunts it): the first copy shows it, before anything
    is deleted, and the container is left writable."""
    swift = FakeSwift()
    populate(swift, n=2)
    before = snapshot(swift, 'c')
    m = migrate.Migrator(lambda: FakeConn(swift, keeps_timestamps=False),
                         'bulk', workers=1, settle=0, sleep=swift.sleep,
                         clock=swift.clock)
    with pytest.raises(migrate.MigrationError, match='X-Timestamp'):
        m.run('c')
    assert snapshot(swift, 'c') == before
    assert swift.containers['c']['policy'] == 'standard'
    FakeConn(swift, reseller=False).put_object('c', 'new', 'x')


# --- a failed run -----------------------------------------------------------

def test_a_failed_run_leaves_the_container_writable_and_resumable(
        monkeypatch):
    swift = FakeSwift()
    populate(swift, n=3)
    before = snapshot(swift, 'c')
    real_listing = FakeSwift.listing

    def unlisted_copies(self, container):
        if container == migrate.staging_name('c'):
            return []
        return real_listing(self, container)
    monkeypatch.setattr(FakeSwift, 'listing', unlisted_copies)
    m = migrator(swift)
    with pytest.raises(migrate.MigrationError) as caught:
        m.run('c')
    assert 'still differ' in str(caught.value)
    assert 'writes to c are allowed again' in str(caught.value)
    assert any('writes to c are allowed again' in line
               for line in m.messages)
    assert swift.containers['c']['mark'] is None
    # the move is kept for the next run, its staging container too
    assert migrator(swift).account.journal('c').phase == 'copy'
    assert swift.containers[migrate.staging_name('c')]['mark']
    FakeConn(swift, reseller=False).put_object('c', 'meanwhile', 'x')
    monkeypatch.setattr(FakeSwift, 'listing', real_listing)
    assert migrator(swift).run('c')['status'] == 'moved'
    assert_moved_but(swift, dict(before, meanwhile=None),
                     replaced={'meanwhile': b'x'})


def test_a_run_that_fails_after_emptying_leaves_it_writable(monkeypatch):
    swift = FakeSwift()
    populate(swift, n=3)
    before = snapshot(swift, 'c')
    real_listing = FakeSwift.listing
    restored = {'c': False}

    def unlisted_restores(self, container):
        if container == 'c' and restored['c']:
            return []
        return real_listing(self, container)
    monkeypatch.setattr(FakeSwift, 'listing', unlisted_restores)
    m = migrator(swift)

    def restoring():
        restored['c'] = True
    on_journal(m, 'restore', restoring)
    with pytest.raises(migrate.MigrationError, match='allowed again'):
        m.run('c')
    assert swift.containers['c']['mark'] is None
    assert swift.containers['c']['policy'] == 'bulk'
    monkeypatch.setattr(FakeSwift, 'listing', real_listing)
    client = without_mass(swift)
    client.put_object('c', 'obj001', 'newer')
    assert migrator(swift).run('c')['status'] == 'moved'
    assert_moved_but(swift, before, replaced={'obj001': b'newer'})


def test_a_run_that_lost_its_lock_leaves_the_mark_to_the_other_run():
    swift = FakeSwift()
    populate(swift, n=2)

    def stolen(method, container, name):
        if container == 'c' and method == 'DELETE':
            m.account.lock.lost = 'the lock is held by other now'
    m = hooked_migrator(swift, before=stolen)
    with pytest.raises(migrate.MigrationError, match='lost'):
        m.run('c')
    assert swift.containers['c']['mark']


class MarkedContainers(object):
    """The proxy app right of Mass: container info from ``marks``
    ({container: sysmeta mark or None}; missing: 404), every object read
    404 but those of ``objects``."""

    def __init__(self, marks_, objects):
        self.marks = marks_
        self.objects = objects
        self.reads = []

    def __call__(self, env, start_response):
        parts = env['PATH_INFO'].split('/')
        if len(parts) == 3:  # the account
            return Response(status=204)(env, start_response)
        if len(parts) == 4:
            if parts[3] not in self.marks:
                return Response(status=404)(env, start_response)
            mark = self.marks[parts[3]]
            return Response(status=204, headers={
                'X-Container-Sysmeta-Mass-Migrating': mark} if mark else {})(
                env, start_response)
        self.reads.append(env['PATH_INFO'])
        body = self.objects.get(env['PATH_INFO'])
        if body is None:
            return Response(status=404)(env, start_response)
        return Response(body=body)(env, start_response)


def test_a_failed_move_still_reads_what_it_has_not_restored():
    """A failed run takes the write mark off the container but leaves
    its staging container marked: a read of an object not restored yet
    is still served from there."""
    staged = '/v1/AUTH_t/%s/o' % migrate.staging_name('c')
    app = MarkedContainers({'c': None, migrate.staging_name('c'): 'x'},
                           {staged: b'staged'})
    resp = Request.blank('/v1/AUTH_t/c/o').get_response(
        marks.StagedRead(app))
    assert (resp.status_int, resp.body) == (200, b'staged')
    assert app.reads == ['/v1/AUTH_t/c/o', staged]
    # no move under way: Swift's 404
    app = MarkedContainers({'c': None}, {staged: b'staged'})
    resp = Request.blank('/v1/AUTH_t/c/o').get_response(
        marks.StagedRead(app))
    assert resp.status_int == 404


# --- the journal and the container's own headers -------------------------

def journal_of(swift, container='c'):
    return json.loads(swift.containers[migrate.JOURNAL_CONTAINER][
        'objects']['journal/' + container]['body'])


def planted_journal(swift, **fields):
    """A move of ``c`` stopped in phase copy, its journal changed by
    ``fields``."""
    swift.crash_at = 8
    with pytest.raises(Crash):
        migrator(swift).run('c')
    swift.crashed, swift.crash_at = False, None
    journal = dict(journal_of(swift), **fields)
    swift.add_object(migrate.JOURNAL_CONTAINER, 'journal/c',
                     body=json.dumps(journal).encode())


@pytest.mark.parametrize('fields', [
    {'staging': 'photos'},
    {'staging': migrate.staging_name('other')},
    {'saved': {'x-container-sync-to': '//realm/cluster/AUTH_x/c'}},
    {'saved': {'x-account-meta-temp-url-key': 'k'}},
    {'saved': {'x-container-read': ['.r:*']}},
    {'saved': 'x-container-read'},
    {'phase': 'done'}])
def test_a_journal_migrate_did_not_write_is_refused(fields):
    swift = FakeSwift()
    populate(swift, n=2)
    swift.add_container('photos', 'standard')
    swift.add_object('photos', 'p', body=b'a photo')
    before = snapshot(swift, 'c')
    planted_journal(swift, **fields)
    for action in ('run', 'abort'):
        with pytest.raises(migrate.MigrationError, match='journal'):
            getattr(migrator(swift), action)('c')
    assert 'p' in swift.containers['photos']['objects']
    assert swift.containers['photos']['mark'] is None
    assert snapshot(swift, 'c') == before


def test_a_read_acl_revoked_before_the_mark_stays_revoked():
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    owner = FakeConn(swift, reseller=False)
    m = migrator(swift)
    # between the journal's first write and the mark
    on_journal(m, 'copy', lambda: owner.post_container('c', {
        'X-Container-Read': '', 'X-Container-Meta-Color': 'red'}))
    assert m.run('c')['status'] == 'moved'
    assert swift.containers['c']['headers'] == {
        'x-container-meta-color': 'red', 'x-versions-location': 'c-versions'}
    assert snapshot(swift, 'c') == before


def test_container_headers_changed_through_a_proxy_without_mass_hold():
    swift = FakeSwift()
    populate(swift)
    m = migrator(swift)
    on_journal(m, 'empty', lambda: without_mass(swift).post_container(
        'c', {'X-Container-Read': '.r:example.com'}))
    assert m.run('c')['status'] == 'moved'
    assert swift.containers['c']['headers']['x-container-read'] == \
        '.r:example.com'


def test_the_staging_container_reads_as_the_container_does():
    """Readers fall back to the staging container (marks.StagedRead): it
    grants them what the container does, CORS included, and follows the
    container's changes."""
    swift = FakeSwift()
    populate(swift)
    cors = {'x-container-meta-access-control-allow-origin':
            'https://example.com',
            'x-container-meta-access-control-expose-headers': 'X-Trans-Id'}
    swift.containers['c']['headers'].update(cors)
    staging = migrate.staging_name('c')
    seen = {}
    m = migrator(swift)

    def look(phase):
        def at():
            seen[phase] = dict(swift.containers[staging]['headers'])
        return at
    on_journal(m, 'empty', look('empty'))
    on_journal(m, 'restore', look('restore'))
    owner = without_mass(swift)
    on_journal(m, 'copy', lambda: owner.post_container('c', {
        'X-Container-Meta-Access-Control-Expose-Headers': ''}))
    assert m.run('c')['status'] == 'moved'
    assert seen['empty'] == seen['restore'] == {
        'x-container-read': '.r:*',
        'x-container-meta-access-control-allow-origin':
            'https://example.com'}


def gatekept(app):
    """Swift's gatekeeper, an auth that makes ``reseller`` a reseller
    admin's request, then the mass filter, in front of ``app``."""
    mass = proxy.filter_factory({}, control_loop='false',
                                urgent_recheck_seconds='0')(app)

    def auth(env, start_response):
        if env.get('HTTP_X_AUTH_TOKEN') == 'reseller':
            env['reseller_request'] = True
        env['swift.authorize'] = lambda req: None
        return mass(env, start_response)
    return gatekeeper.filter_factory({})(auth)


class Recording(object):
    def __init__(self):
        self.environs = []

    def __call__(self, env, start_response):
        self.environs.append(dict(env))
        parts = env['PATH_INFO'].split('/')
        if len(parts) == 4:  # container info: not marked
            return Response(status=204)(env, start_response)
        return Response(status=201)(env, start_response)


@pytest.mark.parametrize('method,path,token,kept', [
    ('PUT', '/v1/AUTH_t/c/o', 'reseller', True),
    ('DELETE', '/v1/AUTH_t/c/o', 'reseller', True),
    ('PUT', '/v1/AUTH_t/c/o', 'tenant', False),
    ('DELETE', '/v1/AUTH_t/c/o', 'tenant', False),
    ('POST', '/v1/AUTH_t/c/o', 'reseller', True),
    ('POST', '/v1/AUTH_t/c/o', 'tenant', False),
    ('PUT', '/v1/AUTH_t/c', 'reseller', False)])
def test_only_a_reseller_admins_object_writes_keep_their_timestamp(
        method, path, token, kept):
    app = Recording()
    sent = Timestamp(1000, offset=7).internal
    Request.blank(path, method=method, headers={
        'X-Timestamp': sent, 'X-Auth-Token': token}).get_response(
        gatekept(app))
    env = [e for e in app.environs if e['PATH_INFO'] == path][-1]
    assert env.get('HTTP_X_TIMESTAMP') == (sent if kept else None)


def count_mutations():
    swift = FakeSwift()
    populate(swift)
    migrator(swift).run('c')
    return swift.mutations


def originals_safe(swift, before):
    """Every object is, with its identity and metadata, in the container
    or in its staging container."""
    places = [snapshot(swift, c) for c in ('c', '.mass-migrate-c')
              if c in swift.containers]
    for name, identity in before.items():
        assert any(place.get(name) == identity for place in places), name


def crashed_run(crash_at):
    """A populated account whose move of ``c`` was killed at its
    ``crash_at``-th write; and ``c`` as it was before."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.crash_at = crash_at
    with pytest.raises(Crash):
        migrator(swift).run('c')
    swift.crashed, swift.crash_at = False, None
    return swift, before


@pytest.mark.parametrize('crash_at', range(1, count_mutations() + 1))
def test_a_crash_anywhere_loses_nothing_and_a_rerun_finishes(crash_at):
    swift, before = crashed_run(crash_at)
    originals_safe(swift, before)
    # the killed run's lock frees itself: the re-run waits for it
    summary = migrator(swift).run('c')
    # a run killed once the journal is gone had finished the move
    assert summary['status'] in ('moved', 'already in bulk')
    assert_moved(swift, before)


@pytest.mark.parametrize('crash_at', range(1, count_mutations() + 1))
def test_an_abort_after_a_crash_anywhere_gives_the_container_back(crash_at):
    swift, before = crashed_run(crash_at)
    m = migrator(swift)
    journal = m.account.journal('c') if migrate.JOURNAL_CONTAINER in \
        swift.containers else None
    if journal is None:
        # killed once the move had finished, or before it began
        with pytest.raises(migrate.MigrationError, match='not being moved'):
            m.abort('c')
        return
    summary = m.abort('c')
    assert summary['status'].startswith('aborted')
    assert_given_back(swift, before)
    if journal.phase == 'copy':
        assert swift.containers['c']['policy'] == 'standard'
    # and it can be moved again (unless it is in the target already: an
    # abort after emptying restores it where it was created again)
    assert migrator(swift).run('c')['status'] in ('moved',
                                                  'already in bulk')
    assert_moved(swift, before)


@pytest.mark.parametrize('made', ['.mass-migrate-c', '.mass-migrate'])
def test_a_migration_container_a_client_made_is_not_used(made):
    swift = FakeSwift()
    populate(swift, n=2)
    client = FakeConn(swift, reseller=False)
    client.put_container(made, headers={'X-Storage-Policy': 'bulk'})
    client.put_object(made, 'journal/c' if made == '.mass-migrate'
                      else 'planted', 'not the tenant\'s data')
    before = snapshot(swift, 'c')
    with pytest.raises(migrate.MigrationError, match='not made by'):
        migrator(swift).run('c')
    assert snapshot(swift, 'c') == before
    assert swift.containers['c']['mark'] is None
    assert swift.containers[made]['objects']


def test_objects_written_into_a_container_a_client_made_again():
    """The old container is gone and a client makes it again (in the
    default policy) and writes to it before the run creates it: those
    objects are kept, and win over the staged ones of the same name."""
    swift = FakeSwift()
    populate(swift, n=3)
    before = snapshot(swift, 'c')
    stop_before_creating(swift)
    client = FakeConn(swift, reseller=False)
    client.put_container('c')
    client.put_object('c', 'obj002', 'newer data')
    client.put_object('c', 'fresh', 'new object')
    summary = migrator(swift).run('c')
    assert summary['status'] == 'moved'
    after = snapshot(swift, 'c')
    assert swift.containers['c']['objects']['obj002']['body'] == \
        b'newer data'
    assert 'fresh' in after
    del after['obj002'], after['fresh'], before['obj002']
    assert after == before


def stop_before_creating(swift):
    """Run until the container is deleted and stop right there."""
    def progress(message):
        if 'creating it again' in message:
            raise Crash()
    m = migrate.Migrator(lambda: FakeConn(swift), 'bulk', progress,
                         workers=1, settle=0, sleep=swift.sleep,
                         clock=swift.clock)
    with pytest.raises(Crash):
        m.run('c')
    assert 'c' not in swift.containers


def test_a_different_target_for_a_move_under_way_is_refused():
    swift = FakeSwift()
    populate(swift, n=2)
    swift.crash_at = 12
    with pytest.raises(Crash):
        migrator(swift).run('c')
    swift.crashed, swift.crash_at = False, None
    other = migrate.Migrator(lambda: FakeConn(swift), 'fast',
                             sleep=swift.sleep, clock=swift.clock)
    with pytest.raises(migrate.MigrationError, match='--policy bulk'):
        other.run('c')


def test_large_listings_are_read_whole():
    swift = FakeSwift()
    swift.add_container('c')
    for i in range(25):
        swift.add_object('c', 'o%02d' % i, body=b'%d' % i)
    m = migrate.Migrator(lambda: FakeConn(swift, page=10), 'bulk')
    assert [e['name'] for e in m.account.listing('c')] == \
        ['o%02d' % i for i in range(25)]


# --- the command line -------------------------------------------------------

def command_args(action, *containers, **options):
    args = dict(action=action, tenant='AUTH_t', containers=list(containers),
                policy=None, auth='http://p/auth/v1.0', user='op:op',
                key='k', concurrency=2, settle=0, lock_ttl=30,
                updates_wait=60)
    args.update(options)
    return argparse.Namespace(**args)


def fake_swiftclient(monkeypatch, swift, info=None):
    import swiftclient.client
    seen = []

    class Connection(FakeConn):
        def __init__(self, authurl, user, key, preauthurl=None,
                     preauthtoken=None, **kwargs):
            # a page of one: listings are whole only when asked so
            super(Connection, self).__init__(swift, page=1)
            if preauthtoken is not None:  # not the one that logs in
                assert preauthtoken == 'token'
                seen.append(preauthurl)

        def get_auth(self):
            return 'http://p/v1/AUTH_op', 'token'

        def get_capabilities(self):
            return info if info is not None else \
                super(Connection, self).get_capabilities()
    monkeypatch.setattr(swiftclient.client, 'Connection', Connection)
    # the one swift-mass's commands make (client.OperatorConnection)
    monkeypatch.setattr(cli_client, 'OperatorConnection', Connection)
    return seen


def test_command_plans_every_container_and_moves_under_way(monkeypatch):
    swift = FakeSwift()
    populate(swift, n=2)
    swift.add_container('ready', 'bulk')
    seen = fake_swiftclient(monkeypatch, swift)
    table = {'AUTH_t': PolicyEntry('write', substore='bulk')}
    result = migrate.command(command_args('plan'), table, lambda m: None)
    assert result['target'] == 'bulk'
    assert {r['container']: r['move'] for r in result['containers']} == {
        'c': 'yes', 'ready': 'no: already in bulk', 'segs': 'yes'}
    assert 'http://p/v1/AUTH_t' in seen
    # a move stopped between deleting C and creating it again
    stop_before_creating(swift)
    result = migrate.command(command_args('plan'), table, lambda m: None)
    rows = {r['container']: r for r in result['containers']}
    assert rows['c']['move'] == 'in progress (phase empty)'
    assert rows['c']['policy'] is None
    result = migrate.command(command_args('run', 'c'), table,
                             lambda m: None)
    assert result['containers'][0]['status'] == 'moved'
    assert swift.containers['c']['policy'] == 'bulk'


def test_command_runs_only_where_the_proxy_refuses_writes(monkeypatch):
    swift = FakeSwift()
    populate(swift, n=2)
    fake_swiftclient(monkeypatch, swift, info={'swift': {
        'policies': POLICIES}})
    with pytest.raises(migrate.MigrationError, match='mass_migrate'):
        migrate.command(command_args('run', 'c', policy='bulk'), {},
                        lambda m: None)
    assert swift.mutations == 0
    rows = migrate.command(command_args('plan', 'c', policy='bulk'), {},
                           lambda m: None)['containers']
    assert rows[0]['move'] == 'yes'


def test_cli_registers_migrate_plan_and_run(monkeypatch, capsys):
    calls = []

    def fake_command(args, table, progress):
        calls.append((args.action, args.tenant, args.containers,
                      args.policy, args.json, table))
        progress('working')
        return {'tenant': args.tenant, 'target': 'bulk', 'why': '--policy',
                'containers': [{'container': 'c', 'policy': 'standard',
                                'target': 'bulk', 'objects': 3,
                                'bytes': 30, 'move': 'yes',
                                'phase': None}]}

    monkeypatch.setattr(migrate, 'command', fake_command)

    class Store(object):
        def get_table(self):
            # as stored: the substore under 'ring'
            return 7, {'AUTH_t': {'class': 'write', 'ring': 'bulk',
                                  'method': 'batch', 'since': 1.0,
                                  'validated': True}}
    loaded = []

    def load(conf):
        loaded.append(conf)
        return {}, Store(), None
    monkeypatch.setattr(control, 'load', load)
    assert cli.main(['migrate', 'plan', 'AUTH_t', 'c', '--policy', 'bulk',
                     '--json']) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)['containers'][0]['move'] == 'yes'
    assert 'swift-mass migrate: working' in err
    assert cli.main(['migrate', 'run', 'AUTH_t', '--policy', 'bulk']) == 0
    out, _ = capsys.readouterr()
    assert 'c' in out and 'standard' in out and 'yes' in out
    # --policy needs no store; without it, the tenant's entry is read
    assert loaded == []
    assert cli.main(['--conf', 'p.conf', 'migrate', 'plan', 'AUTH_t']) == 0
    assert loaded == ['p.conf']
    assert calls == [('plan', 'AUTH_t', ['c'], 'bulk', True, {}),
                     ('run', 'AUTH_t', [], 'bulk', False, {}),
                     ('plan', 'AUTH_t', [], None, False,
                      {'AUTH_t': PolicyEntry('write', substore='bulk',
                                             method='batch', since=1.0,
                                             validated=True)})]


def test_cli_without_policy_stops_on_a_bad_store_config(monkeypatch,
                                                        capsys):
    def load(conf):
        raise control.ConfigError('[filter:mass] store = local: no')
    monkeypatch.setattr(control, 'load', load)
    assert cli.main(['migrate', 'plan', 'AUTH_t']) == 2
    assert 'store = local' in capsys.readouterr().err


def test_an_abort_of_a_container_not_being_moved_leaves_nothing_marked():
    # the journal container carries the mark: left behind, it refused the
    # tenant's own clean-up (Swift's functional suite failed on it)
    swift = FakeSwift()
    populate(swift, n=2)
    with pytest.raises(migrate.MigrationError, match='not being moved'):
        migrator(swift).abort('c')
    assert set(swift.containers) == {'c', 'segs'}
    assert swift.containers['c']['mark'] is None


def test_the_journal_container_goes_once_swift_stops_counting_its_objects():
    swift = FakeSwift()
    populate(swift, n=2)
    before = snapshot(swift, 'c')
    stale = {'left': 3}
    delete = FakeConn.delete_container

    def lagging_delete(self, name):
        # the lock object is deleted, yet the container's object count
        # lags (an async update on a busy node): 409 with an empty listing
        if name == migrate.JOURNAL_CONTAINER and stale['left']:
            stale['left'] -= 1
            raise ClientException('counts lag', http_status=409)
        return delete(self, name)
    m = migrator(swift)
    FakeConn.delete_container = lagging_delete
    try:
        summary = m.run('c')
    finally:
        FakeConn.delete_container = delete
    assert summary['status'] == 'moved' and stale['left'] == 0
    assert_moved(swift, before)


def test_the_journal_container_stays_while_it_holds_another_journal():
    swift = FakeSwift()
    populate(swift, n=2)
    swift.add_container(migrate.JOURNAL_CONTAINER)
    swift.containers[migrate.JOURNAL_CONTAINER]['mark'] = 'target=bulk'
    swift.add_object(migrate.JOURNAL_CONTAINER, 'journal/other',
                     body=b'{}')
    with pytest.raises(migrate.MigrationError, match='not being moved'):
        migrator(swift).abort('c')
    assert list(swift.containers[migrate.JOURNAL_CONTAINER]['objects']) == \
        ['journal/other']


# --- every replica of the container -----------------------------------------

def test_a_container_is_deleted_only_once_every_replica_is_empty():
    """A replica whose listing still holds rows refuses the DELETE while
    a quorum takes it, and would keep the container in its old policy:
    the move waits until every replica is empty."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    deletes = []
    delete = FakeConn.delete_container

    def counted(conn, name):
        deletes.append((name, dict(swift.lagging_rows)))
        return delete(conn, name)
    m = migrator(swift)
    swift.lagging_rows['c'] = 3
    swift.lagging_for = 4
    with mock.patch.object(FakeConn, 'delete_container', counted):
        m.run('c')
    assert_moved(swift, before)
    # no DELETE of c while its third replica still listed rows
    assert [d for d in deletes if d[0] == 'c'] == [('c', {})]


def test_a_replica_that_stays_behind_stops_the_move_before_the_delete():
    """Its rows are of objects the move deleted, and stay whatever it
    does: the move names them, once it waited ``updates_wait``."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    m = migrator(swift, delete_retries=3, updates_wait=120)
    on_journal(m, 'empty', lambda: swift.lagging_rows.update(c=2))
    with pytest.raises(migrate.MigrationError,
                       match=r'c: 2 objects this move deleted are still '
                             r'listed \(dlo, inner/seg\)'):
        m.run('c')
    # c was not deleted: still in its policy; a later run moves it
    assert swift.containers['c']['policy'] == 'standard'
    swift.lagging_rows.clear()
    migrator(swift).run('c')
    assert_moved(swift, before)


def test_without_the_filters_replicas_nothing_is_deleted():
    swift = FakeSwift()
    populate(swift)

    class Older(FakeConn):
        """A proxy whose mass filter predates the replicas' answer."""

        def head_container(self, name, headers=None):
            return super(Older, self).head_container(name)
    m = migrate.Migrator(lambda: Older(swift), 'bulk', sleep=swift.sleep,
                         clock=swift.clock, workers=1, settle=5,
                         delete_retries=2)
    with pytest.raises(migrate.MigrationError,
                       match='does not show the replicas of c'):
        m.run('c')
    assert swift.containers['c']['policy'] == 'standard'


# --- container updates that come late ---------------------------------------

def record_deletes(swift, container):
    """{name: the X-Timestamp of every DELETE of it in ``container``}."""
    sent = {}
    delete = FakeConn.delete_object

    def recording(conn, c, name, headers=None, response_dict=None):
        if c == container:
            sent.setdefault(name, []).append(headers['X-Timestamp'])
        return delete(conn, c, name, headers, response_dict)
    return sent, mock.patch.object(FakeConn, 'delete_object', recording)


def deleted_then_settled(sent):
    """Every object deleted by the move's DELETE, then, where a row of it
    stayed, by a probe's removal dated after it: never the same twice."""
    return len(sent) == 17 and all(
        len(set(v)) == len(v) and v == sorted(v, key=Timestamp)
        for v in sent.values())


def test_an_emptied_container_waits_for_the_updates_of_its_deletes():
    """Every replica still lists the objects the move deleted (their
    container updates wait behind a busy device): the move waits for
    Swift's updaters instead of emptying the container again."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.holding_updates.add('c')
    swift.updates_arrive_at = swift.now + 60
    sent, patch = record_deletes(swift, 'c')
    m = migrator(swift)
    with patch:
        assert m.run('c')['status'] == 'moved'
    assert_moved(swift, before)
    assert deleted_then_settled(sent)
    messages = ''.join(m.messages)
    assert '17 objects deleted are still listed: settling them again' in \
        messages
    assert 'waiting for the container updates of 17 objects' in messages


def test_a_replica_that_took_the_fence_late_is_settled_again():
    """A replica took the fence after the DELETE, which it refused while
    a quorum took it (a fourth diagnostic on the hetero SAIO: a row of 1
    to 8 objects on each container replica, no async pending): the
    object is probed, which reaches every replica, and the probe's
    removal every container replica."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.holding_updates.add('c')
    swift.fences_late = True
    sent, patch = record_deletes(swift, 'c')
    m = migrator(swift)
    start = swift.now
    with patch:
        summary = m.run('c')
    assert summary['status'] == 'moved'
    assert_moved(swift, before)
    assert deleted_then_settled(sent)
    assert set(len(v) for v in sent.values()) == {2}
    assert swift.now - start <= 5 + 5


def test_a_row_that_one_replica_alone_lists_is_settled_at_once():
    """The diagnostic after the run of record on the hetero SAIO: an
    object replica took the fence after the DELETE, which it refused
    while a quorum took it, and the one container replica it should have
    told keeps the row; the proxy's listing reads another replica.  Each
    replica's listing shows the rows, settled again in one round, with
    no wait for updates that will not come."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.fences_late_on_one = True
    sent, patch = record_deletes(swift, 'c')
    m = migrator(swift)
    start = swift.now
    with patch:
        assert m.run('c')['status'] == 'moved'
    assert_moved(swift, before)
    assert deleted_then_settled(sent)
    assert ''.join(m.messages).count('settling them again') == 1
    assert swift.now - start <= 5 + 5


def test_the_rows_of_every_replica_are_read_page_by_page():
    swift = FakeSwift()
    populate(swift)
    conn = FakeConn(swift)
    names = [e['name'] for e in swift.listing('c')]
    for name in names[:4]:
        conn.delete_object('c', name)
    swift.lagging_rows['c'] = 3  # the third replica lists 3 of them
    for page in (1, 2, 5, 10000):
        account = migrate.Migrator(lambda: FakeConn(swift, page=page),
                                   'bulk').account
        rows = account.rows_of_every_replica('c')
        assert [e['name'] for e in rows] == sorted(names[:3] + names[4:])


def test_a_proxy_that_does_not_list_each_replica_is_named():
    swift = FakeSwift()
    populate(swift)

    class Older(FakeConn):
        """A proxy whose mass filter predates the replicas' listings."""

        def get_container(self, name, headers=None, **kwargs):
            return super(Older, self).get_container(name, **kwargs)
    account = migrate.Migrator(lambda: Older(swift), 'bulk').account
    with pytest.raises(migrate.MigrationError,
                       match='does not show the listing of each replica'):
        account.rows_of_every_replica('c')


def test_updates_that_never_come_stop_the_move_naming_them():
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.holding_updates.add('c')
    sent, patch = record_deletes(swift, 'c')
    start = swift.now
    with patch, pytest.raises(migrate.MigrationError,
                              match='c: 17 objects this move deleted are '
                                    'still listed .*async pendings'):
        migrator(swift, updates_wait=120).run('c')
    assert deleted_then_settled(sent)
    assert 120 <= swift.now - start <= 120 + 5 + 5 + 5
    # c was not deleted, and is writable; once the updates are in, a
    # later run finishes the move
    assert swift.containers['c']['policy'] == 'standard'
    assert swift.containers['c']['mark'] is None
    swift.updates_arrive_at = swift.now
    migrator(swift).run('c')
    assert_moved(swift, before)


def test_an_object_written_while_updates_are_waited_for_is_moved_too():
    """A client writes through a proxy without the filter while the move
    waits: the container is emptied again, that object kept."""
    swift = FakeSwift()
    populate(swift)
    before = snapshot(swift, 'c')
    swift.holding_updates.add('c')
    swift.updates_arrive_at = swift.now + 60
    client = FakeConn(swift, reseller=False, mass=False)
    m = migrator(swift)
    progress, written = m.progress, []

    def write_once(message):
        progress(message)
        if 'still listed' in message and not written:
            written.append(message)
            client.put_object('c', 'fresh', 'written meanwhile')
    for phase in m.phases.values():
        phase.progress = write_once
    assert m.run('c')['status'] == 'moved'
    assert swift.containers['c']['objects']['fresh']['body'] == \
        b'written meanwhile'
    after = snapshot(swift, 'c')
    del after['fresh']
    assert after == before
