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
"""``swift-mass queue``: the state of ``mass_queue`` on every object server.

Every object server running ``mass_queue`` answers ``GET /mass_queue`` with
its settings and each device's queue (``DeviceQueue.stats()``; see
``swift_mass.obj.middleware``).  This module finds the object servers in
the object rings of every storage policy of swift.conf, asks each of them
and sums up::

    servers = object_servers('/etc/swift')
    result = report(fetch(servers, timeout=5),
                    devices_by_server('/etc/swift'))
    print(format_report(result))

Slots are per object-server worker: with ``workers = N`` each server has N
queues per device.  ``GET /mass_queue`` is answered by one worker, with
the reports every worker of the server wrote to its recon cache
(``workers``); each device's figures here are summed over them (a device
no worker has served a request for yet has no queue).  A server whose
``mass_queue`` predates those reports answers with one worker's figures,
and is shown as such.  Object servers listen on the storage network only:
run this where the rings' IPs can be reached.

:func:`report` and :func:`format_report` are plain functions over the
answers; :func:`devices_by_server` reads swift.conf and the ring files
and :func:`fetch` does the HTTP.
"""
import http.client
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

from swift_mass.cli import output
from swift_mass.ring_devices import load_policies, object_ring_devs
from swift_mass.tags import QUEUE_ADMIN_PATH

# Summed over every device of every server that answered.
TOTALS = ('slots_in_use', 'waiting', 'admitted', 'admitted_after_wait',
          'refused', 'admitted_past_deadline')
# Servers asked at once: an answer is a few kilobytes, most of the time is
# waiting for servers that are down.
MAX_THREADS = 32
# Summed per device over a server's workers, and key by key in the dicts.
WORKER_SUMS = ('slots', 'slots_in_use', 'batch_slots', 'batch_slots_in_use',
               'reserved_slots', 'waiting', 'admitted', 'admitted_after_wait',
               'refused', 'refusals_left', 'admitted_past_deadline')
WORKER_DICT_SUMS = ('waiting_by_priority', 'admitted_by_priority',
                    'wait_seconds_by_priority')
# swift_mass.obj.device_queue's modes: a device is isolated (urgent
# tenants keep their share) when any worker's queue is.
ISOLATED, SHARED = 'isolated', 'shared'
WORKER_NOTE = ('figures are per object-server worker, summed over the '
               'workers of each server that reported; a server marked '
               '"one worker\'s figures" predates the '
               'reports and shows the figures of the worker that answered '
               '(with workers = N a device admits up to N x its slots)')


def devices_by_server(swift_dir):
    """``{(ip, port): sorted device names}`` of every device in every
    storage policy's object ring (``<swift_dir>/swift.conf`` and its ring
    files); removed devices (None in the ring) are left out.  Raises when
    swift.conf or a ring cannot be read: its servers would go unasked."""
    # Not swift-recon's SwiftRecon.get_hosts: it drops the device names the
    # report needs and takes its rings from /etc/swift's policies, not
    # swift_dir's.
    servers = {}
    for dev in object_ring_devs(swift_dir, load_policies(swift_dir)):
        servers.setdefault((dev['ip'], dev['port']), set()).add(
            dev['device'])
    return dict((server, sorted(devices))
                for server, devices in servers.items())


def object_servers(swift_dir):
    """The unique ``(ip, port)`` of every device in every storage policy's
    object ring, sorted; see :func:`devices_by_server`."""
    return sorted(devices_by_server(swift_dir))


def server_name(server):
    ip, port = server
    return '[%s]:%d' % (ip, port) if ':' in ip else '%s:%d' % (ip, port)


def fetch_one(server, timeout):
    """``GET /mass_queue`` of one server: the answer as a dict, or a string
    saying why there is none.  ``timeout`` (seconds) bounds connecting and
    each read."""
    ip, port = server
    # http.client rather than urllib (or swift-recon's Scout, which uses
    # it): no proxy from the environment between the operator and the
    # storage network, and errors told apart.
    conn = http.client.HTTPConnection(ip, port, timeout=timeout)
    try:
        conn.request('GET', QUEUE_ADMIN_PATH)
        resp = conn.getresponse()
        body = resp.read()
    except ConnectionRefusedError:
        return 'connection refused'
    except socket.timeout:
        return 'no answer within %gs' % timeout
    except (OSError, http.client.HTTPException) as err:
        return '%s: %s' % (type(err).__name__, err)
    finally:
        conn.close()
    if resp.status != 200:
        error = 'HTTP %d %s' % (resp.status, resp.reason)
        if resp.status in (400, 404):
            # the object server's own answer to a path without a device
            error += ': mass_queue is not in its pipeline'
        return error
    try:
        answer = json.loads(body)
    except ValueError as err:
        return 'the answer is not JSON: %s' % err
    if not isinstance(answer, dict) or \
            not isinstance(answer.get('devices'), dict):
        return 'the answer is not mass_queue\'s: no devices'
    return answer


