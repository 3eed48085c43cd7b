"""``swift-mass status | tenants | explain | pin | unpin``: what the Mass
control loop knows and decided, and the operator's pins.

They read the same shared store the proxies use, configured by the
``[filter:mass]`` section of the proxy's config (``--conf``)::

    swift-mass status              leader, store health, table version
    swift-mass tenants             each tenant's class, policy, figures
    swift-mass explain TENANT      the numbers behind the tenant's decision
    swift-mass pin TENANT --class write [--ring bulk] [--method batch]
    swift-mass unpin TENANT

Pins take effect within one interval of the leader; the controller never
overrides them.  Exit status 2 on a bad ``[filter:mass]``, 1 when the
store cannot be read.
"""
import json
import sys
import time

from swift_mass.cli import output
from swift_mass.conf import ConfigError, substore_option
from swift_mass.control import classify, controller, monitor
from swift_mass.control.store import shared_store


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
    """The proxy's ``[filter:mass]`` (a MassConf, parsed as the filter
    parses it), its shared store and its control settings."""
    conf, store = shared_store(conf_path, Quiet())
    return conf, store, conf.control


def figures_now(store, settings, conf):
    since = monitor.window_buckets(time.time(), settings.window,
                                   conf.bucket_seconds)
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


def status(args, conf, store, settings):
    version, table = store.get_table()
    return {
        'leader': store.lease_holder(),
        'store': store.health(),
        'table_version': version,
        'tenants': len(table),
        'pins': len(store.get_pins()),
        'window_seconds': settings.window,
    }


def tenants(args, conf, store, settings):
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
            'reason': entry.get('reason'),
            'figures': figures_dict(figures.get(tenant)),
        })
    return rows


def explain(args, conf, store, settings):
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


def pin(args, conf, store, settings):
    pin = {'class': args.cls}
    if args.ring is not None:
        pin['ring'] = substore_option({'ring': args.ring}, 'pin', 'ring')
    if args.method is not None:
        pin['method'] = args.method
    store.set_pin(args.tenant, pin)
    return {'tenant': args.tenant, 'pin': pin}


def unpin(args, conf, store, settings):
    store.delete_pin(args.tenant)
    return {'tenant': args.tenant, 'pin': None}


def tenants_text(rows):
    lines = ['%-24s %-8s %-10s %-7s %6s %8s %8s %9s %9s' % (
        'tenant', 'class', 'ring', 'method', 'pinned', 'reads', 'writes',
        'share', 'p99 ms')]
    for row in rows:
        f = row['figures'] or {}
        p99 = f.get('p99_latency_ms', {})
        lines.append('%-24s %-8s %-10s %-7s %6s %8s %8s %9s %9s' % (
            row['tenant'], row['class'], row['ring'] or '-',
            row['method'] or '-', 'yes' if row['pinned'] else 'no',
            f.get('reads', 0), f.get('writes', 0),
            f.get('read_share', '-'),
            max([v for v in p99.values() if v] or ['-'],
                key=lambda v: (v == '-', v))))
    return '\n'.join(lines)


def fields_text(result):
    """One ``key: value`` line per field; dicts and lists as JSON."""
    return '\n'.join('%-26s %s' % (key + ':', json.dumps(
        value, sort_keys=True) if isinstance(value, (dict, list))
        else value) for key, value in result.items())


def with_store(args, compute, text):
    """Load the shared store of ``args.conf``, then print
    ``compute(conf, store, settings)`` (see :mod:`swift_mass.cli.output`).
    Exit status 2 on a bad ``[filter:mass]``, 1 on any other error."""
    try:
        conf, store, settings = load(args.conf)
        result = compute(conf, store, settings)
    except ConfigError as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        return 2
    except Exception as err:
        return output.failed(err)
    output.show(args, result, text)
    return 0


def add_parsers(subparsers):
    """Register status, tenants, explain, pin and unpin."""
    def command(name, compute, text=fields_text, **kwargs):
        p = subparsers.add_parser(name, **kwargs)
        output.json_option(p)
        p.set_defaults(func=lambda args: with_store(
            args, lambda *loaded: compute(args, *loaded), text))
        return p

    command('status', status, help='leader, store health, table version')
    command('tenants', tenants, tenants_text,
            help='each tenant\'s class, policy and figures')
    p = command('explain', explain,
                help='the numbers behind a tenant\'s decision')
    p.add_argument('tenant')
    p = command('pin', pin, help='hold a tenant in a class (and substore, '
                'method) whatever the controller decides')
    p.add_argument('tenant')
    p.add_argument('--class', dest='cls', required=True,
                   choices=classify.CLASSES)
    p.add_argument('--ring', help='storage policy (default: the class\'s)')
    p.add_argument('--method', choices=controller.METHODS)
    p = command('unpin', unpin, help='give a tenant back to the controller')
    p.add_argument('tenant')
