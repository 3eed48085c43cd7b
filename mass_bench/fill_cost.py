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
"""What a cache fill costs (``tools/bench-overhead --fill-cost``; runs in
the benchmark's own process, against the running SAIO): the four reads of
docs/cache.md's "Cost", per request, through the SAIO's full proxy
pipeline loaded in this process, with Mass and without (as
``mass_bench.overhead`` loads them), ``AUTH_test`` pinned to the cache:

* ``backend GET``: the pipeline without Mass, the object servers answer;
* ``first fill``: the first read of an object in an era (no fence sealed
  for it): Swift's newest read, a HEAD of every primary, the seal;
* ``sealed fill``: a read after a write made under a sealed fence: one
  replica, as a backend GET;
* ``hit``: the cached body.

Per request: this process's CPU (the proxy pipeline's, the HEADs' green
threads included), the wall time, the object-server requests the proxy
sent (by method: swift's ``http_connect``, which the proxy and
``direct_client`` both call, counted) and the Redis commands (INFO
commandstats: every process's, so the background of heartbeats shows in
the backend GETs, which send none).  Blocks of ``block`` new objects,
repeated ``blocks`` times; the medians over blocks, and their min-max.
Nothing here is asserted: it is a measurement.
"""
import collections
import os
import statistics
import time
import uuid

KINDS = ('backend GET', 'first fill', 'sealed fill', 'hit')
# what each kind's reads answer (X-Mass-Cache)
EXPECTED = {'backend GET': None, 'first fill': 'miss',
            'sealed fill': 'miss', 'hit': 'hit'}
SIZE = 8 * 1024


class BackendRequests(object):
    """Counts the object-server requests this process sends, by method,
    while installed: swift's ``http_connect`` in the modules that call
    it."""

    def __init__(self):
        self.counts = collections.Counter()
        self._saved = []

    def install(self):
        from swift.common import bufferedhttp, direct_client
        from swift.proxy.controllers import base, obj
        for module in (base, obj, direct_client):
            original = getattr(module, 'http_connect', None)
            if original is None or original is not bufferedhttp.http_connect:
                continue
            self._saved.append((module, original))
            setattr(module, 'http_connect', self._counting(original))

    def _counting(self, original):
        def http_connect(ipaddr, port, device, partition, method, path,
                         *args, **kwargs):
            # object paths only: /a/c/o
            if isinstance(path, bytes):
                path = path.decode('utf-8', 'replace')
            if path.count('/') >= 3:
                self.counts[method] += 1
            return original(ipaddr, port, device, partition, method, path,
                            *args, **kwargs)
        return http_connect

    def uninstall(self):
        for module, original in self._saved:
            setattr(module, 'http_connect', original)
        self._saved = []


def _reads(app, token, paths):
    """GET each path; the X-Mass-Cache values seen."""
    from swift.common.swob import Request
    seen = collections.Counter()
    for path in paths:
        resp = Request.blank(path, headers={
            'X-Auth-Token': token}).get_response(app)
        assert resp.status_int == 200 and len(resp.body) == SIZE, \
            (path, resp.status)
        seen[resp.headers.get('X-Mass-Cache')] += 1
    return seen


def _writes(app, token, paths):
    from swift.common.swob import Request
    body = os.urandom(SIZE)
    for path in paths:
        resp = Request.blank(path, method='PUT', body=body, headers={
            'X-Auth-Token': token}).get_response(app)
        assert resp.status_int == 201, (path, resp.status)


def _measure(kind, app, token, paths, counter, redis_calls):
    import eventlet
    counter.counts.clear()
    calls = redis_calls()
    cpu, wall = time.process_time(), time.time()
    seen = _reads(app, token, paths)
    # the shared fills and seals run in green threads of their own
    eventlet.sleep(0.2)
    cpu, wall = time.process_time() - cpu, time.time() - wall - 0.2
    after = redis_calls()
    n = float(len(paths))
    row = {'kind': kind, 'requests': len(paths),
           'cpu_us_per_request': cpu / n * 1e6,
           'ms_per_request': wall / n * 1e3,
           'backend_per_request': {m: c / n for m, c in
                                   sorted(counter.counts.items())},
           'redis_commands_per_request':
           None if None in (calls, after) else (after - calls) / n,
           'answers': dict((str(k), v) for k, v in seen.items())}
    row['as_expected'] = seen == {EXPECTED[kind]: len(paths)}
    return row


def fill_cost(blocks, block, load_pipelines, redis_calls):
    """``blocks`` blocks of ``block`` new objects of AUTH_test, each read
    as the four kinds; the rows of every block."""
    apps, token, _small = load_pipelines(('with', 'without'), loop=False)
    counter = BackendRequests()
    counter.install()
    rows = []
    try:
        for _ in range(blocks):
            paths = ['/v1/AUTH_test/mass-bench/fill-%s' % uuid.uuid4().hex
                     for _ in range(block)]
            _writes(apps['without'], token, paths)
            rows.append(_measure('backend GET', apps['without'], token,
                                 paths, counter, redis_calls))
            rows.append(_measure('first fill', apps['with'], token, paths,
                                 counter, redis_calls))
            rows.append(_measure('hit', apps['with'], token, paths,
                                 counter, redis_calls))
            # a write under the fence the first fills sealed
            _writes(apps['without'], token, paths)
            rows.append(_measure('sealed fill', apps['with'], token, paths,
                                 counter, redis_calls))
            for path in paths:
                from swift.common.swob import Request
                Request.blank(path, method='DELETE', headers={
                    'X-Auth-Token': token}).get_response(apps['without'])
    finally:
        counter.uninstall()
    return rows


def summarise(rows):
    """{kind: medians and min-max over blocks}."""
    result = {}
    for kind in KINDS:
        mine = [r for r in rows if r['kind'] == kind]
        figures = {'blocks': len(mine),
                   'as_expected': all(r['as_expected'] for r in mine)}
        for key in ('cpu_us_per_request', 'ms_per_request',
                    'redis_commands_per_request'):
            values = [r[key] for r in mine if r[key] is not None]
            if values:
                figures[key] = {'median': statistics.median(values),
                                'min': min(values), 'max': max(values)}
        methods = sorted({m for r in mine for m in r['backend_per_request']})
        figures['backend_per_request'] = {
            m: statistics.median(r['backend_per_request'].get(m, 0.0)
                                 for r in mine) for m in methods}
        result[kind] = figures
    return result


def format_summary(result, blocks, block):
    lines = ['fill cost: %d blocks of %d new %d KiB objects of AUTH_test '
             '(pinned to the cache), through the full SAIO proxy pipeline '
             'in this process; medians over blocks [min-max]'
             % (blocks, block, SIZE // 1024),
             '  %-12s %22s %20s %22s  %s' % (
                 'read', 'proxy CPU us/request', 'ms/request',
                 'Redis commands/req', 'object-server requests/request')]
    for kind in KINDS:
        f = result[kind]

        def cell(key, fmt):
            v = f.get(key)
            if v is None:
                return '-'
            return (fmt + ' [' + fmt + '-' + fmt + ']') % (
                v['median'], v['min'], v['max'])
        backend = ', '.join('%s %.2f' % item for item in
                            f['backend_per_request'].items()) or 'none'
        lines.append('  %-12s %22s %20s %22s  %s%s' % (
            kind, cell('cpu_us_per_request', '%.0f'),
            cell('ms_per_request', '%.1f'),
            cell('redis_commands_per_request', '%.1f'), backend,
            '' if f['as_expected'] else '  (NOT as expected: see json)'))
    return '\n'.join(lines)
