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
"""Group commit for a replicated storage policy's object writes: a Swift
diskfile module whose concurrent writes to one device share its flushes.

Swift's object server makes every PUT, DELETE and POST durable on its own
(:meth:`swift.obj.diskfile.BaseDiskFileWriter._finalize_put`): it fsyncs
the new file, renames it into place and fsyncs the directories the rename
touched, a few synchronous writes per object.  A disk that does ~150 of them
a second caps the device at a few dozen object writes a second, however
many requests wait for it.  Here each write waits instead for two
``syncfs(2)`` of the device's filesystem (:class:`GroupSync`), one in place
of Swift's fsync of the file, one in place of its fsyncs of the
directories; every write that arrived while the previous flush ran shares
the next one, so a busy device flushes a few times a second for any number
of writes.

**Durability.**  The steps are Swift's, in Swift's order: the file's data
and metadata (xattrs) written; a flush that began after that; the rename
(or link); a flush that began after it; then the older versions of the
object (the ``.data``, ``.meta`` and ``.ts`` files the new one makes
obsolete) removed.  The object server answers a PUT (201), DELETE or POST
only after the writer's ``put()`` returns, after the second flush.  As with
Swift's fsyncs, a file is in a hash directory only once its data is
durable: replication (REPLICATE or ssync, in any process) removes older
versions as soon as a newer file is in place, and must never remove a
durable version for one that a failed flush or a crash can take away.  A
crash before the second flush loses only a write nobody was told had
succeeded.

**Failures.**  If the first flush fails, or the write's own check (below)
does, ``put()`` raises before the rename and nothing of the write is in
place: the object server answers 500 and removes the temp file, as when
Swift's fsync fails.  If the second flush fails, ``put()`` raises too (500),
but the file stays in place: its data is durable and replication may
already have removed the version it replaces (Swift keeps it too, and only
logs a failed fsync of the directory).  Its suffix is invalidated again, so
that replication hashes it from what the directory holds.

**Write errors.**  syncfs reports a writeback error once per descriptor
(since Linux 5.8; the superblock's errseq, sampled when the descriptor is
opened): a device's flushes share one descriptor per process, so the first
flush after the error reports it, to the writes that flush covers, and not
to a later write whose own data was refused.  After its first flush each
write therefore asks its own file's descriptor:
``sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`` returns the file's
writeback error recorded since that descriptor was opened (the file's own
errseq), whoever's flush wrote the pages, and raises it like a failed
fsync.  With the pages just written by the flush it writes nothing and
waits for nothing (measured: docs/queue.md, "Group commit's
measurements"; the functional tests check it on XFS).  ``fdatasync``
reports the same error but sends a cache flush per call, as XFS and ext4
do when they have nothing to commit: the per-write device operation group
commit exists to avoid.  The manager
refuses to start on a kernel older than 5.8 (:func:`check_kernel`), whose
syncfs reports no writeback error at all.

**Configuration**, in swift.conf, per storage policy (the module's
entry point is ``swift.diskfile`` ``replication.group_commit``)::

    [storage-policy:2]
    name = bulk
    policy_type = replication
    diskfile_module = egg:swift_mass#replication.group_commit

Every process that opens the policy's diskfiles (object server, replicator,
auditor, ...) loads it; only the writes of the object server and the ssync
receiver go through :meth:`GroupCommitDiskFileWriter._finalize_put`.

**Across processes.**  Every object server worker (and each policy
using this module, and the ssync receiver) flushes a device on its own.
The processes of a node number each filesystem's flushes in a small file
under ``group_commit_run_dir`` (in ``[app:object-server]`` or
``[DEFAULT]``; default ``/var/run/swift``, swift-init's run directory)
(:class:`FlushSequence`): a group whose flush would start while another
process's runs waits for it to end, and if that process began a flush
after the group's writes and it succeeded, the group is covered without
a flush of its own.  Where the directory cannot be used, a warning says
so and groups form within each process only.

**Linger.**  A flush that is about to start while other writes to its
device are under way in the same process (their files open, their data on
its way, or back from the previous flush for their renames) waits for them
to reach it, at most ``group_commit_linger_ms`` milliseconds (in the object
server's ``[app:object-server]`` or ``[DEFAULT]``; default 5, 0 turns it
off): without it, writes that arrive a little apart each pay a flush of
their own and a group is rarely more than one write.  A write that ends
without a put (an error, a client gone) stops being waited for.

**Cost.**  A write waits for two flushes, so about one flush longer than
with a single flush after the rename, and one write alone costs two, as
many as Swift's fsyncs.  Each flush carries the data of some
writes and the renames of others, so a busy device flushes no more often.
With two flushes a write and W writes in flight on a device, the device
flushes at least 2 / W times a write, however long it lingers.  What it
was measured to cost and save, on a loop device and against Swift's own
diskfile on the SAIO's modelled HDDs: docs/queue.md, "Group commit's
measurements".

**Where it is weaker than Swift's fsyncs.**

* syncfs flushes the whole filesystem, not the object's file: one write
  waits for everything else dirty on it.  It is meant for one filesystem per
  device, as Swift deploys; on a filesystem shared with other busy writers
  (or several devices on one filesystem, as in a SAIO) each flush is bigger.
* With ``servers_per_port`` the object server gives each worker one tpool
  thread, so writes run one at a time there and share a flush only with
  other processes' writes; the tpool needs several threads per device
  (``eventlet_tpool_num_threads``) for groups to form within a worker.
* A syncfs error cannot be traced to a file: it fails every write the
  flush covers, whether or not its own data was refused.
* syncfs returns the filesystem's own sync errors (a journal commit or an
  XFS log write that failed) only since Linux 5.17; before, only writeback
  errors.
* :class:`GroupSync` keeps a descriptor open on each device's root, so the
  device cannot be unmounted while the server runs (``umount`` says busy)
  until it restarts.  A device lazily unmounted and replaced by another
  filesystem at the same path is noticed at the next flush.
* Between its rename and the second flush a file is in place with its data
  durable but not its name: a GET may read it (as Swift's own GETs can
  between the rename and the directory's fsync).
"""
import copy
import ctypes
import logging
import os
import re
import time
from os.path import basename, join

