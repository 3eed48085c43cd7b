"""Group commit for a replicated storage policy's object writes: a Swift
diskfile module whose concurrent writes to one device share one flush.

Swift's object server makes every PUT, DELETE and POST durable on its own
(:meth:`swift.obj.diskfile.BaseDiskFileWriter._finalize_put`): it fsyncs
the new file, renames it into place and fsyncs the directories the rename
touched, a few synchronous writes per object.  A disk that does ~150 of them
a second caps the device at a few dozen object writes a second, however
many requests wait for it.  Here each write renames its file into place
unsynced and then waits for one ``syncfs(2)`` of the device's filesystem
(:class:`GroupSync`); every write that arrived while the previous flush ran
shares the next one, so a busy device flushes a few times a second for any
number of writes.

**Durability.**  The object server answers a PUT (201), DELETE or POST only
after the writer's ``put()`` returns, and ``put()`` returns only after a
syncfs of the object's filesystem that *began after the rename* has
completed: that flush wrote the file's data, its metadata (xattrs), the
rename and any directory the write created, as Swift's fsyncs do.  A crash
before the flush loses only a write nobody was told had succeeded.  Older
versions of the object (the ``.data``, ``.meta`` and ``.ts`` files the new
one makes obsolete) are removed only after the flush, so a crash never
leaves a device with the old version gone and the new one not durable.  If
the flush fails, every write it covered fails (``put()`` raises, the object
server answers 500 as it does when fsync fails) and takes its file back out
of place, as Swift's writer removes its temp file when fsync fails.

**Configuration**, in swift.conf, per storage policy (the module's
entry point is ``swift.diskfile`` ``replication.group_commit``)::

    [storage-policy:2]
    name = bulk
    policy_type = replication
    diskfile_module = egg:swift_mass#replication.group_commit

Every process that opens the policy's diskfiles (object server, replicator,
auditor, ...) loads it; only the writes of the object server and the ssync
receiver go through :meth:`GroupCommitDiskFileWriter._finalize_put`.

**Linger.**  A flush that is about to start while other writes to its
device are under way in the same process (their files open, their data on
its way) waits for them to reach it, at most ``group_commit_linger_ms``
milliseconds (in the object server's ``[app:object-server]`` or
``[DEFAULT]``; default 5, 0 turns it off): without it, writes that
arrive a little apart each pay a flush of their own and a group is rarely
more than one write.  A write that ends without a put (an error, a client
gone) stops being waited for.

**Where it is weaker than Swift's fsyncs.**

* syncfs flushes the whole filesystem, not the object's file: one write
  waits for everything else dirty on it.  It is meant for one filesystem per
  device, as Swift deploys; on a filesystem shared with other busy writers
  (or several devices on one filesystem, as in a SAIO) each flush is bigger.
* Groups form within one process, per policy: each object server worker
  (and each policy using this module) flushes a device on its own.  With
  ``servers_per_port`` the object server gives each worker one tpool thread,
  so writes run one at a time there and never share a flush; the tpool needs
  several threads per device (``eventlet_tpool_num_threads``) for groups to
  form.
* Linux reports a failed writeback to syncfs only since 5.8; on an older
  kernel a write whose data the disk refused can be acknowledged.
* :class:`GroupSync` keeps a descriptor open on each device's root, so the
  device cannot be unmounted while the server runs (``umount`` says busy)
  until it restarts.  A device lazily unmounted and replaced by another
  filesystem at the same path is noticed at the next flush.
* While a write waits for its flush its file is already in place: a GET may
  read it before it is durable (as Swift's own GETs can read a file between
  its rename and its directory's fsync), and a failed flush takes it away.
"""
import copy
import logging
import os
import time
from os.path import basename, join

from swift.common.concurrency import patcher
from swift.common.utils import drop_buffer_cache, link_fd_to_path, \
    remove_file, renamer, replace_partition_in_path
from swift.common.utils.libc import load_libc_function
from swift.obj.diskfile import DiskFile, DiskFileManager, DiskFileWriter, \
    relink_paths, write_metadata

# The object server monkey-patches threading before it loads a diskfile
# module (swift.common.wsgi.run_wsgi); GroupSync is used by tpool's OS
# threads, which must block on the OS's locks, as eventlet.tpool's own do.
threading = patcher.original('threading')

# Python (3.11 here) has os.sync() but no os.syncfs(), so it comes from
# libc; errcheck makes a failure an OSError.
syncfs = load_libc_function('syncfs', fail_if_missing=True, errcheck=True)

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY
DEFAULT_LINGER_MS = 5.0
MAX_LINGER_MS = 1000.0


def linger_seconds(conf):
    """``group_commit_linger_ms`` of an object server's config, in
    seconds; ValueError naming the option and what it allows."""
    value = conf.get('group_commit_linger_ms', DEFAULT_LINGER_MS)
    try:
        ms = float(value)
    except (TypeError, ValueError):
        ms = None
    if ms is None or not 0 <= ms <= MAX_LINGER_MS:
        raise ValueError(
            'group_commit_linger_ms = %r is not valid; allowed: a number '
            'from 0 to %g' % (value, MAX_LINGER_MS))
    return ms / 1000.0


class Flush(object):
    """One flush and the writes that wait for it: a write joins only a
    flush that has not started, so the flush covers it."""

    def __init__(self):
        self.writes = 0
        self.seconds = None
        self.error = None
        self.done = False


