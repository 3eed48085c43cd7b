"""``tools/bench`` (``python3 -m mass_bench``): several tenants' workloads
at once against a SAIO, compared across modes in one run.

Modes, all on the same cluster:

* ``default``: Mass is not in the pipelines (``tools/saio pipeline
  without``): Swift as it is;
* ``static``: Mass in the pipelines, every tenant pinned by hand to the
  class its workload is meant to have (the Crystal-like manual assignment);
* ``mass``: Mass in the pipelines, no pins: the control loop decides;
* a variant (``--variant NAME=MODE:OPTION=VALUE[+OPTION=VALUE...]``): one
  of the modes above with the object servers' ``[filter:mass_queue]``
  options set so (``tools/saio queue``); every other mode runs with the
  values the object servers had when the bench began, so a variant and
  its mode are compared in the same ABBA cycles.  For example
  ``--variant adaptive=mass:adaptive_slots=true``;
* a ring variant (``--ring-variant NAME=MODE:POLICY=W``): one of the modes
  above with POLICY's ring weighted by class weights W, the shares of the
  device classes of ``swift-mass devices`` (``mass_bench.rings``); the
  other modes run with the ring as it was.  For example
  ``--ring-variant chosen=default:standard=0.5,0.5``.

A run of a mode: each tenant gets a fresh container, created in that mode
(so Mass's routing applies to it), filled with the workload's starting
objects (through ``--seed-url``'s proxy if given: one without Mass, so
that Mass's monitor does not count the filling as the tenant's
workload); then all tenants' clients run at once, one process per tenant
with one thread and connection per client, for a warm-up that is not
measured and the measured time.  Per tenant: operations/s, MB/s, mean,
p50 and p99 latency, errors (5xx and failed connections), and the cache's
hit ratio (GETs answered with ``X-Mass-Cache: hit`` among successful GETs).
Per run, where the time went (``mass_bench.resources``): the CPU busy and
waiting for I/O, and on the SAIO's hetero profile each device class's
IOPS, utilisation and share of its throttle's limit.

Machines like these differ by 5-10 % between identical runs, so the modes
alternate in ABBA order (default, static, mass, then mass, static, default,
...) for ``--cycles`` cycles, each cycle also runs ``default`` a second time
(the A/A control: what two identical runs differ by here), and every ratio
against ``default`` is the median over cycles with its min-max.  A ratio
inside the A/A spread is reported as no difference.

``--staged external`` runs the slides' three-stage test (baseline, then
tenant A dominating, then tenant C dominating) and ``--staged internal`` a
tenant that switches from reads to writes, each once per mode, sampling
every tenant's class from the policy table each second: the timeline shows
when Mass reacted.

Results: a table on stdout, ``results.json``, and PNG plots (throughput and
latency per mode; a timeline for staged runs) in ``--out``.  Benchmarks are
not tests: nothing here asserts a speed.
"""
import argparse
import collections
import configparser
import http.client
import json
import logging
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

from swiftclient.client import get_auth

from mass_bench import resources, rings, workloads
from swift_mass.control.store import shared_store

MODES = ('default', 'static', 'mass')
DEFAULT_TENANTS = ('photos:web:web=A', 'dbdump:dump:dump=B',
                   'backup:job:job=C')
PROXY_CONF = '/etc/swift/proxy-server.conf'
# Any object server's config: tools/saio queue sets the same
# [filter:mass_queue] options in all of them.
OBJECT_CONF = '/etc/swift/object-server/1.conf'
QUEUE_SECTION = 'filter:mass_queue'
ERROR = 599  # status recorded for a request that got no answer


class Variant(object):
    """A mode run with other ``[filter:mass_queue]`` options."""

    FORM = 'NAME=MODE:OPTION=VALUE[+OPTION=VALUE...]'

    def __init__(self, name, mode, options):
        self.name, self.mode, self.options = name, mode, options

    @classmethod
    def parse(cls, text):
        name, _, rest = text.partition('=')
        mode, _, pairs = rest.partition(':')
        name, mode = name.strip(), mode.strip()
        options = {}
        for pair in pairs.split('+') if pairs else ():
            option, sep, value = pair.partition('=')
            if not sep or not option.strip() or not value.strip():
                options = {}
                break
            options[option.strip()] = value.strip()
        if not name or name in MODES or mode not in MODES or not options:
            raise ValueError(
                '--variant: %r; expected %s with MODE one of %s and a NAME '
                'that is not one of them' % (text, cls.FORM,
                                             ', '.join(MODES)))
        return cls(name, mode, options)


