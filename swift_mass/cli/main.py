"""``swift-mass``: what the Mass control loop knows and decided, and pins.

It reads the same shared store the proxies use, configured by the
``[filter:mass]`` section of the proxy's config::

    swift-mass status              leader, store health, table version
    swift-mass tenants             each tenant's class, policy, figures
    swift-mass explain TENANT      the numbers behind the tenant's decision
    swift-mass pin TENANT --class write [--ring bulk] [--method batch]
    swift-mass unpin TENANT
    swift-mass bench [--tenant ACCOUNT:USER:KEY=WORKLOAD ...] [--staged S]
                                   workloads against a SAIO in the modes
                                   default, static and mass (mass_bench.bench)
    swift-mass check-rings [--swift-dir /etc/swift] [--strict]
                                   each storage policy's ring spread over
                                   servers; warns about substores that
                                   leave servers out (swift_mass.cli.rings)
    swift-mass queue [--swift-dir /etc/swift] [--timeout 5]
                                   every object server's mass_queue: each
                                   device's slots, waiters and counts, as
                                   the worker that answered sees them
                                   (swift_mass.cli.queue)

Every command takes ``--json``.  Pins take effect within one interval of
the leader; the controller never overrides them.

Moving a tenant's existing containers to its substore is explicit
(swift_mass.cli.migrate), with operator credentials (--auth-url, --user,
--key or ST_AUTH, ST_USER, ST_KEY: a reseller admin)::

    swift-mass migrate plan TENANT [CONTAINER...] [--policy NAME]
    swift-mass migrate run TENANT [CONTAINER...] [--policy NAME]

Marking a tenant urgent, so that the object servers keep slots for it, is
done through a proxy with the same credentials (swift_mass.cli.urgent)::

    swift-mass urgent TENANT [--on | --off]
"""
import argparse
import json
import sys
import time

from swift.common.memcached import load_memcache
from swift.common.utils import readconf

from mass_bench import bench
from swift_mass.control import classify, controller, monitor
from swift_mass.cli import rings
from swift_mass.conf import ConfigError, control_settings, int_option, \
    substore_option
from swift_mass.control.store import ResilientStore, store_from_conf

SECTION = 'filter:mass'


class Quiet(object):
    """A logger for the store that keeps its warnings for the report."""

    def __init__(self):
        self.messages = []

    def _keep(self, msg, *args, **kwargs):
        if len(args) == 1 and isinstance(args[0], dict):
            args = args[0]  # logging's "%(name)s" form, as memcache uses
        self.messages.append(msg % args if args else msg)

    warning = error = info = debug = exception = _keep

    def _no_metrics(self, *args, **kwargs):
        pass

    # the statsd half of Swift's logger, which its memcache client uses
    increment = decrement = timing = timing_since = update_stats = \
        transfer_rate = _no_metrics


def load(conf_path):
    conf = readconf(conf_path, SECTION)
    logger = Quiet()
    store = store_from_conf(conf, logger,
                            memcache=load_memcache(conf, logger))
    if not isinstance(store, ResilientStore):
        raise ConfigError('[%s] store = local: each proxy worker keeps its '
                          'own state; there is no shared store to read'
                          % SECTION)
    # the shared store itself, not the worker-local fallback
    while isinstance(store.primary, ResilientStore):
        store = store.primary
    return conf, store.primary, control_settings(conf, SECTION)


def figures_now(store, settings, conf):
    bucket = int_option(conf, SECTION, 'bucket_seconds', 5, 1)
    since = monitor.window_buckets(time.time(), settings.window, bucket)
    return {tenant: monitor.figures(buckets.values())
            for tenant, buckets in store.read_counts(since).items()}


def figures_dict(f):
    if f is None:
        return None
    share = classify.read_share(f.reads, f.writes)
    return {
        'reads': f.reads, 'writes': f.writes,
        'read_share': None if share is None else round(share, 3),
        'ops': f.ops, 'errors': f.errors, 'bytes_in': f.bytes_in,
        'bytes_out': f.bytes_out,
        'mean_latency_ms': {k: round(v, 1)
                            for k, v in f.mean_latency_ms.items()},
        'p99_latency_ms': {k: (None if v == float('inf') else v)
                           for k, v in f.p99_latency_ms.items()},
        'sizes': f.sizes,
    }


def cmd_status(args, conf, store, settings):
    version, table = store.get_table()
    return {
        'leader': store.lease_holder(),
        'store': store.health(),
        'table_version': version,
        'tenants': len(table),
        'pins': len(store.get_pins()),
        'window_seconds': settings.window,
    }


