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
"""Where a run's time went: the machine's CPU and, on the SAIO's hetero
profile, its devices, sampled at the start and at the end of a run's
measured time.

* CPU: the ``cpu`` line of /proc/stat (jiffies of all cores since boot):
  the share of all cores' time that was busy (user, nice, system, irq,
  softirq) and that waited for I/O (iowait);
* devices: ``tools/saio devices --json`` (tools/saio.d/devices.py): per
  device its class (ssd, hdd), the reads and writes its block layer
  completed, its busy milliseconds, the blkio throttle's IOPS limits and
  the I/Os that passed the throttle.  Per class: read and write IOPS,
  utilisation (busy time over wall time, averaged over the class's
  devices), and for throttled devices the IOPS that passed the throttle as
  a share of the limit.  On the plain profile ``tools/saio devices`` fails
  and the devices are recorded as None;
* CPU per process group: user + system seconds of every process (from
  /proc/<pid>/stat) grouped by its command line: proxies, object,
  container and account servers, Redis, memcached and the other Swift
  daemons (``swift-*``).  A process that ended in between is lost (its
  reaped CPU is not counted), one that began counts whole.  The load
  generator, the bench's own client processes, measures itself
  (:func:`own_cpu_seconds`) and the bench adds it as ``load_generator``;
* Redis commands: INFO commandstats' ``calls`` summed (INFO's own left
  out), of the Redis the proxies' ``[filter:mass] redis_url`` names; None
  when it cannot be asked.  The bench's own reads of the policy table
  (one a second) are among them;
* queue refusals: the requests the object servers' ``mass_queue`` refused
  (503: waited past its deadline) since each started, summed over every
  object server by ``swift-mass queue --json``
  (:mod:`mass_bench.queue_refusals`); None when a server could not be
  read, and where Mass is not in the pipelines (``mass_queue`` leaves
  with it: the bench does not ask).

And in every second of the window (:meth:`Sampler.pulse`, cheap enough to take
each second: two files read), the CPU's busy and iowait shares and the
kernel's pressure stall information (/proc/pressure): the share of the
second in which some task waited for a core (``cpu_some``), some task
waited for I/O (``io_some``) and every task that could run waited for I/O
(``io_full``).  :func:`stalls` sets the seconds in which a tenant
completed nothing against the others: whether it waited for the devices
or for the CPU.

From these, per run, the cost per operation (:func:`per_operation`):
CPU milliseconds per group, device I/Os per class, the reads, writes
and syncs the HDD-class devices' model served, Redis commands and queue
refusals (per 1000 operations), each divided by the operations all
tenants together completed in the window: the servers' work is not
split by tenant.

Plain Python apart from the samplers, which a test replaces; run by the
benchmark's process.  The text of it all is mass_bench.resources_report's.
"""
import configparser
import json
import os
import resource
import statistics
import subprocess
import time

from swift_mass import redis_client
from swift_mass.conf import SECTION

PROC = '/proc'
PROC_STAT = '/proc/stat'
PROC_PRESSURE = '/proc/pressure'
# (file under PROC_PRESSURE, its line): the pressure totals a pulse keeps
PRESSURES = (('cpu', 'some'), ('io', 'some'), ('io', 'full'))
DIRECTIONS = (('read', 'reads'), ('write', 'writes'))
# (group, what the name of its program or script contains), first match
PROCESS_GROUPS = (('proxy', 'proxy-server'), ('object', 'object-server'),
                  ('container', 'container-server'),
                  ('account', 'account-server'), ('redis', 'redis-server'),
                  ('memcached', 'memcached'), ('swift_other', 'swift-'))
LOAD_GENERATOR = 'load_generator'
GROUPS = (LOAD_GENERATOR,) + tuple(g for g, _ in PROCESS_GROUPS)
GROUP_TITLES = {'load_generator': 'load gen', 'proxy': 'proxies',
                'object': 'object', 'container': 'container',
                'account': 'account', 'redis': 'redis',
                'memcached': 'memcached', 'swift_other': 'other swift'}
DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379'
# the class tools/saio gives the devices its hdd-model serves
HDD_CLASS = 'hdd'


