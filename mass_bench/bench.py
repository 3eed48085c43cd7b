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
"""``tools/bench`` (``python3 -m mass_bench``): several tenants' workloads
at once against a SAIO, compared across modes in one run.  This module is
the command line; the modes are ``mass_bench.modes``', a run and the ABBA
cycles ``mass_bench.driver``'s, the results files ``mass_bench.results``'.
It runs in the benchmark's process, beside the SAIO it drives.

Modes, all on the same cluster:

* ``default``: Mass is not in the pipelines (``tools/saio pipeline
  without``): Swift as it is;
* ``placed``: Swift as it is, with each tenant's containers created on
  the storage policy ``static`` routes it to (``X-Storage-Policy``, as an
  operator sets it by hand: ``mass_bench.placement``); ``--base placed``
  compares Mass with what an operator runs instead;
* ``static``: Mass in the pipelines, every tenant pinned by hand to the
  class its workload is meant to have (the Crystal-like manual assignment);
* ``mass``: Mass in the pipelines, no pins: the control loop decides;
* a variant (``--variant NAME=MODE:OPTION=VALUE[+OPTION=VALUE...]``): one
  of the modes above with the object servers' ``[filter:mass_queue]``
  options set so (``tools/saio queue``), and with the proxies'
  ``[filter:mass]`` options for an OPTION written ``mass.OPTION``
  (``tools/saio mass``); every other mode runs with the values the
  servers had when the bench began, so a variant and its mode are
  compared in the same ABBA cycles.  For example
  ``--variant adaptive=mass:adaptive_slots=true`` or
  ``--variant unrouted=static:mass.write_substore=`` (an empty value: no
  write substore);
* a ring variant (``--ring-variant NAME=MODE:POLICY=W``): one of the modes
  above with POLICY's ring weighted by class weights W, the shares of the
  device classes of ``swift-mass devices`` (``mass_bench.rings``); the
  other modes run with the ring as it was.  For example
  ``--ring-variant chosen=default:standard=0.5,0.5``.

A run of a mode: each tenant gets a fresh container, created in that mode
(so Mass's routing applies to it), filled with the workload's starting
objects (through ``--seed-url``'s proxy if given: one without Mass, so
that Mass's monitor does not count the filling as the tenant's
workload); then the bench writes the page cache back (``sync``) and waits
``--settle`` seconds (default 35), so that the filling's write-back does
not fall in the measured window; then all tenants' clients run at once
(``mass_bench.clients``: one process per tenant with one thread and
connection per client), for a warm-up that is not measured and the
measured window (``--seconds``).  From the warm-up's start to the
window's end the bench samples the policy table each second (what Mass
did: ``mass_bench.policy_table``), and at the window's start and end
where the time went (``mass_bench.resources``).  The figures of a run
(per tenant, counted by the window a request completed in) and of a
comparison are ``mass_bench.summary``'s.

Machines like these differ by 5-10 % between identical runs, so the modes
alternate in ABBA order (default, static, mass, then mass, static, default,
...) for ``--cycles`` cycles, and each cycle also runs ``default`` a
second time (the A/A control: what two identical runs differ by here).
Every ratio against ``default`` of the same cycle is summed up over cycles
(``mass_bench.summary``, ``mass_bench.ratios``): its median, min-max and
95 % bootstrap interval, and whether it is a difference.

To tell a 10 % effect, run at least 5 cycles of at least 120 s each, with
the starting objects written by a proxy without Mass::

    tools/bench --cycles 5 --seconds 120 --settle 35 \\
        --seed-url http://127.0.0.1:8082 --out bench-results

(the default, 3 cycles of each workload's seconds, is a quick look: its
intervals are as wide as its min-max).  One benchmark at a time: two on
one machine spoil each other.

``--staged internal`` and ``--staged external`` run the workload-change
experiments of docs/benchmarks/adaptation (``staged_scenario``): each
run of a mode is then every phase back to back on the same containers,
Mass's state carried over (``mass_bench.phases``), and it is that run
which the ABBA cycles alternate, with the A/A control of the base, as
above; ``placed`` and ``static`` place and pin each tenant by its phase-1
workload.  ``internal``: each tenant's own workload changes (a backup
restores what it wrote, a read-mostly site takes an upload burst, a dump
is read back); ``external``: the slides' three stages (baseline, tenant A
dominating, then tenant C).  Without ``--tenant`` the tenants are that
page's (``STAGED_TENANTS``: 8 clients each, phases of 240 s).  The
figures are given over all phases and for each phase, and the timeline
of each mode marks where each phase began.

Results: a table on stdout (``mass_bench.report``), ``results.json``
(non-finite numbers as null), and PNG plots in ``--out`` when matplotlib
is installed (``mass_bench.plots``).  ``--redraw DIR`` draws the plots
again from DIR's ``results.json`` or ``results.json.gz`` (docs/benchmarks
keeps the results gzipped and not the plots), and touches no cluster.
While it runs, ``runs-so-far.json`` in ``--out`` holds every run
finished, so a comparison that dies keeps them (it goes once
``results.json`` is written).  Benchmarks are not tests: nothing here
asserts a speed.
"""
import argparse
import json
import os
import platform
import sys
import time

