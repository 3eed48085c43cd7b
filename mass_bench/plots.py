"""PNG plots of ``tools/bench`` results (matplotlib, no display).

* ``throughput.png`` and ``latency.png``: per tenant, one bar per mode
  (median over cycles), with the min-max over cycles as error bars;
* ``timeline.png`` for staged runs: operations/s per tenant over time, one
  panel per mode, stage boundaries marked and each change of a tenant's
  class (as the policy table had it) annotated where it happened.
"""
import os


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def draw(result, out):
    """Write the plots for `result` into directory `out`; their paths."""
    if result.get('staged'):
        return [timeline(result, os.path.join(out, 'timeline.png'))]
    return [bars(result, 'ops_per_s', 'operations/s (higher is better)',
                 os.path.join(out, 'throughput.png')),
            bars(result, 'mean_ms', 'mean latency, ms (lower is better)',
                 os.path.join(out, 'latency.png'))]


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


def bars(result, field, title, path):
    plt = _pyplot()
    summary = result['summary']
    labels = sorted(label for label in summary if label in result['tenants'])
    modes = [m for m in result['modes']]
    width = 0.8 / max(1, len(modes))
    fig, ax = plt.subplots(figsize=(2.2 + 1.8 * len(labels), 4))
    for i, mode in enumerate(modes):
        xs, heights, low, high = [], [], [], []
        for j, label in enumerate(labels):
            entry = summary[label].get(mode)
            if entry is None:
                continue
            values = _cycle_values(result, label, mode, field) or [0]
            xs.append(j + (i - (len(modes) - 1) / 2.0) * width)
            heights.append(entry[field] or 0)
            low.append(max(0, (entry[field] or 0) - min(values)))
            high.append(max(0, max(values) - (entry[field] or 0)))
        ax.bar(xs, heights, width, yerr=[low, high], capsize=3, label=mode)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(['%s\n%s' % (
        label, result['tenants'][label]['workload']['name'])
        for label in labels])
    ax.set_title(title)
    ax.legend()
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
