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
"""A tenant's entry in the policy table: what the control loop decided for
it, kept as JSON in the shared store and in its account's sysmeta, read by
every proxy worker (its request path, once the table is loaded), by
``swift-mass`` and by the benchmark.

:class:`PolicyEntry` is that entry, with documented fields, made from what
is stored by one validating constructor (:meth:`PolicyEntry.from_dict`)
and stored as :meth:`PolicyEntry.to_dict` says, in the manner of Swift's
sharder and its ``CleavingContext``.  The leader decides entries
(:mod:`swift_mass.control.controller`); everyone else reads them.

Plain Python, no I/O: the stores and account sysmeta keep the dicts.
"""
import sys

#: the key the substore is stored under: ``ring``, as every release so far
#: has stored it (see :meth:`PolicyEntry.to_dict`)
SUBSTORE_KEY = 'ring'
#: the stored key that makes an entry an opted-out tenant's
OPTED_OUT_KEY = 'opted_out'
#: the fields of a running judgement (``judging``), each a number
#: (``ref_ms`` may be None)
JUDGING_FIELDS = ('from', 'windows', 'ms', 'n', 'ref_ms', 'worse')


class MalformedEntry(ValueError):
    """What is stored is not a policy entry; the message says why."""


# not bool, which JSON and Python take for an int
_NUMBERS = (int, float)
_OPTIONAL_NUMBERS = (int, float, type(None))
# what a stored entry without ``holdoff`` or ``ran_until`` has of them
_NOTHING = {}


def _is_number(value):
    return value.__class__ in _NUMBERS


def _times_fault(name, value):
    """Why ``value`` is not a ``{method: time}`` (``holdoff``,
    ``ran_until``), or None."""
    if value.__class__ is not dict:
        return 'its %s is %r, not an object' % (name, value)
    for method, when in value.items():
        if not _is_number(when):
            return 'its %s of %r is %r, not a number' % (name, method, when)
    return None


def _judging_fault(judging):
    """Why ``judging`` is not a running judgement (or None), or None."""
    if judging is None:
        return None
    if judging.__class__ is not dict:
        return 'its judging is %r, not an object' % (judging,)
    for field in JUDGING_FIELDS:
        value = judging.get(field)
        if not (_is_number(value) or (field == 'ref_ms' and value is None
                                      and field in judging)):
            return 'its judging\'s %s is %r, not a number' % (field, value)
    return None


def _plain(data):
    """Whether ``data`` is an entry as most are, checked at once: every
    field as :func:`entry_fault` wants it, the substore under ``ring``,
    no hold-off, ``ran_until`` or ``judging``.  False says nothing:
    entry_fault() checks the others, and says what is wrong."""
    if data.__class__ is not dict:
        return False
    get = data.get
    return get('class').__class__ is str and \
        get('method').__class__ is str and \
        get(SUBSTORE_KEY, '').__class__ is str and \
        get('reason', '').__class__ is str and \
        get('since').__class__ in _NUMBERS and \
        get('validated').__class__ is bool and \
        get('pinned', False).__class__ is bool and \
        get(OPTED_OUT_KEY, False).__class__ is bool and \
        get('baseline_ms').__class__ in _OPTIONAL_NUMBERS and \
        get('baseline_reference_ms').__class__ in _OPTIONAL_NUMBERS and \
        get('holdoff', _NOTHING) == _NOTHING and \
        get('ran_until', _NOTHING) == _NOTHING and \
        'judging' not in data and 'substore' not in data