def cpu_times(path=PROC_STAT):
    """Jiffies of all cores since boot: {'total', 'busy', 'iowait'}."""
    with open(path) as fp:
        for line in fp:
            fields = line.split()
            if fields and fields[0] == 'cpu':
                # user nice system idle iowait irq softirq steal; guest
                # and guest_nice are already counted in user and nice
                v = [int(x) for x in fields[1:9]] + [0] * 8
                idle, iowait = v[3], v[4]
                return {'total': sum(v[:8]), 'busy': sum(v[:8]) - idle -
                        iowait - v[7], 'iowait': iowait}
    return None


def pressure_totals(path=PROC_PRESSURE):
    """{'cpu_some', 'io_some', 'io_full'}: the microseconds since boot
    in which some task waited for a core, some task waited for I/O, and
    every task that could run waited for I/O (the kernel's pressure stall
    information); None where the kernel keeps none."""
    totals = {}
    try:
        for name in sorted({n for n, _ in PRESSURES}):
            with open(os.path.join(path, name)) as fp:
                for line in fp:
                    kind, *fields = line.split()
                    if (name, kind) not in PRESSURES:
                        continue
                    for field in fields:
                        if field.startswith('total='):
                            totals['%s_%s' % (name, kind)] = int(
                                field[len('total='):])
    except (OSError, ValueError):
        return None
    return totals


def second_between(before, after):
    """What the machine did between two pulses: busy_pct and
    iowait_pct (:func:`cpu_share`), and cpu_some_pct, io_some_pct and
    io_full_pct (the pressure totals' growth over the wall time); None
    for what is not known."""
    seconds = after['time'] - before['time']
    out = cpu_share(before['cpu'], after['cpu']) or {
        'busy_pct': None, 'iowait_pct': None}
    was, now = before.get('pressure') or {}, after.get('pressure') or {}
    for name, kind in PRESSURES:
        key = '%s_%s' % (name, kind)
        out[key + '_pct'] = 100.0 * (now[key] - was[key]) / (
            seconds * 1e6) if key in was and key in now and \
            seconds > 0 else None
    return out


def per_second(pulses):
    """:func:`second_between` of each two pulses in a row."""
    return [second_between(a, b) for a, b in zip(pulses, pulses[1:])]


STALL_FIGURES = ('busy_pct', 'iowait_pct', 'cpu_some_pct', 'io_some_pct',
                 'io_full_pct')


def _mean_figures(seconds):
    out = {}
    for key in STALL_FIGURES:
        values = [s[key] for s in seconds if s.get(key) is not None]
        out[key] = statistics.mean(values) if values else None
    return out


def stalls(timelines, machine):
    """The seconds of a window in which some tenant completed nothing
    while another completed something, against the others.
    ``timelines``: {tenant: operations completed in each second};
    ``machine``: :func:`per_second` of the same window.  {'stalled':
    {'seconds', 'tenants': {tenant: seconds it made nothing}, and the
    machine's mean figures in those seconds}, 'others': the same for the
    other seconds}; None without both."""
    if not timelines or not machine:
        return None
    stalled, others, by_tenant = [], [], {}
    for second, figures in enumerate(machine):
        ops = {label: ops[second] for label, ops in timelines.items()
               if second < len(ops)}
        idle = [label for label, n in ops.items() if n == 0]
        if idle and any(ops.values()):
            stalled.append(figures)
            for label in idle:
                by_tenant[label] = by_tenant.get(label, 0) + 1
        else:
            others.append(figures)
    return {'stalled': dict(_mean_figures(stalled), seconds=len(stalled),
                            tenants=by_tenant),
            'others': dict(_mean_figures(others), seconds=len(others))}


