"""Formulate and validate a tenant's policy: the decision half of the
control loop, in plain Python.

A policy is the triple {tenant, ring, method}: the substore (storage policy
name) the tenant's new containers land on and the method its requests get
(cache, batch, merge or none), formed from the tenant's workload class and
the operator's mapping of classes to substores and methods.

:func:`decide` takes a tenant's previous table entry, its figures over the
window and the time, and returns the new entry and the reasons for any
change.  It does, in order:

* pins: an operator's pin fixes class, ring and method; nothing overrides it;
* classify: the class, with the classifier's hysteresis and minimum sample;
* insertion: a changed class replaces the policy, and the figures of the
  window before it took effect become its baseline;
* validation: once a policy has run for a whole window, the latency of the
  tenant's dominant operation is compared with the baseline; a policy that
  did not make it better (by default: ``margin`` 0, any worsening) is
  deleted (method ``none``) and the method is not given to that tenant
  again for ``holdoff`` seconds.  A method costs memory, Redis and CPU
  even when it does not slow its tenant down: it must earn its place.

The cluster's load moves every tenant's latency, so when the other tenants
made enough of the same operations both before and after, the comparison
is of the tenant's latency relative to theirs (the *reference*): a tenant
whose latency doubled while everyone else's doubled too was not hurt by
its method.  Without such a reference the absolute latencies are
compared.

An entry is a plain dict, so it goes to the shared store as JSON and to
account sysmeta unchanged.
"""
import collections

from swift_mass.control import classify

METHODS = ('cache', 'batch', 'merge', 'none')
# merge is not given by default: on every cluster it was measured on, a
# mixed tenant was slower with it (docs/benchmarks.md); an operator who
# has one where it helps sets mixed_method = merge.
DEFAULT_METHODS = {classify.READ: 'cache', classify.WRITE: 'batch',
                   classify.MIXED: 'none'}

Settings = collections.namedtuple('Settings', [
    'thresholds',  # classify.Thresholds
    'rings',       # {class: storage policy name, '' for the default}
    'methods',     # {class: method}
    'window',      # seconds a policy runs before it is validated
    'margin',      # allowed worsening, e.g. 0.2 = 20 % slower
    'holdoff',     # seconds a deleted method is not given again
])

DEFAULT_SETTINGS = Settings(
    thresholds=classify.DEFAULT_THRESHOLDS,
    rings={classify.READ: '', classify.WRITE: '', classify.MIXED: ''},
    methods=DEFAULT_METHODS, window=60, margin=0.0, holdoff=600)


def dominant_latency(cls, figures):
    """The mean latency (ms) a class's method is meant to improve: GETs for
    readers, PUTs for writers, all requests for mixed tenants."""
    means, ops = figures.mean_latency_ms, figures.ops
    wanted = _wanted_ops(cls, ops)
    n = sum(ops.get(op, 0) for op in wanted if op in means)
    if not n:
        return None
    return sum(means[op] * ops[op] for op in wanted if op in means) / n


def _wanted_ops(cls, ops):
    if cls == classify.READ:
        return ('GET',)
    if cls == classify.WRITE:
        return ('PUT',)
    return tuple(ops)


def latency_totals(all_figures):
    """{op: (sum of latencies in ms, requests)} over many tenants'
    figures: the pool references are taken from."""
    totals = {}
    for f in all_figures:
        for op, n in f.ops.items():
            if op in f.mean_latency_ms:
                ms, count = totals.get(op, (0.0, 0))
                totals[op] = (ms + f.mean_latency_ms[op] * n, count + n)
    return totals


def reference_latency(cls, totals, own, min_requests):
    """The mean latency (ms) of the class's dominant operations over
    every tenant but the one whose figures are `own`; None when the others
    made fewer than `min_requests` of them (too few to stand for the
    cluster's load)."""
    wanted = _wanted_ops(cls, totals)
    ms = count = 0
    for op in wanted:
        op_ms, op_count = totals.get(op, (0.0, 0))
        n = own.ops.get(op, 0) if op in own.mean_latency_ms else 0
        ms += op_ms - own.mean_latency_ms.get(op, 0.0) * n
        count += op_count - n
    if count < min_requests or count <= 0:
        return None
    return ms / count


def new_entry(cls, settings, now, reason):
    return {
        'class': cls,
        'ring': settings.rings.get(cls, ''),
        'method': settings.methods.get(cls, 'none'),
        'since': now,
        'baseline_ms': None,
        'baseline_reference_ms': None,
        'validated': False,
        'holdoff': {},
        'pinned': False,
        'reason': reason,
    }


