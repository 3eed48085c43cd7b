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
the driver: the modes, a run, the ABBA cycles and the command line.

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

``--staged external`` runs the slides' three-stage test (baseline, then
tenant A dominating, then tenant C dominating) and ``--staged internal`` a
tenant that switches from reads to writes, each once per mode: the
timeline shows when Mass reacted.

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
import configparser
import gzip
import json
import logging
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
import urllib.parse

from mass_bench import clients, placement, policy_table, report, \
    resources, rings, summary, workloads
from mass_bench.ratios import abba
from swift_mass.conf import SECTION, QueueConf
from swift_mass.shared_store import shared_store

MODES = ('default', 'placed', 'static', 'mass')
# the modes that run without Mass in the pipelines
WITHOUT_MASS = ('default', 'placed')
DEFAULT_TENANTS = ('photos:web:web=A', 'dbdump:dump:dump=B',
                   'backup:job:job=C')
PROXY_CONF = '/etc/swift/proxy-server.conf'
# Any object server's config: tools/saio queue sets the same
# [filter:mass_queue] options in all of them.
OBJECT_CONF = '/etc/swift/object-server/1.conf'
# a variant's OPTION so named is the proxies' [filter:mass] option NAME
MASS_OPTION_PREFIX = 'mass.'
# seconds between the seeding (then sync) and the clients: the write-back
# of a few hundred MB of starting objects is over by then
SETTLE_SECONDS = 35.0


class Variant(object):
    """A mode run with other ``[filter:mass_queue]`` options (``options``)
    and other ``[filter:mass]`` options (``mass_options``)."""

    FORM = 'NAME=MODE:OPTION=VALUE[+OPTION=VALUE...]'

    def __init__(self, name, mode, options, mass_options=None):
        self.name, self.mode, self.options = name, mode, options
        self.mass_options = mass_options or {}

    @classmethod
    def parse(cls, text):
        name, _, rest = text.partition('=')
        mode, _, pairs = rest.partition(':')
        name, mode = name.strip(), mode.strip()
        options, mass_options, bad = {}, {}, not pairs
        for pair in pairs.split('+') if pairs else ():
            option, sep, value = pair.partition('=')
            option, value = option.strip(), value.strip()
            if option.startswith(MASS_OPTION_PREFIX):
                # a proxy option may be emptied (no write substore)
                option = option[len(MASS_OPTION_PREFIX):]
                bad = bad or not sep or not option
                mass_options[option] = value
            else:
                bad = bad or not sep or not option or not value
                options[option] = value
        if not name or name in MODES or mode not in MODES or bad:
            raise ValueError(
                '--variant: %r; expected %s with MODE one of %s and a NAME '
                'that is not one of them' % (text, cls.FORM,
                                             ', '.join(MODES)))
        return cls(name, mode, options, mass_options)


def section_options(path, section, command, options):
    """{option: value} of ``options`` as ``path``'s ``section`` sets them;
    ValueError for one it leaves to its default (the bench could not put
    that back after a variant).  ``command``: the ``tools/saio`` command
    that sets them."""
    if not options:
        return {}
    parser = configparser.RawConfigParser()
    if not parser.read(path) or not parser.has_section(section):
        raise ValueError('--variant: no [%s] in %s' % (section, path))
    missing = [o for o in options if not parser.has_option(section, o)]
    if missing:
        raise ValueError(
            '--variant: %s not set in %s; set the value the other modes '
            'should run with first (tools/saio %s %s)' % (
                ', '.join(sorted(missing)), path, command,
                ' '.join('%s=...' % o for o in sorted(missing))))
    return {o: parser.get(section, o) for o in options}


class ServerOptions(object):
    """One config section the variants change on the SAIO's servers
    (``tools/saio COMMAND OPTION=VALUE...`` sets it and restarts them):
    what every other mode runs with, and what is set now."""

    def __init__(self, saio, command, baseline):
        self.saio, self.command = saio, command
        self.baseline = baseline
        self.now = dict(baseline)

    def set(self, options):
        """The baseline with ``options`` over it, changing only what
        differs from what is set now."""
        wanted = {o: v for o, v in dict(self.baseline, **options).items()
                  if self.now.get(o) != v}
        if not wanted:
            return
        if self.saio is None:
            raise RuntimeError('a variant needs tools/saio (--saio PATH)')
        self.now = {}  # unknown, should the change fail halfway
        subprocess.run([self.saio, self.command] + sorted(
            '%s=%s' % pair for pair in wanted.items()), check=True,
            stdout=subprocess.DEVNULL)
        self.now = dict(self.baseline, **options)