def json_output(args, timeout, env=None):
    """What command ``args`` printed, parsed as JSON; None when it could
    not run, exited non-zero, took over ``timeout`` seconds or printed
    something else."""
    try:
        proc = subprocess.run(args, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              timeout=timeout, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return None


def saio_devices(saio, timeout=30):
    """The rows of ``SAIO devices --json``, or None when there are none
    (no tools/saio, a plain profile: it exits non-zero, or no answer)."""
    if not saio:
        return None
    rows = json_output([saio, 'devices', '--json'], timeout)
    return rows if isinstance(rows, list) else None


def process_group(args):
    """The group of a process by its command line (the arguments of
    /proc/<pid>/cmdline): the first of PROCESS_GROUPS whose pattern the
    name of its program, or of the script an interpreter runs, contains;
    None for any other process."""
    names = [os.path.basename(a) for a in args
             if a and not a.startswith('-')][:2]
    for name in names:
        for group, pattern in PROCESS_GROUPS:
            if pattern in name:
                return group
    return None


def _stat_cpu(text, ticks_per_second):
    """(start time, CPU seconds) from a /proc/<pid>/stat line."""
    # the command name, in parentheses, may hold spaces
    fields = text.rsplit(')', 1)[1].split()
    # fields[0] is the state (field 3): utime 14, stime 15, starttime 22
    return fields[19], (int(fields[11]) + int(fields[12])) / \
        float(ticks_per_second)


def process_cpu(proc=PROC, ticks_per_second=None):
    """{group: {(pid, start time): CPU seconds}} of every process of a
    group."""
    ticks_per_second = ticks_per_second or os.sysconf('SC_CLK_TCK')
    out = {}
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            with open(os.path.join(proc, pid, 'cmdline'), 'rb') as fp:
                args = fp.read().decode('utf-8', 'replace').split('\0')
            group = process_group(args)
            if group is None:
                continue
            with open(os.path.join(proc, pid, 'stat')) as fp:
                started, seconds = _stat_cpu(fp.read(), ticks_per_second)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not a process's files
        out.setdefault(group, {})[(int(pid), started)] = seconds
    return out


def group_cpu_seconds(before, after):
    """{group: CPU seconds} between two process_cpu; None without
    both."""
    if before is None or after is None:
        return None
    out = {}
    for group, processes in after.items():
        was = before.get(group, {})
        out[group] = sum(max(0.0, seconds - was.get(key, 0.0))
                         for key, seconds in processes.items())
    return out


def own_cpu_seconds():
    """User + system seconds of this process, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def redis_url_of(conf_path):
    """The redis_url of ``conf_path``'s [filter:mass] (the proxies' shared
    store), or Redis's default address."""
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(conf_path)
    except configparser.Error:
        return DEFAULT_REDIS_URL
    return parser.get(SECTION, 'redis_url',
                      fallback='').strip() or DEFAULT_REDIS_URL


def commands_called(stats):
    """The calls of INFO commandstats' parsed answer summed, INFO's own
    left out (a Cluster's answer per node summed too); None when it names
    no command."""
    total, found = 0, False
    for key, value in (stats or {}).items():
        if not isinstance(value, dict):
            continue
        if str(key).startswith('cmdstat_'):
            found = True
            if key != 'cmdstat_info':
                total += value.get('calls', 0)
        else:
            inner = commands_called(value)
            if inner is not None:
                found, total = True, total + inner
    return total if found else None


def redis_commands(url, timeout=2.0):
    """The commands the Redis of ``url`` has run since it started; None
    when it cannot be asked (never raises)."""
    client = None
    try:
        client = redis_client.client_from_url(
            url, 'mass:', socket_timeout=timeout,
            socket_connect_timeout=timeout)
        return commands_called(client.info('commandstats'))
    except Exception:
        return None
    finally:
        close = getattr(client, 'close', None)
        if close is not None:
            try:
                close()
            except Exception:
                pass


class Sampler(object):
    """Snapshots of the CPU, the devices, the process groups' CPU,
    Redis's commands and the queues' refusals; each a callable (a test
    gives fakes)."""

    def __init__(self, devices=lambda: None, cpu=cpu_times,
                 clock=time.time, processes=process_cpu,
                 redis=lambda: None, pressure=pressure_totals,
                 queue=lambda: None):
        self.devices, self.cpu, self.clock = devices, cpu, clock
        self.processes, self.redis = processes, redis
        self.pressure, self.queue = pressure, queue

    def pulse(self):
        """A snapshot light enough for every second of a run: the time,
        the CPU's jiffies and the pressure totals."""
        return {'time': self.clock(), 'cpu': self.cpu(),
                'pressure': self.pressure()}

    def snapshot(self):
        began = self.clock()
        cpu = self.cpu()
        processes = self.processes()
        commands = self.redis()
        refusals = self.queue()
        devices = self.devices()
        # the devices' counters are read somewhere in the call
        return {'time': (began + self.clock()) / 2.0, 'cpu': cpu,
                'devices': devices, 'processes': processes,
                'redis_commands': commands, 'queue_refusals': refusals}


