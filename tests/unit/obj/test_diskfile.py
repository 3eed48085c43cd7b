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
"""Group commit (swift_mass.obj.diskfile): GroupSync alone with a flush the
test gives it, then real writes through the manager and an object server,
with libc's syncfs and sync_file_range counted and made to fail (real write
errors: tests/functional/test_group_commit_errors.py)."""
import configparser
import errno
import itertools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import EntryPoint

import eventlet
import pytest
from swift.common import storage_policy
from swift.common.storage_policy import REPL_POLICY, StoragePolicy, \
    StoragePolicyCollection
from swift.common.swob import Request
from swift.common.utils import Timestamp, get_logger, md5, \
    replace_partition_in_path
from swift.obj.server import ObjectController

from swift_mass.conf import GROUP_COMMIT_DEFAULTS, ConfigError, \
    GroupCommitConf
from swift_mass.obj import diskfile as mass_diskfile
from swift_mass.obj.diskfile import GroupCommitDiskFileManager, GroupSync
from swift_mass.obj.flush_sequence import FlushSequence
from tests.unit.helpers import Logger

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DISKFILE_MODULE = 'egg:swift_mass#replication.group_commit'
CALLERS = 20
# what a disk's flush takes, long enough for the other callers to arrive
# while it runs
FLUSH_SECONDS = 0.05
real_syncfs = mass_diskfile.syncfs
real_sync_file_range = mass_diskfile.sync_file_range
# SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
# SYNC_FILE_RANGE_WAIT_AFTER
WAIT_WRITE_WAIT = 1 | 2 | 4


class Syncfs(object):
    """Stands for libc's syncfs: records the filesystem (st_dev) of each
    call and runs the test's ``check`` before the real flush (a check that
    raises is a failed flush)."""

    def __init__(self):
        self.filesystems = []
        self.check = None

    def __call__(self, fd):
        self.filesystems.append(os.fstat(fd).st_dev)
        if self.check:
            self.check()
        return real_syncfs(fd)


def fail_with_eio():
    raise OSError(errno.EIO, os.strerror(errno.EIO))


@pytest.fixture
def syncfs(monkeypatch):
    recorder = Syncfs()
    monkeypatch.setattr(mass_diskfile, 'syncfs', recorder)
    return recorder


class FileChecks(object):
    """Stands for libc's sync_file_range, a write's check of its own file:
    records the inode checked, the flags and how many syncfs had run by
    then; ``failing``: the kernel kept a writeback error for that file,
    which a flush through another descriptor has already reported."""

    def __init__(self, syncfs):
        self.syncfs = syncfs
        self.calls = []
        self.failing = False

    def __call__(self, fd, offset, nbytes, flags):
        self.calls.append((os.fstat(fd).st_ino, len(self.syncfs.filesystems),
                           flags))
        if self.failing:
            fail_with_eio()
        return real_sync_file_range(fd, offset, nbytes, flags)


@pytest.fixture
def file_checks(monkeypatch, syncfs):
    recorder = FileChecks(syncfs)
    monkeypatch.setattr(mass_diskfile, 'sync_file_range', recorder)
    return recorder


@pytest.fixture
def fsyncs(monkeypatch):
    """The descriptors fsync'd or fdatasync'd, by anyone: Swift's fsync,
    fdatasync and fsync_dir all end in these."""
    synced = []
    for name in ('fsync', 'fdatasync'):
        real = getattr(os, name)

        def counted(fd, real=real):
            synced.append(fd)
            return real(fd)
        monkeypatch.setattr(os, name, counted)
    return synced


@pytest.fixture(autouse=True)
def run_dir(tmp_path, monkeypatch):
    """The managers' group_commit_run_dir, where FlushSequence keeps its
    files: the test's own, never the machine's /var/run/swift."""
    path = tmp_path / 'run'
    monkeypatch.setitem(GROUP_COMMIT_DEFAULTS, 'group_commit_run_dir',
                        str(path))
    return str(path)


@pytest.fixture
def devices(tmp_path):
    (tmp_path / 'sda').mkdir()
    return str(tmp_path)


@pytest.fixture
def policy(monkeypatch):
    """Policy 0 alone, on this module, as swift.conf would configure it."""
    policy = StoragePolicy(0, 'group-commit', is_default=True,
                           diskfile_module=DISKFILE_MODULE)
    monkeypatch.setattr(storage_policy, '_POLICIES',
                        StoragePolicyCollection([policy]))
    return policy


@pytest.fixture
def manager(devices, policy):
    return GroupCommitDiskFileManager(
        {'devices': devices, 'mount_check': 'false'}, Logger())