def cmd_tenants(args, conf, store, settings):
    _, table = store.get_table()
    figures = figures_now(store, settings, conf)
    rows = []
    for tenant in sorted(set(table) | set(figures)):
        entry = table.get(tenant) or {}
        rows.append({
            'tenant': tenant,
            'class': entry.get('class', classify.UNKNOWN),
            'ring': entry.get('ring'),
            'method': entry.get('method'),
            'pinned': entry.get('pinned', False),
            'since': entry.get('since'),
            'figures': figures_dict(figures.get(tenant)),
        })
    return rows


def cmd_explain(args, conf, store, settings):
    _, table = store.get_table()
    f = figures_now(store, settings, conf).get(args.tenant)
    entry = table.get(args.tenant)
    pin = store.get_pins().get(args.tenant)
    t = settings.thresholds
    previous = entry['class'] if entry and not entry.get('pinned') \
        else classify.UNKNOWN
    now = classify.classify(f.reads, f.writes, previous, t) if f \
        else previous
    return {
        'tenant': args.tenant,
        'policy': entry,
        'pin': pin,
        'figures': figures_dict(f),
        'thresholds': t._asdict(),
        'class_from_current_window': now,
        'mapping': {'rings': settings.rings, 'methods': settings.methods},
    }


def cmd_pin(args, conf, store, settings):
    pin = {'class': args.cls}
    if args.ring is not None:
        pin['ring'] = substore_option({'ring': args.ring}, 'pin', 'ring')
    if args.method is not None:
        pin['method'] = args.method
    store.set_pin(args.tenant, pin)
    return {'tenant': args.tenant, 'pin': pin}


def cmd_unpin(args, conf, store, settings):
    store.delete_pin(args.tenant)
    return {'tenant': args.tenant, 'pin': None}


def cmd_migrate(args, conf, store, settings):
    # swiftclient is needed by this command only
    from swift_mass.cli import migrate
    table = {} if args.policy else store.get_table()[1]

    def progress(message):
        print('swift-mass migrate: %s' % message, file=sys.stderr,
              flush=True)
    return migrate.command(args, table, progress)


def show(command, result):
    if command == 'migrate':
        from swift_mass.cli import migrate
        print(migrate.text(result))
        return
    if command == 'tenants':
        print('%-24s %-8s %-10s %-7s %6s %8s %8s %9s %9s' % (
            'tenant', 'class', 'ring', 'method', 'pinned', 'reads',
            'writes', 'share', 'p99 ms'))
        for row in result:
            f = row['figures'] or {}
            p99 = f.get('p99_latency_ms', {})
            print('%-24s %-8s %-10s %-7s %6s %8s %8s %9s %9s' % (
                row['tenant'], row['class'], row['ring'] or '-',
                row['method'] or '-', 'yes' if row['pinned'] else 'no',
                f.get('reads', 0), f.get('writes', 0),
                f.get('read_share', '-'),
                max([v for v in p99.values() if v] or ['-'],
                    key=lambda v: (v == '-', v))))
        return
    for key, value in result.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        print('%-26s %s' % (key + ':', value))


