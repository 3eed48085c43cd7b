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
"""Group commit (swift_mass.obj.diskfile) against a device that refuses
writes: an XFS filesystem on a loop device whose backing file is sparse on
a small tmpfs.  Once the tmpfs is full, writeback of new data blocks fails
(ENOSPC from the loop device) while the metadata, written in place over
blocks the tmpfs already holds, still goes through, so the filesystem stays
up and only the refused file's data is lost, as on a disk with bad sectors.

The group-commit diskfile is driven directly, through Swift's
DiskFileManager (no Swift server); the same device, not filled, counts the
requests a write's own check sends it.  Needs root, losetup, mkfs.xfs and
fsfreeze.
"""
import errno
import itertools
import os
import shutil
import subprocess
import time

import pytest
from swift.common import storage_policy
from swift.common.storage_policy import StoragePolicy, \
    StoragePolicyCollection
from swift.common.utils import Timestamp, md5

from swift_mass.obj.diskfile import GroupCommitDiskFileManager, \
    check_written, syncfs
from tests.unit.helpers import Logger

# room for the filesystem's metadata to be rewritten in place, far less
# than the refused write's data
HEADROOM = 256 * 1024
REFUSED_BODY = 4 * 1024 * 1024
REFUSED = (errno.ENOSPC, errno.EIO)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, timeout=60)


def used(path):
    stat = os.statvfs(path)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


class RefusingDevice(object):
    """``<devices>/sda``: XFS on a loop device backed by a sparse file on a
    tmpfs that :meth:`fill` shrinks to what is already written."""

    def __init__(self, root):
        self.backing = os.path.join(root, 'backing')
        self.devices = os.path.join(root, 'devices')
        self.mount_point = os.path.join(self.devices, 'sda')
        self.loop = None
        self.mounted = []

    def set_up(self):
        for path in (self.backing, self.mount_point):
            os.makedirs(path)
        run('mount', '-t', 'tmpfs', '-o', 'size=256m', 'tmpfs', self.backing)
        self.mounted.append(self.backing)
        image = os.path.join(self.backing, 'image')
        with open(image, 'wb') as sparse:
            # XFS's smallest; only what mkfs and the writes touch takes
            # room on the tmpfs
            sparse.truncate(512 * 1024 * 1024)
        self.loop = subprocess.run(
            ['losetup', '--find', '--show', image], check=True,
            stdout=subprocess.PIPE, text=True, timeout=60).stdout.strip()
        # -K: a discard would punch the image's zeroed log out of the tmpfs
        run('mkfs.xfs', '-q', '-f', '-K', self.loop)
        run('mount', self.loop, self.mount_point)
        self.mounted.append(self.mount_point)

    def requests(self):
        """The loop device's write requests and cache flushes so far."""
        with open('/sys/block/%s/stat' % os.path.basename(self.loop)) as f:
            fields = [int(field) for field in f.read().split()]
        return fields[4], fields[15]

    def settle(self):
        # a freeze writes the log and every dirty metadata block in place
        run('fsfreeze', '--freeze', self.mount_point)
        run('fsfreeze', '--unfreeze', self.mount_point)

    def fill(self):
        """From now on the device refuses data written to blocks it has not
        written before."""
        # what the filesystem rewrites in place later already has room
        self.settle()
        run('mount', '-o', 'remount,size=%d' % (used(self.backing) + HEADROOM),
            self.backing)

    def tear_down(self):
        errors = []
        for path in reversed(self.mounted):
            try:
                run('umount', path)
            except subprocess.CalledProcessError as err:
                errors.append(err.stdout)
                # not left mounted on the machine, whatever holds it
                subprocess.run(['umount', '--lazy', path], timeout=60)
            if path == self.mount_point and self.loop:
                subprocess.run(['losetup', '--detach', self.loop],
                               timeout=60)
        assert errors == []


@pytest.fixture
def device(tmp_path):
    missing = [tool for tool in ('losetup', 'mkfs.xfs', 'fsfreeze')
               if not shutil.which(tool)]
    if os.geteuid() != 0 or missing:
        pytest.fail('a loop-mounted filesystem needs root and %s; missing: '
                    '%s' % (', '.join(('losetup', 'mkfs.xfs', 'fsfreeze')),
                            ', '.join(missing) or 'root'))
    refusing = RefusingDevice(str(tmp_path))
    try:
        refusing.set_up()
        yield refusing
    finally:
        refusing.tear_down()


