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
"""What group commit (``egg:swift_mass#replication.group_commit``) saves
the HDD class, against Swift's own diskfile on the same policy and
devices, in the same run (``tools/bench-group-commit``)::

    tools/bench-group-commit [--policy bulk] [--clients 8] [--cycles 5]
        [--seconds 90] [--warmup 10] [--settle 35] [--out DIR]

On the hetero SAIO (``tools/saio up --profile hetero``): each run sets the
policy's ``diskfile_module`` in swift.conf (``egg:swift#replication.fs``,
Swift's own, or the group-commit module), restarts the object servers,
and has ``--clients`` clients PUT new 8 KiB objects (workload C) into a
new container of the policy through the proxy without Mass, for
``--warmup`` seconds not counted and ``--seconds`` measured.  Per run:
acknowledged writes a second; the syncfs calls group commit made (the
flush numbers of :class:`swift_mass.obj.flush_sequence.FlushSequence`,
which count every process's flushes of a filesystem), and the I/Os the
HDD-class devices' model served (reads, writes and flushes, from
``tools/saio devices --json``), each per acknowledged replica write (an
acknowledged object times the policy's replica count).

Runs in ABBA order with an A/A control (``swift*``), ``--cycles`` cycles;
each figure of ``group_commit`` and of the control as a ratio to the same
cycle's ``swift``, with its median, bootstrap interval and the control's
spread (:mod:`mass_bench.ratios`).  The policy's original
``diskfile_module`` is put back, and the object servers restarted, at the
end.  No speed is asserted anywhere: this prints what it measured.
"""
import argparse
import collections
import configparser
import glob
import json
import os
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

from swift.common.storage_policy import parse_storage_policies

from mass_bench import clients, ratios, resources, summary, workloads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAIO = os.path.join(ROOT, 'tools', 'saio')
INI = os.path.join(ROOT, 'tools', 'saio.d', 'ini.py')
SWIFT_DIR = '/etc/swift'
SWIFT_MODULE = 'egg:swift#replication.fs'
GROUP_COMMIT_MODULE = 'egg:swift_mass#replication.group_commit'
MODES = {'swift': SWIFT_MODULE, 'group_commit': GROUP_COMMIT_MODULE}
BASE, CONTROL = 'swift', 'swift*'
# FlushSequence's files under the object servers' group_commit_run_dir
# (its default): the state, the number of the last flush begun first
SEQUENCE_GLOB = '/var/run/swift/mass-group-commit-*'
SEQUENCE_STATE = struct.Struct('<qqq')
# the figures compared, each per acknowledged replica write but the first
FIGURES = ('ops_per_s', 'hdd_ios', 'hdd_writes', 'hdd_flushes', 'syncfs')


def storage_policy(swift_conf, name):
    """The storage policy called ``name``, as Swift parses swift.conf;
    ValueError when there is none."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(swift_conf)
    policy = parse_storage_policies(parser).get_by_name(name)
    if policy is None:
        raise ValueError('no storage policy named %r in %s'
                         % (name, swift_conf))
    return policy


def policy_section(policy):
    """The policy's section of swift.conf."""
    return 'storage-policy:%d' % policy.idx


def set_diskfile(swift_conf, section, module):
    subprocess.run([sys.executable, INI, 'set', swift_conf, section,
                    'diskfile_module=' + module], check=True,
                   stdout=subprocess.DEVNULL)


def ports_of(policy):
    """The object servers of the policy's loaded ring."""
    return set((d['ip'], d['port']) for d in policy.object_ring.devs if d)