def queue_options(path, options):
    """{option: value} of ``options`` as ``path``'s [filter:mass_queue]
    sets them; ValueError for one it leaves to its default (the bench could
    not put that back after a variant)."""
    parser = configparser.RawConfigParser()
    if not parser.read(path) or not parser.has_section(QUEUE_SECTION):
        raise ValueError('--variant: no [%s] in %s' % (QUEUE_SECTION, path))
    missing = [o for o in options
               if not parser.has_option(QUEUE_SECTION, o)]
    if missing:
        raise ValueError(
            '--variant: %s not set in %s; set the value the other modes '
            'should run with first (tools/saio queue %s)' % (
                ', '.join(sorted(missing)), path,
                ' '.join('%s=...' % o for o in sorted(missing))))
    return {o: parser.get(QUEUE_SECTION, o) for o in options}


def default_saio():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, 'tools', 'saio')
    return path if os.path.exists(path) else None


class Tenant(object):
    """A tempauth user and the workload its clients run."""

    def __init__(self, label, user, key, workload):
        self.label, self.user, self.key = label, user, key
        self.workload = workload
        self.url = self.token = None

    @classmethod
    def parse(cls, text):
        """``ACCOUNT:USER:KEY=WORKLOAD``, e.g. ``photos:web:web=A,
        concurrency=4``; the label is the account name."""
        who, sep, spec = text.partition('=')
        parts = who.split(':')
        if not sep or len(parts) != 3 or not all(parts):
            raise ValueError('%r: expected ACCOUNT:USER:KEY=WORKLOAD' % text)
        account, user, key = parts
        return cls(account, '%s:%s' % (account, user), key,
                   workloads.parse(spec))

    def authenticate(self, auth_url):
        self.url, self.token = get_auth(auth_url, self.user, self.key)

    @property
    def account(self):
        return urllib.parse.unquote(self.url.rstrip('/').rsplit('/', 1)[1])


class Connection(object):
    """One keep-alive HTTP connection to the proxy, reopened after an
    error."""
    # Not swiftclient's: a client here times one request as the proxy
    # answers it, with no retry, re-authentication or body held in memory.

    def __init__(self, url, timeout=60):
        parsed = urllib.parse.urlsplit(url)
        self.netloc, self.base = parsed.netloc, parsed.path
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, headers, body=None):
        """(status, headers, body length); ERROR when no answer came."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(
                    self.netloc, timeout=self.timeout)
            self.conn.request(method, self.base + path, body=body,
                              headers=headers)
            resp = self.conn.getresponse()
            length = 0
            while True:
                chunk = resp.read(65536)
                if not chunk:
                    break
                length += len(chunk)
            return resp.status, {k.lower(): v for k, v in
                                 resp.getheaders()}, length
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return ERROR, {}, 0


# ------------------------------------------------------------- the clients

class ObjectSet(object):
    """The names of the objects clients read, overwrite and delete, in
    popularity order (for Zipf: the first is rank 1); clients of one
    tenant may share one set."""

    def __init__(self, names):
        self.names = list(names)
        self.lock = threading.Lock()

    def __len__(self):
        return len(self.names)

    def draw(self, chooser):
        """A name picked by the chooser's popularity; None when empty."""
        with self.lock:
            if not self.names:
                return None
            return self.names[chooser.index(len(self.names))]

    def add(self, name):
        with self.lock:
            self.names.append(name)

    def discard(self, name):
        with self.lock:
            if name in self.names:
                self.names.remove(name)


def client_sets(workload, names):
    """Each client's ObjectSet: with uniform popularity its own slice of
    the names (as before popularity existed), with Zipf one set for all,
    so that every client finds the same objects hot."""
    if workload.zipf is None:
        return [ObjectSet(names[i::workload.concurrency])
                for i in range(workload.concurrency)]
    return [ObjectSet(names)] * workload.concurrency