def keeps_when_idle(previous, pin=None):
    """Whether :func:`decide` keeps ``previous`` as it is (and gives no
    reason) for a tenant that made no request in the window, whatever the
    time: true of an entry that is not pinned, of a tenant without a pin.
    Its class needs ``min_requests`` to change, its validation the latency
    of some request; only a pin, or an unpin, changes an idle tenant's
    entry.  The leader calls decide only for the others."""
    return previous is not None and not pin and not previous.get('pinned')


def decide(tenant, previous, figures, now, settings=DEFAULT_SETTINGS,
           pin=None, reference=None):
    """The tenant's new table entry (None: the tenant has none) and a
    list of reasons (empty when nothing changed).

    previous: the tenant's entry or None; figures: monitor.Figures over the
    window; pin: {'class': ...} (optionally 'ring', 'method') or None;
    reference: a function of the class giving the other tenants' latency
    now (:func:`reference_latency`), or None.
    """
    reference = reference or (lambda cls: None)
    if pin:
        cls = pin['class']
        wanted = {'class': cls,
                  'ring': pin.get('ring', settings.rings.get(cls, '')),
                  'method': pin.get('method', settings.methods.get(cls,
                                                                   'none'))}
        if previous and previous.get('pinned') and all(
                previous.get(k) == v for k, v in wanted.items()):
            return previous, []
        # a pin does not judge methods, so it keeps the hold-offs it found:
        # once unpinned, a method validation deleted stays held off
        holdoff = {m: t for m, t in (previous or {}).get(
            'holdoff', {}).items() if t > now}
        entry = dict(new_entry(cls, settings, now, 'pinned by operator'),
                     pinned=True, validated=True, holdoff=holdoff, **wanted)
        return entry, ['%s: pinned to %s (ring %r, method %s)' % (
            tenant, cls, entry['ring'], entry['method'])]

    before = previous.get('class') if previous and not previous.get(
        'pinned') else classify.UNKNOWN
    cls = classify.classify(figures.reads, figures.writes, before,
                            settings.thresholds)
    share = classify.read_share(figures.reads, figures.writes)
    if cls == classify.UNKNOWN:
        if previous and previous.get('pinned'):
            return None, ['%s: unpinned; too few requests to classify' %
                          tenant]
        return previous, []

    if previous is None or previous.get('pinned') or \
            previous['class'] != cls:
        entry = new_entry(cls, settings, now, 'read share %.2f over %d '
                          'requests' % (share, figures.reads +
                                        figures.writes))
        holdoff = dict(previous.get('holdoff', {})) if previous else {}
        holdoff = {m: t for m, t in holdoff.items() if t > now}
        entry['holdoff'] = holdoff
        if entry['method'] in holdoff:
            entry['method'] = 'none'
            entry['reason'] += '; %s held off after it did not help' % (
                settings.methods.get(cls))
        entry['baseline_ms'] = dominant_latency(cls, figures)
        entry['baseline_reference_ms'] = reference(cls)
        was = previous['class'] if previous else classify.UNKNOWN
        return entry, ['%s: %s -> %s (%s): ring %r, method %s' % (
            tenant, was, cls, entry['reason'], entry['ring'],
            entry['method'])]

    entry = previous
    if entry['validated'] or entry['method'] == 'none' or \
            now - entry['since'] < settings.window:
        return entry, []
    current = dominant_latency(cls, figures)
    if current is None:
        return entry, []  # nothing to judge by yet: wait for traffic
    baseline = entry.get('baseline_ms')
    if baseline is None:
        return dict(entry, validated=True), [
            '%s: %s kept (no baseline to compare)' % (tenant,
                                                      entry['method'])]
    was_reference = entry.get('baseline_reference_ms')
    now_reference = reference(cls)
    judged = '%.1f ms against %.1f ms before' % (current, baseline)
    if was_reference and now_reference:
        # relative to the others: the cluster's load changed meanwhile
        current, baseline = current / now_reference, baseline / was_reference
        judged = ('%.2f against %.2f times the other tenants\' latency '
                  '(%s; theirs %.1f ms, before %.1f ms)' % (
                      current, baseline, judged, now_reference,
                      was_reference))
    if current > baseline * (1.0 + settings.margin):
        holdoff = dict(entry.get('holdoff', {}))
        holdoff[entry['method']] = now + settings.holdoff
        reason = '%s made latency worse: %s (margin %d%%)' % (
            entry['method'], judged, settings.margin * 100)
        return dict(entry, method='none', validated=True, holdoff=holdoff,
                    reason=reason), ['%s: deleted: %s' % (tenant, reason)]
    return dict(entry, validated=True), [
        '%s: %s validated: %s' % (tenant, entry['method'], judged)]