from mass_bench import clients, report, rings, workloads
from mass_bench.driver import Bench
from mass_bench.modes import MODES, PROXY_CONF, Variant, default_saio
from mass_bench.results import finite, load_results
from swift_mass.control import classify

DEFAULT_TENANTS = ('photos:web:web=A', 'dbdump:dump:dump=B',
                   'backup:job:job=C')
# seconds between the seeding (then sync) and the clients: the write-back
# of a few hundred MB of starting objects is over by then
SETTLE_SECONDS = 35.0


AUTOGROUP = '/proc/sys/kernel/sched_autogroup_enabled'


def autogroup(path=AUTOGROUP):
    """Whether the kernel shares the CPU between sessions before processes
    (``sched_autogroup_enabled``); None where it cannot tell.  With it on,
    a process of another session, even niced, takes as much CPU as the
    whole cluster and load generator together when both are busy: the
    bench warns, and ``echo 0 > /proc/sys/kernel/sched_autogroup_enabled``
    turns it off."""
    try:
        with open(path) as f:
            return f.read().strip() == '1'
    except (OSError, ValueError):
        return None


def machine():
    return {'host': platform.node(), 'python': platform.python_version(),
            'cpus': os.cpu_count(), 'platform': platform.platform(),
            'load_average': os.getloadavg(),
            'sched_autogroup': autogroup()}


# the tenants of the workload-change experiments
# (docs/benchmarks/adaptation/README.md, fixed before any run): 8 clients
# each, phases of 240 s; internal: backup C, photos A (Zipf 0.99 over 200),
# dbdump B (overwrites); external: the slides' A, B and C
STAGED_TENANTS = {
    'internal': ('backup:job:job=C,concurrency=8,seconds=240',
                 'photos:web:web=A,concurrency=8,seconds=240,objects=200,'
                 'popularity=zipf:0.99',
                 'dbdump:dump:dump=B,concurrency=8,seconds=240,overwrite=1'),
    'external': ('photos:web:web=A,concurrency=8,seconds=240',
                 'dbdump:dump:dump=B,concurrency=8,seconds=240',
                 'backup:job:job=C,concurrency=8,seconds=240')}


def changed(workload):
    """The internal change's phase 2 of a tenant whose phase 1 is
    ``workload``: a read-dominated one takes an upload burst (80 % PUT of
    new objects of its size, 20 % GET by its own popularity); any other
    reads back its objects (100 % GET, uniform: those it wrote or
    overwrote and its starting ones)."""
    if workload.intended_class == classify.READ:
        return workload.with_options(
            mix=(('GET', 0.2), ('PUT', 0.8)), overwrite=False,
            name=workload.name + '->uploads')
    return workload.with_options(mix=(('GET', 1.0),), overwrite=False,
                                 popularity='uniform',
                                 name=workload.name + '->reads')


def staged_scenario(name, tenants):
    """The phases of a phased run: [(name, {tenant: workload or None})],
    phase 1 every tenant's own workload."""
    if name == 'external':
        if len(tenants) < 2:
            raise ValueError('--staged external needs two tenants or more '
                             '(the first dominates stage 2, the last '
                             'stage 3)')
        first, last = tenants[0], tenants[-1]

        def stage(dominant):
            return {t: t.workload.with_options(
                concurrency=t.workload.concurrency * (
                    4 if t is dominant else 1)) for t in tenants}
        return [('1 baseline', stage(None)),
                ('2 %s-dominated' % first.label, stage(first)),
                ('3 %s-dominated' % last.label, stage(last))]
    if name == 'internal':
        return [('1 as first seen', {t: t.workload for t in tenants}),
                ('2 changed', {t: changed(t.workload) for t in tenants})]
    raise ValueError('--staged: external or internal')