def restart_object_servers(ports, timeout=60):
    """Restart them (a diskfile module is loaded at start) and wait until
    every port of the policy's ring answers its healthcheck."""
    subprocess.run(['swift-init', 'object', 'restart'], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    for ip, port in sorted(ports):
        conn = clients.Connection('http://%s:%d' % (ip, port), timeout=5)
        while conn.request('GET', '/healthcheck', {})[0] != 200:
            if time.time() > deadline:
                raise RuntimeError('object server %s:%d did not come back'
                                   % (ip, port))
            time.sleep(0.2)


def flushes_begun(pattern=SEQUENCE_GLOB):
    """{state file: the number of the last flush begun}."""
    begun = {}
    for path in glob.glob(pattern):
        if path.endswith('.flush'):
            continue
        with open(path, 'rb') as fp:
            raw = fp.read(SEQUENCE_STATE.size)
        if len(raw) == SEQUENCE_STATE.size:
            begun[path] = SEQUENCE_STATE.unpack(raw)[0]
    return begun


def hdd_served(rows):
    """{device: its row} of the HDD-class devices with a model, from
    ``tools/saio devices --json``."""
    return dict(((r.get('server'), r.get('device')), r) for r in rows or ()
                if r.get('class') == 'hdd' and
                all(k in r for k in resources.MODEL_COUNTERS))


def served_between(before, after):
    """[{'reads', 'writes', 'syncs'}]: the I/Os each device's model served
    between two :func:`hdd_served`, as :func:`mass_bench.resources.
    model_deltas` counts them (a device whose model daemon restarted in
    between is left out)."""
    deltas = (resources.model_deltas(before[device], row)
              for device, row in after.items() if device in before)
    return [served for served in deltas if served is not None]


def costs(acked, replicas, seconds, devices, syncfs):
    """A run's figures from its counts (see FIGURES); ``devices`` as
    :func:`served_between` gives them."""
    writes = acked * replicas
    if not writes:
        return dict.fromkeys(FIGURES)
    reads, written, flushed = (sum(d[kind] for d in devices)
                               for kind in resources.MODEL_KINDS)
    return {'ops_per_s': acked / seconds,
            'hdd_ios': (reads + written + flushed) / writes,
            'hdd_writes': written / writes,
            'hdd_flushes': flushed / writes,
            'syncfs': syncfs / writes}


def start_load(tenant, clients_n, container, start, stop_at):
    """Workload C's clients (:func:`mass_bench.clients.client`), PUTting
    new objects into ``container`` until ``stop_at``: their threads,
    started, and the list each appends its rows to."""
    workload = workloads.parse('C,concurrency=%d' % clients_n)
    outs = [[] for _ in range(clients_n)]
    threads = [threading.Thread(target=clients.client, args=(
        tenant, workload, container, clients.ObjectSet(()), index, start,
        stop_at, outs[index]), daemon=True) for index in range(clients_n)]
    for thread in threads:
        thread.start()
    return threads, outs


def run(args, mode, tenant, policy):
    set_diskfile(args.swift_conf, policy_section(policy),
                 MODES[mode.rstrip('*')])
    restart_object_servers(ports_of(policy))
    time.sleep(args.settle)
    container = 'bench-gc-%s' % uuid.uuid4().hex[:8]
    status = clients.Connection(tenant.url).request(
        'PUT', '/' + container, {'X-Auth-Token': tenant.token,
                                 'X-Storage-Policy': policy.name})[0]
    if status not in (201, 202):
        raise RuntimeError('PUT of container %s: %s' % (container, status))
    start = time.time()
    end = start + args.warmup + args.seconds
    threads, outs = start_load(tenant, args.clients, container, start, end)
    clients.sleep_until(start + args.warmup)
    devices0, syncfs0 = hdd_served(resources.saio_devices(SAIO)), \
        flushes_begun()
    clients.sleep_until(end)
    devices1, syncfs1 = hdd_served(resources.saio_devices(SAIO)), \
        flushes_begun()
    for thread in threads:
        thread.join(120)
    rows = [row for out in outs for row in out]
    acked = sum(1 for row in summary.completed_in(
        rows, args.warmup, args.warmup + args.seconds) if row[3] == 201)
    others = collections.Counter(str(row[3]) for row in rows
                                 if row[3] != 201)
    syncfs = sum(n - syncfs0.get(path, 0) for path, n in syncfs1.items())
    figures = costs(acked, policy.object_ring.replica_count, args.seconds,
                    served_between(devices0, devices1), syncfs)
    return dict(figures, mode=mode, acked=acked,
                other_statuses=dict(others), container=container)


def compare(runs, cycles):
    """Per figure, group_commit and the control against the same cycle's
    swift."""
    by = dict(((r['cycle'], r['mode']), r) for r in runs)
    out = {}
    for figure in FIGURES:
        def ratio(cycle, mode):
            base, other = by[(cycle, BASE)][figure], by[(cycle, mode)][figure]
            return other / base if base and other is not None else None
        control = [ratio(c, CONTROL) for c in range(cycles)]
        out[figure] = ratios.ratio_summary(
            [ratio(c, 'group_commit') for c in range(cycles)], control)
    return out


def medians(runs, mode):
    return dict((figure, ratios.median([r[figure] for r in runs
                                        if r['mode'] == mode]))
                for figure in FIGURES)


def report(runs, compared):
    lines = ['| mode | ops/s | HDD I/Os | HDD writes | HDD flushes | '
             'syncfs |', '|---|---|---|---|---|---|']
    for mode in (BASE, 'group_commit', CONTROL):
        m = medians(runs, mode)
        lines.append('| %s | %s |' % (mode, ' | '.join(
            '-' if m[f] is None else '%.3f' % m[f] for f in FIGURES)))
    lines += ['', '(medians over the cycles; all but ops/s per acknowledged '
              'replica write)', '',
              '| group_commit / swift | median [95 % interval] | A/A spread '
              '| |', '|---|---|---|---|']
    for figure in FIGURES:
        s = compared[figure]
        if s is None:
            lines.append('| %s | - | | |' % figure)
            continue
        spread = s.get('control')
        lines.append('| %s | x%.3f [%.3f-%.3f] | %s | %s |' % (
            figure, s['median'], s['interval']['low'],
            s['interval']['high'],
            '%.3f-%.3f' % (spread['min'], spread['max']) if spread else '-',
            s.get('verdict', '')))
    return '\n'.join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='tools/bench-group-commit',
        description=__doc__.split('\n\n')[0])
    parser.add_argument('--auth-url',
                        default='http://127.0.0.1:8080/auth/v1.0')
    parser.add_argument('--user', default='backup:job')
    parser.add_argument('--key', default='job')
    parser.add_argument('--write-url', default='http://127.0.0.1:8082',
                        help='the proxy without Mass the PUTs go through')
    parser.add_argument('--policy', default='bulk')
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--cycles', type=int, default=5)
    parser.add_argument('--seconds', type=float, default=90.0)
    parser.add_argument('--warmup', type=float, default=10.0)
    parser.add_argument('--settle', type=float, default=35.0)
    parser.add_argument('--swift-conf',
                        default=os.path.join(SWIFT_DIR, 'swift.conf'))
    parser.add_argument('--out', help='directory for results.json')
    args = parser.parse_args(argv)
    if args.clients < 1 or args.cycles < 1 or args.seconds <= 0 or \
            args.warmup < 0 or args.settle < 0:
        parser.error('--clients and --cycles must be at least 1, '
                     '--seconds above 0, --warmup and --settle at least 0')
    return args


