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
"""What Mass did during a run, from the policy table sampled each second
(``Store.get_table()``; its entries are swift_mass.control.controller's,
read as :class:`swift_mass.control.entry.PolicyEntry`).

A sample is ``[offset, {tenant label: entry or None}]`` with the offset
in seconds from the start of the measured window (negative in the
warm-up), each entry cut down to what the bench reports: the tenant's
``class``, ``substore`` (the storage policy its new containers land on;
stored as ``ring``), ``method``, and the controller's state of it:
``validated`` (the method was judged, or is kept unjudged), ``pinned``,
``since`` (when the policy was put in), ``reason``, ``baseline_ms`` (the
latency the method is judged against) and, while the method is being
judged, ``judging``: the windows judged so far and how many validation
windows in a row were worse (the entry's ``judging``; absent from entries
of controllers that judge in one window).  None for a tenant the table
has no entry for (or one that is not an entry); a sample of None when
the table could not be read.

Per tenant over the measured window: the seconds of each class, substore
and method; the method in force for most of the window and whether it was
in force for the whole of it (a run in which Mass changed, or deleted, a
tenant's method half-way measures neither method); and the decisions seen
as entries changed from one sample to the next (a new policy, a method
validated or deleted, a validation window found worse, a pin, an entry
gone).

Plain Python, no I/O.
"""
import collections

from swift_mass.control.entry import read_table

ABSENT = 'absent'  # no entry for the tenant: no policy in force


def entry_sample(entry):
    """The fields of a table entry (a PolicyEntry) the bench records; None
    for none."""
    if entry is None:
        return None
    judging = entry.judging
    return {'class': entry.cls, 'substore': entry.substore,
            'method': entry.method, 'validated': entry.validated,
            'pinned': entry.pinned, 'since': entry.since,
            'reason': entry.reason, 'baseline_ms': entry.baseline_ms,
            'judging': {'windows': judging.get('windows'),
                        'worse': judging.get('worse')}
            if isinstance(judging, dict) else None}


def table_sample(table, accounts):
    """{label: entry_sample} of the tenants ``accounts`` ({label:
    account}) in ``table`` (as ``Store.get_table()`` answers it)."""
    entries = read_table({account: table[account]
                          for account in accounts.values()
                          if account in table})
    return {label: entry_sample(entries.get(account))
            for label, account in accounts.items()}


def in_window(samples, seconds):
    """The samples taken in the measured window whose table was read."""
    return [(t, s) for t, s in samples
            if s is not None and 0.0 <= t < seconds]


def _field(sample, label, field):
    entry = sample.get(label)
    if entry is None:
        return ABSENT
    value = entry.get(field)
    return ABSENT if value is None else str(value)


def seconds_of(samples, label, field):
    """{value: samples (seconds) with it} of one field of a tenant's
    entry ('absent' where there was no entry)."""
    return dict(collections.Counter(_field(s, label, field)
                                    for _, s in samples))


def method_in_force(samples, label):
    """{'method': the one in force in most samples, 'share': the share of
    samples it was, 'whole_window': whether it was in force in all of
    them}; None without samples."""
    methods = [_field(s, label, 'method') for _, s in samples]
    if not methods:
        return None
    method, count = collections.Counter(methods).most_common(1)[0]
    return {'method': method, 'share': count / len(methods),
            'whole_window': count == len(methods) and method != ABSENT}


def decision(before, after):
    """What changed from one entry sample to the next, as the controller
    decides (swift_mass.control.controller.decide); None if nothing."""
    if before == after:
        return None
    if after is None:
        return 'entry removed'
    if before is None:
        return 'pinned' if after.get('pinned') else 'new policy'
    if after.get('pinned') and not before.get('pinned'):
        return 'pinned'
    if after.get('since') != before.get('since') or \
            after.get('class') != before.get('class'):
        return 'new policy'
    if after.get('validated') and not before.get('validated'):
        return 'validated' if after.get('method') == before.get('method') \
            else 'deleted'
    if _worse(after) > _worse(before):
        return 'judged worse'
    if (after.get('method'), after.get('substore')) != \
            (before.get('method'), before.get('substore')):
        return 'changed'
    return None


def _worse(entry):
    return (entry.get('judging') or {}).get('worse') or 0


def decisions(samples, label):
    """[{'t', 'decision', 'class', 'substore', 'method', 'reason'}] of
    the tenant's entry changes between consecutive samples."""
    out = []
    previous = None
    for i, (when, sample) in enumerate(samples):
        entry = sample.get(label)
        kind = decision(previous, entry) if i else None
        if kind:
            after = entry or {}
            out.append({'t': when, 'decision': kind,
                        'class': after.get('class'),
                        'substore': after.get('substore'),
                        'method': after.get('method'),
                        'reason': after.get('reason')})
        previous = entry
    return out


def what_mass_did(samples, label, seconds, judged=True):
    """One tenant's summary over the measured window; ``judged``: whether
    the method in force is checked (Mass in the pipelines)."""
    window = in_window(samples, seconds)
    out = {'samples': len(window),
           'class_seconds': seconds_of(window, label, 'class'),
           'substore_seconds': seconds_of(window, label, 'substore'),
           'method_seconds': seconds_of(window, label, 'method'),
           'decisions': decisions(window, label),
           'method_in_force': method_in_force(window, label)
           if judged else None}
    return out


def flagged(summary):
    """A note when the tenant's method was not in force for the whole
    window, else None."""
    force = (summary or {}).get('method_in_force')
    if not force or force['whole_window']:
        return None
    others = ', '.join('%s %d s' % pair for pair in sorted(
        summary['method_seconds'].items()))
    return 'method not in force for the whole window (%s: %.0f %% of ' \
        'it; %s)' % (force['method'], 100.0 * force['share'], others)


def _values(counts):
    """'read' for one value; 'read 12 s/write 8 s' for several."""
    shown = {value or "''": n for value, n in counts.items()}
    if len(shown) == 1:
        return next(iter(shown))
    return '/'.join('%s %d s' % (value, n) for value, n in sorted(
        shown.items(), key=lambda pair: -pair[1]))


def describe(summary):
    """One tenant's window in a line: its class, substore and method (the
    seconds of each when they changed) and the decisions seen."""
    if not summary.get('samples'):
        return 'policy table not read in the window'
    text = 'class %s, substore %s, method %s' % (
        _values(summary['class_seconds']),
        _values(summary['substore_seconds']),
        _values(summary['method_seconds']))
    if summary['decisions']:
        text += '; decisions: %s' % ', '.join(
            '%s at %.0f s' % (d['decision'], d['t'])
            for d in summary['decisions'])
    return text