@pytest.fixture
def timestamps():
    start = int(time.time())
    return (Timestamp(t) for t in itertools.count(start))


def diskfile(manager, policy, obj='o'):
    return manager.get_diskfile('sda', '0', 'a', 'c', obj, policy=policy)


def put(manager, policy, timestamp, body=b'body', obj='o'):
    df = diskfile(manager, policy, obj)
    with df.create() as writer:
        writer.write(body)
        writer.put({'X-Timestamp': timestamp.internal,
                    'Content-Type': 'text/plain',
                    'Content-Length': str(len(body)),
                    'ETag': md5(body, usedforsecurity=False).hexdigest()})
    return df


def read(manager, policy, obj='o'):
    df = diskfile(manager, policy, obj)
    with df.open():
        metadata = df.get_metadata()
        return metadata, b''.join(df.reader())


def files(df):
    return sorted(os.listdir(df._datadir))


def temp_files(manager):
    """What is left in the device's tmp dir (which O_TMPFILE never
    makes)."""
    tmp = os.path.join(manager.devices, 'sda', 'tmp')
    return os.listdir(tmp) if os.path.isdir(tmp) else []


def run_threads(target, count):
    """``target`` in ``count`` threads started together; their results or
    exceptions, in no order."""
    start = threading.Barrier(count)
    results = []

    def run():
        start.wait()
        try:
            results.append(target())
        except Exception as err:
            results.append(err)
    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(results) == count
    return results


# GroupSync

def test_one_caller_gets_one_flush_per_call():
    flushed = []
    group_sync = GroupSync('/unused', flush=lambda: flushed.append(1))
    runs = [group_sync.sync() for _ in range(3)]
    assert len(flushed) == 3
    assert [run.writes for run in runs] == [1, 1, 1]
    assert (group_sync.flushes, group_sync.writes_covered) == (3, 3)


def test_concurrent_callers_share_flushes_that_began_after_they_called():
    flushes = []

    def flush():
        started = time.monotonic()
        time.sleep(FLUSH_SECONDS)
        flushes.append((started, time.monotonic()))
    group_sync = GroupSync('/unused', flush=flush)

    def call():
        called = time.monotonic()
        run = group_sync.sync()
        return called, time.monotonic(), run
    calls = run_threads(call, CALLERS)

    assert len(flushes) <= 3
    for called, returned, _run in calls:
        assert any(called <= started and ended <= returned
                   for started, ended in flushes)
    runs = [run for _called, _returned, run in calls if run is not None]
    assert len(runs) == len(flushes) == group_sync.flushes
    assert sum(run.writes for run in runs) == CALLERS == \
        group_sync.writes_covered


def test_a_caller_waits_for_the_flush_after_the_one_running():
    events = []
    first_started = threading.Event()
    release_first = threading.Event()

    def flush():
        number = sum(1 for event in events if event[0] == 'start') + 1
        events.append(('start', number))
        if number == 1:
            first_started.set()
            release_first.wait(5)
        events.append(('end', number))
    group_sync = GroupSync('/unused', flush=flush)

    def late():
        events.append(('called',))
        group_sync.sync()
        events.append(('returned',))
    first = threading.Thread(target=group_sync.sync)
    first.start()
    assert first_started.wait(5)
    second = threading.Thread(target=late)
    second.start()
    time.sleep(0.1)  # the late caller waits in sync()
    release_first.set()
    first.join(5)
    second.join(5)
    assert events == [('start', 1), ('called',), ('end', 1), ('start', 2),
                      ('end', 2), ('returned',)]


def test_a_failed_flush_fails_every_caller_it_covers_then_syncs_work():
    failing = [True]

    def flush():
        time.sleep(FLUSH_SECONDS)
        if failing[0]:
            fail_with_eio()
    group_sync = GroupSync('/unused', flush=flush)

    errors = run_threads(group_sync.sync, CALLERS)
    assert [err.errno for err in errors if isinstance(err, OSError)] == \
        [errno.EIO] * CALLERS
    # fewer flushes than callers: callers got the failure of a flush
    # another ran
    assert group_sync.flushes < CALLERS

    failing[0] = False
    assert group_sync.sync().writes == 1


def test_syncfs_follows_a_device_replaced_at_its_path(tmp_path, syncfs):
    # a symlink re-pointed stands for a filesystem mounted in place of
    # another: the path's st_dev changes
    old = tmp_path / 'old'
    old.mkdir()
    new = tempfile.mkdtemp(dir='/dev/shm')
    try:
        device = str(tmp_path / 'sda')
        os.symlink(str(old), device)
        group_sync = GroupSync(device)
        group_sync.sync()
        os.unlink(device)
        os.symlink(new, device)
        group_sync.sync()
        group_sync.sync()
    finally:
        shutil.rmtree(new)
    old_dev, new_dev = os.stat(str(old)).st_dev, os.stat('/dev/shm').st_dev
    assert old_dev != new_dev
    # at the replacement, the old filesystem's last flush, then the new one's
    assert syncfs.filesystems == [old_dev, old_dev, new_dev, new_dev]