def default_saio():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, 'tools', 'saio')
    return path if os.path.exists(path) else None


class Bench(object):

    def __init__(self, tenants, auth_url, saio=None, conf=PROXY_CONF,
                 progress=print, settle=None, sampler=None, variants=(),
                 object_conf=OBJECT_CONF, seed_url=None, ring_variants=(),
                 swift_dir='/etc/swift', classes_file=None,
                 settle_after_seeding=None):
        self.tenants = tenants
        # seconds between seeding (then sync) and the clients; None: no
        # sync, no wait
        self.settle_after_seeding = settle_after_seeding
        # a proxy whose pipeline has no Mass, for the starting objects
        self.seed_url = seed_url
        self.variants = {v.name: v for v in variants}
        self.queue = ServerOptions(saio, 'queue', section_options(
            object_conf, QueueConf.section, 'queue',
            {o for v in variants for o in v.options}))
        self.mass_options = ServerOptions(saio, 'mass', section_options(
            conf, SECTION, 'mass',
            {o for v in variants for o in v.mass_options}))
        self.ring_variants = {v.name: v for v in ring_variants}
        self.rings = rings.RingSwitcher(
            self.ring_variants, swift_dir, classes_file) \
            if ring_variants else None
        self.auth_url = auth_url
        self.saio = saio
        self.conf = conf
        self.progress = progress
        # where the runs finished so far are written after each one (None:
        # nowhere), so that a comparison that dies keeps them
        self.keep_runs = None
        self.mode = None
        self.base_mode = None  # the mode a variant runs as
        self.store = None
        self.settle = settle
        self.pinned = set()
        self.run_number = 0
        # {tenant label: the storage policy of its container this run}
        self.container_policies = {}
        self.pipeline = None  # 'with' or 'without' once switched
        # {tenant label: its containers' policy in placed, '' for the
        # default}, found when placed first runs
        self.placement = None
        # where the time went: the CPU, the process groups, the hetero
        # profile's devices and the commands of the proxies' Redis
        self.sampler = sampler or resources.Sampler(
            devices=lambda: resources.saio_devices(self.saio),
            redis=lambda: resources.redis_commands(
                resources.redis_url_of(self.conf)))

    # ---- modes

    def _store(self):
        if self.store is None:
            conf, self.store = shared_store(self.conf,
                                            logging.getLogger('mass_bench'))
            if self.settle is None:
                # every worker loads the table within one interval
                self.settle = 2 * conf.interval + 0.5
        return self.store

    def _pipeline(self, mode):
        if self.saio is None:
            raise RuntimeError('switching Mass in and out of the pipeline '
                               'needs tools/saio (--saio PATH)')
        self.pipeline = 'unknown'
        subprocess.run([self.saio, 'pipeline', mode], check=True,
                       stdout=subprocess.DEVNULL)
        self.pipeline = mode

    def restore_options(self):
        """Put back the servers' options a variant changed."""
        self.queue.set({})
        self.mass_options.set({})

    def restore_rings(self):
        """Put back the ring files a ring variant replaced."""
        if self.rings:
            self.rings.restore()

    def switch(self, mode):
        variant = self.variants.get(mode)
        ring_variant = self.ring_variants.get(mode)
        self.queue.set(variant.options if variant else {})
        self.mass_options.set(variant.mass_options if variant else {})
        if self.rings:
            self.rings.install(mode if ring_variant else None)
        base = variant or ring_variant
        self._switch(base.mode if base else mode)
        self.mode = mode

    def _switch(self, mode):
        want = 'without' if mode in WITHOUT_MASS else 'with'
        if self.pipeline != want:
            self._pipeline(want)
        if mode == 'placed' and self.placement is None:
            self.placement = placement.placed_policies(
                self.tenants, placement.class_substores(self.conf))
            self.progress('placed: %s' % ', '.join(
                '%s on %s' % (label, policy or 'the default policy')
                for label, policy in sorted(self.placement.items())))
        if mode == 'static':
            store = self._store()
            for tenant in self.tenants:
                store.set_pin(tenant.account, {
                    'class': tenant.workload.intended_class})
                self.pinned.add(tenant.account)
            time.sleep(self.settle)
        elif mode == 'mass':
            self.unpin()
        self.mode = self.base_mode = mode
        for tenant in self.tenants:
            # a restarted proxy may have lost the token cache
            tenant.authenticate(self.auth_url)

    def unpin(self):
        if self.pinned:
            store = self._store()
            for account in self.pinned:
                store.delete_pin(account)
            self.pinned.clear()
            time.sleep(self.settle)

    def policy_sample(self):
        """The policy table's entries of the tenants now
        (policy_table.table_sample); None when it cannot be read."""
        try:
            _, table = self._store().get_table()
            return policy_table.table_sample(
                table, {t.label: t.account for t in self.tenants})
        except Exception:
            return None

    def classes(self):
        """{label: class} of the tenants now ('unknown' without an
        entry); {} when the table cannot be read."""
        return summary.classes_of(self.policy_sample())

    def mass_in_pipeline(self):
        return self.base_mode in ('static', 'mass')

    # ---- one run

    def prepare(self, tenant, workload, container):
        """A new container (routed as the current mode routes it) with
        the workload's starting objects."""
        create = {}
        policy = workload.policy
        if self.base_mode == 'placed':
            policy = self.placement.get(tenant.label)
        if policy:
            # s3api passes it on with its container PUT
            create['X-Storage-Policy'] = policy
        api = clients.APIS[workload.api]
        status, _, _ = api(tenant).request('PUT', container,
                                           headers=create)
        if status // 100 != 2:
            raise RuntimeError('cannot create %s for %s: %d' % (
                container, tenant.label, status))
        # where Mass's routing (or its absence) put it, for the figures
        _, created, _ = clients.SwiftApi(tenant).request('HEAD', container)
        self.container_policies[tenant.label] = created.get(
            'x-storage-policy')
        if workload.share('GET', 'HEAD', 'DELETE') == 0 and not (
                workload.overwrite and workload.share('PUT')):
            return []
        chooser = workloads.Chooser(workload, seed=0)
        names = ['seed-%05d' % i for i in range(workload.objects)]
        bodies = {}

        def put(chunk):
            seeder = api(tenant, self.seed_storage_url(tenant))
            for name in chunk:
                size = chooser.size()
                body = bodies.setdefault(size, os.urandom(size))
                status, _, _ = seeder.request('PUT', container, name, body)
                if status // 100 != 2:
                    raise RuntimeError('cannot PUT %s: %d' % (name, status))
        threads = [threading.Thread(target=put, args=(names[i::4],))
                   for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return names

    def seed_storage_url(self, tenant):
        """Where the starting objects are written: the tenant's storage
        URL, on the --seed-url proxy if there is one."""
        if not self.seed_url:
            return tenant.url
        return self.seed_url.rstrip('/') + urllib.parse.urlsplit(
            tenant.url).path

    def prepare_all(self, active):
        """{label: (container, starting object names)} of ``active``
        ([(tenant, workload)]): a new container each, seeded."""
        prepared = {}
        for tenant, workload in active:
            container = 'mass-bench-%d-%d-%s' % (
                os.getpid(), self.run_number, tenant.label)
            prepared[tenant.label] = (container, self.prepare(
                tenant, workload, container))
        return prepared

    def settle_write_back(self):
        """After seeding: the page cache written back (sync) and
        ``settle_after_seeding`` seconds waited, so the seeding's
        write-back does not fall in the measured window."""
        if self.settle_after_seeding is None:
            return
        os.sync()
        if self.settle_after_seeding > 0:
            self.progress('  settling %.0f s after seeding'
                          % self.settle_after_seeding)
            time.sleep(self.settle_after_seeding)

    def start_clients(self, active, prepared, start, warmup, stop_at):
        """The tenants' client processes, started, and the queue each
        puts its rows on."""
        ctx = multiprocessing.get_context('fork')
        results = ctx.Queue()
        procs = [ctx.Process(target=clients.tenant_process, args=(
            tenant, workload, prepared[tenant.label][0],
            prepared[tenant.label][1], start, stop_at, results, i,
            start + warmup)) for i, (tenant, workload) in enumerate(active)]
        for proc in procs:
            proc.start()
        return procs, results

    def watch(self, start, warmup, seconds, label):
        """From the warm-up's start to the window's end: the policy table
        each second, the machine at the window's start and end, and in
        each second of the window (Sampler.pulse); (policy samples,
        where the time went, the machine per second)."""
        window_start = start + warmup
        samples, before, pulses = [], None, []
        for tick in summary.window_ticks(warmup, seconds):
            clients.sleep_until(window_start + tick)
            if tick >= 0:
                pulses.append(self.sampler.pulse())
            if before is None and tick >= 0:
                before = self.sampler.snapshot()
            if tick >= seconds:
                break
            samples.append([round(time.time() - window_start, 2),
                            self.policy_sample()])
            self.progress('  %s: %3.0f s of %.0f' % (
                label, max(0.0, tick), seconds), end='\r')
        where = resources.between(before, self.sampler.snapshot())
        self.progress(' ' * 40, end='\r')
        return samples, where, resources.per_second(pulses)

    @staticmethod
    def collect(procs, results, seconds):
        """{label: (rows, CPU seconds)} of every client process, once
        each has ended."""
        collected = {}
        for _ in procs:
            label, rows, cpu = results.get(timeout=120 + seconds)
            collected[label] = (rows, cpu)
        for proc in procs:
            proc.join()
        return collected

    def tenant_figures(self, label, rows, workload, warmup, seconds,
                       samples):
        """One tenant's figures of a run, rows' offsets from the start of
        the window."""
        rows = [(r[0] - warmup,) + tuple(r[1:]) for r in rows]
        figures = summary.summarise(rows, 0.0, seconds)
        figures['timeline'] = summary.timeline(rows, seconds)
        figures['workload'] = workload.name
        figures['container_policy'] = self.container_policies.get(label)
        figures['concurrency'] = workload.concurrency
        figures['mass'] = policy_table.what_mass_did(
            samples, label, seconds, judged=self.mass_in_pipeline())
        return figures

    def run(self, stage, label):
        """Run `stage` ({tenant: workload or None}) once in the current
        mode; returns per tenant figures and a timeline, what Mass did,
        where the time went and the cost per operation."""
        self.run_number += 1
        active = [(t, w) for t, w in stage.items() if w is not None]
        prepared = self.prepare_all(active)
        self.settle_write_back()
        warmup = max(w.warmup for _, w in active)
        seconds = max(w.seconds for _, w in active)
        start = time.time() + 0.5
        procs, results = self.start_clients(active, prepared, start, warmup,
                                            start + warmup + seconds)
        samples, where, machine = self.watch(start, warmup, seconds, label)
        collected = self.collect(procs, results, seconds)
        out = {tenant.label: self.tenant_figures(
            tenant.label, collected[tenant.label][0], workload, warmup,
            seconds, samples) for tenant, workload in active}
        timelines = {label: f['timeline']['ops'] for label, f in out.items()}
        load = sum(cpu for _, cpu in collected.values())
        where['cpu_seconds'] = dict(where.get('cpu_seconds') or {},
                                    **{resources.LOAD_GENERATOR: load})
        operations = sum(f['operations'] for f in out.values())
        return {'label': label, 'mode': self.mode, 'seconds': seconds,
                'warmup': warmup, 'settle': self.settle_after_seeding,
                'mass_in_pipeline': self.mass_in_pipeline(),
                'tenants': out, 'policy': samples,
                'classes': [[t, summary.classes_of(s)] for t, s in samples],
                'resources': where, 'machine': machine,
                'stalls': resources.stalls(timelines, machine),
                'load_generator': {
                    'cpu_seconds': load, 'cores': os.cpu_count(),
                    'machine_pct': resources.machine_share(load, seconds)},
                'costs': resources.per_operation(where, operations)}

    # ---- comparisons

    def compare(self, modes, cycles, control=True, base='default'):
        """ABBA cycles of `modes` (each cycle also runs ``base`` twice
        when `control`); per tenant and mode ratios against ``base``."""
        runs = []
        for cycle, sequence in enumerate(abba(modes, cycles)):
            if control and base in sequence:
                # the A/A control runs right after its twin
                i = sequence.index(base)
                sequence = sequence[:i + 1] + [base] + sequence[i + 1:]
            seen_base = False
            for mode in sequence:
                self.switch(mode)
                is_control = mode == base and seen_base
                seen_base = seen_base or mode == base
                label = 'cycle %d %s%s' % (cycle + 1, mode,
                                           ' (A/A control)' if is_control
                                           else '')
                self.progress('%s' % label)
                result = self.run({t: t.workload for t in self.tenants},
                                  label)
                result['cycle'] = cycle
                result['control'] = is_control
                runs.append(result)
                self.kept(runs)
                self.progress(report.format_run(result))
        self.unpin()
        return {'runs': runs, 'base': base,
                'summary': summary.summary(runs, modes, base),
                'per_tenant': summary.per_tenant_summary(runs, modes, base),
                'between': summary.between_modes(runs, modes, base),
                'resources': summary.resource_summary(runs, modes),
                'costs': summary.cost_summary(runs, modes)}

    def kept(self, runs):
        if self.keep_runs is not None:
            with open(self.keep_runs, 'w') as fp:
                json.dump(finite({'runs': runs}), fp, sort_keys=True,
                          allow_nan=False)

    def staged(self, stages, modes):
        runs = []
        for mode in modes:
            self.switch(mode)
            for name, stage in stages:
                result = self.run(stage, '%s %s' % (mode, name))
                result['stage'] = name
                runs.append(result)
                self.kept(runs)
                self.progress(report.format_run(result))
        self.unpin()
        return {'runs': runs}


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


def staged_scenario(name, tenants):
    """The stages of a staged run: [(name, {tenant: workload or None})]."""
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
        tenant = tenants[0]
        writes = tenant.workload.with_options(
            mix=(('PUT', 1.0),), size_min=tenant.workload.size_min,
            size_max=tenant.workload.size_max,
            name=tenant.workload.name + '->writes')
        return [('1 reads', {tenant: tenant.workload}),
                ('2 switched to writes', {tenant: writes})]
    raise ValueError('--staged: external or internal')


def add_arguments(parser):
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
    parser.add_argument('--staged', choices=('external', 'internal'))
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
    parser.add_argument('--out', default='bench-results',
                        help='directory for results.json and the plots')
    parser.add_argument('--no-plots', action='store_true',
                        help='no PNG plots (without matplotlib there are '
                        'none anyway)')
    parser.add_argument('--redraw', metavar='DIR',
                        help='run nothing: draw the plots of DIR\'s '
                        'results.json (or results.json.gz) into DIR again')


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/bench', description='Tenants\' workloads against a '
        'SAIO, compared with and without Mass (mass_bench.bench).')
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.redraw is not None:
        return redraw(args.redraw)
    try:
        tenants = [clients.Tenant.parse(t) for t in (args.tenant or
                                                     DEFAULT_TENANTS)]
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
    except ValueError as err:
        print('tools/bench: %s' % err, file=sys.stderr)
        return 2
    try:
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
    try:
        if args.staged:
            result = bench.staged(staged_scenario(args.staged, tenants),
                                  modes)
            text = report.format_staged(result)
        else:
            result = bench.compare(modes, args.cycles,
                                   control=not args.no_control,
                                   base=args.base)
            text = report.format_summary(result)
    finally:
        bench.unpin()
        bench.restore_options()
        bench.restore_rings()
        if bench.pipeline not in (None, 'with'):
            # leave the cluster as it was found: Mass in the pipelines
            bench._pipeline('with')
    result.update({
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
            for name, v in bench.ring_variants.items()}})
    with open(os.path.join(args.out, 'results.json'), 'w') as fp:
        json.dump(finite(result), fp, indent=2, sort_keys=True,
                  allow_nan=False)
    if os.path.exists(bench.keep_runs):
        os.unlink(bench.keep_runs)
    print(text)
    if not args.no_plots:
        for path in draw_plots(result, args.out):
            print('plot: %s' % path)
    print('results: %s' % os.path.join(args.out, 'results.json'))
    return 0


