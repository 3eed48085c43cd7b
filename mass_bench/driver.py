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
"""tools/bench's driver (mass_bench.bench says what a run and a
comparison are): a run seeds each tenant's new container, starts the
tenants' client processes (mass_bench.clients), watches the policy table
and the machine meanwhile and makes the run's figures
(mass_bench.summary); a comparison runs the modes (mass_bench.modes) in
ABBA cycles, each with its A/A control, a unit of which may be a run of
phases back to back on the same containers (mass_bench.phases).  Runs in
the benchmark's process, against the SAIO."""
import json
import multiprocessing
import os
import threading
import time
import urllib.parse

from mass_bench import clients, phases, policy_table, reaction, report, \
    resources, summary, workloads
from mass_bench.modes import OBJECT_CONF, PROXY_CONF, Modes
from mass_bench.ratios import abba
from mass_bench.results import finite


class Bench(Modes):
    """The driver of tools/bench (mass_bench.bench): runs of the tenants'
    workloads in the mode the cluster is in (switched by :class:`Modes
    <mass_bench.modes.Modes>`), and comparisons of modes in ABBA cycles,
    or staged runs."""

    def __init__(self, tenants, auth_url, saio=None, conf=PROXY_CONF,
                 progress=print, settle=None, sampler=None, variants=(),
                 object_conf=OBJECT_CONF, seed_url=None, ring_variants=(),
                 swift_dir='/etc/swift', classes_file=None,
                 settle_after_seeding=None):
        super(Bench, self).__init__(
            tenants, auth_url, saio=saio, conf=conf, progress=progress,
            settle=settle, variants=variants, object_conf=object_conf,
            ring_variants=ring_variants, swift_dir=swift_dir,
            classes_file=classes_file)
        # seconds between seeding (then sync) and the clients; None: no
        # sync, no wait
        self.settle_after_seeding = settle_after_seeding
        # a proxy whose pipeline has no Mass, for the starting objects
        self.seed_url = seed_url
        # where the runs finished so far are written after each one (None:
        # nowhere), so that a comparison that dies keeps them
        self.keep_runs = None
        # [(name, {tenant: workload or None})]: every run is these phases
        # back to back on the same containers (--staged); None: one run
        # of the tenants' workloads
        self.phases = None
        self.run_number = 0
        # the reseller admin (a clients.Tenant) whose probe asks each proxy
        # worker which policy it applies (mass_bench.reaction), in phased
        # runs with Mass in the pipeline; the probe of the current mode and
        # the last watch's samples of it
        self.reseller = None
        self.worker_probe = None
        self.worker_samples = []
        # {tenant label: the storage policy of its container this run}
        self.container_policies = {}
        # where the time went: the CPU, the process groups, the hetero
        # profile's devices, the commands of the proxies' Redis and the
        # object servers' queue refusals
        self.sampler = sampler or resources.Sampler(
            devices=lambda: resources.saio_devices(self.saio),
            redis=lambda: resources.redis_commands(
                resources.redis_url_of(self.conf)),
            queue=self.queue_refusals)

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

    def start_clients(self, active, prepared, start, warmup, stop_at,
                      first_index=0):
        """The tenants' client processes, started, and the queue each
        puts its rows on; ``prepared``: {label: (container, names)}.
        Their clients' seeds (and so the names of the objects they
        create) begin at ``first_index`` * 1000."""
        ctx = multiprocessing.get_context('fork')
        results = ctx.Queue()
        procs = [ctx.Process(target=clients.tenant_process, args=(
            tenant, workload, prepared[tenant.label][0],
            prepared[tenant.label][1], start, stop_at, results, i,
            start + warmup)) for i, (tenant, workload) in enumerate(
                active, first_index)]
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
        self.worker_samples = []
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
            if self.worker_probe is not None:
                self.worker_samples.append([
                    round(time.time() - window_start, 2),
                    self.worker_probe.sample()])
            self.progress('  %s: %3.0f s of %.0f' % (
                label, max(0.0, tick), seconds), end='\r')
        where = resources.between(before, self.sampler.snapshot())
        self.progress(' ' * 40, end='\r')
        return samples, where, resources.per_second(pulses)

    @staticmethod
    def collect(procs, results, seconds):
        """{label: (rows, CPU seconds, names its object sets hold at
        the end)} of every client process, once each has ended."""
        collected = {}
        for _ in procs:
            label, rows, cpu, names = results.get(timeout=120 + seconds)
            collected[label] = (rows, cpu, names)
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
        return self.run_figures(label, active, collected, warmup, seconds,
                                samples, where, machine)

    def run_figures(self, label, active, collected, warmup, seconds,
                    samples, where, machine):
        """A run's result (or a phase's) from its client processes'
        ``collected`` rows and what :meth:`watch` saw."""
        out = {tenant.label: self.tenant_figures(
            tenant.label, collected[tenant.label][0], workload, warmup,
            seconds, samples) for tenant, workload in active}
        timelines = {label: f['timeline']['ops'] for label, f in out.items()}
        load = sum(c[1] for c in collected.values())
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
                if self.reset_data:
                    self.wipe_data()
                self.switch(mode)
                is_control = mode == base and seen_base
                seen_base = seen_base or mode == base
                label = 'cycle %d %s%s' % (cycle + 1, mode,
                                           ' (A/A control)' if is_control
                                           else '')
                self.progress('%s' % label)
                result = self.run_unit(label)
                result['cycle'] = cycle
                result['control'] = is_control
                runs.append(result)
                self.kept(runs)
                self.progress(report.format_phased_run(result))
        self.unpin()
        out = {'runs': runs, 'base': base,
               'summary': summary.summary(runs, modes, base),
               'per_tenant': summary.per_tenant_summary(runs, modes, base),
               'between': summary.between_modes(runs, modes, base),
               'resources': summary.resource_summary(runs, modes),
               'costs': summary.cost_summary(runs, modes)}
        if self.phases:
            out['phases'] = phases.summaries(runs, modes, base)
        return out

    def run_unit(self, label):
        """One unit of the ABBA cycles in the current mode: a run of the
        tenants' workloads or, with ``phases``, a run of every phase back
        to back (mass_bench.phases)."""
        if self.phases:
            self.worker_probe = self.probe()
            return phases.run_phases(self, self.phases, label)
        return self.run({t: t.workload for t in self.tenants}, label)

    def probe(self):
        """A reaction.WorkerProbe of the tenants, or None: Mass is not in
        the pipeline, or no reseller admin was given."""
        if self.reseller is None or not self.mass_in_pipeline():
            return None
        self.reseller.authenticate(self.auth_url)
        return reaction.WorkerProbe(
            self.reseller.url, self.reseller.token,
            {t.label: t.account for t in self.tenants})

    def kept(self, runs):
        if self.keep_runs is not None:
            with open(self.keep_runs, 'w') as fp:
                json.dump(finite({'runs': runs}), fp, sort_keys=True,
                          allow_nan=False)
