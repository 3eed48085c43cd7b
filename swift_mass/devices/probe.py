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
"""A bounded measurement of one device's random I/O, for ``swift-mass
devices probe``.

:func:`probe` writes a temporary file on the device's filesystem (in the
``tmp`` directory Swift keeps at the root of each device, else at the
root), fills it, then for ``seconds`` does one I/O at a time, alternately
a read and a write of one block at a random block-aligned offset, and
reports the reads' and the writes' IOPS.  The file is removed whatever
happens; it is never larger than ``max_bytes``.

The I/O goes around the page cache: O_DIRECT where the filesystem takes it
(``method`` "direct").  Where it refuses O_DIRECT (tmpfs, some network and
FUSE filesystems), writes are O_DSYNC and each read is preceded by
posix_fadvise(DONTNEED) of its block (``method`` "dsync"); such reads may
still come from memory, and the result's ``note`` says so.

Usage::

    result = probe('/srv/node/sdb1', seconds=5, max_bytes=16 * 2 ** 20)
    result['read_iops'], result['write_iops'], result['iops']
"""
import errno
import mmap
import os
import random
import tempfile
import time

SECONDS = 5.0
MAX_BYTES = 16 * 2 ** 20
BLOCK_SIZE = 4096
# What an operator may ask of one device: a probe runs on devices that
# serve clients meanwhile.
MAX_SECONDS = 60.0
MAX_BYTES_ALLOWED = 2 ** 30
# Alignment O_DIRECT needs on any device (logical blocks are 512 B or
# 4 KiB); offsets are multiples of the block size.
ALIGN = 4096
FILL_CHUNK = 2 ** 20
DSYNC_NOTE = ('writes were O_DSYNC and reads followed '
              'posix_fadvise(DONTNEED): reads may have come from memory')
REFUSED_NOTE = 'the filesystem refused O_DIRECT; '


def check_bounds(seconds, max_bytes, block_size=BLOCK_SIZE):
    """Raise ValueError, naming the option and what it allows, unless the
    probe is bounded as it must be."""
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError('--seconds %r is not valid; allowed: more than 0 '
                         'and at most %g' % (seconds, MAX_SECONDS))
    if block_size <= 0 or block_size % ALIGN:
        raise ValueError('block size %r is not valid; allowed: a positive '
                         'multiple of %d' % (block_size, ALIGN))
    if not block_size <= max_bytes <= MAX_BYTES_ALLOWED:
        raise ValueError('--max-bytes %r is not valid; allowed: from the '
                         'block size (%d) to %d' % (
                             max_bytes, block_size, MAX_BYTES_ALLOWED))


def _tmp_dir(path):
    if not os.path.isdir(path):
        raise ValueError('%s is not a directory: not a mounted device' % path)
    tmp = os.path.join(path, 'tmp')
    # Swift's own tmp dir when there is one; the probe never creates it,
    # as a directory made by root could not be written by Swift's user.
    return tmp if os.path.isdir(tmp) else path


def _fill(fd, size):
    # Reads of blocks never written are answered without touching the
    # disk (unwritten extents read as zeros), so the file gets real data.
    done = 0
    while done < size:
        done += os.write(fd, os.urandom(min(FILL_CHUNK, size - done)))
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def _open(path, method, buf):
    """(fd, method) of ``path`` opened for the mix."""
    if method in (None, 'direct'):
        fd = None
        try:
            fd = os.open(path, os.O_RDWR | os.O_DIRECT)
            # some filesystems take the flag at open and refuse the I/O
            os.preadv(fd, [buf], 0)
            return fd, 'direct'
        except OSError as err:
            if fd is not None:
                os.close(fd)
            if method == 'direct' or err.errno != errno.EINVAL:
                raise
    return os.open(path, os.O_RDWR | os.O_DSYNC), 'dsync'


def _mix(fd, method, buf, blocks, seconds, rng, clock):
    """Alternate reads and writes until ``seconds`` have passed (one of
    each at least); (reads, writes, read seconds, write seconds, wall
    seconds)."""
    size = len(buf)
    ops = [0, 0]
    busy = [0.0, 0.0]
    start = clock()
    deadline = start + seconds
    now = start
    while ops[0] + ops[1] < 2 or now < deadline:
        kind = (ops[0] + ops[1]) % 2   # 0 read, 1 write: half and half
        offset = rng.randrange(blocks) * size
        t0 = clock()
        if kind:
            done = os.pwritev(fd, [buf], offset)
        else:
            if method == 'dsync':
                os.posix_fadvise(fd, offset, size, os.POSIX_FADV_DONTNEED)
            done = os.preadv(fd, [buf], offset)
        now = clock()
        if done != size:
            raise OSError(errno.EIO, 'short %s: %d of %d bytes at %d' % (
                'write' if kind else 'read', done, size, offset))
        ops[kind] += 1
        busy[kind] += now - t0
    return ops[0], ops[1], busy[0], busy[1], now - start


def _rate(count, seconds):
    return round(count / seconds, 1) if seconds > 0 else 0.0


def probe(path, seconds=SECONDS, max_bytes=MAX_BYTES,
          block_size=BLOCK_SIZE, method=None, seed=None,
          clock=time.monotonic):
    """Measure the device mounted at ``path``.

    method: None (O_DIRECT, else the O_DSYNC fallback), "direct" or
    "dsync" (forced; "direct" raises where the filesystem refuses it).

    Returns a dict: ``read_iops`` and ``write_iops`` (reads, writes per
    second spent in them: one I/O at a time, the inverse of their mean
    latency), ``iops`` (reads and writes per second of the mix: what
    classes are drawn from), ``reads``, ``writes``, ``seconds``,
    ``bytes`` (the file's size), ``block_size``, ``method`` and, for
    "dsync", ``note``.
    """
    check_bounds(seconds, max_bytes, block_size)
    if method not in (None, 'direct', 'dsync'):
        raise ValueError('method %r is not valid; allowed: direct, dsync' %
                         (method,))
    blocks = max_bytes // block_size
    fd, tmp = tempfile.mkstemp(prefix='.mass-probe-', suffix='.tmp',
                               dir=_tmp_dir(path))
    buf = mmap.mmap(-1, block_size)   # page-aligned, as O_DIRECT wants
    try:
        try:
            _fill(fd, blocks * block_size)
        finally:
            os.close(fd)
        buf.write(os.urandom(block_size))
        fd, used = _open(tmp, method, buf)
        try:
            reads, writes, read_s, write_s, wall = _mix(
                fd, used, buf, blocks, seconds, random.Random(seed), clock)
        finally:
            os.close(fd)
    finally:
        buf.close()
        os.unlink(tmp)
    result = {'read_iops': _rate(reads, read_s),
              'write_iops': _rate(writes, write_s),
              'iops': _rate(reads + writes, wall),
              'reads': reads, 'writes': writes,
              'seconds': round(wall, 3), 'bytes': blocks * block_size,
              'block_size': block_size, 'method': used}
    if used == 'dsync':
        result['note'] = (REFUSED_NOTE if method is None else '') + \
            DSYNC_NOTE
    return result