def entry_fault(data):
    """What makes ``data`` (an entry as stored: a dict from JSON) not a
    policy entry, or None."""
    if data.__class__ is not dict:
        return 'it is %r, not an object' % (data,)
    for key in ('class', 'method'):
        if data.get(key).__class__ is not str:
            return 'its %s is %r, not a string' % (key, data.get(key))
    for key in ('substore', SUBSTORE_KEY, 'reason'):
        if key in data and data[key].__class__ is not str:
            return 'its %s is %r, not a string' % (key, data[key])
    if not _is_number(data.get('since')):
        return 'its since is %r, not a number' % (data.get('since'),)
    for key in ('baseline_ms', 'baseline_reference_ms'):
        value = data.get(key)
        if value is not None and not _is_number(value):
            return 'its %s is %r, not a number' % (key, value)
    if data.get('validated').__class__ is not bool:
        return 'its validated is %r, not true or false' % (
            data.get('validated'),)
    for key in ('pinned', OPTED_OUT_KEY):
        if data.get(key, False).__class__ is not bool:
            return 'its %s is %r, not true or false' % (key, data[key])
    for key in ('holdoff', 'ran_until'):
        if key in data:
            fault = _times_fault(key, data[key])
            if fault:
                return fault
    return _judging_fault(data.get('judging'))


