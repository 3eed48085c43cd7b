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
"""``swift-mass auto-migrate``: a daemon that moves a tenant's existing
containers to the substore its Mass policy names once that policy has
stood long enough, with ``swift-mass migrate``'s own machinery
(:class:`~swift_mass.cli.migrate.migrator.Migrator`).  A move it starts
is the move an operator starts: the same journal, lock, write fence and
checks, resumed by ``swift-mass migrate run`` and given back by
``swift-mass migrate abort``.

It is opt-in (``auto_migrate = true`` in ``[filter:mass]``, options in
:class:`~swift_mass.proxy.conf.AutoMigrateConf`) and slow on purpose:

* a tenant's containers move only once its policy has stood unchanged for
  ``auto_migrate_after`` seconds (at least the control loop's window), so
  no move is started faster than the classifier's hysteresis;
* only the classes in ``auto_migrate_classes`` (default ``read``): a move
  answers the container's writes 503 with Retry-After while it lasts, and
  a reading tenant's are few;
* only towards a substore the policy names: a policy without one (the
  default policy, or a substore measured no faster) moves nothing;
* one container a pass, one pass each ``auto_migrate_interval`` seconds,
  each container at most ``auto_migrate_max_objects`` objects; a move
  that failed is tried again no sooner than ``auto_migrate_after``;
* nothing while the proxy does not show ``mass_migrate`` in ``/info``
  (Mass is out of its pipeline: the table is not in force);
* a move whose tenant's policy stops asking for it (its class left
  ``auto_migrate_classes``, its substore changed, it opted out) is
  stopped and given back (``abort``) within ``auto_migrate_interval``
  seconds: it would refuse the new workload's writes until it ended, and
  giving back never costs more than finishing (:func:`why_unwanted`).

Which tenants are due is :func:`due_tenants`, and which container of
theirs :func:`next_container`, plain functions; :class:`AutoMigrator`
does the I/O.  It acts with a reseller admin's credentials, given as to
``swift-mass migrate``.  SIGTERM stops a move as a failed run stops: the
write mark comes off, the journal stays for the next pass.
"""
import functools
import signal
import sys
import threading
import time

from redis.exceptions import RedisError
from swiftclient.exceptions import ClientException

from swift_mass.cli import client, output
from swift_mass.cli.migrate.decisions import (
    MigrationError, is_ours, resolve_target)
from swift_mass.cli.migrate.lock import LockHeld
from swift_mass.cli.migrate.migrator import Migrator

LOG_ROUTE = 'mass-auto-migrate'
# the longest a move runs on once its tenant's policy stopped asking for
# it, when auto_migrate_interval is longer (a read of the table each time)
WATCH_SECONDS = 5.0
# a pass that fails on these met a cluster or a store that is down or
# refuses (requests' errors are OSErrors): one line, as Swift's daemons
# log them; anything else is a bug, logged with its traceback
UNAVAILABLE = (OSError, ClientException, MigrationError, RedisError)


def due_tenants(table, now, conf):
    """``(due, waiting)``: the tenants of ``table`` (``{tenant:
    PolicyEntry}``) whose containers may move now, the policy that stood
    longest first, and ``{tenant: why not yet}`` for the others that
    would move later.  ``conf``: an AutoMigrateConf."""
    due, waiting = [], {}
    for tenant, entry in table.items():
        if entry.opted_out or not entry.substore or \
                entry.cls not in conf.classes:
            continue
        stood = now - entry.since
        if stood < conf.after:
            waiting[tenant] = 'its policy has stood %.0f s of %.0f' % (
                max(stood, 0.0), conf.after)
            continue
        due.append((entry.since, tenant))
    return [tenant for _, tenant in sorted(due)], waiting


