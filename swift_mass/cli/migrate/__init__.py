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
"""``swift-mass migrate``: move a tenant's existing containers to the storage
policy (substore) its Mass policy names, explicitly and resumably.

Swift fixes a container's policy when the container is created, so a
container moves by way of a staging container in the target policy::

    copy     C -> S   every object copied server side, each copy verified
    empty    C        every object deleted, then C, then C created again in
                      the target policy
    restore  S -> C   every object copied back, each copy verified
    cleanup  S        deleted, with the journal

``C`` is the container, ``S`` its staging container ``.mass-migrate-<C>``
(a hash when the name would be too long), both in the tenant's account.
The journal ``.mass-migrate/journal/<C>`` (:class:`Journal`) holds the
phase, the policy C came from, the target and C's saved metadata; a phase
is written to it only once the previous one is verified complete, so a run
that dies anywhere is resumed by running the command again.  Every object
is at every moment in C or S (or both) with its original ETag: S is a
verified superset of C before anything in C is deleted, and S is deleted
only once C holds a verified copy of everything in it.

A client's write is never undone, whatever proxy it goes through (one
without the ``mass`` filter refuses nothing).  Every object write of the
move carries an ``X-Timestamp`` made of the version it copies or deletes
(the source's own X-Timestamp, as container sync dates its copies) and a
Timestamp offset (:func:`stamp`): it sorts after that version and before
any later write of a client, which the proxy dates by its clock.  The
object servers keep the newest write whatever order writes reach them in:
a DELETE of the staged version loses to a client's overwrite (409), a copy
loses to a client's later write or tombstone (Swift answers 202).  Swift
compares versions within a policy only, so what a client did to an object
of C between its copy and C's deletion is read back from the object
servers before C goes (:meth:`.EmptyPhase._settle`).  A client's POST
changes no data time, so an object of C is deleted only behind a fence,
a POST of the move's that the DELETE names
(:meth:`.ObjectMover.delete_unchanged`).  The mass filter gives a
reseller admin's X-Timestamp back after gatekeeper shunted it
(:func:`swift_mass.proxy.marks.give_back_timestamp`); the first copy
checks that it did, before anything is deleted.

``swift-mass migrate abort`` stops a move under way (one that keeps
failing: an object a quota or an expiry will not let it copy) and gives the
container back: before it was emptied, as it was (the staging copies are
deleted); after, with every object restored into it, as a finished move
would.  Migrate makes S and the journal container with its mark, which
only a reseller admin can set, and never uses one that a client made.

Client writes (object PUT, POST, DELETE; container PUT, POST, DELETE) to C,
S and the journal container are answered 503 with Retry-After by the
``mass`` proxy filter while the container is marked (``X-Mass-Migrating``,
which the filter takes only from a reseller admin and keeps in container
sysmeta); the operator's own requests pass.  A run that fails takes the
mark off C (its journal and S stay, for the next run): clients write to C
meanwhile as they would through a proxy without the filter.

The pure decisions live in functions of :mod:`.decisions` so they can be
tested without a cluster; :class:`Migrator` (:mod:`.migrator`) does the I/O
with swiftclient connections (real HTTP, through the whole proxy pipeline):
an :class:`.Account` reads the tenant's account and writes the move's own
containers and its :class:`Journal`, an :class:`.ObjectMover` makes the
dated object writes, a :mod:`.phases` class runs each phase, and a
:class:`Lock` keeps other runs off the container.  This module is the
command: :func:`command` and its parsers.
"""
import sys

from swift_mass.cli import client, output, projects
# callers and tests take these names from here, where they were before
# migrate was split into the modules below
from swift_mass.cli.migrate.decisions import (  # noqa
    JOURNAL_CONTAINER, PASSES, PROBE_TYPE, RAW_QUERY, UPDATES_WAIT,
    Deletion, MigrationError, container_step, copy_query, empty_action,
    fingerprint, in_copy_order, index, is_ours, kind_of, listing_key,
    mismatches, not_in, refusal, resolve_target, restore_action,
    saved_headers, staging_name, written_since)
from swift_mass.cli.migrate.journal import Journal  # noqa
from swift_mass.cli.migrate.lock import Lock, LockHeld  # noqa
from swift_mass.cli.migrate.migrator import Migrator
from swift_mass.cli.migrate import auto


