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
"""Moving a ring's device weights towards class weights W, one bounded
step at a time: ``swift-mass weights plan|apply``.

Target: class c gets the share w_c of the ring's total weight (the total
stays what it is), spread over the ring's devices of class c in
proportion to their current weights.  Within a class devices keep the
proportions the operator gave them (their capacities, as Swift's docs
have it), and the steps keep them too.

Step (BACOS's migration factor alpha, above 0 and at most 1): each
device's weight goes ``new = current + alpha * (target - current)``, so
alpha 1 jumps to the target and alpha 0.5 halves the distance each step.
When every device would end within 1% of its target weight (of the
ring's mean device weight, for targets near 0), the step goes to the
target, so the steps end.

``plan`` shows the step and a trial rebalance on a copy of the builder
(parts moved, balance, dispersion, partitions with two replicas on one
server); it writes nothing.  ``apply`` rebalances and writes the builder
and the ring (a copy of each in ``backups/``, as swift-ring-builder keeps
them) only when min_part_hours have passed since the last rebalance, the
builder validates, and no partition would have two replicas on one server
(unavoidable with more replicas than servers: such a ring is refused).
At its target already, ``apply`` changes nothing and says so.  Push the
ring to every node afterwards, as after any rebalance.

W is ``--weights``, or the lookup table's W for the workload nearest
``--clients`` and ``--read-ratio``, or, with ``--from-monitor``, nearest
the live workload Mass's monitor counted (:func:`live_workload`).

:func:`target_weights`, :func:`step_towards` and :func:`live_workload`
are plain functions; :func:`plan_step` and :func:`apply_step` work on
builder files.
"""
import collections
import copy
import os
import tempfile
import time
from datetime import timedelta

from swift.common.exceptions import RingBuilderError
from swift.common.ring import RingBuilder
from swift.common.utils import lock_path, renamer

from swift_mass.devices import lookup
from swift_mass.devices.classes import device_key
from swift_mass.devices.rings import builder_file
from swift_mass.ring_devices import load_policies, ring_file

SNAP = 0.01
REPORT_DIGITS = 6
ALPHA = 0.5


def check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or \
            not 0 < alpha <= 1:
        raise ValueError('--alpha %r is not valid; allowed: above 0 and at '
                         'most 1 (1: to the target at once)' % (alpha,))
    return alpha


def target_weights(devs, device_class, weights, total=None):
    """{device id: target weight}.

    devs: the ring's devices (dicts with id, ip, port, device, weight);
    device_class: {``<ip>:<port>/<device>``: class}; weights: {class:
    share}, the shares summing to 1; total: the weight to share (default:
    the devices' current total).
    """
    unclassified = sorted(device_key(d) for d in devs
                          if device_key(d) not in device_class)
    if unclassified:
        raise ValueError('%d devices of the ring have no class: %s; probe '
                         'them (swift-mass devices probe)' % (
                             len(unclassified), ', '.join(unclassified)))
    members = collections.defaultdict(list)
    for dev in devs:
        members[device_class[device_key(dev)]].append(dev)
    unknown = sorted(set(members) - set(weights))
    if unknown:
        raise ValueError('the ring has devices of class %s, which the '
                         'weights give no share; allowed: one share per '
                         'class (%s)' % (', '.join(unknown),
                                         ', '.join(weights)))
    total = sum(d['weight'] for d in devs) if total is None else total
    if total <= 0:
        raise ValueError('the ring has no weight to share')
    target = {}
    for name, share in weights.items():
        weight = sum(d['weight'] for d in members[name])
        if share > 0 and weight <= 0:
            raise ValueError('class %s has a share of %g but no device of '
                             'the ring with weight' % (name, share))
        for dev in members[name]:
            target[dev['id']] = total * share * dev['weight'] / weight \
                if weight else 0.0
    return target


def step_towards(current, target, alpha, snap=SNAP):
    """{device id: weight} one step from ``current`` towards ``target``
    (both {device id: weight}): ``current + alpha * (target -
    current)``; the target itself when every device would be within
    ``snap`` of its target (of the mean target, when that is more), and
    ``current`` unchanged when it is at the target already."""
    check_alpha(alpha)
    if set(current) != set(target):
        raise ValueError('current and target weights are of other devices')
    mean = sum(target.values()) / (len(target) or 1)

    def near(weights, fraction):
        return all(abs(target[i] - w) <= fraction * max(target[i], mean)
                   for i, w in weights.items())
    # not rounded, so that the total weight stays what it was (targets
    # are shares of it); at the target is within float rounding of it
    if near(current, 1e-9):
        return dict(current)
    new = {i: w + alpha * (target[i] - w) for i, w in current.items()}
    # all devices at once: one put at its target alone would change the
    # ring's total weight, and with it the next step's targets
    return dict(target) if near(new, snap) else new


def shared_parts(builder):
    """How many partitions have two replicas or more on one server
    (IP)."""
    ips = [d and d['ip'] for d in builder.devs]
    count = 0
    for dev_ids in zip(*builder._replica2part2dev):
        servers = [ips[i] for i in dev_ids]
        if len(set(servers)) < len(servers):
            count += 1
    return count