from eventlet import patcher

from swift.common.utils import drop_buffer_cache, link_fd_to_path, \
    renamer, replace_partition_in_path
from swift.common.utils.libc import load_libc_function
from swift.obj.diskfile import DiskFile, DiskFileManager, DiskFileWriter, \
    relink_paths, write_metadata

from swift_mass import metrics
from swift_mass.conf import GroupCommitConf
from swift_mass.obj.flush_sequence import FlushSequence, \
    SequenceUnavailable

# The object server monkey-patches threading before it loads a diskfile
# module (swift.common.wsgi.run_wsgi); GroupSync is used by tpool's OS
# threads, which must block on the OS's locks, as eventlet.tpool's own do.
threading = patcher.original('threading')

# Python (3.11 here) has os.sync() but neither os.syncfs() nor
# os.sync_file_range(), so they come from libc; errcheck makes a failure an
# OSError.
syncfs = load_libc_function('syncfs', fail_if_missing=True, errcheck=True)
sync_file_range = load_libc_function('sync_file_range', fail_if_missing=True,
                                     errcheck=True)
# off64_t offsets: ctypes would pass Python ints as C ints
sync_file_range.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_uint)
SYNC_FILE_RANGE_WAIT_BEFORE = 1
SYNC_FILE_RANGE_WRITE = 2
SYNC_FILE_RANGE_WAIT_AFTER = 4

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY
MIN_KERNEL = (5, 8)


def check_kernel(release):
    """Refuse a kernel whose syncfs does not report writeback errors
    (before Linux 5.8 it reports none): RuntimeError naming the
    requirement.

    :param release: the kernel's release, as ``uname -r`` gives it
    """
    match = re.match(r'(\d+)\.(\d+)', release)
    if not match or tuple(map(int, match.groups())) < MIN_KERNEL:
        raise RuntimeError(
            'replication.group_commit needs Linux %d.%d or later, whose '
            'syncfs reports writeback errors; this kernel is %r'
            % (MIN_KERNEL + (release,)))


