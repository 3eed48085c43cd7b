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
"""``swift-mass status | tenants | explain | pin | unpin | forget``: what
the Mass control loop knows and decided, and the operator's pins.

They read the same shared store the proxies use, configured by the
``[filter:mass]`` section of the proxy's config (``--conf``)::

    swift-mass status              leader, store health, table version
    swift-mass tenants [--top N] [--sort requests]
                                   each tenant's class, substore, method
                                   and figures, the busiest first
    swift-mass explain TENANT      the numbers behind the tenant's decision
    swift-mass pin TENANT --class write [--substore bulk] [--method batch]
    swift-mass unpin TENANT
    swift-mass forget TENANT [TENANT...]

Pins take effect within one interval of the leader; the controller never
overrides them.  ``forget`` makes the control loop forget what it learnt
of a tenant (its class, substore, method and validation): its entry
leaves the policy table (every worker drops it within an interval) and
the leader classifies it afresh from its requests after the forget only
(:meth:`Store.forget <swift_mass.control.stores.base.Store.forget>`).  A
pin stays (``unpin`` removes it), and so does an opt-out.

``--ring`` is the old name of ``pin --substore``; the stored pin and the
policy table keep the key ``ring``, which the controller and the proxies
read (``PolicyEntry.substore``, stored as
``ring``: :mod:`swift_mass.control.entry`), and so does ``--json``, which
scripts parse: ``tenants``' rows, ``explain``'s ``policy`` (the entry as
stored) and ``mapping``'s ``rings``.  Exit status 2 on a bad
``[filter:mass]`` or ``--substore``, 1 when the store cannot be read or
knows nothing of ``explain``'s tenant.
"""
import argparse
import json
import os
import sys
import tempfile
import time

from swift.common.swob import str_to_wsgi, wsgi_to_str

from swift_mass.cli import output
from swift_mass.shared_store import shared_store
from swift_mass.conf import ConfigError, substore_option
from swift_mass.control import classify, controller, monitor
from swift_mass.control.entry import read_table


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


def policy_table(store):
    """``(version, {tenant: PolicyEntry})`` of the store's policy table;
    an entry that is not one is left out, as the proxies leave it out
    (said on stderr)."""
    version, stored = store.get_table()

    def malformed(tenant, err):
        print('swift-mass: %s: its entry in the policy table is left out: '
              '%s' % (tenant, err), file=sys.stderr)
    return version, read_table(stored, malformed)


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


# swift-mass status's exit statuses: the monitoring-plugin convention
# (Nagios, Icinga, Sensu), so that an alert can run it as it is
OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
STATES = {OK: 'ok', WARNING: 'warning', CRITICAL: 'critical',
          UNKNOWN: 'unknown'}


def status(args, conf, store, settings):
    """The shared store's health, the leader, the policy table's version;
    ``state`` and ``problems`` say what an alert should (the exit status:
    :func:`status_exit`)."""
    health = store.health()
    result = {'store': health, 'leader': None, 'table_version': None,
              'tenants': None, 'pins': None,
              'window_seconds': settings.window}
    if health['ok']:
        version, table = store.get_table()
        result.update(leader=store.lease_holder(), table_version=version,
                      tenants=len(table), pins=len(store.get_pins()))
    code, problems = OK, []
    if not health['ok']:
        code = CRITICAL
        problems.append('the shared store (%s) does not answer: %s; the '
                        'proxies run on their fallback, and their cache '
                        'trusts no generation' % (health['store'],
                                                  health['error']))
    elif result['leader'] is None:
        code = CRITICAL
        problems.append('no leader: no proxy worker holds the lease, so '
                        'nothing classifies tenants or publishes the '
                        'policy table')
    elif not result['table_version']:
        code = WARNING
        problems.append('the leader has published no policy table yet')
    result.update(state=STATES[code], problems=problems)
    return result


def status_exit(result):
    """The exit status of a :func:`status` result."""
    return {name: code for code, name in STATES.items()}[result['state']]