# GroupCommitDiskFileWriter, through the manager

@pytest.mark.parametrize('use_linkat', [True, False],
                         ids=['O_TMPFILE', 'mkstemp'])
def test_a_put_is_durable_by_two_syncfs_its_own_check_and_no_fsync(
        manager, policy, timestamps, syncfs, file_checks, fsyncs,
        use_linkat):
    manager.use_linkat = use_linkat
    timestamp = next(timestamps)
    df = put(manager, policy, timestamp, b'the body')

    assert manager.use_linkat == use_linkat  # the branch asked for ran
    assert fsyncs == []
    device = os.stat(manager.devices).st_dev
    assert syncfs.filesystems == [device, device]
    # its own file, checked once, after the flush of its data
    data_file = os.path.join(df._datadir, timestamp.internal + '.data')
    assert file_checks.calls == [
        (os.stat(data_file).st_ino, 1, WAIT_WRITE_WAIT)]
    assert files(df) == [timestamp.internal + '.data']
    metadata, body = read(manager, policy)
    assert body == b'the body'
    assert metadata['X-Timestamp'] == timestamp.internal
    assert metadata['name'] == '/a/c/o'
    assert temp_files(manager) == []


@pytest.mark.parametrize('newer', ['put', 'delete'])
def test_the_data_is_flushed_before_the_rename_the_old_version_after_it(
        manager, policy, timestamps, syncfs, newer):
    first, second = next(timestamps), next(timestamps)
    df = put(manager, policy, first)
    at_flush = []
    syncfs.check = lambda: at_flush.append(files(df))

    if newer == 'put':
        put(manager, policy, second)
        newest = second.internal + '.data'
    else:
        diskfile(manager, policy).delete(second)
        newest = second.internal + '.ts'
    assert at_flush == [[first.internal + '.data'],
                        sorted([first.internal + '.data', newest])]
    assert files(df) == [newest]


@pytest.mark.parametrize('use_linkat', [True, False],
                         ids=['O_TMPFILE', 'mkstemp'])
def test_a_failed_flush_fails_the_put_and_keeps_the_old_version(
        manager, policy, timestamps, syncfs, use_linkat):
    manager.use_linkat = use_linkat
    first, second = next(timestamps), next(timestamps)
    df = put(manager, policy, first, b'old')
    syncfs.check = fail_with_eio

    with pytest.raises(OSError) as caught:
        put(manager, policy, second, b'new')
    assert caught.value.errno == errno.EIO
    assert files(df) == [first.internal + '.data']
    assert read(manager, policy)[1] == b'old'
    assert temp_files(manager) == []
    assert manager.logger.lines == []

    syncfs.check = None
    put(manager, policy, next(timestamps), b'newer')
    assert read(manager, policy)[1] == b'newer'


@pytest.mark.parametrize('use_linkat', [True, False],
                         ids=['O_TMPFILE', 'mkstemp'])
def test_a_write_whose_own_data_failed_is_refused_though_its_flush_succeeded(
        manager, policy, timestamps, syncfs, file_checks, use_linkat):
    manager.use_linkat = use_linkat
    manager.group_sync('sda').linger = 5.0
    first, second = next(timestamps), next(timestamps)
    df = put(manager, policy, first, b'old')
    file_checks.failing = True

    with pytest.raises(OSError) as caught:
        put(manager, policy, second, b'new')
    assert caught.value.errno == errno.EIO
    # refused before its rename: nothing of it in place
    assert len(syncfs.filesystems) == 2 + 1
    assert files(df) == [first.internal + '.data']
    assert read(manager, policy)[1] == b'old'
    assert temp_files(manager) == []
    assert manager.logger.lines == []

    file_checks.failing = False
    started = time.monotonic()
    put(manager, policy, next(timestamps), b'newer')
    # the refused write is not waited for
    assert time.monotonic() - started < 1.0
    assert read(manager, policy)[1] == b'newer'


