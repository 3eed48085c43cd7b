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
"""swift-mass auto-migrate: which tenants are due, which container moves,
and passes against the in-memory account of test_migrate (a move it
starts is Migrator's, as safe as an operator's)."""
import functools
import logging

import pytest
from swiftclient.exceptions import ClientException

from swift_mass.cli import main as cli_main
from swift_mass.cli.migrate import auto
from swift_mass.cli.migrate.decisions import MigrationError
from swift_mass.cli.migrate.migrator import Migrator
from swift_mass.conf import ConfigError
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy.conf import AutoMigrateConf, MassConf
from tests.unit.cli.test_migrate import (
    FakeConn, FakeSwift, populate, snapshot)

TENANT = 'AUTH_photos'


def conf(**options):
    options = dict({'auto_migrate': 'true', 'auto_migrate_after': '120',
                    'auto_migrate_interval': '10',
                    'auto_migrate_settle': '5'}, **options)
    return AutoMigrateConf(options, 60)


# --- options ----------------------------------------------------------------

def test_options_default_to_off_and_slow():
    c = MassConf({}).auto_migrate
    assert (c.enabled, c.after, c.interval, c.max_objects, c.settle,
            c.concurrency, c.classes) == (False, 600.0, 60.0, 100000, 60.0,
                                          4, ('read',))


@pytest.mark.parametrize('option, value, allowed', [
    ('auto_migrate', 'ture', 'one of true'),
    ('auto_migrate_after', '30', 'a number >= 60'),
    ('auto_migrate_interval', '0', 'a number >= 1'),
    ('auto_migrate_max_objects', 'many', 'an integer >= 1'),
    ('auto_migrate_concurrency', '65', 'an integer from 1 to 64'),
    ('auto_migrate_classes', 'read,bogus', 'a comma-separated list of '
     'read, write, mixed'),
    ('auto_migrate_classes', '', 'a comma-separated list'),
])
def test_a_bad_option_stops_start_up_naming_it(option, value, allowed):
    with pytest.raises(ConfigError) as caught:
        MassConf({option: value, 'window_seconds': '60'})
    assert '[filter:mass] %s = %r is not valid; allowed: %s' % (
        option, value, allowed) in str(caught.value)


def test_a_policy_must_stand_at_least_the_window():
    # never faster than the classifier: after >= window_seconds
    assert MassConf({'window_seconds': '900'}).auto_migrate.after == 900.0
    with pytest.raises(ConfigError):
        MassConf({'window_seconds': '900', 'auto_migrate_after': '600'})


# --- decisions --------------------------------------------------------------

def entry(cls='read', substore='fast', since=0.0, **kwargs):
    return PolicyEntry(cls, substore=substore, since=since, **kwargs)


def test_due_tenants_stood_long_enough_in_a_class_moved_towards_a_substore():
    table = {
        'AUTH_old': entry(since=10.0),
        'AUTH_older': entry(since=5.0),
        'AUTH_young': entry(since=950.0),
        'AUTH_writer': entry('write', 'bulk', since=0.0),
        'AUTH_nowhere': entry(substore='', since=0.0),
        'AUTH_out': entry('unknown', '', opted_out=True, validated=True),
    }
    due, waiting = auto.due_tenants(table, 1000.0, conf())
    assert due == ['AUTH_older', 'AUTH_old']
    assert waiting == {'AUTH_young': 'its policy has stood 50 s of 120'}
    due, _ = auto.due_tenants(table, 1000.0, conf(
        auto_migrate_classes='read,write'))
    assert due == ['AUTH_writer', 'AUTH_older', 'AUTH_old']


def test_next_container_finishes_a_move_first_and_keeps_to_the_limit():
    rows = [{'container': 'a', 'move': 'no: already in fast', 'objects': 1},
            {'container': 'b', 'move': 'yes', 'objects': 50},
            {'container': 'c', 'move': 'yes', 'objects': 5},
            {'container': 'd', 'move': 'in progress (phase empty)',
             'phase': 'empty', 'objects': 0}]
    assert auto.next_container(rows, 100)['container'] == 'd'
    assert auto.next_container(rows[:3], 100)['container'] == 'b'
    assert auto.next_container(rows[:3], 10)['container'] == 'c'
    assert auto.next_container(rows[:1], 10) is None


# --- passes -----------------------------------------------------------------