def check_written(fd):
    """Raise the writeback error the kernel recorded for ``fd``'s file
    since ``fd`` was opened and not yet reported through ``fd``.

    Called once a flush has written the file: it writes nothing, waits for
    nothing and issues no cache flush then.
    """
    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
                    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)


class Flush(object):
    """One flush and the writes that wait for it: a write joins only a
    flush that has not started, so the flush covers it."""

    def __init__(self):
        self.writes = 0
        # writes that call sync() again once it is done
        self.returning = 0
        self.seconds = None
        self.error = None
        self.done = False
        # covered by a flush another process ran (FlushSequence): no
        # syncfs of this process's own
        self.borrowed = False


class GroupSync(object):
    """Group commit for one device's filesystem.

    :meth:`sync` is called by OS threads (the object server's tpool) once
    they have written what must be durable (a file's data, then its
    rename); it returns once a flush that began after the call has
    completed, and raises that flush's error if it
    failed.  While a flush runs, callers wait for the next one, which one of
    them runs for all of them when the running one ends.

    A write that calls :meth:`begin` when it starts is waited for: the
    flush that would start without it lingers until every begun write has
    called :meth:`sync` (or :meth:`abandon`), at most ``linger`` seconds.
    A write that will call :meth:`sync` again after its flush (its rename
    comes between) says so, and counts as begun again once that flush has
    succeeded.

    :param path: the device's root directory (``<devices>/<device>``)
    :param flush: what makes the filesystem durable, called without
        arguments, raising on failure; by default ``syncfs`` of ``path``
    :param linger: seconds a flush waits at most for begun writes
    :param sequence: the filesystem's :class:`FlushSequence`, shared with
        the other processes that flush it (None: flushes of this object
        alone)
    """

    def __init__(self, path, flush=None, linger=0.0, sequence=None):
        self.path = path
        self.linger = float(linger)
        self.sequence = sequence
        self.flushes = 0
        self.writes_covered = 0
        self._condition = threading.Condition()
        self._next = None
        self._flushing = False
        # writes begun and not yet at sync() or abandoned
        self._writing = 0
        if flush is None:
            # Opened before the first write it covers, and kept: since
            # Linux 5.8 syncfs reports a failed writeback to every
            # descriptor opened before the failure was first reported, and
            # to none opened after.
            self._fd = os.open(path, DIRECTORY_FLAGS)
            flush = self._syncfs
        self._flush = flush

    def begin(self):
        """A write to the filesystem has started: a flush about to start
        waits for it (see :meth:`sync`, :meth:`abandon`)."""
        with self._condition:
            self._writing += 1

    def abandon(self):
        """A begun write ends without calling :meth:`sync`."""
        with self._condition:
            self._ended()

    def _ended(self):
        self._writing -= 1
        self._condition.notify_all()

    def sync(self, begun=False, returning=False):
        """Wait until everything this thread wrote to the filesystem before
        calling is durable.

        :param begun: this write called :meth:`begin` (or returned from an
            earlier call with ``returning``)
        :param returning: this write will call again after this flush; if
            this call returns, the write counts as begun (end it with
            :meth:`sync` or :meth:`abandon`)
        :returns: the :class:`Flush` if this caller ran it for the group,
            else None
        :raises: the flush's error (an ``OSError`` from syncfs), in every
            caller it covered
        """
        with self._condition:
            if begun:
                self._ended()
            if self._next is None:
                self._next = Flush()
            flush = self._next
            flush.writes += 1
            if returning:
                flush.returning += 1
            while self._flushing and not flush.done:
                self._condition.wait()
            leading = not flush.done
            if leading:
                self._flushing = True
                # callers that come meanwhile join this group: it has not
                # started
                self._linger()
                # later callers start the next group
                self._next = None
        if leading:
            self._run(flush)
        if flush.error is not None:
            # one exception object raised in several threads at once would
            # get their tracebacks mixed up
            raise copy.copy(flush.error) from flush.error
        return flush if leading else None

    def _linger(self):
        deadline = time.monotonic() + self.linger
        while self._writing > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._condition.wait(remaining)

    def _run(self, flush):
        started = time.monotonic()
        try:
            flush.borrowed = self._flush_group()
        except BaseException as err:
            # whatever stops the flush fails every write it covers: none
            # may be acknowledged as durable
            flush.error = err
        with self._condition:
            flush.seconds = time.monotonic() - started
            flush.done = True
            if flush.error is None:
                # before the next flush can start, so that it lingers for
                # them
                self._writing += flush.returning
            self._flushing = False
            if not flush.borrowed:
                self.flushes += 1
            self.writes_covered += flush.writes
            self._condition.notify_all()

    def _flush_group(self):
        """Make the group's writes durable; True if a flush another
        process began after them covered them (:class:`FlushSequence`)."""
        if self.sequence is not None:
            try:
                # every write of the group is done: a flush any process
                # begins from here on covers them all
                since = self.sequence.mark()
                return not self.sequence.flush(since, self._flush)
            except SequenceUnavailable:
                pass  # nothing was flushed for the group: flush it here
        self._flush()
        return False

    def _syncfs(self):
        mounted = os.stat(self.path).st_dev
        if os.fstat(self._fd).st_dev != mounted:
            # Another filesystem is at the path now (a device replaced
            # under a lazy unmount): flush the one that was there for the
            # writes it holds, then follow the path.
            replaced = self._fd
            syncfs(replaced)
            self._fd = os.open(self.path, DIRECTORY_FLAGS)
            os.close(replaced)
        syncfs(self._fd)