def counted_between(before, after):
    """How much a counter grew from ``before`` to ``after``; None without
    both, or when it went back (its process restarted)."""
    if before is None or after is None or after < before:
        return None
    return after - before


def between(before, after):
    """What the machine did from snapshot ``before`` to ``after``."""
    seconds = after['time'] - before['time']
    return {'seconds': seconds,
            'cpu': cpu_share(before['cpu'], after['cpu']),
            'devices': device_rates(before['devices'], after['devices'],
                                    seconds),
            'cpu_seconds': group_cpu_seconds(before.get('processes'),
                                             after.get('processes')),
            'redis_commands': counted_between(
                before.get('redis_commands'), after.get('redis_commands')),
            'queue_refusals': counted_between(
                before.get('queue_refusals'), after.get('queue_refusals'))}


def cpu_share(before, after):
    """{'busy_pct', 'iowait_pct'} of all cores' time between two
    cpu_times, or None."""
    if not before or not after:
        return None
    total = after['total'] - before['total']
    if total <= 0:
        return None
    return {'busy_pct': 100.0 * (after['busy'] - before['busy']) / total,
            'iowait_pct': 100.0 * (after['iowait'] - before['iowait']) /
            total}


COUNTERS = ('reads', 'writes', 'busy_ms', 'throttle_passed_reads',
            'throttle_passed_writes')


def _attached(row):
    """The row of a device with counters, or None (a detached one)."""
    if not row.get('loop') or any(k not in row for k in COUNTERS):
        return None
    return row


# What a device model's one budget pays for: the daemon's own counts of
# the requests it served (tools/saio.d/hdd-model.c), and their kinds.
MODEL_COUNTERS = ('model_reads', 'model_writes', 'model_syncs')
MODEL_KINDS = ('reads', 'writes', 'syncs')


def _class_sums():
    return dict.fromkeys(('devices', 'reads', 'writes', 'busy_ms',
                          'read_limit', 'read_passed', 'write_limit',
                          'write_passed', 'budget') + MODEL_COUNTERS, 0)


def model_deltas(was, new):
    """{'reads', 'writes', 'syncs'}: the I/Os of each kind a device's
    model served between two rows of it, or None when it has no model or
    the daemon was restarted in between."""
    if not new.get('iops_budget') or was.get('model_pid') != \
            new.get('model_pid') or any(
                k not in was or k not in new for k in MODEL_COUNTERS):
        return None
    deltas = {kind: new[k] - was[k]
              for kind, k in zip(MODEL_KINDS, MODEL_COUNTERS)}
    return deltas if min(deltas.values()) >= 0 else None


def _add_device(c, row, was, new, delta):
    """One device's deltas (``delta``, of COUNTERS) and its model's,
    added to its class's sums ``c``."""
    served = model_deltas(was, new)
    if served is not None:
        c['budget'] += new['iops_budget']
        for kind, counter in zip(MODEL_KINDS, MODEL_COUNTERS):
            c[counter] += served[kind]
    c['devices'] += 1
    c['busy_ms'] += delta['busy_ms']
    for op, plural in DIRECTIONS:
        c[plural] += delta[plural]
        limit = row.get('%s_iops_limit' % op) or 0
        if limit:
            c['%s_limit' % op] += limit
            c['%s_passed' % op] += delta['throttle_passed_%s' % plural]


def _class_entry(c, seconds):
    """A class's figures (:func:`device_rates`) from its sums ``c``."""
    entry = {'devices': c['devices'],
             'read_iops': c['reads'] / seconds,
             'write_iops': c['writes'] / seconds,
             'busy_pct': 100.0 * c['busy_ms'] / (seconds * 1000.0) /
             c['devices']}
    for op, _ in DIRECTIONS:
        limit = c['%s_limit' % op]
        iops = c['%s_passed' % op] / seconds
        entry['%s_throttle' % op] = {
            'iops': iops, 'limit': limit,
            'pct': 100.0 * iops / limit} if limit else None
    served = sum(c[counter] for counter in MODEL_COUNTERS)
    entry['budget'] = {
        'iops': served / seconds, 'limit': c['budget'],
        'pct': 100.0 * served / seconds / c['budget']} \
        if c['budget'] else None
    entry['model_iops'] = {
        kind: c[counter] / seconds
        for kind, counter in zip(MODEL_KINDS, MODEL_COUNTERS)} \
        if c['budget'] else None
    return entry


