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
"""PNG plots of ``tools/bench`` results (matplotlib, no display).

* ``throughput.png`` and ``latency.png``: per tenant, one bar per mode
  (median over cycles), with the min-max over cycles as error bars and,
  behind them, the A/A band: default's median times the A/A control's
  spread (what an identical run may differ by); on ``latency.png`` the
  mean's bars carry the p99 (median over cycles) as a mark;
* ``timeline-MODE.png``: each run's operations/s per second of its
  window, one panel per tenant, one line per cycle (the A/A control's
  runs dashed, on default's): a stall shows as a dip; a dotted line in
  the run's colour where Mass's policy for the tenant changed;
  for a phased comparison (``--staged``, mass_bench.phases), each run's
  phases end to end, a solid grey line and the phase's name where each
  begins;
* ``timeline.png`` for the staged results of before the phases (a stage
  per run, each mode once): operations/s per tenant over time, one
  panel per mode, stage boundaries marked and each change of a tenant's
  class (as the policy table had it) annotated where it happened.

matplotlib is optional: :func:`available` says whether it is there.
"""
import os
import re


def available():
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def draw(result, out):
    """Write the plots for `result` into directory `out`; their paths."""
    if result.get('staged') and not any(r.get('phases')
                                        for r in result['runs']):
        # the staged runs of before the phases (a stage per run)
        return [timeline(result, os.path.join(out, 'timeline.png'))]
    return [bars(result, 'ops_per_s', 'operations/s (higher is better)',
                 os.path.join(out, 'throughput.png')),
            bars(result, 'mean_ms', 'mean latency, ms (lower is better; '
                 'marks: p99)', os.path.join(out, 'latency.png'),
                 mark='p99_ms')] + run_timelines(result, out)


def _cycle_values(result, label, mode, field):
    values = []
    for run in result['runs']:
        if run['control'] != (mode == 'control'):
            continue
        if mode != 'control' and run['mode'] != mode:
            continue
        figures = run['tenants'].get(label)
        if figures and figures[field] is not None:
            values.append(figures[field])
    return values


def aa_band(summary, label, field, base='default'):
    """(low, high): ``base``'s median times the A/A control's spread of
    ``field``; None without either."""
    modes = summary.get(label, {})
    default = (modes.get(base) or {}).get(field)
    spread = ((modes.get('control') or {}).get('aa_spread') or {}).get(
        field)
    if default is None or not spread:
        return None
    return default * spread['min'], default * spread['max']


def _draw_bands(ax, summary, labels, field, base='default'):
    shown = False
    for j, label in enumerate(labels):
        band = aa_band(summary, label, field, base)
        if band is None:
            continue
        ax.fill_between([j - 0.45, j + 0.45], band[0], band[1],
                        color='grey', alpha=0.25, linewidth=0,
                        label=None if shown else 'A/A band', zorder=0)
        shown = True


def bars(result, field, title, path, mark=None):
    """Per tenant a bar per mode of ``field`` (median over cycles,
    min-max error bars) over the A/A band; with ``mark``, that figure
    (e.g. 'p99_ms') as a mark on each bar."""
    plt = _pyplot()
    summary = result['summary']
    labels = sorted(label for label in summary if label in result['tenants'])
    modes = [m for m in result['modes']]
    width = 0.8 / max(1, len(modes))
    fig, ax = plt.subplots(figsize=(2.2 + 1.8 * len(labels), 4))
    _draw_bands(ax, summary, labels, field, result.get('base', 'default'))
    for i, mode in enumerate(modes):
        xs, heights, low, high, marks = [], [], [], [], []
        for j, label in enumerate(labels):
            entry = summary[label].get(mode)
            if entry is None:
                continue
            values = _cycle_values(result, label, mode, field) or [0]
            xs.append(j + (i - (len(modes) - 1) / 2.0) * width)
            heights.append(entry[field] or 0)
            low.append(max(0, (entry[field] or 0) - min(values)))
            high.append(max(0, max(values) - (entry[field] or 0)))
            marks.append(entry.get(mark) if mark else None)
        ax.bar(xs, heights, width, yerr=[low, high], capsize=3, label=mode)
        marked = [(x, m) for x, m in zip(xs, marks) if m is not None]
        if marked:
            ax.scatter([x for x, _ in marked], [m for _, m in marked],
                       marker='_', s=200, color='black', zorder=3,
                       label='p99' if i == 0 else None)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(['%s\n%s' % (
        label, result['tenants'][label]['workload']['name'])
        for label in labels])
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def file_name(mode):
    """A mode's name fit for a file name."""
    return re.sub(r'[^A-Za-z0-9_.-]', '_', mode)


def run_timelines(result, out):
    """One ``timeline-MODE.png`` per mode; their paths."""
    paths = []
    for mode in result['modes']:
        runs = [r for r in result['runs'] if r['mode'] == mode]
        if runs:
            paths.append(mode_timeline(runs, mode, os.path.join(
                out, 'timeline-%s.png' % file_name(mode))))
    return paths