def add_arguments(parser):
    """tools/bench's options: what it compares (the proxies' config, the
    tenants and their workloads, the modes and their variants), then how
    it runs and where its results go (:func:`add_run_arguments`)."""
    parser.add_argument('--conf', default=PROXY_CONF,
                        help='proxy config with the [filter:mass] section '
                        'naming the shared store (default %s)' % PROXY_CONF)
    parser.add_argument(
        '--tenant', action='append', metavar='ACCOUNT:USER:KEY=WORKLOAD',
        help='a tenant and its workload: a preset (%s) and/or fields '
        'get=,head=,put=,delete= (shares), size=N|MIN-MAX, objects=, '
        'concurrency=, seconds=, operations=, warmup=, policy= (the '
        'containers\' storage policy), popularity=uniform|zipf:S (the '
        'objects reads, deletes and overwrites pick: uniform over each '
        'client\'s share of the set, or by Zipf rank over the whole set), '
        'overwrite=0|1 (PUTs rewrite objects of the set instead of creating '
        'new ones), api=swift|s3 (s3: the clients speak S3 to the proxy\'s '
        's3api, signed with SigV4, the user as the access key and the key '
        'as the secret); repeatable '
        '(default: %s)' % (', '.join(sorted(workloads.PRESETS)),
                           ' '.join(DEFAULT_TENANTS)))
    parser.add_argument('--modes', default=','.join(MODES),
                        help='comma-separated, of %s and the names of '
                        'variants' % ', '.join(MODES))
    parser.add_argument('--variant', action='append', default=[],
                        help='%s: a mode that runs as MODE with these '
                        '[filter:mass_queue] options on the object servers '
                        'and, for an OPTION written mass.OPTION, these '
                        '[filter:mass] options on the proxies (the other '
                        'modes keep the values they had); repeatable'
                        % Variant.FORM)
    parser.add_argument('--ring-variant', action='append', default=[],
                        help='%s: a mode that runs as MODE with POLICY\'s '
                        'ring weighted by class weights W (the other modes '
                        'keep the ring as it was); repeatable'
                        % rings.RingVariant.FORM)
    parser.add_argument('--swift-dir', default='/etc/swift',
                        help='where the rings a ring variant weights are')
    parser.add_argument('--classes-file',
                        help='the device classes of a ring variant '
                        '(default: <swift-dir>/mass-devices.json, as '
                        'swift-mass devices probe writes it)')
    add_run_arguments(parser)


def add_run_arguments(parser):
    """tools/bench's options of how a comparison runs (cycles, base,
    seconds, settling, scale, staged runs), of the cluster it runs against
    (:func:`add_cluster_arguments`) and of where its results go."""
    parser.add_argument('--cycles', type=int, default=3,
                        help='ABBA cycles (at least 3 for a comparison; '
                        'to tell a 10 %% effect at least 5, of at least '
                        '120 s: --cycles 5 --seconds 120)')
    parser.add_argument('--base', default='default',
                        help='the mode every ratio is against, and the one '
                        'run twice in each cycle (the A/A control): one of '
                        '--modes; e.g. --modes static,mass --base static '
                        'sets mass against static with an A/A control of '
                        'static, as CPU-bound as they are (default: '
                        'default)')
    parser.add_argument('--no-control', action='store_true',
                        help='skip the A/A run of the base in each cycle')
    parser.add_argument('--seconds', type=float,
                        help='measured seconds of every workload (the '
                        'window: requests that complete in it count)')
    parser.add_argument('--settle', type=float, default=SETTLE_SECONDS,
                        metavar='SECONDS',
                        help='after every tenant\'s container is seeded: '
                        'sync, then wait this long before the clients '
                        'start, so the seeding\'s write-back does not '
                        'fall in the window (default %(default)s)')
    parser.add_argument('--scale', type=float, default=1.0,
                        help='multiply object sizes (MOS video/backup '
                        'sizes do not fit a test machine)')
    parser.add_argument('--reseller', default='admin:admin:admin',
                        metavar='ACCOUNT:USER:KEY',
                        help='a reseller admin (tempauth), with --staged: '
                        'the reaction time is read from each proxy worker '
                        'as it (default: the SAIO\'s admin:admin:admin)')
    parser.add_argument('--staged', choices=('external', 'internal'),
                        help='each run of a mode is the phases of a '
                        'workload-change experiment back to back on the '
                        'same containers, in the ABBA cycles '
                        '(docs/benchmarks/adaptation; without --tenant, '
                        'its tenants)')
    add_cluster_arguments(parser)
    parser.add_argument('--out', default='bench-results',
                        help='directory for results.json and the plots')
    parser.add_argument('--no-plots', action='store_true',
                        help='no PNG plots (without matplotlib there are '
                        'none anyway)')
    parser.add_argument('--redraw', metavar='DIR',
                        help='run nothing: draw the plots of DIR\'s '
                        'results.json (or results.json.gz) into DIR again')