class GroupCommitDiskFileWriter(DiskFileWriter):
    """Swift's writer of a replicated policy, made durable by its device's
    :class:`GroupSync` instead of its own fsyncs."""

    def __init__(self, *args, **kwargs):
        super(GroupCommitDiskFileWriter, self).__init__(*args, **kwargs)
        self._group_sync = None
        self._flush_runs = []
        self._begun = False

    def open(self):
        # The device's GroupSync opens its descriptor before this write's
        # first byte, so that its syncfs reports a failure to write it.
        self._group_sync = self.manager.group_sync(
            basename(self._diskfile._device_path))
        opened = super(GroupCommitDiskFileWriter, self).open()
        self._group_sync.begin()
        self._begun = True
        return opened

    def close(self):
        if self._begun:
            self._begun = False
            self._group_sync.abandon()
        return super(GroupCommitDiskFileWriter, self).close()

    def put(self, metadata):
        try:
            super(GroupCommitDiskFileWriter, self).put(metadata)
        finally:
            # here rather than in the tpool thread that ran the flushes:
            # statsd goes through a green socket
            for flush in self._flush_runs:
                self.manager.report_flush(
                    flush, basename(self._diskfile._device_path))
            self._flush_runs = []

    def _sync(self, returning=False):
        begun, self._begun = self._begun, False
        flush = self._group_sync.sync(begun=begun, returning=returning)
        # counted as begun again: close() ends it if the write stops here
        self._begun = returning
        if flush is not None:
            self._flush_runs.append(flush)

    def _finalize_put(self, metadata, target_path, cleanup,
                      logger_thread_locals):
        # Swift's _finalize_put with its steps in the same order, the
        # device's flushes in place of its fsyncs: its method has no hook
        # between the rename, which the second flush must follow, and the
        # cleanup, which must wait for it.
        if self._diskfile.timing_breakdown:
            self._diskfile.timing_breakdown.record('tpool_scheduling')

        if logger_thread_locals is not None:
            self.logger.thread_locals = logger_thread_locals
        write_metadata(self._fd, metadata)
        # Swift's fsync of the file: nothing goes into the hash directory
        # before its data and metadata are durable, for replication (in any
        # process) removes older versions once a newer file is in place.
        self._sync(returning=True)
        # The flush's syncfs reports a writeback error once per
        # descriptor: an earlier flush of the device may have reported
        # this file's, to the writes it covered.  The file's own descriptor
        # still reports it (its errseq cursor dates from its open).
        check_written(self._fd)
        drop_buffer_cache(self._fd, 0, self._upload_size)
        self.manager.invalidate_hash(os.path.dirname(self._datadir))
        if self._tmppath:
            renamer(self._tmppath, target_path, fsync=False)
        else:
            link_fd_to_path(self._fd, target_path,
                            self._diskfile._dirs_created, fsync=False)
        # renamed away: close() has no temp file left to remove
        self._put_succeeded = True
        new_target_path = self._relink(target_path)

        # Swift's fsync of the directories: the rename, the link and the
        # directories they created.
        try:
            self._sync()
        except BaseException:
            # The file stays: its data is durable, and replication may
            # already have removed the version it replaces.  The suffix is
            # hashed again from what the directory holds, not from a hash
            # computed while this flush failed.
            self.manager.invalidate_hash(os.path.dirname(self._datadir))
            raise
        if cleanup:
            try:
                self.manager.cleanup_ondisk_files(self._datadir)
            except OSError:
                logging.exception('Problem cleaning up %s', self._datadir)

            self._part_power_cleanup(target_path, new_target_path)

    def _relink(self, target_path):
        """Swift's link of the new file into its partition under the next
        partition power, while the partition power is being increased;
        returns the file's path under that power (None when no next
        partition power is set)."""
        new_target_path = None
        if self.next_part_power:
            new_target_path = replace_partition_in_path(
                self.manager.devices, target_path, self.next_part_power)
            if target_path != new_target_path:
                # Swift fsyncs target_path's directory first; the second
                # flush, once this returns, covers the rename and the link
                # alike.
                try:
                    self.manager.logger.debug(
                        'Relinking %s to %s due to next_part_power set',
                        target_path, new_target_path)
                    relink_paths(target_path, new_target_path)
                except OSError as exc:
                    self.manager.logger.exception(
                        'Relinking %s to %s failed: %s',
                        target_path, new_target_path, exc)
        return new_target_path


