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
"""Formulate and validate a tenant's policy: the decision half of the
control loop, in plain Python.

A policy is the triple {tenant, substore, method}: the substore (storage
policy name) the tenant's new containers land on and the method its
requests get (cache, batch, merge or none), formed from the tenant's
workload class and the operator's mapping of classes to substores and
methods.

:func:`decide` takes a tenant's previous table entry, its figures over the
window and the time, and returns the new entry and the reasons for any
change.  It does, in order:

* pins: an operator's pin fixes class, substore and method; nothing
  overrides it;
* classify: the class, with the classifier's hysteresis and minimum sample;
* the mapping: a class that stays follows the mapping's substore for it
  (the same entry, rerouted) and its method (a new entry, judged as any
  new method), so that a reload that changes either reaches the tenants
  of the class, but a method validation deleted stays held off;
* insertion: a changed class (or an unpin) replaces the policy; the
  figures of the window before it become the baseline its method is
  judged against, but only if the tenant ran without that method for the
  whole of that window (see below);
* validation: a method is judged by the mean latency of the tenant's
  dominant operation against the baseline, never over its cold start (a
  cache whose GETs all miss and fill, a batch not yet in step): the
  ``warmup`` seconds after it came into force at every worker (the
  decision, then up to one ``interval`` for the workers to apply it) are
  not judged; then whole windows are, until they cover at least
  ``validation_window`` seconds: a *validation window*.  A method whose
  tenant's latency is no worse than the baseline plus ``margin`` (15 %
  by default, above the noise of a window) is validated and kept for as
  long as the class lasts.  One worse is noise until the next validation
  window says the same: after :data:`WORSE_WINDOWS_TO_DELETE` in a row
  the method is deleted (method ``none``) and not given to that tenant
  again for ``holdoff`` seconds.

A baseline comes only from a window in which the tenant ran without the
method, pinned or not: its policy had another method for the whole of
it, and for an interval before it (the workers apply a decision within
one).  Otherwise the method would be judged against itself; when the
method ran warm there (a pin just removed, a class that came back within
a window), against its own cold start, and dropped for working.  A method
without such a window (an unpin that leaves the pinned method in force,
a class flip within a window) is kept unjudged: measuring a baseline
would mean taking a working method away for a window.

An entry keeps for validation, besides ``baseline_ms`` and
``baseline_reference_ms``:

* ``ran_until``: ``{method: time}``, the methods that stopped being in
  force less than a window and an interval ago, and when; carried from
  entry to entry (class changes, pins, unpins, deletions) so the next
  insertion can tell whether its method ran in the window before.
  Absent when empty, as in most entries;
* ``judging``, while a method is judged: the sums over the windows of
  the current validation window (``windows``, the dominant operation's
  latency ``ms`` and requests ``n``, the other tenants' ``ref_ms``, or
  None once a window had no reference), the time the next window may
  start from (``from``) and how many validation windows in a row were
  worse (``worse``).  Gone once the method is validated or deleted.

The cluster's load moves every tenant's latency, so when the other tenants
made enough of the same operations both before and after, the comparison
is of the tenant's latency relative to theirs (the *reference*): a tenant
whose latency doubled while everyone else's doubled too was not hurt by
its method.  Without such a reference the absolute latencies are
compared.

A tenant opted out of Mass (its account's mark or a proxy's
``opt_out_accounts``) is not classified: :func:`opt_out` replaces its entry
with one that says so (``opted_out``, and the reason), which no proxy takes
for a policy (:meth:`swift_mass.control.agent.Agent.policy` answers None)
and which ``swift-mass explain`` shows.  Once the tenant opts back in,
:func:`decide` decides on it afresh.

A tenant the operator forgot (``swift-mass forget``: a forget mark in the
store, ``{tenant: forgotten at}``, :mod:`swift_mass.control.stores.base`)
is classified afresh from its traffic after the forget only: the leader
reads the marks with the counts, :func:`counts_since_forget` leaves out
the tenant's counts buckets that started before its mark (the bucket the
forget fell in too: some of it is from before), and
:func:`forgotten_entry` tells that an entry whose ``since`` is before the
mark is not the tenant's previous entry any more (one a racing leader put
back, or the durable copy in account sysmeta): :func:`decide` gets None
for it.  The mark is the forgetter's clock, the buckets and ``since`` the
proxies': a leader whose clock is behind the forgetter's by some seconds
decides the tenant afresh for those seconds more.  A pin outlives a
forget (``swift-mass unpin`` removes it), and so does an opt-out (the
account's mark, counted again at its next request, or
``opt_out_accounts``).

An entry is a :class:`~swift_mass.control.entry.PolicyEntry`, which
says how it goes to the shared store and to account sysmeta.  An entry
in the table is never changed: a decision is a new one.
"""
import collections