def why_unwanted(tenant, table, target, policies, conf):
    """Why a move of ``tenant``'s containers to the policy ``target`` is
    no longer what its Mass policy asks for (``table``: ``{tenant:
    PolicyEntry}``, ``policies``: /info's), or None while it is."""
    entry = table.get(tenant)
    if entry is None:
        return 'it left the policy table'
    if entry.opted_out:
        return 'it is opted out of Mass'
    if entry.cls not in conf.classes:
        return 'its class is %s now, not one of %s' % (
            entry.cls, ', '.join(conf.classes))
    if not entry.substore:
        return 'its policy names no substore now'
    try:
        wanted, _ = resolve_target(tenant, table, None, policies)
    except MigrationError as err:
        return str(err)
    if wanted != target:
        return 'its policy moves it to %s now' % wanted
    return None


class MoveWatch(object):
    """Stops a move (``migrator``'s, of ``tenant``'s container to
    ``target``) in its copy phase once its tenant's policy no longer asks
    for it (a move past it finishes), looking at
    the policy table at most once each ``every`` seconds: from the move's
    progress (each phase, every few objects) and, in steps, from its waits
    (the settle), which :meth:`sleep` ends once the move is stopped."""

    def __init__(self, mover, tenant, target, policies, every):
        self.mover = mover
        self.tenant = tenant
        self.target = target
        self.policies = policies
        self.every = every
        self.migrator = None
        #: why the move was stopped, or None
        self.stopped = None
        #: why it would have been, had it not been past its copy phase
        self.finishing = None
        self._next = mover.clock() + every
        self._guard = threading.Lock()

    def check(self):
        with self._guard:
            now = self.mover.clock()
            if self.stopped or now < self._next:
                return
            self._next = now + self.every
        from swift_mass.cli.control import policy_table
        try:
            _, table = policy_table(self.mover.store)
        except Exception as err:
            # the store's outage tells nothing of the tenant: go on
            self.mover.logger.warning('%s: the policy table could not be '
                                      'read: %s', self.tenant, err)
            return
        why = why_unwanted(self.tenant, table, self.target, self.policies,
                           self.mover.conf)
        if why is None:
            return
        if self.migrator.phase not in (None, 'copy'):
            # C is being emptied: giving it back would restore what was
            # emptied into the source, as finishing restores it into the
            # target, its writes refused either way until then (on the
            # hetero SAIO an abort there restored 170 objects through the
            # saturated HDD class); the move ends where the policy stood
            if not self.finishing:
                self.finishing = why
                self.mover.logger.info(
                    '%s: the move to %s is past its copy phase: it finishes '
                    '(%s)', self.tenant, self.target, why)
            return
        self.stopped = why
        self.mover.logger.info('%s: stopping the move to %s: %s',
                               self.tenant, self.target, why)
        self.migrator.stop(why)

    def progress(self, message):
        self.mover.logger.info('%s: %s', self.tenant, message)
        self.check()

    def sleep(self, seconds):
        end = self.mover.clock() + seconds
        while not self.stopped:
            left = end - self.mover.clock()
            if left <= 0:
                return
            self.mover.sleep(min(left, self.every))
            self.check()


def next_container(rows, max_objects):
    """The row of ``Migrator.plan`` rows (in listing order) to move next:
    a move under way first (it holds a journal), else the first that
    would move and holds at most ``max_objects`` objects; None if none."""
    for row in rows:
        if row.get('phase'):
            return row
    for row in rows:
        if row.get('move') == 'yes' and row['objects'] <= max_objects:
            return row
    return None


