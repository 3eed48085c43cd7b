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
"""Where a run's time went (mass_bench.resources), as text: a run's lines
(the machine and devices, the stalls, the costs per operation) and a
comparison's tables of each mode's medians, for the benchmark's output
(mass_bench.report).  Plain Python, in the benchmark's process."""
from mass_bench.resources import DIRECTIONS, GROUP_TITLES, GROUPS, \
    HDD_CLASS, MODEL_KINDS


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
                  _throttle(d.get('write_throttle')),
                  _throttle(d.get('budget'))]
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
        if d.get('budget'):
            text += ', all I/Os %s of its budget' % _throttle(d['budget'])
            continue
        for op, _ in DIRECTIONS:
            if d['%s_throttle' % op]:
                text += ', %ss %s of limit' % (
                    op, _throttle(d['%s_throttle' % op]))
    return text


def format_stalls(found):
    """One line of :func:`stalls`, or None."""
    if not found or not found['stalled']['seconds']:
        return None

    def figures(part):
        return ', '.join('%s %s' % (name, _pct(part[key])) for name, key in (
            ('CPU busy', 'busy_pct'), ('io full', 'io_full_pct'),
            ('io some', 'io_some_pct'), ('cpu some', 'cpu_some_pct')))
    tenants = ', '.join('%s %d s' % (label, n) for label, n in sorted(
        found['stalled']['tenants'].items()))
    return ('    stalls: %d s with a tenant at 0 ops/s (%s): %s; the other '
            '%d s: %s' % (found['stalled']['seconds'], tenants,
                          figures(found['stalled']),
                          found['others']['seconds'],
                          figures(found['others'])))


def mode_label(mode, base):
    """A mode's row label: the A/A control is its base's twin, ``base*``."""
    return base + '*' if mode == 'control' else mode


def format_table(by_mode, base='default'):
    """``{mode: resources}`` (medians over a mode's runs) as a table; the
    A/A control ('control') is labelled as ``base``'s twin."""
    classes = _classes(by_mode.values())
    head = ['mode', 'CPU busy', 'iowait']
    for cls in classes:
        head += ['%s r/s' % cls, '%s w/s' % cls, '%s busy' % cls,
                 '%s r limit' % cls, '%s w limit' % cls,
                 '%s budget' % cls]
    rows = [head] + [[mode_label(mode, base)] + _row(r, classes)
                     for mode, r in by_mode.items()]
    return _table(
        'where the time went (median over each mode\'s runs): CPU of all '
        'cores; device IOPS per class, utilisation, IOPS through the '
        'throttle = share of its limit, and for a device model with one '
        'budget all the I/Os it served = share of that budget', rows,
        None if classes else 'devices: not sampled (tools/saio devices '
        'needs the hetero profile)')


def _table(title, rows, note=None):
    """``title``, then ``rows`` (the first the head) in aligned columns,
    then ``note`` if any."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [title] + ['  '.join(cell.rjust(w) if i else cell.ljust(w)
                                 for i, (cell, w) in enumerate(zip(r,
                                                                   widths)))
                       for r in rows]
    if note:
        lines.append(note)
    return '\n'.join(lines)


def _cost(value, form='%.2f'):
    return form % value if value is not None else '-'


def _cost_columns(by_mode):
    costs = [c or {} for c in by_mode.values()]
    groups = [g for g in GROUPS if any(
        g in (c.get('cpu_ms') or {}) for c in costs)]
    classes = sorted({cls for c in costs
                      for cls in (c.get('device_ios') or {})})
    return groups, classes, any(c.get('hdd_model_ios') for c in costs), \
        any(c.get('queue_refusals_per_1000') is not None for c in costs)


def _model_cells(ios):
    return [_cost((ios or {}).get(kind)) for kind in MODEL_KINDS]


def format_costs(by_mode, base='default'):
    """``{mode: per_operation}`` (medians over a mode's runs) as a
    table; the A/A control ('control') is labelled as ``base``'s twin.
    The HDD-class model's I/Os by kind and the queue refusals have
    columns where a mode measured them."""
    groups, classes, modelled, refusals = _cost_columns(by_mode)
    head = ['mode', 'ops'] + ['%s CPU ms' % GROUP_TITLES[g] for g in groups]
    head += ['%s I/Os' % cls for cls in classes]
    head += ['%s model %s' % (HDD_CLASS, kind) for kind in MODEL_KINDS] \
        if modelled else []
    head += ['Redis cmds'] + (['refused/1k ops'] if refusals else [])
    rows = [head]
    for mode, c in by_mode.items():
        c = c or {}
        cpu, ios = c.get('cpu_ms') or {}, c.get('device_ios') or {}
        rows.append([mode_label(mode, base),
                     _cost(c.get('operations'), '%.0f')] +
                    [_cost(cpu.get(g), '%.3f') for g in groups] +
                    [_cost(ios.get(cls)) for cls in classes] +
                    (_model_cells(c.get('hdd_model_ios')) if modelled
                     else []) +
                    [_cost(c.get('redis_commands'))] +
                    ([_cost(c.get('queue_refusals_per_1000'))] if refusals
                     else []))
    return _table(
        'cost per operation (median over each mode\'s runs): CPU '
        'milliseconds of each process group, device I/Os per class, the '
        'reads, writes and syncs the %s-class devices\' model served and '
        'Redis commands, each divided by the operations ALL tenants '
        'completed in the window (not per tenant); requests the object '
        'servers\' queues refused (503) per 1000 of those operations '
        '(- without Mass)' % HDD_CLASS, rows,
        None if classes else 'device I/Os: not sampled (tools/saio '
        'devices needs the hetero profile)')


def format_cost_line(costs):
    """One run's costs per operation on one line."""
    cpu = costs.get('cpu_ms') or {}
    text = '    per op (all tenants\' %d ops): CPU ms %s' % (
        costs['operations'], ', '.join(
            '%s %.3f' % (GROUP_TITLES[g], cpu[g]) for g in GROUPS
            if g in cpu) or '-')
    ios = costs.get('device_ios')
    if ios:
        text += '; I/Os %s' % ', '.join('%s %.2f' % (cls, n)
                                        for cls, n in sorted(ios.items()))
    model = costs.get('hdd_model_ios')
    if model:
        text += '; %s model %s %s' % (HDD_CLASS, '/'.join(MODEL_KINDS),
                                      '/'.join(_model_cells(model)))
    text += '; Redis cmds %s' % _cost(costs.get('redis_commands'))
    refusals = costs.get('queue_refusals_per_1000')
    if refusals is not None:
        text += '; refused %.2f per 1k ops' % refusals
    return text
