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
  and the devices are recorded as None.

Plain Python apart from the two samplers, which a test replaces.
"""
import json
import statistics
import subprocess
import time

PROC_STAT = '/proc/stat'
DIRECTIONS = (('read', 'reads'), ('write', 'writes'))


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


def saio_devices(saio, timeout=30):
    """The rows of ``SAIO devices --json``, or None when there are none
    (no tools/saio, a plain profile: it exits non-zero, or no answer)."""
    if not saio:
        return None
    try:
        proc = subprocess.run([saio, 'devices', '--json'],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    try:
        rows = json.loads(proc.stdout)
    except ValueError:
        return None
    return rows if isinstance(rows, list) else None


class Sampler(object):
    """Snapshots of the CPU and the devices; ``devices`` and ``cpu`` are
    callables (a test gives fakes)."""

    def __init__(self, devices=lambda: None, cpu=cpu_times,
                 clock=time.time):
        self.devices, self.cpu, self.clock = devices, cpu, clock

    def snapshot(self):
        began = self.clock()
        cpu = self.cpu()
        devices = self.devices()
        # the devices' counters are read somewhere in the call
        return {'time': (began + self.clock()) / 2.0, 'cpu': cpu,
                'devices': devices}


def between(before, after):
    """What the machine did from snapshot ``before`` to ``after``."""
    seconds = after['time'] - before['time']
    return {'seconds': seconds,
            'cpu': cpu_share(before['cpu'], after['cpu']),
            'devices': device_rates(before['devices'], after['devices'],
                                    seconds)}


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


def _class_sums():
    return dict.fromkeys(('devices', 'reads', 'writes', 'busy_ms',
                          'read_limit', 'read_passed', 'write_limit',
                          'write_passed'), 0)


def device_rates(before, after, seconds):
    """Per device class, from two ``tools/saio devices --json`` row lists
    taken ``seconds`` apart: read_iops, write_iops (completed by the block
    layer), busy_pct (mean utilisation of the class's devices) and, where
    the class's devices are throttled, {'iops': I/Os that passed the
    throttle per second, 'limit': the sum of their IOPS limits, 'pct':
    iops as a percentage of limit} as 'read_throttle' and
    'write_throttle' (None where not throttled).  None without both
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
        c = sums.setdefault(row['class'], _class_sums())
        c['devices'] += 1
        c['busy_ms'] += delta['busy_ms']
        for op, plural in DIRECTIONS:
            c[plural] += delta[plural]
            limit = row.get('%s_iops_limit' % op) or 0
            if limit:
                c['%s_limit' % op] += limit
                c['%s_passed' % op] += delta['throttle_passed_%s' % plural]
    out = {}
    for cls, c in sorted(sums.items()):
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
        out[cls] = entry
    return out


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


# ------------------------------------------------------------- output

def _pct(value):
    return '%.0f%%' % value if value is not None else '-'


def _iops(value):
    return '%.0f' % value if value is not None else '-'


def _throttle(entry):
    if not entry:
        return '-'
    return '%.0f/s=%.0f%%' % (entry['iops'], entry['pct'])


def _classes(resources):
    found = set()
    for r in resources:
        found.update((r or {}).get('devices') or {})
    return sorted(found)


def _row(resources, classes):
    cpu = (resources or {}).get('cpu') or {}
    cells = [_pct(cpu.get('busy_pct')), _pct(cpu.get('iowait_pct'))]
    devices = (resources or {}).get('devices') or {}
    for cls in classes:
        d = devices.get(cls) or {}
        cells += [_iops(d.get('read_iops')), _iops(d.get('write_iops')),
                  _pct(d.get('busy_pct')), _throttle(d.get('read_throttle')),
                  _throttle(d.get('write_throttle'))]
    return cells


def format_line(resources):
    """One run's resources on one line."""
    if not resources:
        return '    where: not sampled'
    cpu = resources.get('cpu') or {}
    text = '    where: CPU %s busy, %s iowait' % (
        _pct(cpu.get('busy_pct')), _pct(cpu.get('iowait_pct')))
    devices = resources.get('devices')
    if devices is None:
        return text + '; devices not sampled (no hetero profile)'
    for cls in sorted(devices):
        d = devices[cls]
        text += '; %s r/w %s/%s IOPS, %s busy' % (
            cls, _iops(d['read_iops']), _iops(d['write_iops']),
            _pct(d['busy_pct']))
        for op, _ in DIRECTIONS:
            if d['%s_throttle' % op]:
                text += ', %ss %s of limit' % (
                    op, _throttle(d['%s_throttle' % op]))
    return text


def format_table(by_mode):
    """``{mode: resources}`` (medians over a mode's runs) as a table."""
    classes = _classes(by_mode.values())
    head = ['mode', 'CPU busy', 'iowait']
    for cls in classes:
        head += ['%s r/s' % cls, '%s w/s' % cls, '%s busy' % cls,
                 '%s r limit' % cls, '%s w limit' % cls]
    rows = [head] + [['default*' if mode == 'control' else mode] +
                     _row(r, classes) for mode, r in by_mode.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ['where the time went (median over each mode\'s runs): CPU of '
             'all cores; device IOPS per class, utilisation, and IOPS '
             'through the throttle = share of its limit']
    lines += ['  '.join(cell.rjust(w) if i else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(r, widths)))
              for r in rows]
    if not classes:
        lines.append('devices: not sampled (tools/saio devices needs the '
                     'hetero profile)')
    return '\n'.join(lines)