def test_a_flush_failing_after_the_rename_keeps_durable_data_in_place(
        manager, policy, timestamps, syncfs):
    """Swift's REPLICATE (or ssync) of the suffix, in any process, can
    remove the older version once the newer file is in place: if the flush
    of the rename then fails, the node must neither end up with no version
    nor keep a suffix hash that matches its peers: the file in place
    stays (its data was flushed before the rename) and the suffix is
    invalidated."""
    first, second = next(timestamps), next(timestamps)
    df = put(manager, policy, first, b'old')
    suffix_dir = os.path.dirname(df._datadir)
    partition_dir = os.path.dirname(suffix_dir)
    suffix = os.path.basename(suffix_dir)
    replicated = []

    def replicate_then_fail():
        if len(files(df)) == 2:
            replicated.append(manager.get_hashes('sda', '0', [suffix],
                                                 policy))
            fail_with_eio()
    syncfs.check = replicate_then_fail

    with pytest.raises(OSError) as caught:
        put(manager, policy, second, b'new')
    assert caught.value.errno == errno.EIO
    assert replicated  # REPLICATE ran between the rename and the failure
    assert files(df) == [second.internal + '.data']
    assert read(manager, policy)[1] == b'new'
    with open(os.path.join(partition_dir, 'hashes.invalid')) as invalid:
        assert suffix in invalid.read().split()
    # what replication compares is what the suffix holds
    syncfs.check = None
    hashes = manager.get_hashes('sda', '0', [], policy)
    for name in ('hashes.pkl', 'hashes.invalid'):
        os.unlink(os.path.join(partition_dir, name))
    assert manager.get_hashes('sda', '0', [], policy) == hashes


def test_concurrent_puts_to_one_device_share_flushes(
        manager, policy, timestamps, syncfs):
    puts = 10
    # a real syncfs of a virtual disk is over before the next write comes;
    # a disk's takes milliseconds
    syncfs.check = lambda: time.sleep(FLUSH_SECONDS)
    timestamp = next(timestamps)
    pool = eventlet.GreenPool()
    for number in range(puts):
        pool.spawn(put, manager, policy, timestamp, b'body %d' % number,
                   'o%d' % number)
    pool.waitall()

    assert 1 <= len(syncfs.filesystems) < puts
    for number in range(puts):
        assert read(manager, policy, 'o%d' % number)[1] == \
            b'body %d' % number
    group_sync = manager.group_sync('sda')
    assert group_sync.flushes == len(syncfs.filesystems)
    # each write waits for two flushes: its data's, its rename's
    assert group_sync.writes_covered == 2 * puts
    # statsd: each flush, the writes it covered, how long it took
    logger = manager.logger
    assert logger.counters == ['group_commit.flushes'] * group_sync.flushes
    assert sum(writes for name, writes in logger.updates
               if name == 'group_commit.writes') == 2 * puts
    assert [name for name, _ in logger.timings] == \
        ['group_commit.flush'] * group_sync.flushes
    assert all(ms >= FLUSH_SECONDS * 1000 for _, ms in logger.timings)


def counted_group_sync(linger):
    """A GroupSync whose flushes only count themselves (in the list it
    comes with)."""
    flushed = []
    return GroupSync('/unused', flush=lambda: flushed.append(1),
                     linger=linger), flushed


def test_a_flush_lingers_for_begun_writes_and_covers_them():
    group_sync, flushed = counted_group_sync(linger=5.0)
    writes = 4
    for _ in range(writes):
        group_sync.begin()

    def write(delay):
        time.sleep(delay)  # its data still on its way
        return group_sync.sync(begun=True)
    delays = iter([0.0, 0.01, 0.02, 0.05])
    runs = run_threads(lambda: write(next(delays)), writes)
    assert len(flushed) == 1
    assert [run.writes for run in runs if run is not None] == [writes]


def test_a_linger_is_bounded_and_ends_with_an_abandoned_write():
    group_sync, flushed = counted_group_sync(linger=0.1)
    group_sync.begin()  # a write that never comes to sync
    started = time.monotonic()
    assert group_sync.sync().writes == 1
    assert 0.1 <= time.monotonic() - started < 2
    group_sync.abandon()
    started = time.monotonic()
    group_sync.sync()
    assert time.monotonic() - started < 0.1
    assert len(flushed) == 2


def test_writes_back_for_their_renames_share_the_next_flush():
    """A write waits for two flushes, its data's then its rename's: the
    writes one flush covered come back from their renames a little apart,
    and the next flush waits for them as for begun writes."""
    group_sync, flushed = counted_group_sync(linger=5.0)
    writes = 4
    for _ in range(writes):
        group_sync.begin()

    def write(delay):
        group_sync.sync(begun=True, returning=True)
        time.sleep(delay)  # its rename
        return group_sync.sync(begun=True)
    delays = iter([0.0, 0.01, 0.02, 0.05])
    runs = run_threads(lambda: write(next(delays)), writes)
    assert len(flushed) == 2
    assert [run.writes for run in runs if run is not None] == [writes]