from swift_mass.control import classify
from swift_mass.control.entry import PolicyEntry

METHODS = ('cache', 'batch', 'merge', 'none')
#: validation windows in a row in which the tenant's latency is worse than
#: its baseline by more than the margin before its method is deleted: one
#: noisy window does not drop a method that works
WORSE_WINDOWS_TO_DELETE = 2
# merge is not given by default: on every cluster it was measured on, a
# mixed tenant was slower with it (docs/benchmarks.md); an operator who
# has one where it helps sets mixed_method = merge.
DEFAULT_METHODS = {classify.READ: 'cache', classify.WRITE: 'batch',
                   classify.MIXED: 'none'}

Settings = collections.namedtuple('Settings', [
    'thresholds',  # classify.Thresholds
    'substores',   # {class: storage policy name, '' for the default}
    'methods',     # {class: method}
    'window',      # seconds of the sliding window figures are over
    'margin',      # allowed worsening, e.g. 0.15 = 15 % slower
    'holdoff',     # seconds a deleted method is not given again
    'warmup',      # seconds after a method is in force not judged (>= window)
    'validation_window',  # seconds a verdict is over, in whole windows
    'interval',    # seconds a decision may take to reach every worker
    # {class: why its substore is (not) used, in words}: the measured check
    # of swift_mass.control.substores, whose substores are those above
    'substore_notes',
], defaults=(None,))

DEFAULT_SETTINGS = Settings(
    thresholds=classify.DEFAULT_THRESHOLDS,
    substores={classify.READ: '', classify.WRITE: '', classify.MIXED: ''},
    methods=DEFAULT_METHODS, window=60, margin=0.15, holdoff=600,
    warmup=60, validation_window=60, interval=5.0)


def dominant_latency(cls, figures):
    """The mean latency (ms) a class's method is meant to improve: GETs for
    readers, PUTs for writers, all requests for mixed tenants."""
    return _dominant(cls, figures)[0]


def _dominant(cls, figures):
    """(:func:`dominant_latency`, the requests it is the mean of)."""
    means, ops = figures.mean_latency_ms, figures.ops
    wanted = _wanted_ops(cls, ops)
    n = sum(ops.get(op, 0) for op in wanted if op in means)
    if not n:
        return None, 0
    return sum(means[op] * ops[op] for op in wanted if op in means) / n, n


def _wanted_ops(cls, ops):
    if cls == classify.READ:
        return ('GET',)
    if cls == classify.WRITE:
        return ('PUT',)
    return tuple(ops)


def counts_since_forget(counts, forgotten):
    """``counts`` (``{tenant: {bucket: fields}}``, as
    :meth:`~swift_mass.control.stores.base.Store.read_counts` gives them)
    without each forgotten tenant's buckets that started before its
    forget mark (``forgotten``: ``{tenant: forgotten at}``), and without
    a tenant left with none; ``counts`` itself when nothing is left
    out."""
    if not forgotten:
        return counts
    kept = None
    for tenant, at in forgotten.items():
        buckets = counts.get(tenant)
        if not buckets or min(buckets) >= at:
            continue
        if kept is None:
            kept = dict(counts)
        after = {bucket: fields for bucket, fields in buckets.items()
                 if bucket >= at}
        if after:
            kept[tenant] = after
        else:
            del kept[tenant]
    return counts if kept is None else kept


def forgotten_entry(entry, at):
    """Whether ``entry`` is from before the tenant's forget mark ``at``
    (None: it has none), so not its previous entry any more."""
    return entry is not None and at is not None and entry.since < at


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
    """A policy decided at `now`: the mapping's substore and method for
    the class, not yet judged (``ran_until`` and ``judging``, see the
    module's docstring, are filled in when they have something to
    say)."""
    return PolicyEntry(cls, substore=settings.substores.get(cls, ''),
                       method=settings.methods.get(cls, 'none'), since=now,
                       reason=reason + _noted(settings, cls, '; '))


def _noted(settings, cls, separator):
    """The measured check's note on ``cls``'s substore after
    ``separator``, or '' without one (swift_mass.control.substores)."""
    note = (settings.substore_notes or {}).get(cls)
    return separator + note if note else ''


