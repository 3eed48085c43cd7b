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
"""swift-mass migrate on the SAIO: a container of 1,000 objects (plain
objects with metadata and content types, SLO manifests with segments in
the container and beside it, a DLO manifest, a symlink, awkward names)
moves from policy standard to bulk; the command is killed (SIGKILL) once
in the copy phase and once after the switch, and each time run again; at
the end every object reads as before and the listing is the same.

Writes through the SAIO's proxy without the mass filter (8082) during a
move hold after it, and a run that fails leaves the container writable.
The SAIO's proxies must run this tree's swift_mass (its mass filter gives
a reseller admin's X-Timestamp back).

The operator credentials are the SAIO's reseller admin, given to the
command explicitly through ST_AUTH, ST_USER and ST_KEY.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from swift.common.memcached import load_memcache
from swift.common.utils import readconf
from swift.proxy.controllers.base import get_cache_key

from swift_mass.cli import client
from swift_mass.cli.migrate import migrator as migrate
from swift_mass.proxy import marks
from tests.functional.conftest import PROXY, PROXY_CONF, ROOT, Tenant
from tests.functional.test_cache import MemcacheLogger
from tests.functional.test_queue import OBJECT_SERVERS, queue_state
from tests.functional.waiting import until

OPERATOR_USER = ('admin:admin', 'admin')
OPERATOR = {'ST_AUTH': PROXY + '/auth/v1.0', 'ST_USER': OPERATOR_USER[0],
            'ST_KEY': OPERATOR_USER[1]}
OBJECTS = 1000
# the SAIO's object servers have four mass_queue slots per device: more
# concurrent clients get 503s, and the proxy error-limits the nodes
WORKERS = 4
RAW = {'multipart-manifest': 'get', 'symlink': 'get'}


def q(name):
    return urllib.parse.quote(name)


def command(*args):
    return [sys.executable, '-m', 'swift_mass.cli', '--json', 'migrate'] + \
        list(args)


def run_env():
    return dict(os.environ, PYTHONPATH=ROOT, **OPERATOR)


def listing(tenant, container):
    entries, marker = [], ''
    while True:
        resp = tenant.request('GET', '/' + q(container), params={
            'format': 'json', 'marker': marker})
        assert resp.status_code in (200, 204), resp.text
        page = resp.json() if resp.status_code == 200 else []
        if not page:
            return entries
        entries.extend(page)
        marker = page[-1]['name']


def identity(entry):
    """A listing entry but its last-modified (Swift dates a copy)."""
    return {k: v for k, v in entry.items() if k != 'last_modified'}


def head(tenant, container, name):
    resp = tenant.request('HEAD', '/%s/%s' % (q(container), q(name)))
    assert resp.status_code == 200, (name, resp.status_code)
    return {k.lower(): v for k, v in resp.headers.items()
            if k.lower() in ('etag', 'content-length', 'content-type',
                             'x-object-manifest', 'x-static-large-object',
                             'x-symlink-target', 'content-disposition')
            or k.lower().startswith('x-object-meta-')}


def put(tenant, path, body=b'', headers=None, params=None):
    # a busy SAIO's object servers may shed load with 503 (mass_queue):
    # retry as a client should
    for attempt in range(6):
        resp = tenant.request('PUT', path, data=body, headers=headers,
                              params=params)
        if resp.status_code != 503:
            break
        time.sleep(0.5 * (attempt + 1))
    assert resp.status_code == 201, (path, resp.status_code, resp.text)


def fill(tenant, container, segments):
    """OBJECTS objects in ``container``; returns their names."""
    names = []
    put(tenant, '/%s/%s' % (segments, 'seg-a'), b'A' * 1100)
    put(tenant, '/%s/%s' % (segments, 'seg-b'), b'B' * 1200)
    put(tenant, '/%s/%s' % (segments, 'dlo-1'), b'first part ')
    put(tenant, '/%s/%s' % (segments, 'dlo-2'), b'second part')
    inner = ['inner/seg-%d' % i for i in range(2)]
    for i, name in enumerate(inner):
        put(tenant, '/%s/%s' % (container, name), b'%d' % i * 1500)
    special = ['slo-inside', 'slo-outside', 'dlo', 'link',
               'ünïcode ☃ name', 'with%percent and ?query#hash']
    plain = ['obj-%04d' % i for i in range(
        OBJECTS - len(inner) - len(special))]

    def one(i_name):
        i, name = i_name
        headers = {'Content-Type': 'application/x-mass-%d' % (i % 7),
                   'X-Object-Meta-Index': str(i),
                   'X-Object-Meta-Color': ('red', 'green', 'blue')[i % 3]}
        if i % 10 == 0:
            headers['Content-Disposition'] = 'attachment; filename=%d' % i
        put(tenant, '/%s/%s' % (container, q(name)), b'%d ' % i * (i % 50),
            headers)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, enumerate(plain + special[4:])))
    put(tenant, '/%s/slo-inside' % container, json.dumps([
        {'path': '/%s/%s' % (container, n)} for n in inner]),
        {'Content-Type': 'video/x-inside', 'X-Object-Meta-Kind': 'slo'},
        {'multipart-manifest': 'put'})
    put(tenant, '/%s/slo-outside' % container, json.dumps([
        {'path': '/%s/seg-a' % segments}, {'path': '/%s/seg-b' % segments}]),
        {'Content-Type': 'video/x-outside'}, {'multipart-manifest': 'put'})
    put(tenant, '/%s/dlo' % container, b'', {
        'X-Object-Manifest': '%s/dlo-' % segments,
        'Content-Type': 'text/x-dlo', 'X-Object-Meta-Kind': 'dlo'})
    put(tenant, '/%s/link' % container, b'', {
        'X-Symlink-Target': '%s/obj-0001' % container,
        'X-Object-Meta-Kind': 'symlink'})
    names = plain + special + inner
    assert len(names) == OBJECTS
    return names


def heads(tenant, container, names):
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(names, pool.map(
            lambda n: head(tenant, container, n), names)))


def start(account, container):
    return subprocess.Popen(
        command('run', account, container, '--policy', 'bulk',
                '--settle', '1', '--lock-ttl', '6',
                '--concurrency', str(WORKERS)),
        env=run_env(), cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def kill_when(proc, pattern, at_least):
    """SIGKILL ``proc`` once a progress line matches ``pattern`` with a
    count of at least ``at_least``; the lines read."""
    lines = []
    for line in proc.stderr:
        lines.append(line)
        found = re.search(pattern, line)
        if found and int(found.group(1)) >= at_least:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return lines
    proc.wait()
    pytest.fail('the run ended before %r reached %d:\n%s' % (
        pattern, at_least, ''.join(lines)))


class Reader(threading.Thread):
    """The tenant reading its objects, one after the other, all through
    a move; any answer but 200 is kept."""

    def __init__(self, tenant, container, names):
        super(Reader, self).__init__(daemon=True)
        self.tenant, self.container, self.names = tenant, container, names
        self.reads = 0
        self.missing = []
        self.running = True

    def run(self):
        while self.running:
            for name in self.names:
                if not self.running:
                    break
                resp = self.tenant.request('HEAD', '/%s/%s' % (
                    q(self.container), q(name)))
                self.reads += 1
                if resp.status_code != 200:
                    self.missing.append((name, resp.status_code,
                                         resp.headers.get('X-Trans-Id')))
                # some 30 reads a second: back to back, the reads took a
                # third of the SAIO's two cores from the move they watch
                time.sleep(0.02)

    def stop(self):
        self.running = False
        self.join()


@pytest.fixture
def moved(tenant):
    suffix = os.urandom(3).hex()
    container, segments = 'mass-move-%s' % suffix, 'mass-move-%s-seg' % suffix
    for name in (container, segments):
        resp = tenant.request('PUT', '/' + name, headers={
            'X-Storage-Policy': 'standard'})
        assert resp.status_code == 201
    tenant.request('POST', '/' + container, headers={
        'X-Container-Meta-Color': 'purple', 'X-Container-Read': '.r:*'})
    yield container, segments
    # A test that failed mid-move leaves the containers marked, refusing
    # the tenant's own writes (and so its clean-up, and the next suite's):
    # give them back as an operator would.  Nothing to abort is not an
    # error; a lock still held by a killed run lasts --lock-ttl seconds.
    for attempt in range(5):
        aborted = subprocess.run(
            command('abort', tenant.account, container, '--settle', '0',
                    '--lock-ttl', '6'),
            env=run_env(), cwd=ROOT, capture_output=True, text=True,
            timeout=300)
        if aborted.returncode == 0 or 'is not being moved' in aborted.stderr:
            break
        time.sleep(3)
    else:
        pytest.fail('swift-mass migrate abort could not give %s back:\n%s'
                    % (container, aborted.stderr))
    for name in (container, segments, '.mass-migrate-' + container,
                 '.mass-migrate'):
        entries = listing(tenant, name) if tenant.request(
            'HEAD', '/' + q(name)).status_code == 204 else []
        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(lambda entry: tenant.request('DELETE', '/%s/%s' % (
                q(name), q(entry['name']))), entries))
        tenant.request('DELETE', '/' + q(name))


def test_migrate_1000_objects_interrupted_twice(tenant, moved):
    container, segments = moved
    timings = {}
    t0 = time.time()
    names = fill(tenant, container, segments)
    timings['fill'] = time.time() - t0
    before_listing = [identity(e) for e in listing(tenant, container)]
    assert len(before_listing) == OBJECTS
    before = heads(tenant, container, names)
    slo_body = tenant.request('GET', '/%s/slo-inside' % container).content
    assert slo_body == b'0' * 1500 + b'1' * 1500

    plan = subprocess.run(command('plan', tenant.account, container,
                                  '--policy', 'bulk'),
                          env=run_env(), cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    row, = json.loads(plan.stdout)['containers']
    assert (row['policy'], row['target'], row['objects'], row['move']) == \
        ('standard', 'bulk', OBJECTS, 'yes')
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'standard'

    # first run: killed in the copy phase
    t0 = time.time()
    proc = start(tenant.account, container)
    lines = kill_when(proc, r': copy (\d+)/', 300)
    timings['run 1 (killed in copy)'] = time.time() - t0
    # meanwhile writes to it are refused, reads served
    resp = tenant.request('PUT', '/%s/late' % container, data=b'x')
    assert resp.status_code == 503, ''.join(lines)
    assert int(resp.headers['Retry-After']) > 0
    assert tenant.request('DELETE', '/%s/obj-0003' % container
                          ).status_code == 503
    assert tenant.request('GET', '/%s/obj-0002' % container
                          ).status_code == 200

    # second run: resumes, killed after the switch, while restoring; the
    # tenant reads every object throughout, emptying included
    reader = Reader(tenant, container, names)
    reader.start()
    t0 = time.time()
    proc = start(tenant.account, container)
    lines = kill_when(proc, r': restore (\d+)/', 400)
    timings['run 2 (killed in restore)'] = time.time() - t0
    assert any('phase copy' in line for line in lines), ''.join(lines)
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'bulk'
    assert tenant.request('PUT', '/%s/late' % container,
                          data=b'x').status_code == 503

    # third run: resumes in the restore phase and finishes
    t0 = time.time()
    proc = start(tenant.account, container)
    out, err = proc.communicate(timeout=600)
    timings['run 3 (to the end)'] = time.time() - t0
    assert proc.returncode == 0, err
    reader.stop()
    print('%d reads of existing objects during the move: %d not 200'
          % (reader.reads, len(reader.missing)))
    assert reader.reads >= len(names)
    assert reader.missing == [], reader.missing[:10]
    assert 'phase restore' in err
    summary, = json.loads(out)['containers']
    assert summary['status'] == 'moved'
    assert (summary['from'], summary['to']) == ('standard', 'bulk')

    t0 = time.time()
    resp = tenant.request('HEAD', '/' + container)
    assert resp.headers['X-Storage-Policy'] == 'bulk'
    assert resp.headers['X-Container-Meta-Color'] == 'purple'
    assert resp.headers['X-Container-Read'] == '.r:*'
    after_listing = [identity(e) for e in listing(tenant, container)]
    # the manifest of an SLO whose segments moved with it records their
    # new last-modified times: its hash (the manifest's MD5) changes,
    # its slo_etag (the ETag GET returns) does not
    inside = [i for i, e in enumerate(before_listing)
              if e['name'] == 'slo-inside']
    for i in inside:
        assert after_listing[i]['slo_etag'] == before_listing[i]['slo_etag']
        del after_listing[i]['hash'], before_listing[i]['hash']
    assert after_listing == before_listing
    assert heads(tenant, container, names) == before
    assert tenant.request('GET', '/%s/slo-inside' % container
                          ).content == slo_body
    assert tenant.request('GET', '/%s/dlo' % container
                          ).content == b'first part second part'
    link = tenant.request('GET', '/%s/link' % container)
    assert link.content == tenant.request(
        'GET', '/%s/obj-0001' % container).content
    assert link.headers['Content-Location'].endswith(
        '/%s/obj-0001' % container)
    ours = [c['name'] for c in tenant.request(
        'GET', '', params={'format': 'json'}).json()
        if c['name'].startswith('.mass-migrate')]
    assert ours == []
    # writes are accepted again
    assert tenant.request('PUT', '/%s/late' % container,
                          data=b'x').status_code == 201
    timings['verify'] = time.time() - t0
    print('timings: ' + ', '.join('%s %.1fs' % kv for kv in timings.items()))


# the SAIO's proxy without the mass filter (tools/saio): it refuses no
# write to a container being moved
WITHOUT_MASS = 'http://127.0.0.1:8082'


def without_mass(tenant, method, container, name, headers=None, **kwargs):
    """The tenant's request through the proxy without the mass filter."""
    return requests.request(
        method, '%s/%s/%s' % (tenant.url.replace(PROXY, WITHOUT_MASS),
                              q(container), q(name)),
        headers=dict(headers or {}, **{'X-Auth-Token': tenant.token}),
        timeout=20, **kwargs)