def run_status(args):
    """``swift-mass status``: as :func:`with_store` prints, with the
    monitoring-plugin exit statuses: 0 ok, 1 warning (a leader that has
    published no table yet), 2 critical (the store does not answer, or
    there is no leader), 3 unknown (``[filter:mass]`` cannot be read).
    With ``--textfile PATH`` it also writes them as gauges for
    node_exporter's textfile collector (:func:`status_gauges`)."""
    result = None
    try:
        conf, store, settings = load(args.conf)
        result = status(args, conf, store, settings)
    except ConfigError as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        code = UNKNOWN
    except Exception as err:
        output.failed(err)
        code = CRITICAL
    else:
        output.show(args, result, fields_text)
        code = status_exit(result)
    if getattr(args, 'textfile', None):
        write_textfile(args.textfile, status_gauges(code, result))
    return code


# (name, help) of the gauges status_gauges writes
STATUS_GAUGES = (
    ('mass_status_state', 'swift-mass status: 0 ok, 1 warning, '
     '2 critical, 3 unknown'),
    ('mass_store_up', 'Whether the shared store (Redis) answers'),
    ('mass_leader_present', 'Whether a proxy worker holds the leader\'s '
     'lease'),
    ('mass_policy_table_version', 'The version of the policy table the '
     'leader published (0: none)'),
    ('mass_status_time_seconds', 'When swift-mass status wrote these '
     '(an alert on its age finds a timer that stopped)'),
)


def status_gauges(code, result):
    """The text of ``swift-mass status``'s gauges in Prometheus's
    exposition format, from its exit status and result (None when it
    had none)."""
    result = result or {}
    values = {
        'mass_status_state': code,
        'mass_store_up': int(bool((result.get('store') or {}).get('ok'))),
        'mass_leader_present': int(result.get('leader') is not None),
        'mass_policy_table_version': result.get('table_version') or 0,
        'mass_status_time_seconds': round(time.time(), 3),
    }
    lines = []
    for name, text in STATUS_GAUGES:
        lines += ['# HELP %s %s' % (name, text), '# TYPE %s gauge' % name,
                  '%s %s' % (name, values[name])]
    return '\n'.join(lines) + '\n'


def write_textfile(path, text):
    """Replace ``path`` with ``text`` at once, as node_exporter's textfile
    collector wants it (it may read the file at any moment)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix='.mass-status.')
    try:
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _figure(name):
    return lambda row: (row['figures'] or {}).get(name, 0)


def _p99(row):
    p99 = [v for v in (row['figures'] or {}).get(
        'p99_latency_ms', {}).values() if v]
    return max(p99) if p99 else None


# The columns of ``tenants``: heading, the row's value (None: none, shown
# as '-') and whether it is a number, right-aligned and sorted biggest
# first (pinned: the pinned first).
COLUMNS = (
    ('tenant', lambda row: row['tenant'], False),
    ('class', lambda row: row['class'], False),
    # '' is the default policy: not a substore of its own; 'ring': the
    # key of --json's rows, which scripts parse
    ('substore', lambda row: row['ring'] or None, False),
    ('method', lambda row: row['method'], False),
    ('pinned', lambda row: row['pinned'], True),
    ('requests', lambda row: sum((row['figures'] or {}).get(
        'ops', {}).values()), True),
    ('reads', _figure('reads'), True),
    ('writes', _figure('writes'), True),
    ('share', lambda row: (row['figures'] or {}).get('read_share'), True),
    ('p99 ms', _p99, True),
)
SORT_KEYS = [heading.split()[0] for heading, _, _ in COLUMNS]
DEFAULT_SORT = 'requests'


def sort_key(name):
    """The key of ``tenants --sort name``: numbers biggest first, words in
    alphabetical order, rows without a value last, ties by tenant."""
    _, value_of, number = COLUMNS[SORT_KEYS.index(name)]

    def key(row):
        value = value_of(row)
        if value is None:
            return (True, 0, row['tenant'])
        return (False, -value if number else value, row['tenant'])
    return key


def tenants(args, conf, store, settings):
    _, table = policy_table(store)
    figures = figures_now(store, settings, conf)
    rows = []
    for tenant in set(table) | set(figures):
        entry = table.get(tenant)
        row = {'tenant': tenant_name(tenant), 'class': classify.UNKNOWN,
               'ring': None,
               'method': None, 'pinned': False, 'since': None,
               'reason': None}
        if entry is not None:
            # 'ring': the substore, under its stored key, as scripts
            # parse it
            row.update({'class': entry.cls, 'ring': entry.substore,
                        'method': entry.method, 'pinned': entry.pinned,
                        'since': entry.since, 'reason': entry.reason})
        row['figures'] = figures_dict(figures.get(tenant))
        rows.append(row)
    rows.sort(key=sort_key(args.sort))
    return rows[:args.top]


class UnknownTenant(Exception):
    pass


def tenant_key(name):
    """The tenant an operator typed, as the proxies key it: the account
    of the request path as a WSGI string (UTF-8 bytes as Latin-1), so that
    a non-ASCII account's pin, explain and unpin reach its entries."""
    return str_to_wsgi(name)