def keeps_when_idle(previous, pin=None):
    """Whether :func:`decide` keeps ``previous`` as it is (and gives no
    reason) for a tenant that made no request in the window, whatever the
    time: true of an entry that is not pinned, of a tenant without a pin.
    Its class needs ``min_requests`` to change, its validation the latency
    of some request; only a pin, or an unpin, changes an idle tenant's
    entry.  The leader calls decide only for the others."""
    return previous is not None and not pin and not previous.pinned


def _ran_until(previous, method, now, settings):
    """The ``ran_until`` of an entry with `method` replacing `previous` at
    `now`: previous's, less what stopped too long ago to reach into a
    window, plus previous's own method if it stops now."""
    if previous is None:
        return {}
    horizon = now - settings.window - settings.interval
    ran = {m: t for m, t in previous.ran_until.items() if t > horizon}
    was = previous.method
    if was not in ('none', method):
        ran[was] = now
    return ran


def _insert(entry, previous, figures, now, settings, reference):
    """Fill in a new unpinned entry's validation fields: its ``ran_until``,
    and its baseline if the window before ran without its method; a
    method without one is kept unjudged (``validated``).  ``entry`` is
    new, in no table yet: it is filled in where it is."""
    method, cls = entry.method, entry.cls
    entry.ran_until = _ran_until(previous, method, now, settings)
    if method == 'none':
        return
    if (previous is not None and previous.method == method) or \
            method in entry.ran_until:
        entry.validated = True
        entry.reason += ('; %s not judged: it was in force in the window '
                         'before, which is no baseline for it' % method)
        return
    entry.baseline_ms = dominant_latency(cls, figures)
    if entry.baseline_ms is None:
        entry.validated = True
        entry.reason += '; %s not judged: no %s latency in the window ' \
            'before' % (method, '/'.join(_wanted_ops(cls, figures.ops)) or
                        'request')
        return
    entry.baseline_reference_ms = reference(cls)


def is_opted_out(entry):
    """Whether a table entry (or None) is an opted-out tenant's."""
    return entry is not None and entry.opted_out


def opt_out(tenant, previous, now, settings=DEFAULT_SETTINGS, why='',
            pinned=False):
    """The entry of a tenant opted out of Mass (``why``: by what), and the
    reasons, as :func:`decide` answers them; ``previous`` if it is one
    already.  It names no class, substore or method, and keeps what a
    later policy is judged by: the hold-offs, and ``ran_until`` with
    previous's method stopping now, so a tenant that opts back in within a
    window is not judged against a window its old method ran in.
    ``pinned``: the operator's pin, which waits until the tenant opts back
    in."""
    if is_opted_out(previous):
        return previous, []
    reason = 'opted out (%s)' % why
    entry = PolicyEntry(classify.UNKNOWN, substore='', method='none',
                        since=now, validated=True, reason=reason,
                        holdoff=_held_off(previous, now),
                        ran_until=_ran_until(previous, 'none', now,
                                             settings),
                        opted_out=True)
    return entry, ['%s: %s: no class, substore or method%s' % (
        tenant, reason, '; its pin waits until it opts back in'
        if pinned else '')]


def decide(tenant, previous, figures, now, settings=DEFAULT_SETTINGS,
           pin=None, reference=None):
    """The tenant's new table entry (None: the tenant has none) and a
    list of reasons (empty when nothing changed); see :func:`_decide`.
    ``previous`` may be the entry of a tenant that was opted out
    (:func:`opt_out`) and is no longer: its new entry is decided afresh,
    none while its requests are too few to classify it."""
    entry, reasons = _decide(tenant, previous, figures, now, settings, pin,
                             reference)
    if is_opted_out(previous):
        if entry is previous:
            entry = None
        reasons = ['%s: no longer opted out' % tenant] + reasons
    return entry, reasons