def client(tenant, workload, container, objects, seed, start, stop_at, out):
    """One client: operations as the workload draws them, until stop_at
    (or workload.operations of them); appends (offset from start,
    operation, latency s, status, bytes, X-Mass-Cache of a GET or '') to
    out.  PUTs create new objects (added to ``objects``) or, with
    workload.overwrite, rewrite one of ``objects``."""
    chooser = workloads.Chooser(workload, seed)
    conn = Connection(tenant.url)
    headers = {'X-Auth-Token': tenant.token}
    body_cache = {}
    made = 0
    limit = workload.operations
    done = 0
    while time.time() < stop_at and not (limit and done >= limit):
        op = chooser.operation(have_objects=bool(objects))
        name = None
        if op != 'PUT' or workload.overwrite:
            name = objects.draw(chooser)
            if name is None:
                op = 'PUT'  # another client deleted the last one
        new = name is None
        if op == 'PUT':
            size = chooser.size()
            body = body_cache.get(size)
            if body is None:
                body = body_cache[size] = os.urandom(size)
            if new:
                name = 'c%d-%d' % (seed, made)
                made += 1
        else:
            body, size = None, 0
        path = '/%s/%s' % (container, name)
        began = time.time()
        status, answer, length = conn.request(op, path, headers, body)
        latency = time.time() - began
        if op == 'PUT' and new and status // 100 == 2:
            objects.add(name)
        elif op == 'DELETE' and status // 100 == 2:
            objects.discard(name)
        out.append((began - start, op, latency, status,
                    size if op == 'PUT' else length,
                    answer.get('x-mass-cache', '').lower()
                    if op == 'GET' else ''))
        done += 1