def command(args, table, progress):
    """``swift-mass migrate plan|run|abort``: the result for --json."""
    found, url, connect = projects.connector(args)
    tenant = found['account']
    if found.get('project') and getattr(args, 'project', None):
        # every positional is a container: one named as an account is
        # more likely a TENANT given with --project
        prefix = tenant[:-len(found['project']['id'])]
        for name in args.containers:
            if prefix and name.startswith(prefix):
                raise MigrationError(
                    'with --project, %s would be a container of %s; give '
                    'either TENANT or --project' % (name, tenant))
    conn = connect()
    info = conn.get_capabilities()
    if args.action != 'plan' and 'mass_migrate' not in info:
        raise MigrationError(
            'the proxy at %s does not run a mass filter that refuses '
            'writes to containers being moved (no mass_migrate in /info); '
            'moving now could lose writes' % url)
    target, why = resolve_target(tenant, table, args.policy,
                                 info.get('swift', {}).get('policies', []))
    containers = args.containers
    if not containers:
        # every container but the migration's own
        containers = [c['name'] for c in conn.get_account(
            full_listing=True)[1] if not is_ours(c['name'])]
    migrator = Migrator(connect, target, progress, workers=args.concurrency,
                        settle=args.settle, lock_ttl=args.lock_ttl,
                        updates_wait=args.updates_wait)
    if not args.containers:
        # a move under way whose container is gone for the moment
        containers += sorted(
            set(migrator.account.journals()) - set(containers))
    result = {'tenant': tenant, 'target': target, 'why': why,
              'containers': []}
    if found.get('project'):
        result['project'] = found['project']
    if args.action == 'abort' and not args.containers:
        # only the moves under way
        containers = migrator.account.journals()
    for container in containers:
        if args.action == 'plan':
            result['containers'].append(migrator.plan(container))
            continue
        progress('%s: starting' % container)
        summary = getattr(migrator, args.action)(container)
        progress('%s: %s' % (container, summary['status']))
        result['containers'].append(summary)
    return result


def text(result):
    """The plain-text form of :func:`command`'s result."""
    project = projects.describe(result)
    lines = ['tenant %s%s -> %s (%s)' % (
        result['tenant'], ' (project %s)' % project if project else '',
        result['target'], result['why'])]
    rows = result['containers']
    if rows and 'move' in rows[0]:
        lines.append('%-32s %-10s %-10s %9s %14s  %s' % (
            'container', 'policy', 'target', 'objects', 'bytes', 'move'))
        for row in rows:
            lines.append('%-32s %-10s %-10s %9d %14d  %s' % (
                row['container'], row['policy'], row['target'],
                row['objects'], row['bytes'], row['move']))
    else:
        for row in rows:
            lines.append('%s: %s (%s -> %s; copied %d, deleted %d, '
                         'restored %d, kept newer %d, dropped %d, %ss)' % (
                             row['container'], row['status'],
                             row.get('from'), row.get('to'),
                             row['copied'], row['deleted'],
                             row['restored'], row['kept_newer'],
                             row.get('dropped', 0), row.get('seconds')))
    return '\n'.join(lines)


def progress(message):
    print('swift-mass migrate: %s' % message, file=sys.stderr, flush=True)


def run(args, parser=None):
    """``swift-mass migrate``: the target from --policy, else from the
    tenant's entry in the policy table of the shared store (--conf).  With
    --project, every positional is a container."""
    if getattr(args, 'project', None) and args.tenant:
        args.containers = [args.tenant] + args.containers
        args.tenant = None
    if parser is not None:
        projects.check(parser, args)
    if args.policy:
        return output.emit(args, lambda: command(args, {}, progress), text)
    from swift_mass.cli import control
    return control.with_store(args, lambda conf, store, settings: command(
        args, control.policy_table(store)[1], progress), text)


def add_parsers(subparsers):
    """Register ``migrate plan``, ``migrate run`` and ``migrate abort``,
    and ``auto-migrate`` (:mod:`.auto`), which starts the same moves."""
    p = subparsers.add_parser('migrate', help='move a tenant\'s containers '
                              'to its substore (plan: show what would move)')
    actions = p.add_subparsers(dest='action', required=True)
    helps = {'plan': 'show what would move',
             'run': 'move (or finish moving) containers',
             'abort': 'stop moves under way and give the containers back '
                      '(before emptying: as they were; after: restored)'}
    for action in ('plan', 'run', 'abort'):
        p = actions.add_parser(action, help=helps[action])
        projects.add_options(p, 'the account, e.g. AUTH_test (with '
                             '--project, every positional is a container)')
        p.add_argument('containers', nargs='*', metavar='container',
                       help='default: all of the tenant\'s containers')
        p.add_argument('--policy', help='target storage policy (default: '
                       'the substore of the tenant\'s Mass policy, from '
                       'the shared store of --conf)')
        client.add_options(p)
        p.add_argument('--concurrency', type=int, default=8)
        p.add_argument('--settle', type=float, default=60.0,
                       help='seconds between marking a container and its '
                       'last listing, for writes in flight and cached '
                       'container info (default 60)')
        p.add_argument('--updates-wait', type=float, default=UPDATES_WAIT,
                       help='seconds an emptied container waits while its '
                       'replicas still list objects this move deleted and '
                       'settled again (their updates in async pendings, '
                       'which Swift\'s object-updater sends every 300 s by '
                       'default) before the run stops (default %d)'
                       % UPDATES_WAIT)
        p.add_argument('--lock-ttl', type=int, default=30,
                       help='seconds the lock of a killed run lasts')
        p.set_defaults(func=lambda args, p=p: run(args, p))
    auto.add_parser(subparsers)