def main(argv=None):
    args = parse_args(argv)
    if not hdd_served(resources.saio_devices(SAIO)):
        sys.exit('no HDD-class device model here: run on the hetero SAIO '
                 '(tools/saio up --profile hetero)')
    policy = storage_policy(args.swift_conf, args.policy)
    policy.load_ring(SWIFT_DIR)
    original = policy.diskfile_module
    tenant = clients.Tenant('bench-gc', args.user, args.key, None)
    tenant.authenticate(args.auth_url)
    # the PUTs go through the proxy without Mass, to the same account
    tenant.url = args.write_url.rstrip('/') + urllib.parse.urlsplit(
        tenant.url).path
    runs = []
    try:
        for cycle, order in enumerate(ratios.abba(
                [BASE, 'group_commit', CONTROL], args.cycles)):
            for mode in order:
                result = dict(run(args, mode, tenant, policy), cycle=cycle)
                runs.append(result)
                print('cycle %d %-12s %s' % (cycle + 1, mode, json.dumps(
                    dict((f, result[f] and round(result[f], 3))
                         for f in FIGURES))), flush=True)
    finally:
        set_diskfile(args.swift_conf, policy_section(policy), original)
        restart_object_servers(ports_of(policy))
    compared = compare(runs, args.cycles)
    print(report(runs, compared))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, 'results.json'), 'w') as fp:
            json.dump({'args': vars(args), 'runs': runs,
                       'compared': compared}, fp, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
