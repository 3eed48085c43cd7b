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
"""Phased runs (``tools/bench --staged``, the workload-change experiments
of docs/benchmarks/adaptation): one run of a mode is every phase back to
back, on the same containers, in the same mode, Mass's state carried
over; the driver (mass_bench.driver.Bench) runs such a run as one unit of
its ABBA cycles, with the A/A control of the base, as it runs a
steady-state run.

A phased run (:func:`run_phases`) creates and seeds each tenant's
container once, from its phase-1 workload (the one ``placed`` places and
``static`` pins by), settles once, then runs the phases: each phase's
client processes start when the previous phase's have ended and read the
objects those left (the names the clients' sets held: a backup's restore
reads what the backup wrote); only the first phase has a warm-up, so a
later phase is measured from its first second, reaction included.  The
gap between two phases is the time it takes to collect the previous
phase's rows (about a second; each phase records when it began,
``began``, in seconds from the first phase's window).

Its result is a run's (``tenants``: each tenant's figures over all
phases, as if the phases' windows were laid end to end: ``offset`` is
where each phase begins on that axis, the timeline and the policy
samples run along it) with ``phases``: each phase's own result, as a
steady-state run's.  :func:`summaries` sums up a comparison per phase with
mass_bench.summary's method (ratios against the base of the same cycle,
bootstrap interval, A/A spread).  Runs in the benchmark's process.
"""
import statistics
import time

from mass_bench import policy_table, reaction, resources, summary

# the clients of phase k get seeds from k * PHASE_SEEDS * 1000 on, so the
# objects a phase creates are named apart from an earlier phase's
PHASE_SEEDS = 100


def run_phases(bench, phases, label):
    """One run of ``phases`` ([(name, {tenant: workload or None})], every
    tenant of a later phase in the first) in ``bench``'s current mode."""
    bench.run_number += 1
    first = [(t, w) for t, w in phases[0][1].items() if w is not None]
    prepared = bench.prepare_all(first)
    bench.settle_write_back()
    before = bench.sampler.snapshot()
    done, window = [], None
    for number, (name, stage) in enumerate(phases):
        active = [(t, w) for t, w in stage.items() if w is not None]
        warmup = max(w.warmup for _, w in active) if number == 0 else 0.0
        seconds = max(w.seconds for _, w in active)
        start = time.time() + 0.5
        window = start + warmup if window is None else window
        procs, results = bench.start_clients(
            active, prepared, start, warmup, start + warmup + seconds,
            first_index=number * PHASE_SEEDS)
        samples, where, machine = bench.watch(
            start, warmup, seconds, '%s, %s' % (label, name))
        collected = bench.collect(procs, results, seconds)
        for tenant_label, (_, _, names) in collected.items():
            prepared[tenant_label] = (prepared[tenant_label][0], names)
        result = bench.run_figures('%s, %s' % (label, name), active,
                                   collected, warmup, seconds, samples,
                                   where, machine)
        result.update(phase=name, began=round(start + warmup - window, 2))
        if bench.worker_samples:
            result['workers'] = bench.worker_samples
            result['reaction'] = {
                t.label: reaction.reaction(bench.worker_samples, t.label,
                                           0.0, seconds)
                for t, _ in active}
        done.append((result, {t.label: [
            (r[0] - warmup,) + tuple(r[1:]) for r in collected[t.label][0]]
            for t, _ in active}))
    where = resources.between(before, bench.sampler.snapshot())
    return joined(bench, label, done, where)