def _decide(tenant, previous, figures, now, settings=DEFAULT_SETTINGS,
            pin=None, reference=None):
    """The tenant's new table entry (None: the tenant has none) and a
    list of reasons (empty when nothing changed).

    previous: the tenant's entry or None; figures: monitor.Figures over the
    window that ends at `now`; pin: {'class': ...} (optionally 'ring',
    the substore, and 'method': the keys ``swift-mass pin`` stores) or
    None; reference: a function of the class giving the
    other tenants' latency over that window (:func:`reference_latency`),
    or None.

    An entry that only moves on in its validation (one more window judged)
    is a new entry without a reason: it is written, not logged.
    """
    reference = reference or (lambda cls: None)
    if pin:
        return _pinned(tenant, previous, pin, now, settings)

    before = previous.cls if previous is not None and not previous.pinned \
        else classify.UNKNOWN
    cls = classify.classify(figures.reads, figures.writes, before,
                            settings.thresholds)
    if cls == classify.UNKNOWN:
        if previous is not None and previous.pinned:
            return None, ['%s: unpinned; too few requests to classify' %
                          tenant]
        return previous, []

    if previous is None or previous.pinned or previous.cls != cls:
        return _classified(tenant, previous, cls, figures, now, settings,
                           reference)
    substore = settings.substores.get(cls, '')
    if previous.substore != substore:
        return _rerouted(tenant, previous, substore, settings)
    method = settings.methods.get(cls, 'none')
    # a method validation deleted keeps its hold-off's 'none' instead; an
    # idle tenant keeps its entry (keeps_when_idle)
    if previous.method != method and method not in previous.holdoff and \
            figures.reads + figures.writes:
        return _remapped(tenant, previous, cls, figures, now, settings,
                         reference)

    return _validate(tenant, previous, cls, figures, now, settings,
                     reference)


def _held_off(previous, now):
    """``previous``'s hold-offs (None: no entry) that have not run out at
    ``now``."""
    if previous is None:
        return {}
    return {m: t for m, t in previous.holdoff.items() if t > now}


def _pinned(tenant, previous, pin, now, settings):
    """:func:`decide` for a tenant the operator pinned: the pin's class,
    and its substore and method or else the mapping's; ``previous`` if it
    is that pin's already."""
    cls = pin['class']
    # 'ring': the key a pin keeps its substore under
    substore = pin.get('ring', settings.substores.get(cls, ''))
    method = pin.get('method', settings.methods.get(cls, 'none'))
    if previous is not None and previous.pinned and \
            (previous.cls, previous.substore, previous.method) == \
            (cls, substore, method):
        return previous, []
    # a pin does not judge methods, so it keeps the hold-offs it found:
    # once unpinned, a method validation deleted stays held off
    # a pin that names its substore is used as pinned, with no note
    note = '' if 'ring' in pin else _noted(settings, cls, '; ')
    entry = PolicyEntry(cls, substore=substore, method=method, since=now,
                        validated=True, holdoff=_held_off(previous, now),
                        pinned=True, reason='pinned by operator' + note,
                        ran_until=_ran_until(previous, method, now,
                                             settings))
    return entry, ['%s: pinned to %s (substore %r, method %s)' % (
        tenant, cls, entry.substore, entry.method)]


def _classified(tenant, previous, cls, figures, now, settings, reference):
    """:func:`decide` for an unpinned tenant of a new class ``cls`` (or
    one just unpinned, or without an entry): the mapping's policy for the
    class, unless its method is held off, inserted (:func:`_insert`)."""
    share = classify.read_share(figures.reads, figures.writes)
    entry = new_entry(cls, settings, now, 'read share %.2f over %d '
                      'requests' % (share, figures.reads + figures.writes))
    entry.holdoff = _held_off(previous, now)
    if entry.method in entry.holdoff:
        entry.method = 'none'
        entry.reason += '; %s held off after it did not help' % (
            settings.methods.get(cls))
    _insert(entry, previous, figures, now, settings, reference)
    was = previous.cls if previous is not None else classify.UNKNOWN
    return entry, ['%s: %s -> %s (%s): substore %r, method %s' % (
        tenant, was, cls, entry.reason, entry.substore, entry.method)]


def _rerouted(tenant, previous, substore, settings):
    """:func:`decide` for an unpinned entry whose class stays while the
    mapping's substore for it changed (the operator's, or the measured
    check's): the same entry, method and validation with the new
    substore, which the tenant's new containers land on."""
    reason = 'substore %r instead of %r%s' % (
        substore, previous.substore, _noted(settings, previous.cls, ': '))
    return previous.replace(substore=substore, reason=reason), [
        '%s: %s' % (tenant, reason)]


def _remapped(tenant, previous, cls, figures, now, settings, reference):
    """:func:`decide` for an unpinned entry whose class stays while the
    mapping's method for it changed (the operator's, at a reload): the
    mapping's method from now on, judged as a new one."""
    entry, _ = _classified(tenant, previous, cls, figures, now, settings,
                           reference)
    entry.reason = 'method %s instead of %s (the mapping\'s for %s)' % (
        entry.method, previous.method, cls)
    return entry, ['%s: %s' % (tenant, entry.reason)]