def add_cluster_arguments(parser):
    """tools/bench's options of the cluster it runs against: its proxies,
    its tools/saio and whether each run starts from an empty one."""
    parser.add_argument('--auth-url', default='http://127.0.0.1:8080/'
                        'auth/v1.0')
    parser.add_argument('--seed-url', help='a proxy (e.g. the SAIO\'s '
                        'http://127.0.0.1:8082, no Mass in its pipeline) '
                        'that writes each run\'s starting objects, so '
                        'Mass does not count them as the tenant\'s '
                        'workload; containers are still created through '
                        '--auth-url\'s proxy (default: that proxy too)')
    parser.add_argument('--saio', default=default_saio(),
                        help='the tools/saio that switches pipelines')
    parser.add_argument('--reset-data', action='store_true',
                        help='before each run, wipe the cluster\'s '
                        'accounts, containers and objects (tools/saio '
                        'reset: Swift restarted, memcached flushed, Redis '
                        'kept), so that every run starts from an empty '
                        'cluster: for workloads whose runs together write '
                        'more than the devices hold (the internal change\'s '
                        'upload burst writes about 8 GiB a run)')


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/bench', description='Tenants\' workloads against a '
        'SAIO, compared with and without Mass (mass_bench.bench).')
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.redraw is not None:
        return redraw(args.redraw)
    try:
        tenants, variants, ring_variants, modes = checked(args)
        bench = Bench(tenants, args.auth_url, saio=args.saio,
                      conf=args.conf, progress=_progress, variants=[
                          v for v in variants if v.name in modes],
                      seed_url=args.seed_url, ring_variants=[
                          v for v in ring_variants if v.name in modes],
                      swift_dir=args.swift_dir,
                      classes_file=args.classes_file,
                      settle_after_seeding=args.settle)
    except ValueError as err:
        print('tools/bench: %s' % err, file=sys.stderr)
        return 2
    bench.reset_data = args.reset_data
    for tenant in tenants:
        tenant.authenticate(args.auth_url)
    os.makedirs(args.out, exist_ok=True)
    # each run as it ends: removed once results.json holds them all
    bench.keep_runs = os.path.join(args.out, 'runs-so-far.json')
    if autogroup():
        print('tools/bench: warning: the kernel shares the CPU by session '
              '(%s is 1): another session\'s processes, niced or not, take '
              'CPU from the cluster; echo 0 > %s before measuring'
              % (AUTOGROUP, AUTOGROUP), file=sys.stderr)
    began = time.time()
    result, text = run_modes(bench, args, tenants, modes)
    result.update(described(args, argv, bench, tenants, modes, began))
    write_results(result, args.out, bench.keep_runs)
    print(text)
    if not args.no_plots:
        for path in draw_plots(result, args.out):
            print('plot: %s' % path)
    print('results: %s' % os.path.join(args.out, 'results.json'))
    return 0


def checked(args):
    """The tenants of ``args`` (their workloads with --seconds and
    --scale), its variants, ring variants and modes; ValueError for an
    option that is not valid."""
    tenants = [clients.Tenant.parse(t) for t in (
        args.tenant or STAGED_TENANTS.get(args.staged) or DEFAULT_TENANTS)]
    variants = [Variant.parse(v) for v in args.variant]
    ring_variants = [rings.RingVariant.parse(v, MODES)
                     for v in args.ring_variant]
    allowed = list(MODES) + [v.name for v in variants + ring_variants]
    modes = [m.strip() for m in args.modes.split(',') if m.strip()]
    bad = [m for m in modes if m not in allowed]
    if bad or not modes:
        raise ValueError('--modes: %r; allowed: %s' % (
            args.modes, ', '.join(allowed)))
    if args.cycles < 1:
        raise ValueError('--cycles: at least 1')
    if args.base not in modes:
        raise ValueError('--base: %r; allowed: one of --modes (%s)' % (
            args.base, ', '.join(modes)))
    if args.settle < 0:
        raise ValueError('--settle: at least 0')
    for tenant in tenants:
        options = {}
        if args.seconds:
            options['seconds'] = args.seconds
        tenant.workload = workloads.scaled(
            tenant.workload.with_options(**options), args.scale)
    return tenants, variants, ring_variants, modes