class PolicyEntry(object):
    """A tenant's policy, as the leader decided it.

    * ``cls`` (stored as ``class``): the tenant's workload class, one of
      :data:`swift_mass.control.classify.CLASSES`, or ``unknown`` in an
      opted-out tenant's entry;
    * ``substore`` (stored as ``ring``): the storage policy the tenant's
      new containers land on, ``''`` for the default policy;
    * ``method``: the method its requests get: ``cache``, ``batch``,
      ``merge`` or ``none``;
    * ``since``: when the policy was put in (epoch seconds);
    * ``baseline_ms``: the mean latency (ms) of the tenant's dominant
      operation in the window before, which the method is judged against;
      None when there was none, or none is needed;
    * ``baseline_reference_ms``: the other tenants' latency in that window
      (:func:`swift_mass.control.controller.reference_latency`), or None;
    * ``validated``: whether the method was judged and kept, or is kept
      unjudged;
    * ``holdoff``: ``{method: time}``, the methods validation deleted, each
      not given again before that time;
    * ``pinned``: whether the operator pinned the policy;
    * ``reason``: why the policy is what it is, in words;
    * ``ran_until``: ``{method: time}``, the methods that stopped being in
      force less than a window and an interval ago, and when; stored only
      when not empty;
    * ``judging``: while the method is judged, the sums of the current
      validation window (:data:`JUDGING_FIELDS`); else None, not stored;
    * ``opted_out``: whether the entry is an opted-out tenant's, which no
      proxy takes for a policy; stored only when true.

    :mod:`swift_mass.control.controller`'s module docstring says how
    validation uses them.  An entry in a table is not changed: the leader
    replaces it with another (:meth:`replace`), which is what a worker's
    table gets.  The nested ``{method: time}`` and ``judging`` dicts are
    shared between an entry and the copies :meth:`replace` makes of it,
    and are not changed either.

    The constructor takes its arguments as they are (the controller's);
    what is read from a store or sysmeta is made by :meth:`from_dict`,
    which checks it.
    """

    __slots__ = ('cls', 'substore', 'method', 'since', 'baseline_ms',
                 'baseline_reference_ms', 'validated', 'holdoff', 'pinned',
                 'reason', 'ran_until', 'judging', 'opted_out')

    def __init__(self, cls, substore='', method='none', since=0.0,
                 baseline_ms=None, baseline_reference_ms=None,
                 validated=False, holdoff=None, pinned=False, reason='',
                 ran_until=None, judging=None, opted_out=False):
        self.cls = cls
        self.substore = substore
        self.method = method
        self.since = since
        self.baseline_ms = baseline_ms
        self.baseline_reference_ms = baseline_reference_ms
        self.validated = validated
        self.holdoff = {} if holdoff is None else holdoff
        self.pinned = pinned
        self.reason = reason
        self.ran_until = {} if ran_until is None else ran_until
        self.judging = judging
        self.opted_out = opted_out

    @classmethod
    def from_dict(cls, data):
        """The entry ``data`` (a dict, as JSON gives it back) stores; a
        :class:`MalformedEntry` saying why if it stores none.

        The substore is read from ``substore`` if it is there, else from
        ``ring``: ``ring`` is its key in what every release so far wrote
        (and :meth:`to_dict` still writes), ``substore`` the concept's
        name, which a later release may store it under; reading both
        lets a worker read the entries of a release either side of its
        own during a rolling upgrade.  ``class``, ``method``, ``since``
        and ``validated`` are needed (every release stored them); the
        fields that entries of earlier releases may lack take their
        defaults (:meth:`__init__`'s).  The values a table of
        many tenants holds a few of (class, substore, method) are
        interned: one string each, not one per tenant.
        """
        if not _plain(data):
            fault = entry_fault(data)
            if fault:
                raise MalformedEntry('not a policy entry: %s' % fault)
        intern = sys.intern
        get = data.get
        substore = get('substore')
        if substore is None:
            substore = get(SUBSTORE_KEY, '')
        judging = get('judging')
        entry = cls.__new__(cls)
        entry.cls = intern(data['class'])
        entry.substore = intern(substore)
        entry.method = intern(data['method'])
        entry.since = data['since']
        entry.baseline_ms = get('baseline_ms')
        entry.baseline_reference_ms = get('baseline_reference_ms')
        entry.validated = data['validated']
        entry.holdoff = dict(get('holdoff', _NOTHING))
        entry.pinned = get('pinned', False)
        entry.reason = get('reason', '')
        entry.ran_until = dict(get('ran_until', _NOTHING))
        entry.judging = None if judging is None else dict(judging)
        entry.opted_out = get(OPTED_OUT_KEY, False)
        return entry

    def to_dict(self):
        """The entry as it is stored (a fresh dict, for JSON): the
        substore under ``ring``, the key every release so far reads it by,
        so that a worker of the release before this one reads what this
        one writes during a rolling upgrade; ``ran_until``, ``judging``
        and ``opted_out`` only when they say something."""
        data = {'baseline_ms': self.baseline_ms,
                'baseline_reference_ms': self.baseline_reference_ms,
                'class': self.cls, 'holdoff': dict(self.holdoff),
                'method': self.method, 'pinned': self.pinned,
                'reason': self.reason, SUBSTORE_KEY: self.substore,
                'since': self.since, 'validated': self.validated}
        if self.judging is not None:
            data['judging'] = dict(self.judging)
        if self.opted_out:
            data[OPTED_OUT_KEY] = True
        if self.ran_until:
            data['ran_until'] = dict(self.ran_until)
        return data

    def replace(self, **changes):
        """A copy of the entry with ``changes`` (fields by name)."""
        new = PolicyEntry.__new__(PolicyEntry)
        for name in self.__slots__:
            setattr(new, name, changes.pop(name) if name in changes
                    else getattr(self, name))
        if changes:
            raise TypeError('not fields of a policy entry: %s'
                            % ', '.join(sorted(changes)))
        return new

    def _values(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        if other.__class__ is not PolicyEntry:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # its fields may be set: no key of a dict or set

    def __repr__(self):
        return 'PolicyEntry(%s)' % ', '.join(
            '%s=%r' % (name, getattr(self, name)) for name in self.__slots__)


def read_table(stored, malformed=None):
    """``{tenant: PolicyEntry}`` of a table as stored (``{tenant: dict}``,
    as :meth:`Store.get_table
    <swift_mass.control.stores.base.Store.get_table>` answers it); an
    entry that is not one is left out, after ``malformed(tenant, err)``
    if given (err: the :class:`MalformedEntry`)."""
    table = {}
    from_dict = PolicyEntry.from_dict
    for tenant, data in stored.items():
        try:
            table[tenant] = from_dict(data)
        except MalformedEntry as err:
            if malformed is not None:
                malformed(tenant, err)
    return table