def test_a_write_that_fails_between_its_flushes_is_not_waited_for():
    group_sync, flushed = counted_group_sync(linger=5.0)
    group_sync.begin()
    group_sync.sync(begun=True, returning=True)
    group_sync.abandon()  # its check or its rename raised
    started = time.monotonic()
    group_sync.sync()
    assert time.monotonic() - started < 1.0
    assert len(flushed) == 2


def test_a_write_whose_flush_failed_is_not_waited_for():
    failing = [True]

    def flush():
        if failing[0]:
            fail_with_eio()
    group_sync = GroupSync('/unused', flush=flush, linger=5.0)
    group_sync.begin()
    with pytest.raises(OSError):
        group_sync.sync(begun=True, returning=True)
    # it does not come back for a rename
    failing[0] = False
    started = time.monotonic()
    group_sync.sync()
    assert time.monotonic() - started < 1.0


def test_writes_under_way_together_share_one_flush(
        manager, policy, timestamps, syncfs):
    """Each write paid a flush of its own unless it reached the device
    exactly while another's flush ran (about 1.06 writes a flush on the
    SAIO's HDD class): a flush now waits for the writes already under
    way."""
    manager.linger = 1.0
    timestamp = next(timestamps)

    def write(number, delay):
        df = diskfile(manager, policy, 'o%d' % number)
        body = b'body %d' % number
        with df.create() as writer:
            writer.write(body)
            eventlet.sleep(delay)  # the second one's data comes later
            writer.put({'X-Timestamp': timestamp.internal,
                        'Content-Type': 'text/plain',
                        'Content-Length': str(len(body)),
                        'ETag': md5(body, usedforsecurity=False).hexdigest()})
    pool = eventlet.GreenPool()
    pool.spawn(write, 0, 0)
    pool.spawn(write, 1, 0.02)
    pool.waitall()
    # one for both writes' data, one for both renames
    assert len(syncfs.filesystems) == 2
    assert manager.group_sync('sda').writes_covered == 4
    for number in (0, 1):
        assert read(manager, policy, 'o%d' % number)[1] == b'body %d' % number


def test_a_write_that_ends_without_a_put_is_not_waited_for(
        manager, policy, timestamps, syncfs):
    manager.group_sync('sda').linger = 5.0
    gone = diskfile(manager, policy, 'gone')
    with gone.create() as writer:
        writer.write(b'half')  # the client went away: no put
    started = time.monotonic()
    put(manager, policy, next(timestamps))
    assert time.monotonic() - started < 1.0
    assert len(syncfs.filesystems) == 2


@pytest.mark.parametrize('option, value, allowed', [
    ('group_commit_linger_ms', '-1', 'a number from 0 to 1000'),
    ('group_commit_linger_ms', 'soon', 'a number from 0 to 1000'),
    ('group_commit_linger_ms', '1001', 'a number from 0 to 1000'),
    ('group_commit_linger_ms', 'nan', 'a number from 0 to 1000'),
    # relative, each process's would depend on where it was started
    ('group_commit_run_dir', 'run/swift', 'an absolute path'),
    ('group_commit_run_dir', ' ', 'an absolute path'),
])
def test_a_bad_option_names_the_option_and_the_allowed_values(
        devices, policy, option, value, allowed):
    # the shared parsers' wording (swift_mass.conf), as mass_queue's
    with pytest.raises(ConfigError) as err:
        GroupCommitDiskFileManager({'devices': devices, option: value},
                                   Logger())
    assert str(err.value) == (
        '[app:object-server] %s = %r is not valid; allowed: %s'
        % (option, value, allowed))


def test_the_options_defaults_come_from_one_table(devices, run_dir):
    # the autouse fixture run_dir changed the table's run directory: the
    # manager takes it from there
    manager = GroupCommitDiskFileManager({'devices': devices}, Logger())
    assert (manager.linger, manager.run_dir) == (0.005, run_dir)
    manager = GroupCommitDiskFileManager(
        {'devices': devices, 'group_commit_linger_ms': ' 0 ',
         'group_commit_run_dir': ' /run/mass '}, Logger())
    assert (manager.linger, manager.run_dir) == (0.0, '/run/mass')
    options = GroupCommitConf({})
    assert (options.linger * 1000.0, options.run_dir) == (
        GROUP_COMMIT_DEFAULTS['group_commit_linger_ms'],
        GROUP_COMMIT_DEFAULTS['group_commit_run_dir'])


# FlushSequence: flushes numbered across processes

def sequences(path, count=2):
    """``count`` FlushSequences of one file, as ``count`` processes open
    it (each its own open file description, which is what flock locks)."""
    return [FlushSequence(path) for _ in range(count)]