class Cluster(object):
    """One tenant's account (test_migrate's in-memory Swift) behind the
    login and the connector AutoMigrator uses, and a policy table."""

    def __init__(self, mass=True):
        self.swift = FakeSwift()
        self.mass = mass
        self.store = LocalStore()
        self.logged_in = 0
        #: ``before(method, container, name)``, run before each object PUT
        #: and DELETE and container POST of a move
        self.before = lambda *args: None

    def login(self, creds):
        self.logged_in += 1
        return 'http://proxy/v1/AUTH_admin', 'token'

    def connector(self, creds, tenant, retries=5, auth=None):
        assert tenant == TENANT and auth is not None
        swift, mass, cluster = self.swift, self.mass, self

        class Conn(FakeConn):
            def get_capabilities(self):
                info = super(Conn, self).get_capabilities()
                if not mass:
                    info.pop('mass_migrate')
                return info

            def put_object(self, container, name, *args, **kwargs):
                cluster.before('PUT', container, name)
                return super(Conn, self).put_object(container, name, *args,
                                                    **kwargs)

            def delete_object(self, container, name, *args, **kwargs):
                cluster.before('DELETE', container, name)
                return super(Conn, self).delete_object(container, name,
                                                       *args, **kwargs)

            def post_container(self, name, headers):
                cluster.before('POST', name, None)
                return super(Conn, self).post_container(name, headers)
        return 'http://proxy/v1/' + tenant, lambda: Conn(swift)

    def policy(self, *args, **kwargs):
        self.store.put_table({TENANT: entry(*args, **kwargs).to_dict()})

    def mover(self, tenants=(), **options):
        return auto.AutoMigrator(
            conf(**options), self.store, {}, logging.getLogger('test'),
            tenants, clock=self.swift.clock, sleep=self.swift.sleep,
            login=self.login,
            connector=self.connector, migrator=functools.partial(
                Migrator, sleep=self.swift.sleep, clock=self.swift.clock))


def test_a_pass_moves_a_tenants_container_to_its_substore_whole():
    cluster = Cluster()
    populate(cluster.swift)
    before = snapshot(cluster.swift, 'c')
    cluster.policy(since=cluster.swift.now - 200)
    mover = cluster.mover()
    result = mover.run_once()
    assert result['moved']['container'] == 'c'
    assert result['moved']['status'] == 'moved'
    assert cluster.swift.containers['c']['policy'] == 'fast'
    assert cluster.swift.containers['c']['mark'] is None
    assert snapshot(cluster.swift, 'c') == before
    # one container a pass: segs is the next one's
    assert cluster.swift.containers['segs']['policy'] == 'standard'
    assert mover.run_once()['moved']['container'] == 'segs'
    assert set(cluster.swift.containers) == {'c', 'segs'}
    # then nothing is left to move
    assert mover.run_once()['moved'] is None


def test_nothing_moves_before_the_policy_has_stood():
    cluster = Cluster()
    populate(cluster.swift)
    cluster.policy(since=cluster.swift.now - 100)
    result = cluster.mover().run_once()
    assert result['moved'] is None
    assert result['waiting'] == {TENANT: 'its policy has stood 100 s of 120'}
    assert cluster.logged_in == 0
    assert cluster.swift.containers['c']['policy'] == 'standard'


def test_only_the_tenants_named_move():
    cluster = Cluster()
    populate(cluster.swift)
    cluster.policy(since=0.0)
    result = cluster.mover(tenants=['AUTH_other']).run_once()
    assert (result['due'], result['moved']) == ([], None)
    assert cluster.mover(tenants=[TENANT]).run_once()['moved']


def test_nothing_moves_while_mass_is_out_of_the_proxys_pipeline():
    cluster = Cluster(mass=False)
    populate(cluster.swift)
    cluster.policy(since=0.0)
    result = cluster.mover().run_once()
    assert result['moved'] is None
    assert 'no mass_migrate' in result['skipped']['*']
    assert cluster.swift.containers['c']['policy'] == 'standard'


def test_a_container_over_the_limit_is_left_to_the_operator():
    cluster = Cluster()
    populate(cluster.swift)  # c holds 17 objects, segs 2
    cluster.policy(since=0.0)
    mover = cluster.mover(auto_migrate_max_objects='10')
    assert mover.run_once()['moved']['container'] == 'segs'
    assert mover.run_once()['moved'] is None
    assert cluster.swift.containers['c']['policy'] == 'standard'