def tenant_process(tenant, workload, container, names, start, stop_at,
                   results, index):
    """All of one tenant's clients, in their own process so that clients
    of different tenants do not share one interpreter lock."""
    sets = client_sets(workload, names)
    outs = [[] for _ in range(workload.concurrency)]
    threads = [threading.Thread(target=client, args=(
        tenant, workload, container, sets[i], index * 1000 + i,
        start, stop_at, outs[i])) for i in range(workload.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((tenant.label, [row for out in outs for row in out]))


# ------------------------------------------------------------- statistics

def percentile(values, fraction):
    """The ``fraction`` (0.01 to 0.99) percentile of ``values``, by
    linear interpolation between the closest ranks; None without values."""
    if len(values) < 2:
        # statistics.quantiles wants two values before Python 3.13
        return values[0] if values else None
    return statistics.quantiles(values, n=100, method='inclusive')[
        round(fraction * 100) - 1]


def summarise(rows, warmup, seconds):
    """Figures of one tenant's measured requests (those that began after
    the warm-up)."""
    measured = [r for r in rows if r[0] >= warmup]
    ok = [r for r in measured if r[3] < 500]
    latencies = sorted(r[2] * 1000.0 for r in ok)
    moved = sum(r[4] for r in ok)
    by_op = collections.Counter(r[1] for r in measured)
    gets = [r for r in ok if r[1] == 'GET' and r[3] // 100 == 2]
    hits = sum(1 for r in gets if r[5] == 'hit')
    return {
        'operations': len(measured),
        'errors': len(measured) - len(ok),
        'by_operation': dict(by_op),
        'ops_per_s': len(ok) / seconds if seconds else 0.0,
        'mb_per_s': moved / seconds / 1e6 if seconds else 0.0,
        'mean_ms': statistics.mean(latencies) if latencies else None,
        'p50_ms': percentile(latencies, 0.5),
        'p99_ms': percentile(latencies, 0.99),
        'statuses': dict(collections.Counter(str(r[3]) for r in measured)),
        'gets': len(gets),
        'hits': hits,
        'hit_ratio': hits / len(gets) if gets else None,
    }


def timeline(rows, seconds):
    """Per whole second of the measured time: operations finished OK and
    their mean latency (ms)."""
    ops = [0] * int(seconds)
    lat = [0.0] * int(seconds)
    for offset, _op, latency, status, *_ in rows:
        second = int(offset + latency)
        if 0 <= second < len(ops) and status < 500:
            ops[second] += 1
            lat[second] += latency * 1000.0
    return {'ops': ops, 'mean_ms': [lat[i] / ops[i] if ops[i] else None
                                    for i in range(len(ops))]}


def ratio_summary(ratios, control=None):
    """Median and min-max of per-cycle ratios; with the A/A control's
    ratios, whether the difference is outside what noise does here."""
    ratios = [r for r in ratios if r is not None]
    if not ratios:
        return None
    result = {'median': statistics.median(ratios), 'min': min(ratios),
              'max': max(ratios), 'cycles': ratios}
    control = [r for r in (control or []) if r is not None]
    if control:
        low, high = min(control + [1.0]), max(control + [1.0])
        result['control'] = {'min': low, 'max': high}
        result['verdict'] = ('no difference' if low <= result['median']
                             <= high else 'difference')
    return result


# ------------------------------------------------------------- the driver

class Bench(object):

    def __init__(self, tenants, auth_url, saio=None, conf=PROXY_CONF,
                 progress=print, settle=None, sampler=None, variants=(),
                 object_conf=OBJECT_CONF, seed_url=None, ring_variants=(),
                 swift_dir='/etc/swift', classes_file=None):
        self.tenants = tenants
        # a proxy whose pipeline has no Mass, for the starting objects
        self.seed_url = seed_url
        self.variants = {v.name: v for v in variants}
        # what every mode but a variant runs with, and what is set now
        self.queue_baseline = queue_options(object_conf, {
            o for v in variants for o in v.options}) if variants else {}
        self.queue_now = dict(self.queue_baseline)
        self.ring_variants = {v.name: v for v in ring_variants}
        self.rings = rings.RingSwitcher(
            self.ring_variants, swift_dir, classes_file) \
            if ring_variants else None
        self.auth_url = auth_url
        self.saio = saio
        self.conf = conf
        self.progress = progress
        self.mode = None
        self.store = None
        self.settle = settle
        self.pinned = set()
        self.run_number = 0
        self.pipeline = None  # 'with' or 'without' once switched
        # where the time went: the CPU, and the hetero profile's devices
        self.sampler = sampler or resources.Sampler(
            devices=lambda: resources.saio_devices(self.saio))

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

    def _queue(self, options):
        wanted = {o: v for o, v in options.items()
                  if self.queue_now.get(o) != v}
        if not wanted:
            return
        if self.saio is None:
            raise RuntimeError('a variant needs tools/saio (--saio PATH)')
        self.queue_now = {}  # unknown, should the change fail halfway
        subprocess.run([self.saio, 'queue'] + sorted(
            '%s=%s' % pair for pair in wanted.items()), check=True,
            stdout=subprocess.DEVNULL)
        self.queue_now = dict(self.queue_baseline, **options)

    def restore_queue(self):
        """Put back the object servers' options a variant changed."""
        self._queue(self.queue_baseline)

    def restore_rings(self):
        """Put back the ring files a ring variant replaced."""
        if self.rings:
            self.rings.restore()

    def switch(self, mode):
        variant = self.variants.get(mode)
        ring_variant = self.ring_variants.get(mode)
        self._queue(variant.options if variant else self.queue_baseline)
        if self.rings:
            self.rings.install(mode if ring_variant else None)
        base = variant or ring_variant
        self._switch(base.mode if base else mode)
        self.mode = mode

    def _switch(self, mode):
        want = 'without' if mode == 'default' else 'with'
        if self.pipeline != want:
            self._pipeline(want)
        if mode == 'static':
            store = self._store()
            for tenant in self.tenants:
                store.set_pin(tenant.account, {
                    'class': tenant.workload.intended_class})
                self.pinned.add(tenant.account)
            time.sleep(self.settle)
        elif mode == 'mass':
            self.unpin()
        self.mode = mode
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

    def classes(self):
        try:
            _, table = self._store().get_table()
        except Exception:
            return {}
        return {t.label: (table.get(t.account) or {}).get(
            'class', 'unknown') for t in self.tenants}

    # ---- one run

    def prepare(self, tenant, workload, container):
        """A new container (routed as the current mode routes it) with
        the workload's starting objects."""
        headers = {'X-Auth-Token': tenant.token}
        create = dict(headers)
        if workload.policy:
            create['X-Storage-Policy'] = workload.policy
        status, _, _ = Connection(tenant.url).request(
            'PUT', '/' + container, create)
        if status // 100 != 2:
            raise RuntimeError('cannot create %s for %s: %d' % (
                container, tenant.label, status))
        if workload.share('GET', 'HEAD', 'DELETE') == 0 and not (
                workload.overwrite and workload.share('PUT')):
            return []
        chooser = workloads.Chooser(workload, seed=0)
        names = ['seed-%05d' % i for i in range(workload.objects)]
        bodies = {}

        def put(chunk):
            conn = Connection(self.seed_storage_url(tenant))
            for name in chunk:
                size = chooser.size()
                body = bodies.setdefault(size, os.urandom(size))
                status, _, _ = conn.request(
                    'PUT', '/%s/%s' % (container, name), headers, body)
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

    def run(self, stage, label):
        """Run `stage` ({tenant: workload or None}) once in the current
        mode; returns per tenant rows, figures and a timeline."""
        self.run_number += 1
        active = [(t, w) for t, w in stage.items() if w is not None]
        prepared = {}
        for tenant, workload in active:
            container = 'mass-bench-%d-%d-%s' % (
                os.getpid(), self.run_number, tenant.label)
            prepared[tenant.label] = (container, self.prepare(
                tenant, workload, container))
        warmup = max(w.warmup for _, w in active)
        seconds = max(w.seconds for _, w in active)
        ctx = multiprocessing.get_context('fork')
        results = ctx.Queue()
        start = time.time() + 0.5
        stop_at = start + warmup + seconds
        procs = [ctx.Process(target=tenant_process, args=(
            tenant, workload, prepared[tenant.label][0],
            prepared[tenant.label][1], start, stop_at, results, i))
            for i, (tenant, workload) in enumerate(active)]
        for proc in procs:
            proc.start()
        classes = []
        before = None
        while True:
            now = time.time()
            if before is None and now >= start + warmup:
                before = self.sampler.snapshot()
            if now >= stop_at:
                break
            # wake at the start of the measured time, to sample it
            time.sleep(max(0.0, min(1.0, stop_at - now, (
                start + warmup - now) if before is None else 1.0)))
            classes.append((round(time.time() - start - warmup, 1),
                            self.classes()))
            self.progress('  %s: %3.0f s of %.0f' % (
                label, min(seconds, max(0, time.time() - start - warmup)),
                seconds), end='\r')
        where = resources.between(before, self.sampler.snapshot())
        self.progress(' ' * 40, end='\r')
        collected = dict(results.get(timeout=120 + seconds)
                         for _ in procs)
        for proc in procs:
            proc.join()
        out = {}
        for tenant, workload in active:
            rows = [(r[0] - warmup,) + tuple(r[1:])
                    for r in collected[tenant.label]]
            figures = summarise(rows, 0.0, seconds)
            figures['timeline'] = timeline(
                [r for r in rows if r[0] >= 0], seconds)
            figures['workload'] = workload.name
            figures['concurrency'] = workload.concurrency
            out[tenant.label] = figures
        return {'label': label, 'mode': self.mode, 'seconds': seconds,
                'tenants': out, 'classes': classes, 'resources': where}

    # ---- comparisons

    def compare(self, modes, cycles, control=True):
        """ABBA cycles of `modes` (each cycle also runs 'default' twice
        when `control`); per tenant and mode ratios against default."""
        order = list(modes)
        runs = []
        for cycle in range(cycles):
            sequence = order if cycle % 2 == 0 else order[::-1]
            if control and 'default' in sequence:
                # the A/A control runs right after its twin
                i = sequence.index('default')
                sequence = sequence[:i + 1] + ['default'] + \
                    sequence[i + 1:]
            seen_default = False
            for mode in sequence:
                self.switch(mode)
                is_control = mode == 'default' and seen_default
                seen_default = seen_default or mode == 'default'
                label = 'cycle %d %s%s' % (cycle + 1, mode,
                                           ' (A/A control)' if is_control
                                           else '')
                self.progress('%s' % label)
                result = self.run({t: t.workload for t in self.tenants},
                                  label)
                result['cycle'] = cycle
                result['control'] = is_control
                runs.append(result)
                self.progress(format_run(result))
        self.unpin()
        return {'runs': runs, 'summary': summary(runs, modes),
                'resources': resource_summary(runs, modes)}

    def staged(self, stages, modes):
        runs = []
        for mode in modes:
            self.switch(mode)
            for name, stage in stages:
                result = self.run(stage, '%s %s' % (mode, name))
                result['stage'] = name
                runs.append(result)
                self.progress(format_run(result))
        self.unpin()
        return {'runs': runs}


ALL = '(all)'


def overall(tenants):
    """All tenants of a run as one: operations and bytes added up, the
    mean latency weighted by operations (percentiles do not add up)."""
    ops = sum(f['ops_per_s'] for f in tenants.values())
    weighted = [(f['mean_ms'], f['ops_per_s']) for f in tenants.values()
                if f['mean_ms'] is not None]
    gets = sum(f['gets'] for f in tenants.values())
    hits = sum(f['hits'] for f in tenants.values())
    return {'ops_per_s': ops,
            'mb_per_s': sum(f['mb_per_s'] for f in tenants.values()),
            'mean_ms': sum(m * n for m, n in weighted) / ops if ops
            else None,
            'p50_ms': None, 'p99_ms': None,
            'errors': sum(f['errors'] for f in tenants.values()),
            'gets': gets, 'hits': hits,
            'hit_ratio': hits / gets if gets else None}


def summary(runs, modes):
    """Per tenant and mode, and for all tenants together: median figures
    over cycles, and the ratios of throughput and mean latency against
    default of the same cycle."""
    out = {}
    by = collections.defaultdict(dict)
    for run in runs:
        tenants = dict(run['tenants'])
        if len(tenants) > 1:
            tenants[ALL] = overall(run['tenants'])
        for label, figures in tenants.items():
            key = 'control' if run['control'] else run['mode']
            by[(label, run['cycle'])][key] = figures
    labels = sorted({label for label, _ in by})
    for label in labels:
        cycles = [by[k] for k in sorted(by) if k[0] == label]
        out[label] = {}
        for mode in list(modes) + ['control']:
            figs = [c[mode] for c in cycles if mode in c]
            if not figs:
                continue
            entry = {}
            for name in ('ops_per_s', 'mb_per_s', 'mean_ms', 'p50_ms',
                         'p99_ms', 'hit_ratio'):
                values = [f[name] for f in figs if f[name] is not None]
                entry[name] = statistics.median(values) if values else None
            entry['errors'] = sum(f['errors'] for f in figs)
            if mode not in ('default', 'control'):
                entry['throughput_ratio'] = ratio_summary(
                    [_ratio(c, mode, 'ops_per_s') for c in cycles],
                    [_ratio(c, 'control', 'ops_per_s') for c in cycles])
                entry['latency_ratio'] = ratio_summary(
                    [_ratio(c, mode, 'mean_ms') for c in cycles],
                    [_ratio(c, 'control', 'mean_ms') for c in cycles])
            out[label][mode] = entry
    return out


def resource_summary(runs, modes):
    """Per mode (and 'control'): the median over its runs of where the
    time went."""
    out = {}
    for mode in list(modes) + ['control']:
        picked = [r.get('resources') for r in runs
                  if (r['control'] if mode == 'control'
                      else r['mode'] == mode and not r['control'])]
        value = resources.median_tree(picked)
        if value is not None:
            out[mode] = value
    return out


def _ratio(cycle, mode, field):
    if mode not in cycle or 'default' not in cycle:
        return None
    base = cycle['default'][field]
    value = cycle[mode][field]
    if not base or value is None:
        return None
    return value / base


# ------------------------------------------------------------- output

def _ms(value):
    return '%.1f' % value if value is not None else '-'


def _hit(value):
    return '%.1f' % (100.0 * value) if value is not None else ''


def format_run(run):
    lines = []
    for label, f in sorted(run['tenants'].items()):
        hits = f.get('hit_ratio')
        lines.append('    %-10s %-18s %8.1f ops/s %7.2f MB/s mean %7s ms '
                     'p99 %7s ms errors %d%s' % (
                         label, f['workload'], f['ops_per_s'], f['mb_per_s'],
                         _ms(f['mean_ms']), _ms(f['p99_ms']), f['errors'],
                         '' if hits is None else ' hits %s %%' % _hit(hits)))
    if 'resources' in run:
        lines.append(resources.format_line(run['resources']))
    return '\n'.join(lines)


def _fmt_ratio(r):
    if not r:
        return '-'
    text = '%.3f (%.3f-%.3f)' % (r['median'], r['min'], r['max'])
    if r.get('verdict') == 'no difference':
        text += ' ~'
    return text


def format_summary(result):
    lines = ['%-10s %-8s %9s %8s %9s %9s %9s %6s %6s  %-24s %-24s' % (
        'tenant', 'mode', 'ops/s', 'MB/s', 'mean ms', 'p50 ms', 'p99 ms',
        'errors', 'hit %', 'ops/s vs default', 'mean latency vs default')]
    for label, modes in sorted(result['summary'].items()):
        for mode, e in modes.items():
            lines.append('%-10s %-8s %9.1f %8.2f %9s %9s %9s %6d %6s  %-24s '
                         '%-24s' % (
                             label, 'default*' if mode == 'control' else mode,
                             e['ops_per_s'], e['mb_per_s'], _ms(e['mean_ms']),
                             _ms(e['p50_ms']), _ms(e['p99_ms']), e['errors'],
                             _hit(e.get('hit_ratio')),
                             _fmt_ratio(e.get('throughput_ratio')),
                             _fmt_ratio(e.get('latency_ratio'))))
    lines.append('ratios: median over cycles (min-max); "~": inside the '
                 'A/A spread (default* against default), no difference; '
                 'hit %: GETs answered from the cache (X-Mass-Cache: hit) '
                 'among successful GETs')
    if result.get('resources'):
        lines += ['', resources.format_table(result['resources'])]
    return '\n'.join(lines)


def format_staged(result):
    lines = ['%-16s %-22s %-10s %9s %9s %9s %-8s' % (
        'mode', 'stage', 'tenant', 'ops/s', 'mean ms', 'p99 ms', 'class')]
    for run in result['runs']:
        last = run['classes'][-1][1] if run['classes'] else {}
        for label, f in sorted(run['tenants'].items()):
            lines.append('%-16s %-22s %-10s %9.1f %9s %9s %-8s' % (
                run['mode'], run['stage'], label, f['ops_per_s'],
                _ms(f['mean_ms']), _ms(f['p99_ms']),
                last.get(label, '-')))
    return '\n'.join(lines)


def machine():
    return {'host': platform.node(), 'python': platform.python_version(),
            'cpus': os.cpu_count(), 'platform': platform.platform(),
            'load_average': os.getloadavg()}


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
        'new ones); repeatable '
        '(default: %s)' % (', '.join(sorted(workloads.PRESETS)),
                           ' '.join(DEFAULT_TENANTS)))
    parser.add_argument('--modes', default=','.join(MODES),
                        help='comma-separated, of %s and the names of '
                        'variants' % ', '.join(MODES))
    parser.add_argument('--variant', action='append', default=[],
                        help='%s: a mode that runs as MODE with these '
                        '[filter:mass_queue] options on the object servers '
                        '(the other modes keep the values they had); '
                        'repeatable' % Variant.FORM)
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
                        help='ABBA cycles (at least 3 for a comparison)')
    parser.add_argument('--no-control', action='store_true',
                        help='skip the A/A run of default in each cycle')
    parser.add_argument('--seconds', type=float,
                        help='measured seconds of every workload')
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
    parser.add_argument('--no-plots', action='store_true')


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='tools/bench', description='Tenants\' workloads against a '
        'SAIO, compared with and without Mass (mass_bench.bench).')
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        tenants = [Tenant.parse(t) for t in (args.tenant or
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
                      classes_file=args.classes_file)
    except ValueError as err:
        print('tools/bench: %s' % err, file=sys.stderr)
        return 2
    for tenant in tenants:
        tenant.authenticate(args.auth_url)
    began = time.time()
    try:
        if args.staged:
            result = bench.staged(staged_scenario(args.staged, tenants),
                                  modes)
            text = format_staged(result)
        else:
            result = bench.compare(modes, args.cycles,
                                   control=not args.no_control)
            text = format_summary(result)
    finally:
        bench.unpin()
        bench.restore_queue()
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
        'ring_variants': {
            name: {'mode': v.mode, 'policy': v.policy,
                   'shares': list(v.shares),
                   'classes': bench.rings.reports[name]['classes']}
            for name, v in bench.ring_variants.items()}})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'results.json'), 'w') as fp:
        json.dump(result, fp, indent=2, sort_keys=True)
    print(text)
    if not args.no_plots:
        from mass_bench import plots
        for path in plots.draw(result, args.out):
            print('plot: %s' % path)
    print('results: %s' % os.path.join(args.out, 'results.json'))
    return 0


def _workload_dict(w):
    d = {k: getattr(w, k) for k in ('name', 'size_min', 'size_max',
                                    'objects', 'concurrency', 'seconds',
                                    'operations', 'warmup', 'policy',
                                    'popularity', 'overwrite')}
    d['mix'] = dict(w.mix)
    d['intended_class'] = w.intended_class
    return d


def _progress(text, end='\n'):
    if end == '\r' and not sys.stderr.isatty():
        return
    print(text, end=end, file=sys.stderr, flush=True)