class AutoMigrator(object):
    """The passes of ``swift-mass auto-migrate`` over the policy table of
    ``store``, with the reseller admin's credentials ``creds``
    (:func:`swift_mass.cli.client.credentials`)."""

    def __init__(self, conf, store, creds, logger, tenants=(),
                 clock=time.time, sleep=time.sleep, login=client.login,
                 connector=client.tenant_connector, migrator=Migrator):
        self.conf = conf
        #: only these tenants' containers move (none named: every tenant's)
        self.tenants = frozenset(tenants)
        self.store = store
        self.creds = creds
        self.logger = logger
        self.clock = clock
        self.sleep = sleep
        self.login = login
        self.connector = connector
        self.migrator = migrator
        #: {(tenant, container): time} of moves that failed: tried again
        #: no sooner than conf.after later
        self.failed = {}
        #: {(tenant, container): why} of moves stopped whose abort failed:
        #: given back by the next passes, due or not
        self.giving_back = {}

    def run_forever(self):
        while True:
            started = self.clock()
            # the next pass reads everything again
            try:
                self.run_once()
            except UNAVAILABLE as err:
                self.logger.error('auto-migrate pass failed: %s', err)
            except Exception:
                self.logger.exception('auto-migrate pass failed')
            self.sleep(max(0.0, self.conf.interval -
                           (self.clock() - started)))

    def run_once(self):
        """One pass: at most one container moved (or a move under way
        finished).  What it did, as a dict for the output."""
        from swift_mass.cli.control import policy_table
        now = self.clock()
        _, table = policy_table(self.store)
        if self.tenants:
            table = {tenant: entry for tenant, entry in table.items()
                     if tenant in self.tenants}
        due, waiting = due_tenants(table, now, self.conf)
        result = {'due': due, 'waiting': waiting, 'moved': None,
                  'skipped': {}, 'given_back': []}
        if not due and not self.giving_back:
            return result
        auth = self.login(self.creds)
        for (tenant, container), why in sorted(self.giving_back.items()):
            try:
                result['given_back'].append(
                    self._give_back(tenant, container, why, auth))
            except Exception as err:
                result['skipped'][tenant] = str(err)
                self.logger.error('%s: %s', tenant, err)
        if not due:
            return result
        info = self.connector(self.creds, due[0], auth=auth)[1]() \
            .get_capabilities()
        if 'mass_migrate' not in info:
            result['skipped']['*'] = ('no mass_migrate in the proxy\'s '
                                      '/info: Mass is not in its pipeline')
            self.logger.warning('nothing moves: %s', result['skipped']['*'])
            return result
        policies = info.get('swift', {}).get('policies', [])
        for tenant in due:
            try:
                summary = self._move_one(tenant, table, policies, auth, now)
                if summary is not None and 'why' in summary:
                    result['given_back'].append(summary)
                    break
                result['moved'] = summary
            except LockHeld as err:
                result['skipped'][tenant] = str(err)
                self.logger.info('%s: %s', tenant, err)
            except Exception as err:
                # one tenant's failure never stops the pass
                result['skipped'][tenant] = str(err)
                self.logger.error('%s: %s', tenant, err)
            if result['moved']:
                break
        return result

    def _move_one(self, tenant, table, policies, auth, now):
        """Move one of ``tenant``'s containers; its summary, or None when
        none is due."""
        target, why = resolve_target(tenant, table, None, policies)
        _, connect = self.connector(self.creds, tenant, auth=auth)
        planner = self.migrator(connect, target)
        listing = connect().get_account(full_listing=True)[1]
        names = [c['name'] for c in listing if not is_ours(c['name'])]
        objects = {c['name']: c.get('count', 0) for c in listing}
        rows = []
        for name in sorted(set(planner.account.journals()) - set(names)):
            rows.append(planner.plan(name))  # a move under way
        for name in names:
            failed_at = self.failed.get((tenant, name))
            if objects[name] > self.conf.max_objects or (
                    failed_at is not None and
                    now - failed_at < self.conf.after):
                continue
            rows.append(planner.plan(name))
            if rows[-1].get('move') == 'yes':
                break  # the rest are planned by the next passes
        row = next_container(rows, self.conf.max_objects)
        if row is None:
            return None
        container = row['container']
        self.logger.info('%s: moving %s from %s to %s (%s)', tenant,
                         container, row['policy'], row['target'], why)
        # a move under way goes where its journal says
        watch = MoveWatch(self, tenant, row['target'], policies,
                          min(self.conf.interval, WATCH_SECONDS))
        migrator = watch.migrator = self.migrator(
            connect, row['target'], watch.progress,
            workers=self.conf.concurrency, settle=self.conf.settle,
            sleep=watch.sleep)
        try:
            summary = migrator.run(container)
        except MigrationError:
            if watch.stopped is None:
                self.failed[(tenant, container)] = now
                raise
            self.giving_back[(tenant, container)] = watch.stopped
            return self._give_back(tenant, container, watch.stopped, auth)
        self.failed.pop((tenant, container), None)
        summary['tenant'] = tenant
        self.logger.info('%s: %s %s (copied %d, restored %d, %ss)', tenant,
                         container, summary['status'], summary['copied'],
                         summary['restored'], summary.get('seconds'))
        return summary

    def _give_back(self, tenant, container, why, auth):
        """Abort the move of ``tenant``'s ``container`` (stopped: ``why``);
        its summary."""
        _, connect = self.connector(self.creds, tenant, auth=auth)
        progress = functools.partial(self.logger.info, '%s: %s', tenant)
        summary = self.migrator(connect, None, progress,
                                workers=self.conf.concurrency).abort(
                                    container)
        del self.giving_back[(tenant, container)]
        summary.update(tenant=tenant, why=why)
        self.logger.info('%s: %s given back, %s (%s)', tenant, container,
                         summary['status'], why)
        return summary