def _servers(devs, weights):
    return sorted({d['ip'] for d in devs if weights[d['id']] > 0})


def _classes(devs, device_class, current, new, target):
    """Each class's devices and share of weight now, after the step and
    at the target."""
    summary = {}
    totals = [sum(w.values()) or 1 for w in (current, new, target)]
    names = ('share', 'share_after', 'share_target')
    for dev in devs:
        row = summary.setdefault(device_class[device_key(dev)],
                                 dict(dict.fromkeys(names, 0.0), devices=0))
        row['devices'] += 1
        for name, weights in zip(names, (current, new, target)):
            row[name] += weights[dev['id']]
    for row in summary.values():
        for name, total in zip(names, totals):
            row[name] = round(row[name] / total, 4)
    return summary


def step(builder, device_class, weights, alpha, seed=None):
    """(result, trial): the step from ``builder`` towards ``weights``
    ({class: share}) and a rebalanced copy of the builder with it (None
    at the target).  result: the changes, the classes' shares, the trial
    rebalance's figures and ``refusals``, why the step may not be
    written (min_part_hours aside: ``min_part_seconds_left``)."""
    # devices marked for removal are on their way out at weight 0
    removing = {d['id'] for d in builder._remove_devs}
    devs = [d for d in builder.devs
            if d is not None and d['id'] not in removing]
    current = {d['id']: d['weight'] for d in devs}
    target = target_weights(devs, device_class, weights)
    new = step_towards(current, target, alpha)
    mean = sum(target.values()) / len(target)
    moved = {i for i in new if abs(new[i] - current[i]) > 1e-9 * mean}
    # the builder gets the weights as computed; the report, rounded
    changes = [{'id': d['id'], 'device': device_key(d),
                'class': device_class[device_key(d)],
                'old': round(current[d['id']], REPORT_DIGITS),
                'new': round(new[d['id']], REPORT_DIGITS),
                'target': round(target[d['id']], REPORT_DIGITS)}
               for d in devs if d['id'] in moved]
    servers = _servers(devs, new)
    result = {'alpha': alpha, 'weights': dict(weights),
              'changes': changes, 'at_target': not changes,
              'reaches_target': new == target,
              'classes': _classes(devs, device_class, current, new, target),
              'replicas': builder.replicas, 'servers': servers,
              'min_part_hours': builder.min_part_hours,
              'min_part_seconds_left': builder.min_part_seconds_left,
              'balance_before': round(builder.get_balance(), 2),
              'shared_parts_before': shared_parts(builder),
              'refusals': []}
    if not changes:
        return result, None
    if builder.next_part_power:
        result['refusals'].append('a partition power increase is in '
                                  'progress')
    if builder.replicas > len(servers):
        result['refusals'].append(
            '%g replicas on %d servers: two replicas of a partition share '
            'a server whatever the weights' % (builder.replicas,
                                               len(servers)))
    return result, trial_rebalance(
        builder, {i: new[i] for i in moved}, result, seed)


def trial_rebalance(builder, changed, result, seed=None):
    """A copy of ``builder`` with the weights ``changed`` ({device id:
    weight}), rebalanced and validated, or None when the builder refuses.
    Its figures go into :func:`step`'s ``result``, and into its
    ``refusals``, why it may not be written."""
    refusals = result['refusals']
    trial = copy.deepcopy(builder)
    for dev_id in sorted(changed):
        trial.set_dev_weight(dev_id, changed[dev_id])
    if result['min_part_seconds_left']:
        # what the rebalance will do once it may
        trial.pretend_min_part_hours_passed()
    try:
        parts, balance, _ = trial.rebalance(seed=seed)
        trial.validate()
    except RingBuilderError as err:
        refusals.append('the builder refuses: %s' % err)
        return None
    result.update(parts_moved=parts, balance=round(balance, 2),
                  dispersion=round(trial.dispersion, 2),
                  shared_parts=shared_parts(trial))
    if result['shared_parts'] and builder.replicas <= len(result['servers']):
        refusals.append(
            'after the step %d partitions would have two replicas on one '
            'server (a server with more than 1/%g of the weight): choose '
            'weights that keep each server\'s share below that' % (
                result['shared_parts'], builder.replicas))
    return trial


def _paths(builder_path, ring_path):
    return {'builder': builder_path, 'ring': ring_path}


def plan_step(builder_path, ring_path, device_class, weights, alpha,
              seed=None):
    """The step :func:`apply_step` would take now; writes nothing."""
    result, _ = step(RingBuilder.load(builder_path), device_class, weights,
                     alpha, seed)
    return dict(result, applied=False, dry_run=True,
                **_paths(builder_path, ring_path))