def test_a_flush_begun_after_a_groups_writes_covers_it(tmp_path):
    first, second = sequences(str(tmp_path / 'seq'))
    since = second.mark()
    ran = []
    assert first.flush(first.mark(), lambda: ran.append('first')) is True
    # the second's writes were done before that flush began: covered
    assert second.flush(since, lambda: ran.append('second')) is False
    assert ran == ['first']


def test_a_flush_begun_before_a_groups_writes_does_not_cover_it(tmp_path):
    first, second = sequences(str(tmp_path / 'seq'))
    marks = []
    # the second's group closes while the first's flush runs
    assert first.flush(first.mark(), lambda: marks.append(second.mark()))
    ran = []
    assert second.flush(marks[0], lambda: ran.append('second')) is True
    assert ran == ['second']


def test_a_failed_flush_covers_nobody(tmp_path):
    first, second = sequences(str(tmp_path / 'seq'))
    since = second.mark()

    def fail():
        raise OSError(5, 'Input/output error')
    with pytest.raises(OSError):
        first.flush(first.mark(), fail)
    ran = []
    assert second.flush(since, lambda: ran.append('second')) is True
    assert ran == ['second']
    # and the next group may count on that one
    assert first.flush(since, lambda: ran.append('first')) is False


# another process's flush: it says "running" once it holds the flush lock,
# and holds it 0.3 s
OTHER_PROCESS = """
import sys, time
from swift_mass.obj.flush_sequence import FlushSequence
other = FlushSequence(sys.argv[1])

def slow():
    print('running', flush=True)
    time.sleep(0.3)
other.flush(other.mark(), slow)
"""