# -- validation (see the module's docstring) ----------------------------

def _validate(tenant, entry, cls, figures, now, settings, reference):
    """:func:`decide` for an unpinned entry whose class stays: judge its
    method over one more window, if one is due."""
    if entry.validated or entry.method == 'none':
        return entry, []
    if now - settings.window < _next_window_from(entry, settings):
        # the window reaches back into the warm-up, or into the last
        # window judged: each is judged once, after the cold start
        return entry, []
    if entry.baseline_ms is None:
        # an entry from before baselines were checked, without one
        return entry.replace(validated=True), [
            '%s: %s kept (no baseline to compare)' % (tenant, entry.method)]
    current, n = _dominant(cls, figures)
    if not n:
        return entry, []  # nothing to judge by yet: wait for traffic
    judging = _judged(entry.judging, current, n, reference(cls), now)
    if judging['windows'] * settings.window < settings.validation_window:
        return entry.replace(judging=judging), []
    return _verdict(tenant, entry, judging, now, settings)


def _next_window_from(entry, settings):
    """The earliest time the next window judged may start from: the end
    of the last one judged, or the end of the method's warm-up."""
    judging = entry.judging
    if judging:
        return judging['from']
    # in force at every worker by since + interval; then the warm-up
    return entry.since + settings.interval + settings.warmup


def _judged(judging, current, n, now_reference, now):
    """``judging`` (None: a validation window's first window) with one
    more window added: ``n`` requests of the dominant operation at a mean
    of ``current`` ms, the other tenants' at ``now_reference`` ms."""
    judging = dict(judging or {'windows': 0, 'ms': 0.0, 'n': 0,
                               'ref_ms': 0.0, 'worse': 0})
    judging['from'] = now
    judging['windows'] += 1
    judging['ms'] += current * n
    judging['n'] += n
    if judging['ref_ms'] is not None and now_reference:
        judging['ref_ms'] += now_reference * n
    else:
        judging['ref_ms'] = None
    return judging


def _verdict(tenant, entry, judging, now, settings):
    """:func:`_validate` once ``judging`` covers a validation window: the
    method validated, judged again (worse, but fewer than
    :data:`WORSE_WINDOWS_TO_DELETE` validation windows in a row), or
    deleted and held off."""
    current, baseline, judged = _compared(entry, judging)
    if current <= baseline * (1.0 + settings.margin):
        return entry.replace(judging=None, validated=True), [
            '%s: %s validated: %s' % (tenant, entry.method, judged)]
    worse = judging['worse'] + 1
    margin = '(margin %g%%)' % round(settings.margin * 100, 2)
    if worse < WORSE_WINDOWS_TO_DELETE:
        fresh = {'from': now, 'windows': 0, 'ms': 0.0, 'n': 0,
                 'ref_ms': 0.0, 'worse': worse}
        return entry.replace(judging=fresh), [
            '%s: %s worse in validation window %d of %d: %s %s; judged '
            'again' % (tenant, entry.method, worse,
                       WORSE_WINDOWS_TO_DELETE, judged, margin)]
    holdoff = dict(entry.holdoff)
    holdoff[entry.method] = now + settings.holdoff
    ran = _ran_until(entry, 'none', now, settings)
    reason = '%s made latency worse in %d validation windows in a row: ' \
        '%s %s' % (entry.method, worse, judged, margin)
    deleted = entry.replace(judging=None, method='none', validated=True,
                            holdoff=holdoff, ran_until=ran, reason=reason)
    return deleted, ['%s: deleted: %s' % (tenant, reason)]


def _compared(entry, judging):
    """``(current, baseline, judged)``: the validation window's latency
    and the baseline, each relative to the other tenants' when both have
    a reference, else in ms, and how they were compared, in words."""
    baseline = entry.baseline_ms
    current = judging['ms'] / judging['n']
    now_reference = judging['ref_ms'] and judging['ref_ms'] / judging['n']
    was_reference = entry.baseline_reference_ms
    judged = '%.1f ms against %.1f ms before' % (current, baseline)
    if was_reference and now_reference:
        # relative to the others: the cluster's load changed meanwhile
        current, baseline = current / now_reference, baseline / was_reference
        judged = ('%.2f against %.2f times the other tenants\' latency '
                  '(%s; theirs %.1f ms, before %.1f ms)' % (
                      current, baseline, judged, now_reference,
                      was_reference))
    return current, baseline, judged