class GroupSync(object):
    """Group commit for one device's filesystem.

    :meth:`sync` is called by OS threads (the object server's tpool) after
    they have put their files in place; it returns once a flush that began
    after the call has completed, and raises that flush's error if it
    failed.  While a flush runs, callers wait for the next one, which one of
    them runs for all of them when the running one ends.

    A write that calls :meth:`begin` when it starts is waited for: the
    flush that would start without it lingers until every begun write has
    called :meth:`sync` (or :meth:`abandon`), at most ``linger`` seconds.

    :param path: the device's root directory (``<devices>/<device>``)
    :param flush: what makes the filesystem durable, called without
        arguments, raising on failure; by default ``syncfs`` of ``path``
    :param linger: seconds a flush waits at most for begun writes
    """

    def __init__(self, path, flush=None, linger=0.0):
        self.path = path
        self.linger = float(linger)
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

    def sync(self, begun=False):
        """Wait until everything this thread wrote to the filesystem before
        calling is durable; ``begun``: this write called :meth:`begin`.

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
            self._flush()
        except BaseException as err:
            # whatever stops the flush fails every write it covers: none
            # may be acknowledged as durable
            flush.error = err
        with self._condition:
            flush.seconds = time.monotonic() - started
            flush.done = True
            self._flushing = False
            self.flushes += 1
            self.writes_covered += flush.writes
            self._condition.notify_all()

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
        self._flush_run = None
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
        super(GroupCommitDiskFileWriter, self).put(metadata)
        if self._flush_run is not None:
            # here rather than in the tpool thread that ran the flush:
            # statsd goes through a green socket
            self.manager.report_flush(self._flush_run)

    def _finalize_put(self, metadata, target_path, cleanup,
                      logger_thread_locals):
        # Swift's _finalize_put with its steps in the same order, but for
        # the fsyncs: its method has no hook between the rename, after which
        # the flush must come, and the cleanup, which must wait for it.
        if self._diskfile.timing_breakdown:
            self._diskfile.timing_breakdown.record('tpool_scheduling')

        if logger_thread_locals is not None:
            self.logger.thread_locals = logger_thread_locals
        write_metadata(self._fd, metadata)
        self.manager.invalidate_hash(os.path.dirname(self._datadir))
        # No fsync of the file or of the directories it lands in: the
        # device's next flush covers them all.
        if self._tmppath:
            renamer(self._tmppath, target_path, fsync=False)
        else:
            link_fd_to_path(self._fd, target_path,
                            self._diskfile._dirs_created, fsync=False)

        new_target_path = None
        if self.next_part_power:
            new_target_path = replace_partition_in_path(
                self.manager.devices, target_path, self.next_part_power)
            if target_path != new_target_path:
                # Swift fsyncs target_path's directory first; the flush
                # below covers the rename and the link alike.
                try:
                    self.manager.logger.debug(
                        'Relinking %s to %s due to next_part_power set',
                        target_path, new_target_path)
                    relink_paths(target_path, new_target_path)
                except OSError as exc:
                    self.manager.logger.exception(
                        'Relinking %s to %s failed: %s',
                        target_path, new_target_path, exc)

        begun, self._begun = self._begun, False
        try:
            self._flush_run = self._group_sync.sync(begun=begun)
        except BaseException:
            self._withdraw(target_path, new_target_path)
            raise
        # after the flush, so that the pages dropped are clean
        drop_buffer_cache(self._fd, 0, self._upload_size)
        self._put_succeeded = True
        if cleanup:
            try:
                self.manager.cleanup_ondisk_files(self._datadir)
            except OSError:
                logging.exception('Problem cleaning up %s', self._datadir)

            self._part_power_cleanup(target_path, new_target_path)

    def _withdraw(self, target_path, new_target_path):
        """Take back a write whose flush failed: Swift's writer leaves
        nothing in place when its fsync fails."""
        remove_file(target_path)
        if new_target_path and new_target_path != target_path:
            remove_file(new_target_path)
        # renamed away: close() has no temp file left to remove
        self._tmppath = None


class GroupCommitDiskFile(DiskFile):
    writer_cls = GroupCommitDiskFileWriter


class GroupCommitDiskFileManager(DiskFileManager):
    """Swift's replication diskfile manager with one :class:`GroupSync` per
    device, made at the device's first write."""

    diskfile_cls = GroupCommitDiskFile

    def __init__(self, conf, logger):
        super(GroupCommitDiskFileManager, self).__init__(conf, logger)
        self.linger = linger_seconds(conf)
        self._group_syncs = {}
        self._group_syncs_lock = threading.Lock()

    def group_sync(self, device):
        """The :class:`GroupSync` of ``<devices>/<device>``."""
        with self._group_syncs_lock:
            if device not in self._group_syncs:
                self._group_syncs[device] = GroupSync(
                    join(self.devices, device), linger=self.linger)
            return self._group_syncs[device]

    def report_flush(self, flush):
        """Statsd for a flush: how many, how many writes each covered, how
        long each took."""
        self.logger.increment('group_commit.flushes')
        self.logger.update_stats('group_commit.writes', flush.writes)
        self.logger.timing('group_commit.flush', flush.seconds * 1000.0)
