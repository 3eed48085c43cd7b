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
  made it worse by more than ``margin`` is deleted (method ``none``) and the
  method is not given to that tenant again for ``holdoff`` seconds.

An entry is a plain dict, so it goes to the shared store as JSON and to
account sysmeta unchanged.
"""
import collections

from swift_mass import classify

METHODS = ('cache', 'batch', 'merge', 'none')
DEFAULT_METHODS = {classify.READ: 'cache', classify.WRITE: 'batch',
                   classify.MIXED: 'merge'}

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
    methods=DEFAULT_METHODS, window=60, margin=0.2, holdoff=600)


def dominant_latency(cls, figures):
    """The mean latency (ms) a class's method is meant to improve: GETs for
    readers, PUTs for writers, all requests for mixed tenants."""
    means, ops = figures.mean_latency_ms, figures.ops
    if cls == classify.READ:
        wanted = ('GET',)
    elif cls == classify.WRITE:
        wanted = ('PUT',)
    else:
        wanted = tuple(ops)
    n = sum(ops.get(op, 0) for op in wanted if op in means)
    if not n:
        return None
    return sum(means[op] * ops[op] for op in wanted if op in means) / n


def new_entry(cls, settings, now, reason):
    return {
        'class': cls,
        'ring': settings.rings.get(cls, ''),
        'method': settings.methods.get(cls, 'none'),
        'since': now,
        'baseline_ms': None,
        'validated': False,
        'holdoff': {},
        'pinned': False,
        'reason': reason,
    }


def decide(tenant, previous, figures, now, settings=DEFAULT_SETTINGS,
           pin=None):
    """The tenant's new table entry (None: the tenant has none) and a
    list of reasons (empty when nothing changed).

    previous: the tenant's entry or None; figures: monitor.Figures over the
    window; pin: {'class': ...} (optionally 'ring', 'method') or None.
    """
    if pin:
        cls = pin['class']
        wanted = {'class': cls,
                  'ring': pin.get('ring', settings.rings.get(cls, '')),
                  'method': pin.get('method', settings.methods.get(cls,
                                                                   'none'))}
        if previous and previous.get('pinned') and all(
                previous.get(k) == v for k, v in wanted.items()):
            return previous, []
        entry = dict(new_entry(cls, settings, now, 'pinned by operator'),
                     pinned=True, validated=True, **wanted)
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
    if current > baseline * (1.0 + settings.margin):
        holdoff = dict(entry.get('holdoff', {}))
        holdoff[entry['method']] = now + settings.holdoff
        reason = ('%s made latency worse: %.1f ms against %.1f ms before '
                  '(margin %d%%)' % (entry['method'], current, baseline,
                                     settings.margin * 100))
        return dict(entry, method='none', validated=True, holdoff=holdoff,
                    reason=reason), ['%s: deleted: %s' % (tenant, reason)]
    return dict(entry, validated=True), [
        '%s: %s validated: %.1f ms against %.1f ms before' % (
            tenant, entry['method'], current, baseline)]