def tenant_name(key):
    """A tenant as the proxies key it, shown as the account's name."""
    try:
        return wsgi_to_str(key)
    except UnicodeError:
        # not the UTF-8 of anything: shown as stored
        return key


def prefixed(typed, known):
    """The known tenants that are ``typed`` behind a reseller prefix
    (``AUTH_photos`` for ``photos``): what an operator who typed an
    account's name without its prefix meant."""
    return sorted(k for k in known if k.partition('_')[2] == typed)


def explain(args, conf, store, settings):
    _, table = policy_table(store)
    figures = figures_now(store, settings, conf)
    f = figures.get(args.tenant)
    entry = table.get(args.tenant)
    pins = store.get_pins()
    pin = pins.get(args.tenant)
    if entry is None and f is None and pin is None:
        # a mistyped account would show as a tenant with no decision yet
        meant = prefixed(args.tenant, set(table) | set(figures) | set(pins))
        raise UnknownTenant(
            '%s: no such tenant in the store: not in the policy table, not '
            'pinned, no requests in the last %gs%s'
            % (tenant_name(args.tenant), settings.window,
               ' (tenants are accounts: %s?)' % ', '.join(
                   tenant_name(k) for k in meant) if meant else ''))
    t = settings.thresholds
    previous = entry.cls if entry is not None and not entry.pinned \
        else classify.UNKNOWN
    now = classify.classify(f.reads, f.writes, previous, t) if f \
        else previous
    return {
        'tenant': tenant_name(args.tenant),
        # as stored (the substore under 'ring'), as scripts parse it
        'policy': None if entry is None else entry.to_dict(),
        'pin': pin,
        'figures': figures_dict(f),
        'thresholds': t._asdict(),
        'class_from_current_window': now,
        'mapping': {'rings': settings.substores, 'methods': settings.methods},
    }


def pin(args, conf, store, settings):
    pin = {'class': args.cls}
    if args.substore is not None:
        # 'ring': the key the controller reads pins by
        pin['ring'] = substore_option({'substore': args.substore}, 'pin',
                                      'substore')
    if args.method is not None:
        pin['method'] = args.method
    store.set_pin(args.tenant, pin)
    return {'tenant': tenant_name(args.tenant), 'pin': pin}


def unpin(args, conf, store, settings):
    store.delete_pin(args.tenant)
    return {'tenant': tenant_name(args.tenant), 'pin': None}


def forget(args, conf, store, settings):
    at = time.time()
    pins = store.get_pins()
    removed = store.forget(args.tenants, at)
    return {'tenants': [tenant_name(tenant) for tenant in args.tenants],
            'forgotten_at': at,
            'entries_removed': [tenant_name(tenant) for tenant in removed],
            'still_pinned': [tenant_name(tenant) for tenant in args.tenants
                             if tenant in pins]}