def _mark_decisions(ax, did, color):
    """A dotted line where Mass's policy for the tenant changed."""
    for d in (did or {}).get('decisions') or ():
        ax.axvline(d['t'], color=color, linestyle=':', linewidth=1)


def phase_starts(runs):
    """[(second, phase name)] where each phase of a phased run begins on
    its timeline (mass_bench.phases: the phases' windows end to end), of
    the first of ``runs`` that has phases; [] without."""
    for run in runs:
        if run.get('phases'):
            return [(p['offset'], p['phase']) for p in run['phases']]
    return []


def _mark_phases(ax, runs):
    """A solid grey line where each phase begins, with its name."""
    for offset, name in phase_starts(runs):
        ax.axvline(offset, color='grey', linewidth=1.5)
        ax.text(offset + 1, 1.0, name, fontsize=7, va='top',
                transform=ax.get_xaxis_transform())


# the machine's seconds (resources.per_second) drawn under the tenants'
# panels: whether a stall waited for the CPU or for the devices
MACHINE_PANELS = (('busy_pct', 'CPU busy'), ('io_full_pct', 'io full'))


def machine_panels(runs):
    """The (figure, label) of MACHINE_PANELS that some second of ``runs``
    recorded."""
    return [(key, label) for key, label in MACHINE_PANELS
            if any(s.get(key) is not None
                   for run in runs for s in run.get('machine') or ())]


def mode_timeline(runs, mode, path):
    """Every run of a mode: per tenant a panel, per run a line of its
    operations/s in each second of the window; and where the machine
    recorded them (resources.per_second), panels of the share of each
    second the CPU was busy and in which every task that could run waited
    for I/O (io full)."""
    plt = _pyplot()
    labels = sorted({label for run in runs for label in run['tenants']})
    panels = machine_panels(runs)
    fig, axes = plt.subplots(len(labels) + len(panels), 1, sharex=True,
                             squeeze=False,
                             figsize=(9, 1.2 + 1.8 * (len(labels) +
                                                      len(panels))))
    for ax, (key, name) in zip(axes[len(labels):, 0], panels):
        for run in runs:
            shares = [s.get(key) for s in run.get('machine') or ()]
            ax.plot([i + 0.5 for i in range(len(shares))],
                    [v if v is not None else float('nan') for v in shares],
                    linewidth=1,
                    linestyle='--' if run.get('control') else '-')
        ax.set_ylim(0, 100)
        ax.set_ylabel('%s\n%% of the s' % name)
    for ax, label in zip(axes[:, 0], labels):
        for run in runs:
            figures = run['tenants'].get(label)
            if not figures:
                continue
            ops = figures['timeline']['ops']
            line, = ax.plot(
                [i + 0.5 for i in range(len(ops))], ops, linewidth=1,
                linestyle='--' if run.get('control') else '-',
                label='cycle %d%s' % (run.get('cycle', 0) + 1,
                                      ' A/A' if run.get('control') else ''))
            _mark_decisions(ax, figures.get('mass'), line.get_color())
        _mark_phases(ax, runs)
        ax.set_ylim(bottom=0)
        ax.set_ylabel('%s\nops/s' % label)
        ax.legend(fontsize=7, loc='lower right')
    axes[-1, 0].set_xlabel('second of the measured window')
    fig.suptitle('%s: operations/s in each second of every run' % mode)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def timeline(result, path):
    plt = _pyplot()
    modes = result['modes']
    fig, axes = plt.subplots(len(modes), 1, sharex=True, squeeze=False,
                             figsize=(9, 2.6 * len(modes)))
    for ax, mode in zip(axes[:, 0], modes):
        runs = [r for r in result['runs'] if r['mode'] == mode]
        offset = 0.0
        series = {}
        for run in runs:
            for label, figures in run['tenants'].items():
                ops = figures['timeline']['ops']
                xs, ys = series.setdefault(label, ([], []))
                xs.extend(offset + i for i in range(len(ops)))
                ys.extend(ops)
            previous = {}
            for when, classes in run['classes']:
                for label, cls in classes.items():
                    if previous.get(label) not in (None, cls):
                        ax.annotate('%s: %s' % (label, cls),
                                    (offset + max(0.0, when), 0),
                                    xytext=(0, 12),
                                    textcoords='offset points',
                                    fontsize=7, rotation=90,
                                    arrowprops={'arrowstyle': '-'})
                    previous[label] = cls
            ax.axvline(offset, color='grey', linewidth=0.5)
            ax.text(offset + 0.5, 1.0, run['stage'], fontsize=8,
                    transform=ax.get_xaxis_transform(), va='top')
            offset += run['seconds'] + 1
        for label, (xs, ys) in sorted(series.items()):
            ax.plot(xs, ys, label=label, linewidth=1)
        ax.set_ylabel('%s\nops/s' % mode)
        ax.legend(fontsize=7, loc='upper right')
    axes[-1, 0].set_xlabel('seconds (measured time of each stage)')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
