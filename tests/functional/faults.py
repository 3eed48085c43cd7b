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
"""Faults the functional tests inject into the SAIO, and what they watch
while a fault lasts.

* :func:`ring_broken_in_place`: an object ring file overwritten in place
  with a truncated copy of itself (as ``cp`` over it does, not a rename),
  the good bytes written back at the end.  Swift's ``Ring`` reloads a ring
  whose file changed every ``reload_time`` (15 s) and raises while the
  file cannot be loaded, keeping the old ring in between.
* :class:`Registry` and :class:`RegistrationWatch`: the object servers'
  registrations as bumping generations (``mass_queue``'s heartbeat, every
  half second: hash ``bumping:<device>``, a field per process,
  ``"<version> <expiry ms>"``, swift_mass/generations/), read where the
  proxies read them; a device with no live registration makes every proxy
  validate every hit against the object servers, and an object server
  whose heartbeat stopped bumps the writes of every tenant.
* :func:`refusing_objects`: one object server's ``objects`` directory (the
  standard policy's) on a device that refuses writes, the one
  tests/functional/test_group_commit_errors.py builds (XFS on a loop device
  whose backing file is on a tmpfs that is full).
"""
import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time

from swift.common.ring.ring import DEFAULT_RELOAD_TIME
from swift.common.storage_policy import POLICIES
from swift.common.utils import hash_path

from swift_mass.ring_devices import ring_devices
from tests.functional.test_cache import proxies_redis
from tests.functional.test_group_commit_errors import RefusingDevice, run

SWIFT_DIR = '/etc/swift'
# The ring of the `fast` policy (2 replicas on sdb1-2): every object
# server's mass_queue and every proxy's cache read every object ring (the
# devices a bump must cover), while Swift reads it only for `fast`
# containers, so a tenant of `standard` is still served by Swift.
FAST_RING = os.path.join(SWIFT_DIR, 'object-1.ring.gz')
# long enough for every process to reload the broken ring twice
BROKEN_FOR = 2 * DEFAULT_RELOAD_TIME + 5
# how long a registration lives after the heartbeat that made it
# (Generations.registration_ms: the default gap of 2 s, which the SAIO
# keeps, and 5 s)
REGISTRATION_LIFE = 7.0