def device_rates(before, after, seconds):
    """Per device class, from two ``tools/saio devices --json`` row lists
    taken ``seconds`` apart: read_iops, write_iops (completed by the block
    layer), busy_pct (mean utilisation of the class's devices) and, where
    the class's devices are throttled, {'iops': I/Os that passed the
    throttle per second, 'limit': the sum of their IOPS limits, 'pct':
    iops as a percentage of limit} as 'read_throttle' and
    'write_throttle' (None where not throttled), and where the devices
    have a model with one budget (the hetero profile's HDD class) the
    same for all the I/Os it served, reads, writes and flushes together,
    as 'budget', and those I/Os per second by kind as 'model_iops'
    ({'reads', 'writes', 'syncs'}); else None.  None without both
    lists."""
    if before is None or after is None or seconds <= 0:
        return None
    old = {(r.get('server'), r.get('device')): _attached(r) for r in before}
    sums = {}
    for row in after:
        new = _attached(row)
        was = old.get((row.get('server'), row.get('device')))
        if new is None or was is None:
            continue
        delta = {k: new[k] - was[k] for k in COUNTERS}
        if min(delta.values()) < 0:
            continue  # counters reset: the loop device was set up again
        _add_device(sums.setdefault(row['class'], _class_sums()), row, was,
                    new, delta)
    return {cls: _class_entry(c, seconds) for cls, c in sorted(sums.items())}


def median_tree(items):
    """The median of each number of a list of like nested dicts (None
    items and values left out); None when nothing is left."""
    items = [i for i in items if i is not None]
    if not items:
        return None
    if not all(isinstance(i, dict) for i in items):
        return statistics.median(items)
    keys = sorted({k for i in items for k in i})
    return {k: median_tree([i.get(k) for i in items]) for k in keys}


def model_ios_per_operation(devices, seconds, operations, cls=HDD_CLASS):
    """{'reads', 'writes', 'syncs'}: the I/Os of each kind the model of
    class ``cls``'s devices served (:func:`device_rates`' 'model_iops')
    in ``seconds``, per operation; None where the class has no model
    (the plain profile has no devices)."""
    rates = ((devices or {}).get(cls) or {}).get('model_iops')
    if rates is None:
        return None
    return {kind: iops * seconds / operations for kind, iops in rates.items()}


def per_operation(where, operations):
    """A run's costs per operation: {'operations', 'cpu_ms': {group: CPU
    ms}, 'device_ios': {class: reads + writes}, 'hdd_model_ios'
    (:func:`model_ios_per_operation`), 'redis_commands'}, each per
    operation of all tenants together in the window, and
    'queue_refusals_per_1000' per 1000 of those operations; None without
    operations or resources."""
    if not where or not operations:
        return None
    cpu = where.get('cpu_seconds')
    devices = where.get('devices')
    commands = where.get('redis_commands')
    refusals = where.get('queue_refusals')
    return {
        'operations': operations,
        'cpu_ms': {group: 1000.0 * seconds / operations
                   for group, seconds in cpu.items()}
        if cpu is not None else None,
        'device_ios': {cls: (d['read_iops'] + d['write_iops']) *
                       where['seconds'] / operations
                       for cls, d in devices.items()}
        if devices is not None else None,
        'hdd_model_ios': model_ios_per_operation(
            devices, where['seconds'], operations),
        'redis_commands': commands / operations
        if commands is not None else None,
        'queue_refusals_per_1000': 1000.0 * refusals / operations
        if refusals is not None else None}


def machine_share(cpu_seconds, seconds, cores=None):
    """CPU seconds as a percentage of the machine's: all its cores over
    ``seconds`` of wall time; None when unknown."""
    cores = cores or os.cpu_count()
    if cpu_seconds is None or not seconds or not cores:
        return None
    return 100.0 * cpu_seconds / (cores * seconds)