def run_with(account, container, *options):
    return subprocess.Popen(
        command('run', account, container, '--policy', 'bulk',
                '--lock-ttl', '6', *options),
        env=run_env(), cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)


def run_to_the_end(account, container):
    """A run that moves ``container`` to bulk, and must finish."""
    finished = subprocess.run(
        command('run', account, container, '--policy', 'bulk',
                '--settle', '1', '--lock-ttl', '6'),
        env=run_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert finished.returncode == 0, finished.stderr


def body_of(tenant, container, name):
    resp = tenant.request('GET', '/%s/%s' % (q(container), q(name)))
    return resp.status_code, resp.content


def test_writes_through_a_proxy_without_mass_hold(tenant, moved):
    """Item 1 of issue 25: a DELETE, an overwrite and a POST (metadata
    only) made through the proxy without the mass filter once their
    objects are copied, and another three once the empty phase has
    listed the container (before the move deletes them): after `migrate
    run` every one of them holds, and every other object is as it was.
    With one worker, objects are copied and deleted in name order: the
    run is paused (SIGSTOP) at a progress line while the client writes,
    so the aa- objects are staged already and the zz- ones listed but not
    deleted yet."""
    container, _segments = moved
    names = ['obj-%04d' % i for i in range(40)]
    early = ('aa-deleted', 'aa-posted', 'aa-replaced')
    late = ('zz-deleted', 'zz-posted', 'zz-replaced')
    posted = {'X-Object-Meta-Posted': 'through 8082'}
    for name in names + list(early + late):
        put(tenant, '/%s/%s' % (container, name), b'old ' + name.encode())
    proc = run_with(tenant.account, container, '--settle', '1',
                    '--concurrency', '1')
    lines = []
    answers = {}

    def paused(writes):
        proc.send_signal(signal.SIGSTOP)
        try:
            for method, name, body, headers in writes:
                resp = without_mass(tenant, method, container, name,
                                    data=body, headers=headers)
                answers[name] = resp.status_code
        finally:
            proc.send_signal(signal.SIGCONT)

    for line in proc.stderr:
        lines.append(line)
        copied = re.search(r': copy (\d+)/', line)
        emptied = re.search(r': empty (\d+)/', line)
        if copied and int(copied.group(1)) >= 10 and \
                'aa-deleted' not in answers:
            paused([('DELETE', 'aa-deleted', None, None),
                    ('POST', 'aa-posted', None, posted),
                    ('PUT', 'aa-replaced', b'new aa-replaced', None)])
        elif emptied and int(emptied.group(1)) >= 10 and \
                'zz-deleted' not in answers:
            paused([('DELETE', 'zz-deleted', None, None),
                    ('POST', 'zz-posted', None, posted),
                    ('PUT', 'zz-replaced', b'new zz-replaced', None)])
    out = proc.stdout.read()
    proc.wait()
    err = ''.join(lines)
    assert proc.returncode == 0, err
    # acknowledged by the proxy without Mass, during the move
    assert answers == {'aa-deleted': 204, 'aa-posted': 202,
                       'aa-replaced': 201, 'zz-deleted': 204,
                       'zz-posted': 202, 'zz-replaced': 201}, err
    summary, = json.loads(out)['containers']
    assert summary['status'] == 'moved'
    assert summary['dropped'] == 2, err
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'bulk'
    for name in ('aa-deleted', 'zz-deleted'):
        assert body_of(tenant, container, name)[0] == 404, name
    for name in ('aa-replaced', 'zz-replaced'):
        assert body_of(tenant, container, name) == (
            200, b'new ' + name.encode()), name
    for name in names + ['aa-posted', 'zz-posted']:
        assert body_of(tenant, container, name) == (
            200, b'old ' + name.encode()), name
    for name in ('aa-posted', 'zz-posted'):
        assert tenant.request('HEAD', '/%s/%s' % (container, name)).headers[
            'X-Object-Meta-Posted'] == 'through 8082', name
    listed = [e['name'] for e in listing(tenant, container)]
    assert listed == sorted(names + ['aa-posted', 'aa-replaced',
                                     'zz-posted', 'zz-replaced'])


def test_a_post_in_the_moment_before_the_moves_delete_holds(tenant, moved):
    """Item 1 of issue 25, its last window: a client's POST through the
    proxy without the mass filter after the move's fence of the object
    and before its DELETE reaches the object servers.  The move
    runs in this process, its connection's DELETE of one object made
    right after the client's POST: on the object servers the DELETE names
    the move's fence (X-If-Delete-At), which the POST replaced, and is
    refused; the move reads the object again, and the POST holds.  No
    object keeps the fence's X-Delete-At."""
    container, _segments = moved
    names = ['obj-%02d' % i for i in range(6)]
    posted = {'X-Object-Meta-Posted': 'through 8082'}
    for name in names:
        put(tenant, '/%s/%s' % (container, name), b'old ' + name.encode(),
            {'X-Object-Meta-Before': 'move'})
    creds = client.credentials(argparse.Namespace(), environ=OPERATOR)
    _url, connect = client.tenant_connector(creds, tenant.account)
    answers = []

    def hooked():
        conn = connect()
        delete = conn.delete_object

        def delete_object(container_name, name, *args, **kwargs):
            if (container_name, name) == (container, 'obj-03') and \
                    not answers:
                answers.append(without_mass(
                    tenant, 'POST', container, name,
                    headers=posted).status_code)
            return delete(container_name, name, *args, **kwargs)
        conn.delete_object = delete_object
        return conn
    summary = migrate.Migrator(hooked, 'bulk', workers=1, settle=1,
                               lock_ttl=6).run(container)
    assert summary['status'] == 'moved'
    assert answers == [202]
    assert tenant.request('HEAD', '/' + container).headers[
        'X-Storage-Policy'] == 'bulk'
    for name in names:
        assert body_of(tenant, container, name) == (
            200, b'old ' + name.encode()), name
        headers = tenant.request('HEAD', '/%s/%s' % (
            q(container), q(name))).headers
        assert 'X-Delete-At' not in headers, name
        if name == 'obj-03':
            assert headers['X-Object-Meta-Posted'] == 'through 8082'
            assert 'X-Object-Meta-Before' not in headers
        else:
            assert headers['X-Object-Meta-Before'] == 'move', name


def test_a_failed_run_leaves_the_container_writable(tenant, moved):
    """Item 2 of issue 25: a run that fails (an object that expired: listed,
    but unreadable, so it still differs after every pass) takes its write
    mark off the container and says so; the owner writes at once, and a
    later run finishes the move."""
    container, _segments = moved
    for i in range(5):
        put(tenant, '/%s/obj-%d' % (container, i), b'%d' % i)
    put(tenant, '/%s/expiring' % container, b'soon gone',
        {'X-Delete-At': str(int(time.time()) + 2)})
    # expired before the run copies anything (the copy starts as C is
    # marked), still listed until the object expirer runs
    time.sleep(3)
    failed = subprocess.run(
        command('run', tenant.account, container, '--policy', 'bulk',
                '--settle', '6', '--lock-ttl', '6'),
        env=run_env(), cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert failed.returncode != 0, failed.stderr
    assert 'still differ' in failed.stderr, failed.stderr
    assert 'writes to %s are allowed again' % container in failed.stderr
    # the owner's writes, through the proxy with Mass, are not refused
    resp = tenant.request('PUT', '/%s/meanwhile' % container, data=b'x')
    assert resp.status_code == 201, (resp.status_code, resp.text)
    assert tenant.request('POST', '/' + container, headers={
        'X-Container-Meta-Color': 'teal'}).status_code == 204
    for i in range(5):
        assert body_of(tenant, container, 'obj-%d' % i) == (200, b'%d' % i)
    # the move is kept for the next run
    journal = tenant.request('GET', '/.mass-migrate/journal/' + q(
        container))
    assert journal.status_code == 200
    assert journal.json()['phase'] == 'copy'
    # what made it fail goes (the object expirer would take it off the
    # listing; its owner's DELETE does at once): the next run finishes
    tenant.request('DELETE', '/%s/expiring' % container)
    run_to_the_end(tenant.account, container)
    resp = tenant.request('HEAD', '/' + container)
    assert resp.headers['X-Storage-Policy'] == 'bulk'
    assert resp.headers['X-Container-Meta-Color'] == 'teal'
    assert body_of(tenant, container, 'meanwhile') == (200, b'x')
    for i in range(5):
        assert body_of(tenant, container, 'obj-%d' % i) == (200, b'%d' % i)


def test_a_mark_cached_after_it_was_taken_off_refuses_no_write_for_long(
        tenant, container):
    """Swift clears its info cache before its POST reaches the container
    servers: a read in between caches the marked info again, for
    recheck_container_existence (60 s).  That race (played here by putting
    the marked info back into memcache once the mark is off) must not keep
    the container's writes refused: a worker asks the container servers
    before it refuses (a CI run's faults test waited 30 s in vain)."""
    admin = Tenant(*OPERATOR_USER)
    key = get_cache_key(tenant.account, container)
    memcache = load_memcache(readconf(PROXY_CONF, 'filter:mass'),
                             MemcacheLogger())

    def mark(value):
        assert requests.post('%s/%s' % (tenant.url, q(container)),
                             timeout=20, headers={
                                 'X-Auth-Token': admin.token,
                                 'X-Mass-Migrating': value}).status_code == 204
    mark('target=bulk; since=1')
    try:
        refused = tenant.request('PUT', '/%s/refused' % container, data=b'x')
        assert refused.status_code == 503, refused.status_code
        marked = memcache.get(key)
        assert marked['sysmeta'].get(marks.MIGRATING.sysmeta_key), marked
    finally:
        mark('')
    memcache.set(key, marked, time=60)
    taken_off = time.time()
    until(lambda: tenant.request('PUT', '/%s/written' % container,
                                 data=b'x').status_code == 201,
          10, 'a write once the mark was taken off')
    # the workers that confirmed the mark ask again after a second
    assert time.time() - taken_off < 2 * marks.MOVE_RECHECK_SECONDS + 1.0
    assert not (memcache.get(key) or {}).get('sysmeta', {}).get(
        marks.MIGRATING.sysmeta_key)


def admitted_at(priority):
    """Requests the object servers' queues admitted at ``priority``."""
    return sum(device['admitted_by_priority'].get(str(priority), 0)
               for ip, port in OBJECT_SERVERS
               for device in queue_state(ip, port)['devices'].values())


def test_a_moves_io_waits_behind_the_tenants_own(tenant, moved):
    """The move's copies, fences and deletes reach the object servers at
    the proxy's background_priority (1), the tenant's own requests at the
    default (5): mass_queue serves the tenant first where they meet."""
    container, _segments = moved
    before = admitted_at(1), admitted_at(5)
    for i in range(5):
        put(tenant, '/%s/obj-%d' % (container, i), b'%d' % i)
    # the tenant's writes are its own: three replicas each in standard
    assert admitted_at(5) - before[1] >= 5 * 3
    assert admitted_at(1) == before[0]
    run_to_the_end(tenant.account, container)
    # each object at least read once and written to bulk's two replicas
    # (its copy), then deleted from standard's three
    assert admitted_at(1) - before[0] >= 5 * (1 + 2 + 3)
    for i in range(5):
        assert body_of(tenant, container, 'obj-%d' % i) == (200, b'%d' % i)