def _cell(value):
    if value is None:
        return '-'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    return str(value)


def tenants_text(rows):
    """A line per row, each column as wide as its widest cell: account
    names are as long as the auth system makes them (Keystone's 37
    characters)."""
    cells = [[heading for heading, _, _ in COLUMNS]] + [
        [_cell(value_of(row)) for _, value_of, _ in COLUMNS]
        for row in rows]
    widths = [max(len(line[i]) for line in cells)
              for i in range(len(COLUMNS))]
    return '\n'.join(' '.join(
        cell.rjust(width) if number else cell.ljust(width)
        for cell, width, (_, _, number) in zip(line, widths, COLUMNS)
    ).rstrip() for line in cells)


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
    except UnknownTenant as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        return 1
    except Exception as err:
        return output.failed(err)
    output.show(args, result, text)
    return 0


def _positive(text):
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(
            '%r is not valid; allowed: a whole number, 1 or more' % text)
    return number


def add_parsers(subparsers):
    """Register status, tenants, explain, pin, unpin and forget."""
    def command(name, compute, text=fields_text, **kwargs):
        p = subparsers.add_parser(name, **kwargs)
        p.set_defaults(func=lambda args: with_store(
            args, lambda *loaded: compute(args, *loaded), text))
        return p

    p = subparsers.add_parser(
        'status', help='leader, store health, table version (exit status '
        '0 ok, 1 warning, 2 critical, 3 unknown: an alert can run it)')
    p.add_argument('--textfile', metavar='PATH',
                   help='also write them as gauges to PATH (for '
                   'node_exporter\'s textfile collector: a *.prom file in '
                   'its directory), replaced at once')
    p.set_defaults(func=run_status)
    p = command('tenants', tenants, tenants_text,
                help='each tenant\'s class, substore, method and figures',
                description='Each tenant of the policy table or with '
                'requests in the current window, the busiest (most '
                'requests) first.  --sort orders by another column: '
                'requests, reads, writes, share (of reads) and p99 (ms) '
                'biggest first, pinned tenants first, tenant, class, '
                'substore and method alphabetically; a tenant without a '
                'value last, ties by tenant.')
    p.add_argument('--sort', choices=SORT_KEYS, default=DEFAULT_SORT,
                   help='the column to order by (default: %s)'
                   % DEFAULT_SORT)
    p.add_argument('--top', type=_positive, metavar='N',
                   help='only the first N tenants in that order')
    p = command('explain', explain,
                help='the numbers behind a tenant\'s decision (exit 1 '
                'when the store knows nothing of it)')
    p.add_argument('tenant', type=tenant_key)
    p = command('pin', pin, help='hold a tenant in a class (and substore, '
                'method) whatever the controller decides')
    p.add_argument('tenant', type=tenant_key)
    p.add_argument('--class', dest='cls', required=True,
                   choices=classify.CLASSES)
    p.add_argument('--substore',
                   help='storage policy (default: the class\'s)')
    p.add_argument('--ring', dest='substore',
                   help='deprecated: the old name of --substore')
    p.add_argument('--method', choices=controller.METHODS)
    p = command('unpin', unpin, help='give a tenant back to the controller')
    p.add_argument('tenant', type=tenant_key)
    p = command('forget', forget,
                help='forget what the controller learnt of tenants and '
                'classify them afresh',
                description='Remove each tenant\'s entry from the policy '
                'table (its class, substore, method and validation; every '
                'proxy drops it within an interval) and make the leader '
                'classify it afresh from its requests after now only (its '
                'counts from before are left out).  A pin stays: unpin '
                'removes it.  An opted-out account stays opted out.')
    p.add_argument('tenants', metavar='TENANT', nargs='+', type=tenant_key)