@contextlib.contextmanager
def ring_broken_in_place(path):
    """``path`` truncated to half its bytes in place for the block (a copy
    kept beside it, in case the test dies), then written back in place,
    whatever happens."""
    with open(path, 'rb') as ring:
        good = ring.read()
    copy = path + '.mass-test-copy'
    shutil.copy2(path, copy)
    try:
        # in place: the same inode, truncated and rewritten, as cp does
        with open(path, 'r+b') as ring:
            ring.truncate(len(good) // 2)
        yield
    finally:
        with open(path, 'r+b') as ring:
            ring.write(good)
            ring.truncate()
            ring.flush()
            os.fsync(ring.fileno())
        os.unlink(copy)


class Registry(object):
    """The registrations of the devices of the SAIO's object rings (read
    once, before any ring is broken), in the Redis the proxies use."""

    def __init__(self):
        self.client, prefix = proxies_redis()
        self.prefix = prefix + 'bumping:'
        self.devices = sorted(ring_devices(SWIFT_DIR))

    def expiries(self):
        """{device: the latest expiry (Redis's ms) of its live
        registrations, or None when it has none}."""
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        for name in self.devices:
            pipe.hvals(self.prefix + name)
        (seconds, micros), *found = pipe.execute()
        now = seconds * 1000 + micros // 1000
        latest = {}
        for name, values in zip(self.devices, found):
            live = [int(value.split()[1]) for value in values
                    if int(value.split()[1]) >= now]
            latest[name] = max(live) if live else None
        return latest

    def unregistered(self):
        return sorted(name for name, expiry in self.expiries().items()
                      if expiry is None)

    def renewed(self, within):
        """Whether, within ``within`` seconds, every device's registration
        was renewed since this call: a heartbeat of its object server ran
        after it."""
        before = self.expiries()
        deadline = time.time() + within
        while time.time() < deadline:
            if all((expiry or 0) > (before[name] or 0)
                   for name, expiry in self.expiries().items()):
                return True
            time.sleep(0.2)
        return False


class RegistrationWatch(threading.Thread):
    """Samples the registry every ``interval`` seconds while the block
    runs; ``gaps`` the samples that found a device with no live
    registration, as (seconds into the watch, [devices])."""

    def __init__(self, registry, interval=0.25):
        super(RegistrationWatch, self).__init__(daemon=True)
        self.registry = registry
        self.interval = interval
        self.samples = 0
        self.gaps = []
        self.errors = []
        self._stop_event = threading.Event()

    def run(self):
        started = time.time()
        while not self._stop_event.is_set():
            try:
                missing = self.registry.unregistered()
            except Exception as err:  # reported by the test, not lost
                self.errors.append(repr(err))
            else:
                self.samples += 1
                if missing:
                    self.gaps.append((round(time.time() - started, 1),
                                      missing))
            self._stop_event.wait(self.interval)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self._stop_event.set()
        self.join(10)


def object_dir(node, policy_index=0):
    """Storage server ``node``'s directory of a policy's objects on its
    device (tools/saio: /srv/<n>/node/sdb<n>, one device per server)."""
    return '/srv/%d/node/sdb%d/%s' % (
        node, node, 'objects' if not policy_index else
        'objects-%d' % policy_index)


def _written(path, data):
    """Whether ``data`` reached the device as ``path`` (fsync)."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _take_what_is_left(mount_point):
    """Write until the device refuses every new block.  After
    RefusingDevice.fill the tmpfs still has room for what the filesystem
    rewrites in place, which a new object's data could take; and blocks
    freed since (a file's preallocation trimmed) keep their pages: small
    files in new directories, which XFS spreads over its allocation
    groups, find those.  Each left, a replica written there before a write
    it refused would serve an older version than the other replicas."""
    fd = os.open(os.path.join(mount_point, 'room'),
                 os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        for _ in range(64):
            os.write(fd, b'\0' * (64 * 1024))
            try:
                os.fsync(fd)
            except OSError:
                break
        else:
            raise AssertionError('the device took 4 MiB past its fill')
    finally:
        os.close(fd)
    refused = 0
    for n in range(10000):
        directory = os.path.join(mount_point, 'left', str(n))
        os.makedirs(directory)
        refused = 0 if _written(os.path.join(directory, 'f'),
                                b'\1' * 512) else refused + 1
        if refused == 64:
            return
    raise AssertionError('the device took 10,000 small files past its fill')


def _fail_fast(loop):
    """XFS gives up a metadata write the device refused at once (shutting
    the filesystem down) instead of retrying it for ever, which would pin
    its log and hang the object server's next transaction there."""
    errors = '/sys/fs/xfs/%s/error/metadata' % os.path.basename(loop)
    for kind in ('EIO', 'ENOSPC', 'default'):
        for name, value in (('max_retries', '0'),
                            ('retry_timeout_seconds', '0')):
            path = os.path.join(errors, kind, name)
            if os.path.exists(path):
                with open(path, 'w') as knob:
                    knob.write(value)


def _unmount(path):
    for _ in range(10):
        if subprocess.run(['umount', path], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL,
                          timeout=60).returncode == 0:
            return
        time.sleep(0.5)  # a request of the object server still in it
    subprocess.run(['umount', '--lazy', path], check=True, timeout=60)


@contextlib.contextmanager
def refusing_objects(node, root, account, container, names):
    """Storage server ``node``'s standard-policy objects on a device that
    refuses every write for the block: the object server's writes there
    fail (EIO from fsync; the filesystem shut down, once a metadata write
    is refused), its reads find nothing.

    The device comes back empty of ``account/container``'s ``names``, as a
    disk replaced after it failed: the copies the server held before are
    taken out of its directory, under the refusing one, before it is
    unmounted.  Put back, they would be older than the writes acknowledged
    meanwhile by the other replicas, and Swift's proxy, with or without
    Mass, would serve them to the reads that reach this server until a
    replicator ran (none runs on the SAIO)."""
    objects = object_dir(node)
    os.makedirs(objects, exist_ok=True)
    device = RefusingDevice(root)
    under = tempfile.mkdtemp(prefix='mass-under-')
    try:
        device.set_up()
        os.makedirs(os.path.join(device.mount_point, 'objects'))
        device.fill()
        _take_what_is_left(device.mount_point)
        _fail_fast(device.loop)
        run('mount', '--bind', os.path.join(device.mount_point, 'objects'),
            objects)
        try:
            yield
        finally:
            # the server's own directory, under the bind (a bind of the
            # device's directory does not carry the mounts below it)
            run('mount', '--bind', os.path.dirname(objects), under)
            try:
                ring = POLICIES.get_object_ring(0, SWIFT_DIR)
                for name in names:
                    part = ring.get_part(account, container, name)
                    digest = hash_path(account, container, name)
                    shutil.rmtree(os.path.join(
                        under, 'objects', str(part), digest[-3:], digest),
                        ignore_errors=True)
            finally:
                _unmount(under)
            _unmount(objects)
    finally:
        try:
            device.tear_down()
        except AssertionError:
            # umount may report the metadata the device refused (XFS shuts
            # down as it unmounts); it unmounted lazily then
            pass
        assert not any(os.path.ismount(path) for path in device.mounted)
        os.rmdir(under)