def save_ring(builder, builder_path, ring_path, now):
    """Write ``builder`` and its ring, each whole or not at all, and a
    copy of each in ``backups/`` stamped ``now``."""
    # a copy of each in backups/, named as swift-ring-builder names them
    backups = os.path.join(os.path.dirname(builder_path), 'backups')
    os.makedirs(backups, exist_ok=True)
    stamp = '%d.' % now
    ring = builder.get_ring()
    ring.save(os.path.join(backups, stamp + os.path.basename(ring_path)))
    builder.save(os.path.join(backups, stamp +
                              os.path.basename(builder_path)))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(builder_path),
                               prefix='.' + os.path.basename(builder_path))
    os.close(fd)
    builder.save(tmp)
    os.chmod(tmp, 0o644)   # as swift-ring-builder leaves it
    # the builder first: a ring without its builder could not be stepped
    # again, a builder ahead of its ring only asks for the ring again
    renamer(tmp, builder_path)
    ring.save(ring_path)   # RingData writes a temporary file and renames


def apply_step(builder_path, ring_path, device_class, weights, alpha,
               seed=None, now=time.time):
    """Take the step and write the builder and the ring, or refuse
    (``refused``: why; nothing written).  At the target, nothing
    changes (``applied`` False, ``refused`` None)."""
    with lock_path(os.path.dirname(os.path.abspath(builder_path)),
                   name=os.path.basename(builder_path)):
        builder = RingBuilder.load(builder_path)
        result, trial = step(builder, device_class, weights, alpha, seed)
        result.update(applied=False, dry_run=False, refused=None,
                      **_paths(builder_path, ring_path))
        if result['at_target']:
            return result
        reasons = list(result['refusals'])
        if result['min_part_seconds_left']:
            reasons.insert(0, 'min_part_hours (%g) have not passed since '
                           'the last rebalance: wait %s' % (
                               builder.min_part_hours, timedelta(
                                   seconds=result['min_part_seconds_left'])))
        if reasons:
            result['refused'] = '; '.join(reasons)
            return result
        save_ring(trial, builder_path, ring_path, now())
        result['applied'] = True
    return result


def ring_files(swift_dir, ring):
    """(builder path, ring path) of ``--ring``: a storage policy's name,
    or a builder's path."""
    if ring.endswith('.builder'):
        return ring, ring[:-len('.builder')] + '.ring.gz'
    policies = load_policies(swift_dir)
    policy = policies.get_by_name(ring)
    if policy is None:
        raise ValueError('--ring %s is not valid; allowed: a storage '
                         'policy\'s name (%s) or a .builder path' % (
                             ring, ', '.join(p.name for p in policies)))
    return builder_file(swift_dir, policy), ring_file(swift_dir, policy)


def live_workload(tenant_figures, seconds):
    """(n_clients, read_ratio, what it came from) of the cluster's live
    workload, from Mass's monitor: ``tenant_figures`` ({tenant: Figures
    of :mod:`swift_mass.control.monitor`}) of the last ``seconds``.

    The monitor counts requests, not clients; a BACOS client is a closed
    loop with one request in flight, so N is the mean number of requests in
    flight (Little's law: their summed latency over the seconds it was
    summed over), at least 1.  The read ratio is reads among reads and
    writes.  ValueError when the monitor saw neither."""
    reads = writes = 0
    busy_ms = 0.0
    for found in tenant_figures.values():
        reads += found.reads
        writes += found.writes
        for op, count in found.ops.items():
            busy_ms += found.mean_latency_ms.get(op, 0.0) * count
    if reads + writes == 0 or seconds <= 0:
        raise ValueError('Mass\'s monitor saw no reads or writes in the '
                         'last %d s: give --clients and --read-ratio'
                         % seconds)
    in_flight = busy_ms / 1000.0 / seconds
    return max(1, int(round(in_flight))), round(
        reads / float(reads + writes), lookup.RATIO_DIGITS), {
            'tenants': len(tenant_figures), 'reads': reads,
            'writes': writes, 'seconds': seconds,
            'in_flight': round(in_flight, 3)}


def choose_weights(classes, weights=None, table=None, n_clients=None,
                   read_ratio=None, allow_zero=False):
    """({class: share}, source): from ``--weights`` or from the lookup
    table's workload nearest (n_clients, read_ratio)."""
    if (weights is None) == (table is None):
        raise ValueError('give --weights, or --table with --clients and '
                         '--read-ratio')
    if weights is not None:
        chosen = lookup.parse_weights(weights, classes, allow_zero)
        return dict(zip(classes, chosen)), {'from': '--weights'}
    if n_clients is None or read_ratio is None:
        raise ValueError('--table needs --clients and --read-ratio')
    data = lookup.load_table(table)
    if data['classes'] != list(classes):
        raise ValueError('%s is over the classes %s; the devices\' classes '
                         'are %s' % (table, ', '.join(data['classes']),
                                     ', '.join(classes)))
    found = lookup.nearest(data, n_clients, read_ratio)
    chosen = lookup.check_weights(found['weights'], classes, allow_zero)
    return dict(zip(classes, chosen)), dict(found, **{'from': table})