def fetch(servers, timeout=5.0):
    """``{(ip, port): answer}`` for each of ``servers``, asked at once;
    an answer is :func:`fetch_one`'s (a dict, or a string for an error)."""
    servers = list(servers)
    if not servers:
        return {}
    with ThreadPoolExecutor(min(MAX_THREADS, len(servers))) as pool:
        answers = pool.map(lambda server: fetch_one(server, timeout),
                           servers)
        return dict(zip(servers, answers))


def sum_workers(workers):
    """``{device: stats}`` summed over ``workers`` (``{pid: {devices:
    {device: stats}}}``): :data:`WORKER_SUMS` added, and the dicts of
    :data:`WORKER_DICT_SUMS` key by key; ``mode`` isolated if any
    worker's is."""
    devices = {}
    for worker in workers.values():
        for device, stats in (worker.get('devices') or {}).items():
            total = devices.setdefault(device, {'mode': SHARED})
            if stats.get('mode') == ISOLATED:
                total['mode'] = ISOLATED
            for key in WORKER_SUMS:
                if key in stats:
                    total[key] = total.get(key, 0) + stats[key]
            for key in WORKER_DICT_SUMS:
                summed = total.setdefault(key, {})
                for item, value in (stats.get(key) or {}).items():
                    # str: as every answer's keys are, through JSON
                    item = str(item)
                    summed[item] = summed.get(item, 0) + value
    return devices


def report(answers, devices=None, now=None):
    """The answers of :func:`fetch` as a JSON-serialisable dict.

    devices: :func:`devices_by_server`, to list the ring devices a server's
    workers have no queue for yet (one is made at a device's first
    request).  now: the time (``time.time()``) report ages are measured
    from.

    Returns ``servers`` (one row per server, sorted: ``server``, ``ip``,
    ``port`` and either ``error`` or the server's settings and ``mode``,
    ``devices`` ``{device: stats}`` summed over its workers
    (:func:`sum_workers`), ``workers`` (how many reported; None from a
    server that predates the reports: its ``devices`` are one worker's),
    ``oldest_report_age`` (seconds), ``no_queue_yet``), ``totals``
    (:data:`TOTALS` summed over every device, and the number of ``servers``,
    ``servers_read`` and ``devices``), ``urgent`` (``configured``: tenant
    -> servers with it in ``urgent_tenants``; ``seen``: tenant -> servers
    it arrived at marked urgent by a proxy; ``seen_reported``: servers new
    enough to say), ``errors`` (one string per server not read) and
    ``note`` (:data:`WORKER_NOTE`).
    """
    devices = devices or {}
    now = time.time() if now is None else now
    rows = [server_row(server, answers[server], devices.get(server, ()),
                       now) for server in sorted(answers)]
    errors = ['%s: %s' % (row['server'], row['error'])
              for row in rows if 'error' in row]
    totals = dict((key, 0) for key in TOTALS)
    totals.update(servers=len(answers), servers_read=0, devices=0)
    configured, seen, seen_reported = {}, {}, 0
    for row in rows:
        if 'error' in row:
            continue
        totals['servers_read'] += 1
        for stats in row['devices'].values():
            totals['devices'] += 1
            for key in TOTALS:
                totals[key] += stats.get(key, 0)
        for tenant in row['urgent_tenants'] or ():
            configured[tenant] = configured.get(tenant, 0) + 1
        if row['urgent_seen'] is not None:
            seen_reported += 1
            for tenant in row['urgent_seen']:
                seen[tenant] = seen.get(tenant, 0) + 1
    return {'servers': rows, 'totals': totals, 'errors': errors,
            'urgent': {'configured': configured, 'seen': seen,
                       'seen_reported': seen_reported},
            'note': WORKER_NOTE}


def server_row(server, answer, ring_names, now):
    """One server's row of :func:`report`: ``answer`` is
    :func:`fetch_one`'s, ``ring_names`` the names of the server's devices
    in the rings, ``now`` the time report ages are measured from."""
    row = {'server': server_name(server), 'ip': server[0],
           'port': server[1]}
    if not isinstance(answer, dict):
        row['error'] = answer
        return row
    for key in ('mode', 'slots_per_device', 'batch_slots', 'deadline',
                'adaptive_slots', 'urgent_tenants'):
        row[key] = answer.get(key)
    # absent from mass_queue before the proxy could mark tenants
    row['urgent_seen'] = answer.get('urgent_seen_all',
                                    answer.get('urgent_seen'))
    workers = answer.get('workers')
    if isinstance(workers, dict):
        workers = dict((pid, worker) for pid, worker in workers.items()
                       if isinstance(worker, dict))
    if workers:
        row['devices'] = sum_workers(workers)
        row['workers'] = len(workers)
        times = [w['time'] for w in workers.values()
                 if isinstance(w.get('time'), (int, float))]
        row['oldest_report_age'] = \
            max(0.0, now - min(times)) if times else None
    else:
        row['devices'] = answer['devices']
        row['workers'] = row['oldest_report_age'] = None
    row['no_queue_yet'] = [d for d in ring_names if d not in row['devices']]
    return row