def joined(bench, label, done, where):
    """The run of phases ``done`` ([(phase's result, {tenant: its rows,
    offsets from the phase's window}]) as one run, the phases' windows
    laid end to end; ``where``: where the time went over the whole run
    (warm-up and gaps included)."""
    rows, samples, machine, offset = {}, [], [], 0.0
    for result, phase_rows in done:
        result['offset'] = offset
        for tenant_label, own in phase_rows.items():
            rows.setdefault(tenant_label, []).extend(
                (r[0] + offset,) + tuple(r[1:]) for r in
                summary.completed_in(own, 0.0, result['seconds']))
        samples += [[t + offset, s] for t, s in result['policy']
                    if 0 <= t < result['seconds']]
        machine += result.get('machine') or []
        offset += result['seconds']
    tenants = {}
    for tenant_label, own in rows.items():
        figures = summary.summarise(own, 0.0, offset)
        figures['timeline'] = summary.timeline(own, offset)
        figures['workload'] = ' -> '.join(
            r['tenants'][tenant_label]['workload'] for r, _ in done
            if tenant_label in r['tenants'])
        figures['container_policy'] = bench.container_policies.get(
            tenant_label)
        figures['mass'] = policy_table.what_mass_did(
            samples, tenant_label, offset,
            judged=bench.mass_in_pipeline())
        tenants[tenant_label] = figures
    load = sum(r['load_generator']['cpu_seconds'] for r, _ in done)
    operations = sum(f['operations'] for f in tenants.values())
    return {'label': label, 'mode': bench.mode, 'seconds': offset,
            'warmup': done[0][0]['warmup'],
            'settle': bench.settle_after_seeding,
            'mass_in_pipeline': bench.mass_in_pipeline(),
            'tenants': tenants, 'policy': samples,
            'classes': [[t, summary.classes_of(s)] for t, s in samples],
            'resources': where, 'machine': machine,
            'stalls': resources.stalls(
                {k: f['timeline']['ops'] for k, f in tenants.items()},
                machine),
            'load_generator': {
                'cpu_seconds': load, 'cores': done[0][0][
                    'load_generator']['cores'],
                'machine_pct': resources.machine_share(load, offset)},
            'costs': resources.per_operation(where, operations),
            'phases': [r for r, _ in done]}


def phase_runs(runs, number):
    """``runs`` as they were in phase ``number``: each run's figures
    those of that phase (cycle, mode and control kept)."""
    return [dict(run, tenants=run['phases'][number]['tenants'],
                 resources=run['phases'][number].get('resources'),
                 costs=run['phases'][number].get('costs'))
            for run in runs if len(run.get('phases') or ()) > number]


def summaries(runs, modes, base='default'):
    """Per phase, a comparison's summary of that phase alone, as
    Bench.compare sums up whole runs: [{'phase': name, 'offset',
    'summary', 'per_tenant', 'between', 'costs'}]."""
    out = []
    count = min((len(r.get('phases') or ()) for r in runs), default=0)
    for number in range(count):
        these = phase_runs(runs, number)
        out.append({
            'phase': these[0]['phases'][number]['phase'],
            'offset': these[0]['phases'][number]['offset'],
            'summary': summary.summary(these, modes, base),
            'per_tenant': summary.per_tenant_summary(these, modes, base),
            'between': summary.between_modes(these, modes, base),
            'costs': summary.cost_summary(these, modes),
            'reaction': reactions(these, number)})
    return out


def reactions(runs, number):
    """Phase ``number``'s reaction times over the cycles: {mode: {tenant
    label: {'median', 'worst' (seconds; None where the workers never
    all applied the new policy), 'changed' (in how many runs the policy
    changed), 'runs', 'policies' (the new policy of each run)}}}, of the
    runs that probed the workers."""
    out = {}
    for run in runs:
        phase = run['phases'][number]
        for label, found in (phase.get('reaction') or {}).items():
            if found is None:
                continue
            seen = out.setdefault(run['mode'], {}).setdefault(
                label, {'seconds': [], 'changed': 0, 'runs': 0,
                        'policies': []})
            seen['runs'] += 1
            seen['changed'] += found['changed']
            seen['policies'].append(found['policy'])
            seen['seconds'].append(found['seconds'])
    for tenants in out.values():
        for seen in tenants.values():
            times = seen.pop('seconds')
            known = sorted(t for t in times if t is not None)
            seen['median'] = statistics.median(known) if known else None
            seen['worst'] = None if None in times or not known \
                else known[-1]
    return out
