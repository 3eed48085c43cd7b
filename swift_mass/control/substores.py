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
"""Which substore each class's tenants are routed to: the operator's
mapping (``read_substore``, ``write_substore``, ``mixed_substore``), each
substore kept only where the devices were measured faster, for that
class's requests, than the default policy's.

Mass moves a tenant to a substore to make its requests faster.  A
substore of slower devices makes them slower, whatever its name says (as
measured on the hetero SAIO: docs/routing.md, "Only where measured
faster").  So, with ``substore_routing = measured`` (the default), the
leader compares the two by the devices' probed speeds (``swift-mass
devices probe``, kept in the classes file:
:mod:`swift_mass.device_speeds`):

* a policy's *time per request* for a class is the mean, over its object
  ring's devices weighted by their share of the ring's weight (the share
  of the replicas the ring gives them), of the device's time per I/O of
  the class's kind: ``1/read_iops`` for readers, ``1/write_iops`` for
  writers, ``1/iops`` (the probe's read/write mix) for mixed tenants;
* a substore is used when its time is at most ``1 - FASTER_BY`` of the
  default policy's; otherwise the class's tenants stay on the default
  policy;
* unmeasured (no classes file, a device of either ring without figures,
  a ring that cannot be read): the mapping as configured, and the note
  says so.

``substore_routing = configured`` uses the mapping as configured.  The
decision is :func:`checked_substores` (plain Python);
:class:`SubstoreCheck` feeds it the rings a proxy holds and the classes
file, again every :data:`CHECK_SECONDS`, and gives the leader the
settings to decide with.  Each decision's reason carries its class's
note, so ``swift-mass explain`` shows why a tenant is (not) routed.
"""
from swift.common.storage_policy import POLICIES

from swift_mass.control import classify
from swift_mass.device_speeds import classes_path, read_speeds
from swift_mass.ring_devices import device_name, loaded_ring_devs, \
    object_ring_devs

MODES = ('measured', 'configured')
#: how much faster than the default policy a substore must be measured:
#: a probe of a few seconds a device varies by some per cent from run to
#: run, and a move that saves less is not worth a policy apart
FASTER_BY = 0.10
#: how often the leader reads the classes file and the rings again
CHECK_SECONDS = 60.0

_KIND = {classify.READ: ('read_iops', 'read'),
         classify.WRITE: ('write_iops', 'write'),
         classify.MIXED: ('iops', 'request of the mix')}


def request_seconds(devs, speeds, cls):
    """The time per request of class ``cls`` on a ring of ``devs`` (device
    dicts, with ``weight``), in seconds, from ``speeds`` ({device name:
    Speeds}); None when a device with weight has no figures, or no device
    has weight."""
    field = _KIND[cls][0]
    total = weighted = 0.0
    for dev in devs:
        weight = float(dev.get('weight') or 0)
        if weight <= 0:
            continue
        figures = speeds.get(device_name(dev))
        if figures is None:
            return None
        total += weight
        weighted += weight / getattr(figures, field)
    if total <= 0:
        return None
    return weighted / total


def checked_substores(configured, ring_devs, speeds, default):
    """``(substores, notes)``: the mapping ``configured`` ({class:
    substore, '' for the default policy}) with each substore kept only
    where measured faster than the default policy (see the module's
    docstring), and {class: why, in words} for each class with a
    substore configured.

    ring_devs: {policy name: its ring's devices, or an Exception that
    reading them raised}; speeds: {device name: Speeds}; default: the
    default policy's name."""
    substores, notes = dict(configured), {}
    default_devs = ring_devs.get(default)
    for cls, name in configured.items():
        if not name or name == default:
            continue
        kind = _KIND[cls][1]
        devs = ring_devs.get(name)
        for policy, held in ((name, devs), (default, default_devs)):
            if isinstance(held, Exception) or held is None:
                notes[cls] = 'substore %r used as configured: cannot read ' \
                    'the ring of %r (%s)' % (name, policy, held)
                break
        else:
            used, notes[cls] = _compared(
                name, kind, default, request_seconds(devs, speeds, cls),
                request_seconds(default_devs, speeds, cls))
            if not used:
                substores[cls] = ''
    return substores, notes


def _compared(name, kind, default, seconds, default_seconds):
    """(whether substore ``name`` is used, the note saying why), given
    its time per request and the default policy's (None: unmeasured)."""
    if seconds is None or default_seconds is None:
        return True, 'substore %r used as configured: its devices or the ' \
            'default policy %r\'s are not all measured (swift-mass ' \
            'devices probe)' % (name, default)
    compared = '%.2f ms a %s against %.2f ms on the default policy %r' % (
        seconds * 1000, kind, default_seconds * 1000, default)
    if seconds <= default_seconds * (1 - FASTER_BY):
        return True, 'substore %r: measured faster, %s' % (name, compared)
    return False, 'substore %r not used: not measured %d %% faster, %s' % (
        name, round(FASTER_BY * 100), compared)


class SubstoreCheck(object):
    """The proxies' side of :func:`checked_substores`: the rings this
    process holds (reloaded as Swift reloads them) and the classes file in
    ``swift_dir``, read again every :data:`CHECK_SECONDS`.

    :meth:`settings` gives the leader its control settings with the
    substores checked; a change is logged once."""

    def __init__(self, swift_dir, logger, policies=POLICIES,
                 read_devs=loaded_ring_devs, path=None):
        self.swift_dir = swift_dir
        self.logger = logger
        self.policies = policies
        self.read_devs = read_devs
        self.path = classes_path(swift_dir, path)
        self._checked_at = None
        self._settings = self._base = None

    def settings(self, base, now):
        """``base`` (controller.Settings) with ``substores`` and
        ``substore_notes`` as measured now, or as last measured less than
        CHECK_SECONDS ago."""
        if self._base is base and self._checked_at is not None and \
                0 <= now - self._checked_at < CHECK_SECONDS:
            return self._settings
        substores, notes = self.check(base.substores)
        settings = base._replace(substores=substores, substore_notes=notes)
        if self._settings is None or \
                (self._settings.substores, self._settings.substore_notes) \
                != (substores, notes):
            for cls in sorted(notes):
                self.logger.info('mass: %s: %s', cls, notes[cls])
        self._base, self._settings, self._checked_at = base, settings, now
        return settings

    def check(self, configured):
        """:func:`checked_substores` of ``configured`` now."""
        try:
            speeds = read_speeds(self.path)
        except ValueError as err:
            return dict(configured), {
                cls: 'substore %r used as configured: %s' % (name, err)
                for cls, name in configured.items() if name}
        ring_devs = {}
        default = self.policies.default.name
        for name in {n for n in configured.values() if n} | {default}:
            policy = self.policies.get_by_name(name)
            if policy is None:
                ring_devs[name] = ValueError('no storage policy named %r' %
                                             name)
                continue
            try:
                ring_devs[name] = list(object_ring_devs(
                    self.swift_dir, [policy], self.read_devs))
            except Exception as err:
                ring_devs[name] = err
        return checked_substores(configured, ring_devs, speeds, default)