def test_flushes_of_a_filesystem_run_one_at_a_time_across_processes(
        tmp_path):
    """A real second process: its flush holds the flush lock while it
    runs; this process's group, whose writes were done before that flush
    began, waits for it and is covered by it."""
    path = str(tmp_path / 'seq')
    mine, = sequences(path, 1)
    since = mine.mark()
    other = subprocess.Popen([sys.executable, '-c', OTHER_PROCESS, path],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert other.stdout.readline() == 'running\n'
        started = time.monotonic()
        ran = []
        assert mine.flush(since, lambda: ran.append('mine')) is False
        waited = time.monotonic() - started
    finally:
        assert other.wait(10) == 0
    assert ran == [] and waited >= 0.1


def test_groups_of_two_group_syncs_share_a_flush_through_their_sequence(
        tmp_path):
    """Two processes' GroupSyncs of one filesystem: the second's group
    closes, then the first's flush begins and succeeds: the second's
    group is covered, and runs no flush of its own."""
    path = str(tmp_path / 'seq')
    flushed = []
    first = GroupSync('/unused', flush=lambda: flushed.append('first'),
                      sequence=FlushSequence(path))
    sequence = FlushSequence(path)
    marked = sequence.mark

    def mark_then_the_other_flushes():
        since = marked()
        first.sync()
        return since
    sequence.mark = mark_then_the_other_flushes
    second = GroupSync('/unused', flush=lambda: flushed.append('second'),
                       sequence=sequence)
    flush = second.sync()
    assert flush.borrowed and flush.done and flush.error is None
    assert flushed == ['first']
    assert (first.flushes, second.flushes) == (1, 0)
    assert second.writes_covered == 1
    # a group that closes after that flush began gets one of its own
    sequence.mark = marked
    assert second.sync().borrowed is False
    assert flushed == ['first', 'second']


def test_a_sequence_that_fails_leaves_each_group_to_flush_itself(tmp_path):
    """Its files unreadable (closed here): the group's flush is its own,
    and the writes waiting for it are not left waiting."""
    flushed = []
    sequence = FlushSequence(str(tmp_path / 'seq'))
    group_sync = GroupSync('/unused', flush=lambda: flushed.append(1),
                           sequence=sequence)
    sequence.close()
    results = run_threads(group_sync.sync, 3)
    assert not [r for r in results if isinstance(r, Exception)]
    assert flushed and group_sync.flushes == len(flushed)
    assert group_sync.writes_covered == 3


def test_a_flush_error_is_raised_as_it_is_even_if_not_recorded(tmp_path):
    """The flush's own error, never the sequence's: a caller that got
    the sequence's would flush again, and a second syncfs of the same
    descriptor does not report the writeback error again."""
    first, second = sequences(str(tmp_path / 'seq'))
    since = second.mark()

    def fail_and_lose_the_state():
        os.close(first._state)  # recording the failure fails too
        raise OSError(5, 'Input/output error')
    with pytest.raises(OSError) as caught:
        first.flush(first.mark(), fail_and_lose_the_state)
    assert caught.value.errno == 5
    ran = []
    # nobody counts on the failed flush
    assert second.flush(since, lambda: ran.append('second')) is True


def test_the_manager_numbers_flushes_per_filesystem_in_its_run_dir(
        manager, devices, run_dir):
    os.mkdir(os.path.join(devices, 'sdb'))
    sda, sdb = manager.group_sync('sda'), manager.group_sync('sdb')
    st_dev = os.stat(devices).st_dev
    # both devices are on one filesystem here: one sequence
    assert sda.sequence.path == sdb.sequence.path == os.path.join(
        run_dir, 'mass-group-commit-%d-%d' % (os.major(st_dev),
                                              os.minor(st_dev)))


def test_without_a_usable_run_dir_groups_form_within_the_process(
        devices, policy, tmp_path, timestamps):
    blocked = tmp_path / 'a-file'
    blocked.write_text('not a directory')
    logger = Logger()
    manager = GroupCommitDiskFileManager(
        {'devices': devices, 'mount_check': 'false',
         'group_commit_run_dir': str(blocked / 'run')}, logger)
    put(manager, policy, next(timestamps))
    assert manager.group_sync('sda').sequence is None
    assert read(manager, policy)[1] == b'body'
    assert any('cannot number the flushes' in msg and
               'group_commit_run_dir' in msg for _, msg in logger.lines)


def test_one_group_sync_per_device(manager, devices):
    os.mkdir(os.path.join(devices, 'sdb'))
    sda = manager.group_sync('sda')
    assert manager.group_sync('sda') is sda
    assert sda.path == os.path.join(devices, 'sda')
    assert manager.group_sync('sdb').path == os.path.join(devices, 'sdb')


# In the object server, from swift.conf's diskfile_module

def setup_cfg_entry_point(group, name):
    setup_cfg = configparser.ConfigParser()
    setup_cfg.read(os.path.join(ROOT, 'setup.cfg'))
    lines = setup_cfg['options.entry_points'][group].strip().splitlines()
    values = dict(line.replace(' ', '').split('=', 1) for line in lines)
    return EntryPoint(name, values[name], group)


def test_setup_cfg_names_the_manager_for_replication_policies():
    manager_cls = setup_cfg_entry_point(
        'swift.diskfile', 'replication.group_commit').load()
    assert manager_cls is GroupCommitDiskFileManager
    assert manager_cls.policy == REPL_POLICY == 'replication'


class Records(logging.Handler):
    def __init__(self):
        super(Records, self).__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def object_server_log():
    """The object server's logger, Swift's own, logging to a list instead
    of the machine's syslog."""
    logger = get_logger({}, log_route='test-group-commit-object-server')
    for handler in list(logger.logger.handlers):
        logger.logger.removeHandler(handler)
        handler.close()
    records = Records()
    logger.logger.addHandler(records)
    yield logger, records.records
    logger.logger.removeHandler(records)


@pytest.fixture
def object_server(devices, policy, object_server_log, monkeypatch):
    """An object server whose policy 0 loads this module from its
    diskfile_module (as an installed swift_mass would: the one installed
    here is another checkout's, so the entry point is this setup.cfg's)."""
    def load_pkg_resource(group, uri):
        assert uri == DISKFILE_MODULE
        return setup_cfg_entry_point(group, uri.split('#')[1]).load()
    monkeypatch.setattr(storage_policy, 'load_pkg_resource',
                        load_pkg_resource)
    return ObjectController({'devices': devices, 'mount_check': 'false'},
                            logger=object_server_log[0])


def object_request(method, timestamp, body=None):
    return Request.blank(
        '/sda/0/a/c/o', method=method, body=body,
        headers={'X-Timestamp': timestamp.internal,
                 'Content-Type': 'text/plain'})


def test_the_object_server_answers_500_not_201_when_the_flush_fails(
        object_server, object_server_log, timestamps, syncfs):
    assert isinstance(object_server._diskfile_router[0],
                      GroupCommitDiskFileManager)
    put_old = object_request('PUT', next(timestamps), b'old')
    assert put_old.get_response(object_server).status_int == 201
    syncfs.check = fail_with_eio

    put_new = object_request('PUT', next(timestamps), b'new')
    assert put_new.get_response(object_server).status_int == 500
    delete = object_request('DELETE', next(timestamps))
    assert delete.get_response(object_server).status_int == 500
    syncfs.check = None
    get = object_request('GET', next(timestamps))
    assert get.get_response(object_server).body == b'old'
    errors = [record.getMessage() for record in object_server_log[1]
              if record.levelno == logging.ERROR]
    assert [error.split(' /')[0] for error in errors] == \
        ['ERROR __call__ error with PUT', 'ERROR __call__ error with DELETE']
    assert all(error.endswith(os.strerror(errno.EIO)) for error in errors)


def test_the_object_server_answers_500_when_the_files_own_check_fails(
        object_server, object_server_log, timestamps, file_checks):
    put_old = object_request('PUT', next(timestamps), b'old')
    assert put_old.get_response(object_server).status_int == 201
    file_checks.failing = True

    put_new = object_request('PUT', next(timestamps), b'new')
    assert put_new.get_response(object_server).status_int == 500
    file_checks.failing = False
    get = object_request('GET', next(timestamps))
    assert get.get_response(object_server).body == b'old'
    errors = [record.getMessage() for record in object_server_log[1]
              if record.levelno == logging.ERROR]
    assert [error.split(' /')[0] for error in errors] == \
        ['ERROR __call__ error with PUT']


def test_a_policy_of_another_type_refuses_the_module():
    erasure_coded = type('Policy', (), {'policy_type': 'erasure_coding'})()
    with pytest.raises(ValueError):
        GroupCommitDiskFileManager.check_policy(erasure_coded)


# The kernel

@pytest.mark.parametrize('release', [
    '5.8.0', '5.10.0-23-amd64', '6.18.44-fc-v595', '10.0.1'])
def test_a_kernel_whose_syncfs_reports_writeback_errors_is_accepted(release):
    mass_diskfile.check_kernel(release)


@pytest.mark.parametrize('release', [
    '5.7.19', '5.4.0-150-generic', '4.18.0-553.el8_10.x86_64', '2.6.39',
    'unknown'])
def test_an_older_kernel_is_refused_naming_the_requirement(release):
    with pytest.raises(RuntimeError) as err:
        mass_diskfile.check_kernel(release)
    assert str(err.value) == (
        'replication.group_commit needs Linux 5.8 or later, whose syncfs '
        'reports writeback errors; this kernel is %r' % release)


def test_the_manager_refuses_to_start_on_an_older_kernel(
        devices, policy, monkeypatch):
    uname = os.uname()
    monkeypatch.setattr(os, 'uname', lambda: os.uname_result(
        (uname.sysname, uname.nodename, '5.4.0-150-generic', uname.version,
         uname.machine)))
    with pytest.raises(RuntimeError) as err:
        GroupCommitDiskFileManager({'devices': devices}, Logger())
    assert "this kernel is '5.4.0-150-generic'" in str(err.value)


def test_flushes_labeled_by_device(devices, policy, timestamps, syncfs,
                                   sent):
    """With statsd_label_mode (Swift >= 2.36), each flush also goes out
    as swift_mass_group_commit_* labeled with its device; the legacy
    group_commit.* are as they were."""
    lines = sent
    manager = GroupCommitDiskFileManager(
        {'devices': devices, 'mount_check': 'false',
         'log_statsd_host': '127.0.0.1', 'statsd_label_mode': 'dogstatsd'},
        Logger())
    put(manager, policy, next(timestamps))
    flushes = manager.group_sync('sda').flushes
    assert flushes >= 1
    assert manager.logger.counters == ['group_commit.flushes'] * flushes
    assert lines.count('swift_mass_group_commit_flushes:1|c|#device:sda') \
        == flushes
    assert sum(int(line.split(':')[1].split('|')[0]) for line in lines
               if line.startswith('swift_mass_group_commit_writes:')) == 2
    timings = [line for line in lines
               if line.startswith('swift_mass_group_commit_flush_timing:')]
    assert len(timings) == flushes
    assert all(line.endswith('|ms|#device:sda') for line in timings)


def test_a_put_while_the_partition_power_increases_is_linked_under_the_next(
        manager, policy, timestamps, syncfs):
    # as Swift's writer does: the new file also in its partition under the
    # next partition power, for the relinker; both covered by the second
    # flush
    timestamp = next(timestamps)
    df = manager.get_diskfile('sda', '0', 'a', 'c', 'o', policy=policy,
                              next_part_power=16)
    with df.create() as writer:
        writer.write(b'body')
        writer.put({'X-Timestamp': timestamp.internal,
                    'Content-Type': 'text/plain', 'Content-Length': '4',
                    'ETag': md5(b'body', usedforsecurity=False).hexdigest()})
    data_file = os.path.join(df._datadir, timestamp.internal + '.data')
    relinked = replace_partition_in_path(manager.devices, data_file, 16)
    assert relinked != data_file
    assert os.stat(relinked).st_ino == os.stat(data_file).st_ino
    device = os.stat(manager.devices).st_dev
    assert syncfs.filesystems == [device, device]