def test_a_failed_move_waits_then_is_finished_from_its_journal():
    cluster = Cluster()
    populate(cluster.swift)
    cluster.swift.add_container('a-first', 'standard')
    cluster.swift.add_object('a-first', 'kept', body=b'kept')
    before = snapshot(cluster.swift, 'a-first')
    cluster.policy(since=0.0)
    mover = cluster.mover()
    working = mover.migrator

    def failing(*args, **kwargs):
        migrator = working(*args, **kwargs)

        def down(*args):
            raise MigrationError('a node is down')
        migrator.phases['empty'].run = down
        return migrator
    mover.migrator = failing
    result = mover.run_once()
    assert result['moved'] is None
    assert 'a node is down' in result['skipped'][TENANT]
    # as a failed run of the operator's: writable, its journal kept
    assert cluster.swift.containers['a-first']['mark'] is None
    assert cluster.swift.containers['a-first']['policy'] == 'standard'
    mover.migrator = working
    # the failed container waits auto_migrate_after; the others move
    assert mover.run_once()['moved']['container'] == 'c'
    assert mover.run_once()['moved']['container'] == 'segs'
    assert mover.run_once()['moved'] is None
    cluster.swift.sleep(120)
    moved = mover.run_once()['moved']
    assert (moved['container'], moved['status']) == ('a-first', 'moved')
    assert cluster.swift.containers['a-first']['policy'] == 'fast'
    assert snapshot(cluster.swift, 'a-first') == before
    assert set(cluster.swift.containers) == {'a-first', 'c', 'segs'}


def test_the_command_refuses_to_run_while_auto_migrate_is_off(tmp_path,
                                                              capsys):
    path = tmp_path / 'proxy-server.conf'
    path.write_text('[filter:mass]\nuse = egg:swift_mass#mass\n'
                    'redis_url = redis://127.0.0.1:1/0\n')
    assert cli_main.main(['--conf', str(path), 'auto-migrate',
                          '--once']) == 2
    assert 'auto_migrate is off' in capsys.readouterr().err


@pytest.mark.parametrize('error, traceback', [
    # a store or cluster that is down: one line
    (ConnectionError('Redis is down'), False),
    (ClientException('Account HEAD failed', http_status=503), False),
    # a bug: its traceback
    (KeyError('no such field'), True),
])
def test_a_pass_that_fails_never_stops_the_daemon(caplog, error, traceback):
    cluster = Cluster()

    class Failing(LocalStore):
        def get_table(self):
            raise error
    cluster.store = Failing()
    mover = cluster.mover()
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt  # the test's way out
    mover.sleep = sleep
    with pytest.raises(KeyboardInterrupt):
        mover.run_forever()
    assert len(slept) == 2
    assert caplog.text.count('auto-migrate pass failed') == 2
    assert str(error) in caplog.text
    assert ('Traceback' in caplog.text) == traceback


# --- a tenant whose policy changes while it moves --------------------------

POLICIES = [{'name': 'standard', 'default': True}, {'name': 'fast'},
            {'name': 'bulk'}]


@pytest.mark.parametrize('now, why', [
    (entry(), None),
    (None, 'it left the policy table'),
    (entry('unknown', '', opted_out=True, validated=True),
     'it is opted out of Mass'),
    (entry('write', 'bulk'), 'its class is write now, not one of read'),
    (entry(substore=''), 'its policy names no substore now'),
])
def test_why_a_move_is_unwanted(now, why):
    table = {} if now is None else {TENANT: now}
    assert auto.why_unwanted(TENANT, table, 'fast', POLICIES, conf()) == why
    read_or_write = conf(auto_migrate_classes='read,write')
    assert auto.why_unwanted(TENANT, {TENANT: entry('write', 'bulk')},
                             'fast', POLICIES, read_or_write) == \
        'its policy moves it to bulk now'


def staging_copies(cluster, then, after=3):
    """``before`` hook: ``then()`` when the move makes its ``after``-th
    copy into its staging container, 10 s into it."""
    copies = []

    def hook(method, container, name):
        if method == 'PUT' and container.startswith('.mass-migrate-'):
            copies.append(name)
            if len(copies) == after:
                cluster.swift.sleep(10)
                then()
    return hook


def turning_writer():
    """A cluster whose tenant, due to move, turns writer (photos' upload
    burst) at its move's third staging copy; and its container c as it
    was."""
    cluster = Cluster()
    populate(cluster.swift)
    before = snapshot(cluster.swift, 'c')
    cluster.policy(since=0.0)
    cluster.before = staging_copies(cluster, lambda: cluster.policy(
        'write', 'bulk', since=cluster.swift.now))
    return cluster, before