def finite(value):
    """``value`` with every NaN or infinity replaced by None (JSON has
    neither), tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


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


# what a run writes, and what docs/benchmarks keeps of it
RESULTS_FILES = ('results.json', 'results.json.gz')


def load_results(folder):
    """(path, result) of ``folder``'s results.json, or else of its
    results.json.gz; ValueError if it has neither or the file is not a
    tools/bench result, OSError if it cannot be read."""
    for name in RESULTS_FILES:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        opener = gzip.open if name.endswith('.gz') else open
        with opener(path, 'rt') as fp:
            result = json.load(fp)
        if not isinstance(result, dict) or not {'runs', 'modes'} <= set(
                result):
            raise ValueError('%s is not a tools/bench result (it has no '
                             'runs and modes)' % path)
        return path, result
    inside = _folders_with_results(folder)
    raise ValueError('no %s in %s%s' % (
        ' or '.join(RESULTS_FILES), folder,
        '; its folders with one, each to be redrawn: %s' % ', '.join(inside)
        if inside else ''))


def _folders_with_results(folder):
    """The names of ``folder``'s folders that hold results (a run of
    several comparisons keeps one in each)."""
    if not os.path.isdir(folder):
        return []
    return sorted(name for name in os.listdir(folder) if any(
        os.path.exists(os.path.join(folder, name, results))
        for results in RESULTS_FILES))


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