class GroupCommitDiskFile(DiskFile):
    writer_cls = GroupCommitDiskFileWriter


class GroupCommitDiskFileManager(DiskFileManager):
    """Swift's replication diskfile manager with one :class:`GroupSync` per
    device, made at the device's first write."""

    diskfile_cls = GroupCommitDiskFile

    def __init__(self, conf, logger):
        check_kernel(os.uname().release)
        super(GroupCommitDiskFileManager, self).__init__(conf, logger)
        options = GroupCommitConf(conf)
        self.linger = options.linger
        self.run_dir = options.run_dir
        self._group_syncs = {}
        self._group_syncs_lock = threading.Lock()
        # the object server's logger is Swift's, not Mass's: the labeled
        # client is this manager's own
        self._labeled = metrics.labeled_client(conf, logger)

    def group_sync(self, device):
        """The :class:`GroupSync` of ``<devices>/<device>``."""
        with self._group_syncs_lock:
            if device not in self._group_syncs:
                path = join(self.devices, device)
                self._group_syncs[device] = GroupSync(
                    path, linger=self.linger, sequence=self._sequence(path))
            return self._group_syncs[device]

    def _sequence(self, path):
        """The :class:`FlushSequence` of ``path``'s filesystem, or None
        (logged) where the run directory cannot hold it."""
        try:
            os.makedirs(self.run_dir, exist_ok=True)
            return FlushSequence.for_filesystem(self.run_dir, path)
        except OSError as err:
            # still durable: this process's flushes cover its own writes
            self.logger.warning(
                'group commit: cannot number the flushes of %s in '
                'group_commit_run_dir %s (%s): they are shared within this '
                'process only', path, self.run_dir, err)
            return None

    def report_flush(self, flush, device=None):
        """Statsd for a flush: how many, how many writes each covered (each
        write twice: its data, then its rename), how long each took; and
        labeled by device (swift_mass.metrics).  A flush another process
        ran (``borrowed``) counts only its writes here: that process
        counts the flush."""
        self.logger.update_stats('group_commit.writes', flush.writes)
        if not flush.borrowed:
            self.logger.increment('group_commit.flushes')
            self.logger.timing('group_commit.flush', flush.seconds * 1000.0)
        if self._labeled is not None:
            labels = {'device': device}
            prefix = metrics.GROUP_COMMIT_PREFIX
            self._labeled.update_stats(prefix + 'writes', flush.writes,
                                       labels=labels)
            if not flush.borrowed:
                self._labeled.increment(prefix + 'flushes', labels=labels)
                self._labeled.timing(prefix + 'flush_timing',
                                     flush.seconds * 1000.0, labels=labels)