@pytest.fixture
def policy(monkeypatch):
    policy = StoragePolicy(
        0, 'group-commit', is_default=True,
        diskfile_module='egg:swift_mass#replication.group_commit')
    monkeypatch.setattr(storage_policy, '_POLICIES',
                        StoragePolicyCollection([policy]))
    return policy


@pytest.fixture
def manager(device, policy):
    # no linger: a flush never waits for the write the test holds back
    manager = GroupCommitDiskFileManager(
        {'devices': device.devices, 'mount_check': 'false',
         'group_commit_linger_ms': '0'}, Logger())
    try:
        yield manager
    finally:
        # The device's flush descriptor stays open for the life of a
        # server; the test's device must be unmounted after it.
        for group_sync in manager._group_syncs.values():
            os.close(group_sync._fd)


@pytest.fixture
def timestamps():
    return (Timestamp(t) for t in itertools.count(int(time.time())))


def diskfile(manager, policy, obj):
    return manager.get_diskfile('sda', '0', 'a', 'c', obj, policy=policy)


def metadata(timestamp, body):
    return {'X-Timestamp': timestamp.internal,
            'Content-Type': 'application/octet-stream',
            'Content-Length': str(len(body)),
            'ETag': md5(body, usedforsecurity=False).hexdigest()}


def put(manager, policy, obj, timestamp, body):
    with diskfile(manager, policy, obj).create() as writer:
        writer.write(body)
        writer.put(metadata(timestamp, body))


def on_disk(manager, policy, obj):
    """The object's files and the body a GET would read."""
    df = diskfile(manager, policy, obj)
    with df.open():
        body = b''.join(df.reader())
    return sorted(os.listdir(df._datadir)), body


def test_a_write_whose_data_the_device_refused_is_not_acknowledged(
        device, manager, policy, timestamps):
    old = next(timestamps)
    put(manager, policy, 'o', old, b'old')
    device.fill()

    with pytest.raises(OSError) as refused:
        put(manager, policy, 'o', next(timestamps),
            os.urandom(REFUSED_BODY))
    assert refused.value.errno in REFUSED
    assert on_disk(manager, policy, 'o') == ([old.internal + '.data'],
                                             b'old')


def test_the_refusal_reaches_its_write_after_another_writes_flush_took_it(
        device, manager, policy, timestamps):
    """The device's syncfs descriptor reports a writeback error once: the
    flush that meets it first fails its own writes, and the write whose
    data was refused, flushed afterwards, must still not be acknowledged."""
    old = next(timestamps)
    for obj in ('a', 'b'):
        put(manager, policy, obj, old, b'old')
    device.fill()

    with diskfile(manager, policy, 'b').create() as refused_writer:
        refused_body = os.urandom(REFUSED_BODY)
        refused_writer.write(refused_body)
        # another write's flush writes the refused data back, and its
        # syncfs takes the error
        with pytest.raises(OSError) as first:
            put(manager, policy, 'a', next(timestamps), b'small')
        assert first.value.errno in REFUSED

        with pytest.raises(OSError) as refused:
            refused_writer.put(metadata(next(timestamps), refused_body))
    assert refused.value.errno in REFUSED
    assert on_disk(manager, policy, 'b') == ([old.internal + '.data'],
                                             b'old')


def test_a_writes_own_check_after_its_flush_adds_no_device_io(device):
    """What each write adds to the group's flush, on pages that flush
    wrote: no write and no cache flush (fdatasync would send a cache flush
    per write on XFS and ext4)."""
    fds = []
    try:
        for number in range(20):
            path = os.path.join(device.mount_point, 'f%d' % number)
            fds.append(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            os.write(fds[-1], os.urandom(64 * 1024))
            os.setxattr(fds[-1], 'user.swift.metadata', b'm' * 200)
        syncfs(fds[0])
        device.settle()
        before = device.requests()
        for fd in fds:
            check_written(fd)
        assert device.requests() == before
    finally:
        for fd in fds:
            os.close(fd)