def run_modes(bench, args, tenants, modes):
    """The comparison of ``modes`` (with --staged, the staged runs) and
    its text; the cluster left as the bench found it, whatever happens:
    no pins, the servers' options, the rings and Mass in the pipelines
    as they were."""
    try:
        if args.staged:
            bench.phases = staged_scenario(args.staged, tenants)
            bench.reseller = clients.Tenant.reseller(args.reseller)
            bench.cold_start = True
        result = bench.compare(modes, args.cycles,
                               control=not args.no_control, base=args.base)
        text = report.format_summary(result)
        if args.staged:
            text += '\n' + report.format_phases(result)
    finally:
        bench.unpin()
        bench.restore_options()
        bench.restore_rings()
        # leave the cluster as it was found: Mass in the pipelines
        bench.restore_pipeline()
    return result, text


def described(args, argv, bench, tenants, modes, began):
    """What results.json holds besides the comparison: the command, the
    machine, the seconds the bench took since ``began``, the tenants and
    their workloads, the modes, the placement ``placed`` found and the
    ring variants."""
    return {
        'command': ' '.join(['tools/bench'] + (
            sys.argv[1:] if argv is None else list(argv))),
        'machine': machine(), 'seconds': round(time.time() - began, 1),
        'tenants': {t.label: {'user': t.user, 'account': t.account,
                              'workload': _workload_dict(t.workload)}
                    for t in tenants},
        'modes': modes, 'staged': args.staged,
        'placement': bench.placement,
        'ring_variants': {
            name: {'mode': v.mode, 'policy': v.policy,
                   'shares': list(v.shares),
                   'classes': bench.rings.reports[name]['classes']}
            for name, v in bench.ring_variants.items()}}


def write_results(result, out, keep_runs):
    """``out``'s results.json (every number finite); the runs kept so
    far, which it now holds, removed."""
    with open(os.path.join(out, 'results.json'), 'w') as fp:
        json.dump(finite(result), fp, indent=2, sort_keys=True,
                  allow_nan=False)
    if os.path.exists(keep_runs):
        os.unlink(keep_runs)


def draw_plots(result, out):
    """The plots of ``result`` in ``out``, their paths; none, with a
    note, without matplotlib or when drawing fails: the results are
    written by then, and a long run is not lost to a plot."""
    from mass_bench import plots
    if not plots.available():
        print('plots: skipped (matplotlib is not installed; '
              'pip install matplotlib)')
        return []
    try:
        return plots.draw(result, out)
    except Exception as err:
        print('plots: not drawn: %s: %s' % (type(err).__name__, err))
        return []


def redraw(folder):
    """``--redraw``: the plots of ``folder``'s results drawn into it
    again; the exit status (0: drawn)."""
    from mass_bench import plots
    try:
        path, result = load_results(folder)
    except (OSError, EOFError, ValueError) as err:
        print('tools/bench: --redraw: %s' % err, file=sys.stderr)
        return 2
    if not plots.available():
        print('tools/bench: --redraw: matplotlib is not installed (pip '
              'install matplotlib)', file=sys.stderr)
        return 1
    paths = draw_plots(result, folder)
    for drawn in paths:
        print('plot: %s' % drawn)
    if not paths:
        print('tools/bench: --redraw: no plot drawn from %s' % path,
              file=sys.stderr)
        return 1
    return 0


def _workload_dict(w):
    d = {k: getattr(w, k) for k in ('name', 'size_min', 'size_max',
                                    'objects', 'concurrency', 'seconds',
                                    'operations', 'warmup', 'policy',
                                    'popularity', 'overwrite', 'api')}
    d['mix'] = dict(w.mix)
    d['intended_class'] = w.intended_class
    return d


def _progress(text, end='\n'):
    if end == '\r' and not sys.stderr.isatty():
        return
    print(text, end=end, file=sys.stderr, flush=True)
