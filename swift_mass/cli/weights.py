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

W is ``--weights``, or the lookup table's W for the workload nearest
``--clients`` and ``--read-ratio``, or, with ``--from-monitor``, nearest
the live workload Mass's monitor counted.  The step, its trial rebalance
and its refusals are :mod:`swift_mass.devices.weights`'s.
"""
import time
from datetime import timedelta

from swift_mass.cli import output
from swift_mass.cli.devices import location_options
from swift_mass.devices import classes, weights


def monitor_workload(conf_path, clock=time.time):
    """:func:`swift_mass.devices.weights.live_workload` of the window the
    control loop of the proxy config ``conf_path`` decides by, read from
    its shared store."""
    # the control loop's store and settings, loaded only for
    # --from-monitor: a step from --weights or --clients needs neither
    # them nor the store's client library
    from swift_mass.cli import control
    from swift_mass.control import monitor
    conf, store, settings = control.load(conf_path)
    now = clock()
    since = monitor.window_buckets(now, settings.window, conf.bucket_seconds)
    counted = store.read_counts(since)
    return weights.live_workload(
        {tenant: monitor.figures(buckets.values())
         for tenant, buckets in counted.items()}, max(1, int(now - since)))


def run_step(args):
    """``weights plan`` or ``weights apply`` of the parsed ``args``."""
    found = classes.load_classes(classes.classes_path(
        args.swift_dir, args.classes_file))
    device_class = {k: v['class'] for k, v in found['devices'].items()}
    n_clients, read_ratio, live = args.clients, args.read_ratio, None
    if args.from_monitor:
        if args.table is None or n_clients is not None or \
                read_ratio is not None:
            raise ValueError('--from-monitor takes the workload from Mass\'s '
                             'monitor for --table; allowed: --table with '
                             '--from-monitor, or with --clients and '
                             '--read-ratio')
        n_clients, read_ratio, live = monitor_workload(args.conf)
    chosen, source = weights.choose_weights(
        found['classes'], args.weights, args.table, n_clients,
        read_ratio, args.allow_zero)
    if live is not None:
        source = dict(source, monitor=dict(live, n_clients=n_clients,
                                           read_ratio=read_ratio))
    builder_path, ring_path = weights.ring_files(args.swift_dir, args.ring)
    do = weights.apply_step if args.action == 'apply' else weights.plan_step
    result = do(builder_path, ring_path, device_class, chosen,
                weights.check_alpha(args.alpha), args.seed)
    return dict(result, source=source, class_order=found['classes'])


def format_step(r):
    src = r['source']
    lines = ['ring %s (%s): %g replicas on %d servers' % (
        r['ring'], r['builder'], r['replicas'], len(r['servers'])),
        'W %s from %s' % (', '.join(
            '%s %g' % (c, r['weights'][c]) for c in r['class_order']),
            src['from'] if 'distance' not in src else
            '%s: %d clients, read ratio %g (distance %g, score %g)' % (
                src['from'], src['n_clients'], src['read_ratio'],
                src['distance'], src['score'])),
        '%-10s %7s %9s %11s %8s' % ('class', 'devices', 'share', 'after step',
                                    'target')]
    live = src.get('monitor')
    if live:
        lines.insert(2, 'live workload from Mass\'s monitor: %d clients '
                     '(%.1f requests in flight), read ratio %g, over %d s '
                     'of %d tenants' % (live['n_clients'], live['in_flight'],
                                        live['read_ratio'], live['seconds'],
                                        live['tenants']))
    for name in r['class_order']:
        c = r['classes'].get(name)
        if c:
            lines.append('%-10s %7d %8.1f%% %10.1f%% %7.1f%%' % (
                name, c['devices'], 100 * c['share'],
                100 * c['share_after'], 100 * c['share_target']))
    if r['at_target']:
        lines.append('weights at their target: nothing to change (balance '
                     '%.2f)' % r['balance_before'])
        return '\n'.join(lines)
    lines.append('%-26s %-10s %10s %10s %10s' % ('device', 'class', 'weight',
                                                 'new', 'target'))
    for c in r['changes']:
        lines.append('%-26s %-10s %10.2f %10.2f %10.2f' % (
            c['device'], c['class'], c['old'], c['new'], c['target']))
    if 'parts_moved' in r:
        lines.append('trial rebalance: %d partition-replicas move; balance '
                     '%.2f, dispersion %.2f; %d partitions with two replicas '
                     'on one server' % (r['parts_moved'], r['balance'],
                                        r['dispersion'], r['shared_parts']))
    if not r['reaches_target']:
        lines.append('more steps to the target after this one')
    if r['applied']:
        lines.append('applied: wrote %s and %s; push the ring to every '
                     'node' % (r['builder'], r['ring']))
    elif r['dry_run']:
        wait = r['min_part_seconds_left']
        if wait:
            lines.append('apply must wait %s (min_part_hours %g)' % (
                timedelta(seconds=wait), r['min_part_hours']))
        lines += ['apply would refuse: ' + x for x in r['refusals']]
        lines.append('dry run: nothing written (weights apply writes)')
    else:
        lines.append('REFUSED: ' + r['refused'])
    return '\n'.join(lines)


def add_parsers(subparsers):
    """Register ``weights plan`` and ``weights apply``."""
    p = subparsers.add_parser('weights', help='move a ring\'s device '
                              'weights a step towards class weights W')
    actions = p.add_subparsers(dest='action', required=True)
    for action, text in (('plan', 'show the step and a trial rebalance; '
                          'write nothing'),
                         ('apply', 'rebalance and write the builder and the '
                          'ring (exit 1 when refused)')):
        a = actions.add_parser(action, help=text, description=__doc__.split(
            '\n\n')[0])
        a.add_argument('--ring', required=True,
                       help='a storage policy\'s name, or a .builder path')
        a.add_argument('--alpha', type=float, default=weights.ALPHA,
                       help='migration factor: the share of the distance '
                       'to the target one step goes (default %g)' %
                       weights.ALPHA)
        a.add_argument('--weights', help='W, one share per class slowest '
                       'first, e.g. 0.3,0.7')
        a.add_argument('--table', help='lookup table: W of the workload '
                       'nearest --clients and --read-ratio')
        a.add_argument('--clients', type=int)
        a.add_argument('--read-ratio', type=float)
        a.add_argument('--from-monitor', action='store_true',
                       help='with --table: N and the read ratio of the '
                       'live workload, from Mass\'s monitor (the shared '
                       'store of swift-mass --conf): N the mean requests '
                       'in flight over the control loop\'s window')
        a.add_argument('--allow-zero', action='store_true',
                       help='let a class\'s share be 0 (drains its devices)')
        a.add_argument('--seed', type=int,
                       help='the rebalance\'s random seed')
        location_options(a)
        a.set_defaults(func=lambda args: output.emit(
            args, lambda: run_step(args), format_step,
            lambda result: result.get('refused')))
