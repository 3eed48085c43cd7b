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
import configparser
import glob
import json
import os
import struct
import subprocess
import sys
import threading
import time
import uuid

from swift.common.ring import Ring

from mass_bench import clients, ratios, resources

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
BODY_SIZE = 8192
# the figures compared, each per acknowledged replica write but the first
FIGURES = ('ops_per_s', 'hdd_ios', 'hdd_writes', 'hdd_flushes', 'syncfs')


def policy_section(swift_conf, name):
    """The swift.conf section of the storage policy called ``name``;
    ValueError when there is none."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(swift_conf)
    for section in parser.sections():
        if section.startswith('storage-policy:') and \
                parser.get(section, 'name', fallback='') == name:
            return section, parser.get(section, 'diskfile_module',
                                       fallback=SWIFT_MODULE)
    raise ValueError('no storage policy named %r in %s' % (name, swift_conf))


def set_diskfile(swift_conf, section, module):
    subprocess.run([sys.executable, INI, 'set', swift_conf, section,
                    'diskfile_module=' + module], check=True,
                   stdout=subprocess.DEVNULL)


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
    """{device: (reads, writes, flushes)} the HDD-class models served."""
    return dict(((r.get('server'), r.get('device')),
                 (r['model_reads'], r['model_writes'], r['model_syncs']))
                for r in rows or () if r.get('class') == 'hdd' and
                'model_syncs' in r)


def costs(acked, replicas, seconds, devices, syncfs):
    """A run's figures from its counts (see FIGURES)."""
    writes = acked * replicas
    if not writes:
        return dict.fromkeys(FIGURES)
    reads = sum(d[0] for d in devices.values())
    written = sum(d[1] for d in devices.values())
    flushed = sum(d[2] for d in devices.values())
    return {'ops_per_s': acked / seconds,
            'hdd_ios': (reads + written + flushed) / writes,
            'hdd_writes': written / writes,
            'hdd_flushes': flushed / writes,
            'syncfs': syncfs / writes}


def _delta(before, after):
    return dict((k, tuple(b - a for a, b in zip(before[k], after[k])))
                for k in after if k in before)


def writers(url, token, container, clients_n, begin, end, stop_at):
    """Each client PUTs new objects until ``stop_at``; the 201s completed
    between ``begin`` and ``end`` and every other status seen."""
    body = os.urandom(BODY_SIZE)
    acked, others, lock = [0], {}, threading.Lock()

    def client(index):
        conn, n = clients.Connection(url), 0
        headers = {'X-Auth-Token': token}
        while time.time() < stop_at:
            status = conn.request('PUT', '/%s/c%d-%d' % (container, index, n),
                                  headers, body)[0]
            done, n = time.time(), n + 1
            with lock:
                if status == 201:
                    acked[0] += begin <= done < end
                else:
                    others[status] = others.get(status, 0) + 1
    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(clients_n)]
    for thread in threads:
        thread.start()
    return threads, acked, others


def run(args, mode, url, token, ports, section, replicas):
    set_diskfile(args.swift_conf, section, MODES[mode.rstrip('*')])
    restart_object_servers(ports)
    time.sleep(args.settle)
    container = 'bench-gc-%s' % uuid.uuid4().hex[:8]
    status = clients.Connection(url).request(
        'PUT', '/' + container, {'X-Auth-Token': token,
                                 'X-Storage-Policy': args.policy})[0]
    if status not in (201, 202):
        raise RuntimeError('PUT of container %s: %s' % (container, status))
    begin = time.time() + args.warmup
    end = begin + args.seconds
    threads, acked, others = writers(url, token, container, args.clients,
                                     begin, end, end)
    clients.sleep_until(begin)
    devices0, syncfs0 = hdd_served(resources.saio_devices(SAIO)), \
        flushes_begun()
    clients.sleep_until(end)
    devices1, syncfs1 = hdd_served(resources.saio_devices(SAIO)), \
        flushes_begun()
    for thread in threads:
        thread.join(120)
    syncfs = sum(n - syncfs0.get(path, 0) for path, n in syncfs1.items())
    figures = costs(acked[0], replicas, args.seconds,
                    _delta(devices0, devices1), syncfs)
    return dict(figures, mode=mode, acked=acked[0], other_statuses=others,
                container=container)


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
    if resources.saio_devices(SAIO) is None or not hdd_served(
            resources.saio_devices(SAIO)):
        sys.exit('no HDD-class device model here: run on the hetero SAIO '
                 '(tools/saio up --profile hetero)')
    section, original = policy_section(args.swift_conf, args.policy)
    ring = Ring(SWIFT_DIR, ring_name='object-%s' % section.split(':')[1]
                if section != 'storage-policy:0' else 'object')
    ports = set((d['ip'], d['port']) for d in ring.devs if d)
    account_url, token = clients.get_auth(args.auth_url, args.user, args.key)
    url = args.write_url + '/' + account_url.split('/', 3)[3]
    runs = []
    try:
        for cycle, order in enumerate(ratios.abba(
                [BASE, 'group_commit', CONTROL], args.cycles)):
            for mode in order:
                result = dict(run(args, mode, url, token, ports, section,
                                  ring.replica_count), cycle=cycle)
                runs.append(result)
                print('cycle %d %-12s %s' % (cycle + 1, mode, json.dumps(
                    dict((f, result[f] and round(result[f], 3))
                         for f in FIGURES))), flush=True)
    finally:
        set_diskfile(args.swift_conf, section, original)
        restart_object_servers(ports)
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