ROW = '%-21s %-10s %-8s %9s %7s %8s %7s %9s %7s %7s %5s'


def _tenants(counts, servers):
    if not counts:
        return 'none'
    return ', '.join('%s (%d of %d servers)' % (tenant, counts[tenant],
                                                servers)
                     for tenant in sorted(counts))


def _server_summary(row):
    parts = []
    if row.get('mode'):
        parts.append('mode %s' % row['mode'])
    if row['workers'] is None:
        parts.append('one worker\'s figures (its mass_queue does not '
                     'report every worker\'s)')
    else:
        parts.append('%d worker%s reported' % (
            row['workers'], '' if row['workers'] == 1 else 's'))
        if row['oldest_report_age'] is not None:
            parts.append('oldest report %.1fs old' % row['oldest_report_age'])
    return ', '.join(parts)


def format_report(result):
    """:func:`report` as text: a line per server and device, a line per
    server that could not be read, a line per server with its mode and
    how many workers its figures sum, totals, urgent tenants and the note
    that slots are per worker."""
    lines = [ROW % ('server', 'device', 'mode', 'slots', 'batch',
                    'reserved', 'waiting', 'admitted', 'waited',
                    'refused', 'late')]
    for row in result['servers']:
        if 'error' in row:
            lines.append('%-21s NOT READ: %s' % (row['server'],
                                                 row['error']))
            continue
        for device in sorted(row['devices']):
            s = row['devices'][device]
            lines.append(ROW % (
                row['server'], device, s['mode'],
                '%d/%d' % (s['slots_in_use'], s['slots']),
                '%d/%d' % (s['batch_slots_in_use'], s['batch_slots']),
                s['reserved_slots'], s['waiting'], s['admitted'],
                s['admitted_after_wait'], s['refused'],
                s.get('admitted_past_deadline', '-')))
        if row['no_queue_yet']:
            lines.append('%-21s %-10s no request yet' % (
                row['server'], ','.join(row['no_queue_yet'])))
        elif not row['devices']:
            lines.append('%-21s %-10s no request yet' % (row['server'],
                                                         '-'))
        lines.append('%-21s %s' % (row['server'], _server_summary(row)))
    t = result['totals']
    lines.append(ROW % ('total', '%d devices' % t['devices'], '',
                        t['slots_in_use'], '', '', t['waiting'],
                        t['admitted'], t['admitted_after_wait'],
                        t['refused'], t['admitted_past_deadline']))
    read = t['servers_read']
    urgent = result['urgent']
    lines += ['', '%d of %d object servers read' % (read, t['servers']),
              'urgent tenants configured: %s' % _tenants(
                  urgent['configured'], read)]
    if urgent['seen_reported']:
        lines.append('urgent tenants marked by a proxy, seen: %s' % (
            _tenants(urgent['seen'], urgent['seen_reported'])))
    lines.append('note: ' + result['note'])
    return '\n'.join(lines)


def run(args):
    """``swift-mass queue``: exit status 1 when an object server could not
    be read (or the rings)."""
    def compute():
        devices = devices_by_server(args.swift_dir)
        return report(fetch(sorted(devices), args.timeout), devices)
    return output.emit(args, compute, format_report,
                       lambda result: result['errors'])


def add_parsers(subparsers):
    """Register ``queue``."""
    p = subparsers.add_parser(
        'queue', help='every object server\'s mass_queue: slots, waiters '
        'and counts per device (exit 1 when a server could not be read)',
        description='Asks GET %s of every object server in the '
        'object rings of swift.conf\'s storage policies.  Figures are '
        'summed over the object-server workers that reported (a server too '
        'old to report them shows the worker that answered).  Exit status '
        '0 when every server answered, 1 when any '
        'could not be read (down, or mass_queue not in its pipeline).'
        % QUEUE_ADMIN_PATH)
    p.add_argument('--swift-dir', default='/etc/swift',
                   help='where swift.conf and the ring files are')
    p.add_argument('--timeout', type=float, default=5.0,
                   help='seconds to wait for each server (default 5)')
    p.set_defaults(func=run)