def text(result):
    """The plain-text form of one pass's result (``--once``)."""
    lines = []
    moved = result['moved']
    if moved:
        lines.append('moved %s/%s: %s (%s -> %s)' % (
            moved['tenant'], moved['container'], moved['status'],
            moved.get('from'), moved.get('to')))
    else:
        lines.append('moved nothing')
    for back in result.get('given_back', []):
        lines.append('gave back %s/%s: %s (%s)' % (
            back['tenant'], back['container'], back['status'], back['why']))
    for tenant, why in sorted(result['waiting'].items()):
        lines.append('waiting %s: %s' % (tenant, why))
    for tenant, why in sorted(result['skipped'].items()):
        lines.append('skipped %s: %s' % (tenant, why))
    return '\n'.join(lines)


def _stop(signum, frame):
    # a move stopped so takes its write mark off (Migrator's failed run)
    sys.exit(0)


def run(args):
    """``swift-mass auto-migrate [TENANT...] [--once]``."""
    from swift.common.utils import get_logger, readconf

    from swift_mass.cli import control
    from swift_mass.conf import SECTION, ConfigError

    try:
        conf, store, _ = control.load(args.conf)
    except ConfigError as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        return 2
    if not conf.auto_migrate.enabled:
        print('swift-mass: auto-migrate: [%s] auto_migrate is off in %s; '
              'nothing moves unless it is true' % (SECTION, args.conf),
              file=sys.stderr)
        return 2
    try:
        creds = client.credentials(args)
    except client.MissingCredentials as err:
        print('swift-mass: %s' % err, file=sys.stderr)
        return 2
    logger = get_logger(readconf(args.conf, SECTION), name=LOG_ROUTE,
                        log_to_console=args.verbose, log_route=LOG_ROUTE)
    mover = AutoMigrator(conf.auto_migrate, store, creds, logger,
                         args.tenants)
    if args.once:
        return output.emit(args, mover.run_once, text)
    signal.signal(signal.SIGTERM, _stop)
    logger.info('started: every %gs, policies standing %gs, classes %s',
                conf.auto_migrate.interval, conf.auto_migrate.after,
                ','.join(conf.auto_migrate.classes))
    mover.run_forever()


def add_parser(subparsers):
    """Register ``auto-migrate``."""
    p = subparsers.add_parser(
        'auto-migrate', help='move tenants\' containers to their '
        'substores as their policies stand (opt-in: auto_migrate = true)')
    p.add_argument('tenants', nargs='*', metavar='TENANT',
                   help='only these accounts\' containers (default: every '
                   'tenant of the policy table)')
    client.add_options(p)
    p.add_argument('--once', action='store_true',
                   help='one pass, then exit (default: a pass each '
                   'auto_migrate_interval seconds until SIGTERM)')
    p.add_argument('-v', '--verbose', action='store_true',
                   help='log to the console too')
    p.set_defaults(func=run)