def without_store(args, compute, text, failed=lambda result: False):
    """Run a command that needs no store: print ``compute()``'s result as
    JSON (--json) or ``text(result)``.  Exit 1 when it raises or when
    ``failed(result)``."""
    try:
        result = compute()
    except Exception as err:
        print('swift-mass: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(text(result))
    return 1 if failed(result) else 0


def check_rings(args):
    """swift-mass check-rings: needs the ring files.  Exit 1 when a ring
    cannot be read (or, with --strict, on a warning)."""
    return without_store(
        args, lambda: rings.report(args.swift_dir), rings.format_report,
        lambda result: result['errors'] or (
            args.strict and result['warnings']))


def queue(args):
    """swift-mass queue: needs the ring files.  Exit 1 when an object
    server could not be read (or the rings)."""
    from swift_mass.cli import queue as queue_status

    def compute():
        devices = queue_status.ring_devices(args.swift_dir)
        return queue_status.report(
            queue_status.fetch(sorted(devices), args.timeout), devices)
    return without_store(args, compute, queue_status.format_report,
                         lambda result: result['errors'])


def urgent(args):
    """swift-mass urgent: through a proxy."""
    # swiftclient is needed by this command only
    from swift_mass.cli import urgent as urgent_mark
    return without_store(args, lambda: urgent_mark.command(args),
                         urgent_mark.text)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='swift-mass', description=__doc__.split('\n')[0])
    parser.add_argument('--conf', default='/etc/swift/proxy-server.conf',
                        help='proxy config with the [filter:mass] section')
    parser.add_argument('--json', action='store_true')
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('status')
    sub.add_parser('tenants')
    p = sub.add_parser('explain')
    p.add_argument('tenant')
    p = sub.add_parser('pin')
    p.add_argument('tenant')
    p.add_argument('--class', dest='cls', required=True,
                   choices=classify.CLASSES)
    p.add_argument('--ring', help='storage policy (default: the class\'s)')
    p.add_argument('--method', choices=controller.METHODS)
    p = sub.add_parser('unpin')
    p.add_argument('tenant')
    p = sub.add_parser('migrate', help='move a tenant\'s containers to '
                       'its substore (plan: show what would move)')
    actions = p.add_subparsers(dest='action', required=True)
    for action in ('plan', 'run'):
        p = actions.add_parser(action)
        p.add_argument('tenant', help='the account, e.g. AUTH_test')
        p.add_argument('containers', nargs='*', metavar='container',
                       help='default: all of the tenant\'s containers')
        p.add_argument('--policy', help='target storage policy (default: '
                       'the substore of the tenant\'s Mass policy)')
        p.add_argument('--auth-url', help='default: $ST_AUTH')
        p.add_argument('--user', help='default: $ST_USER')
        p.add_argument('--key', help='default: $ST_KEY')
        p.add_argument('--concurrency', type=int, default=8)
        p.add_argument('--settle', type=float, default=60.0,
                       help='seconds between marking a container and its '
                       'last listing, for writes in flight and cached '
                       'container info (default 60)')
        p.add_argument('--lock-ttl', type=int, default=30,
                       help='seconds the lock of a killed run lasts')
        p.add_argument('--json', action='store_true',
                       default=argparse.SUPPRESS)
    p = sub.add_parser('check-rings', help='each storage policy\'s ring '
                       'spread over servers and devices')
    p.add_argument('--swift-dir', default='/etc/swift',
                   help='where swift.conf and the ring files are')
    p.add_argument('--strict', action='store_true',
                   help='exit 1 when there is a warning')
    p = sub.add_parser(
        'queue', help='every object server\'s mass_queue: slots, waiters '
        'and counts per device (exit 1 when a server could not be read)',
        description='Asks GET /mass_queue of every object server in the '
        'object rings of swift.conf\'s storage policies.  Figures are per '
        'object-server worker: each server\'s are those of the worker that '
        'answered.  Exit status 0 when every server answered, 1 when any '
        'could not be read (down, or mass_queue not in its pipeline).')
    p.add_argument('--swift-dir', default='/etc/swift',
                   help='where swift.conf and the ring files are')
    p.add_argument('--timeout', type=float, default=5.0,
                   help='seconds to wait for each server (default 5)')
    p.add_argument('--json', action='store_true',
                   default=argparse.SUPPRESS)
    p = sub.add_parser(
        'urgent', help='show, set or clear a tenant\'s urgent mark',
        description='Without --on or --off, shows whether TENANT is marked '
        'urgent; with them, marks it (or clears the mark) with an account '
        'POST through the proxy, then checks the mark the proxy shows.  '
        'Needs a reseller admin\'s credentials and the mass filter in the '
        'proxy\'s pipeline.  Proxies pick a change up within their '
        'urgent_recheck_seconds ([filter:mass], default 30).')
    p.add_argument('tenant', help='the account, e.g. AUTH_test')
    onoff = p.add_mutually_exclusive_group()
    onoff.add_argument('--on', action='store_const', const=True,
                       default=None, help='mark the tenant urgent')
    onoff.add_argument('--off', action='store_const', const=False,
                       dest='on', help='clear the mark')
    p.add_argument('--auth-url', help='default: $ST_AUTH')
    p.add_argument('--user', help='default: $ST_USER')
    p.add_argument('--key', help='default: $ST_KEY')
    p.add_argument('--json', action='store_true',
                   default=argparse.SUPPRESS)
    p = sub.add_parser('bench', help='tenants\' workloads against a '
                       'SAIO, compared with and without Mass')
    bench.add_arguments(p)
    args = parser.parse_args(argv)
    if args.command == 'check-rings':
        return check_rings(args)
    if args.command == 'queue':
        return queue(args)
    if args.command == 'urgent':
        return urgent(args)
    if args.command == 'bench':
        return bench.main(args)
    try:
        conf, store, settings = load(args.conf)
        result = globals()['cmd_' + args.command](args, conf, store,
                                                  settings)
    except ConfigError as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        return 2
    except Exception as err:
        print('swift-mass: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        show(args.command, result)
    return 0


if __name__ == '__main__':
    sys.exit(main())
