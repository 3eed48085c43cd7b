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
"""The flushes of one filesystem, numbered across the processes of a node
(:class:`FlushSequence`), for group commit (:mod:`swift_mass.obj.diskfile`)
to share them between processes."""
import fcntl
import os
import struct


class SequenceUnavailable(Exception):
    """The sequence's files could not be read, written or locked; no
    flush was run for the caller."""


class FlushSequence(object):
    """The flushes of one filesystem, numbered across the processes that
    flush it, so that a process's writes are covered by a flush another
    process began after them: every object server worker, each policy's
    manager and the ssync receiver flush a device on their own, and
    without this, groups form only within one of them.

    Two small files under ``run_dir``, named by the filesystem's device
    number: the state (the number of the last flush begun, of the last
    completed, and whether that one succeeded), read and written under an
    exclusive ``flock`` of it, for a few microseconds; and the flush lock,
    held with ``flock`` for the whole flush, so that the flushes of a
    filesystem run one at a time across processes, as they do within one.
    A process that dies holding a lock releases it with its descriptors.

    ``flock`` locks an open file description, so two managers of one
    process (two policies) exclude each other too.  The files hold no
    data of the device: they live on the run directory's filesystem
    (tmpfs, usually), which the device's flushes do not write."""

    STATE = struct.Struct('<qqq')

    def __init__(self, path):
        self.path = path
        self._state = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._lock = os.open(path + '.flush', os.O_RDWR | os.O_CREAT,
                                 0o644)
        except OSError:
            os.close(self._state)
            raise

    @classmethod
    def for_filesystem(cls, run_dir, path):
        """The sequence of the filesystem ``path`` is on."""
        st_dev = os.stat(path).st_dev
        return cls(os.path.join(run_dir, 'mass-group-commit-%d-%d' % (
            os.major(st_dev), os.minor(st_dev))))

    def _read(self):
        raw = os.pread(self._state, self.STATE.size, 0)
        if len(raw) < self.STATE.size:
            return 0, 0, 1  # no flush yet
        return self.STATE.unpack(raw)

    def _write(self, begun, completed, ok):
        os.pwrite(self._state, self.STATE.pack(begun, completed, ok), 0)

    def _locked(self, action):
        fcntl.flock(self._state, fcntl.LOCK_EX)
        try:
            return action()
        finally:
            fcntl.flock(self._state, fcntl.LOCK_UN)

    def mark(self):
        """The number of the last flush begun by any process: one
        numbered above it begins after this call.  Raises
        :class:`SequenceUnavailable`."""
        try:
            return self._locked(self._read)[0]
        except OSError as err:
            raise SequenceUnavailable(err)

    def flush(self, since, run):
        """Once no flush of the filesystem runs: if one numbered above
        ``since`` (:meth:`mark`) has succeeded meanwhile, False; else
        ``run()`` as the next flush, True.

        ``run``'s exception is raised as it is, and the flush recorded as
        failed, so that nobody counts on it.  :class:`SequenceUnavailable`
        only before ``run`` was called: the caller may flush for itself."""
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        except OSError as err:
            raise SequenceUnavailable(err)
        try:
            try:
                number = self._locked(lambda: self._begin(since))
            except OSError as err:
                raise SequenceUnavailable(err)
            if number is None:
                return False
            try:
                run()
            except BaseException:
                self._record(number, 0)
                raise
            self._record(number, 1)
            return True
        finally:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            except OSError:
                pass  # closing the descriptor would release it too

    def _begin(self, since):
        """Under both locks: None if a flush numbered above ``since``
        has succeeded, else the number of the flush now begun."""
        begun, completed, ok = self._read()
        if completed > since and ok:
            return None
        self._write(begun + 1, completed, ok)
        return begun + 1

    def _record(self, number, ok):
        """Flush ``number`` ended (``ok``); never raises: whoever cannot
        read that it succeeded runs a flush of its own, never counts on
        one that failed.  Only a holder of the flush lock begins a flush,
        so ``number`` is still the last begun."""
        try:
            self._locked(lambda: self._write(number, number, ok))
        except OSError:
            pass

    def close(self):
        os.close(self._lock)
        os.close(self._state)