def test_a_move_whose_tenant_turns_writer_is_given_back_whole():
    """photos' upload burst while its container moves: the move would
    refuse every upload until it ended; it stops at its next write and is
    aborted, and the container is as it was, writable, in its policy."""
    cluster, before = turning_writer()
    result = cluster.mover().run_once()
    assert result['moved'] is None
    back, = result['given_back']
    assert (back['tenant'], back['container'], back['status']) == (
        TENANT, 'c', 'aborted: left in standard')
    assert back['why'] == 'its class is write now, not one of read'
    assert cluster.swift.containers['c']['policy'] == 'standard'
    assert cluster.swift.containers['c']['mark'] is None
    assert snapshot(cluster.swift, 'c') == before
    assert set(cluster.swift.containers) == {'c', 'segs'}


def test_a_move_whose_tenant_turns_writer_once_emptied_finishes():
    """Past its copy phase, giving a move back would restore what was
    emptied into the source as finishing restores it into the target (a
    diagnostic's abort restored 170 objects through the saturated HDD
    class): the move finishes."""
    cluster = Cluster()
    populate(cluster.swift)
    before = snapshot(cluster.swift, 'c')
    cluster.policy(since=0.0)
    deletes = []

    def hook(method, container, name):
        if (method, container) == ('DELETE', 'c'):
            deletes.append(name)
            if len(deletes) == 3:
                cluster.swift.sleep(10)
                cluster.policy('write', 'bulk', since=cluster.swift.now)
    cluster.before = hook
    result = cluster.mover().run_once()
    assert result['given_back'] == []
    assert (result['moved']['container'], result['moved']['status']) == (
        'c', 'moved')
    assert cluster.swift.containers['c']['policy'] == 'fast'
    assert cluster.swift.containers['c']['mark'] is None
    assert snapshot(cluster.swift, 'c') == before


def test_a_move_is_stopped_in_its_settle():
    """The settle (writes in flight) is waited in steps: a policy that
    changes during it stops the move within it."""
    cluster = Cluster()
    populate(cluster.swift)
    before = snapshot(cluster.swift, 'c')
    cluster.policy(since=0.0)

    def on_mark(method, container, name):
        # the mark: the move's first POST to c
        if (method, container) == ('POST', 'c'):
            cluster.policy(substore='', since=cluster.swift.now)
            cluster.before = lambda *args: None
    cluster.before = on_mark
    started = cluster.swift.now
    mover = cluster.mover(auto_migrate_settle='60')
    back, = mover.run_once()['given_back']
    assert back['why'] == 'its policy names no substore now'
    assert cluster.swift.now - started <= 10
    assert snapshot(cluster.swift, 'c') == before
    assert set(cluster.swift.containers) == {'c', 'segs'}


def test_a_give_back_that_fails_is_tried_again_by_the_next_passes():
    cluster, before = turning_writer()
    mover = cluster.mover()
    working = mover.migrator

    def abort_fails(connect, target, *args, **kwargs):
        migrator = working(connect, target, *args, **kwargs)
        if target is None:
            def down(container):
                raise MigrationError('a node is down')
            migrator.abort = down
        return migrator
    mover.migrator = abort_fails
    result = mover.run_once()
    assert 'a node is down' in result['skipped'][TENANT]
    assert mover.giving_back == {
        (TENANT, 'c'): 'its class is write now, not one of read'}
    # not due any more, and still given back
    mover.migrator = working
    cluster.before = lambda *args: None
    result = mover.run_once()
    assert result['due'] == []
    back, = result['given_back']
    assert back['status'] == 'aborted: left in standard'
    assert mover.giving_back == {}
    assert snapshot(cluster.swift, 'c') == before
    assert set(cluster.swift.containers) == {'c', 'segs'}


def test_a_policy_table_that_cannot_be_read_never_stops_a_move(caplog):
    """Redis down during a move tells nothing of the tenant: the move
    goes on to its end."""
    cluster = Cluster()
    populate(cluster.swift)
    cluster.policy(since=0.0)

    class Down(LocalStore):
        def get_table(self):
            raise ConnectionError('Redis is down')

    def redis_goes_down():
        mover.store = Down()
    cluster.before = staging_copies(cluster, redis_goes_down)
    mover = cluster.mover()
    result = mover.run_once()
    assert result['moved']['status'] == 'moved'
    assert result['given_back'] == []
    assert cluster.swift.containers['c']['policy'] == 'fast'
    assert 'the policy table could not be read: Redis is down' in caplog.text
