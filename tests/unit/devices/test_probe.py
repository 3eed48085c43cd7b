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
"""The bounded device probe, on a temporary directory standing for a
device's mount."""
import errno
import itertools
import os

import pytest

from swift_mass.devices import probe


@pytest.fixture
def device(tmp_path):
    """A device's mount with Swift's tmp directory in it."""
    (tmp_path / 'tmp').mkdir()
    return tmp_path


def leftovers(device):
    return sorted(os.listdir(device)) + sorted(os.listdir(device / 'tmp'))


@pytest.fixture
def opens(monkeypatch):
    """The flags of every os.open; a filesystem refusing O_DIRECT stands
    in for one that takes it (the flag is recorded, then dropped), so the
    direct path runs on any machine."""
    seen = []
    real_open = os.open

    def spy(path, flags, *args):
        seen.append((str(path), flags))
        try:
            return real_open(path, flags, *args)
        except OSError as err:
            if err.errno != errno.EINVAL or not flags & os.O_DIRECT:
                raise
            return real_open(path, flags & ~os.O_DIRECT, *args)
    monkeypatch.setattr(os, 'open', spy)
    return seen


def refuse_direct(monkeypatch, at='open'):
    """A filesystem refusing O_DIRECT at open, or at the first I/O."""
    real_open, real_preadv, real_close = os.open, os.preadv, os.close
    direct_fds = set()

    def open_(path, flags, *args):
        if flags & os.O_DIRECT:
            if at == 'open':
                raise OSError(errno.EINVAL, 'Invalid argument')
            fd = real_open(path, flags & ~os.O_DIRECT, *args)
            direct_fds.add(fd)
            return fd
        return real_open(path, flags, *args)

    def preadv(fd, buffers, offset):
        if fd in direct_fds:
            raise OSError(errno.EINVAL, 'Invalid argument')
        return real_preadv(fd, buffers, offset)

    def close(fd):
        direct_fds.discard(fd)   # its number may be the next file's
        real_close(fd)
    monkeypatch.setattr(os, 'open', open_)
    monkeypatch.setattr(os, 'preadv', preadv)
    monkeypatch.setattr(os, 'close', close)


def test_direct_io_half_reads_half_writes_file_removed(device, opens):
    result = probe.probe(str(device), seconds=0.2, max_bytes=64 * 1024,
                         seed=1)
    assert result['method'] == 'direct' and 'note' not in result
    (path, flags), = [o for o in opens if o[1] & os.O_DIRECT]
    # the file was in Swift's tmp dir, opened for direct reads and writes
    assert os.path.dirname(path) == str(device / 'tmp')
    assert os.path.basename(path).startswith('.mass-probe-')
    assert flags & os.O_RDWR and not flags & os.O_DSYNC
    assert result['reads'] >= 1 and result['writes'] >= 1
    assert result['reads'] - result['writes'] in (0, 1)
    assert result['read_iops'] > 0 and result['write_iops'] > 0
    assert 0 < result['iops'] and result['seconds'] >= 0.2
    assert (result['bytes'], result['block_size']) == (65536, 4096)
    assert leftovers(device) == ['tmp']


def test_refused_direct_falls_back_to_dsync_and_fadvise(device,
                                                        monkeypatch):
    refuse_direct(monkeypatch)
    advised = []
    real_fadvise = os.posix_fadvise

    def fadvise(fd, offset, length, advice):
        advised.append((offset, length, advice))
        return real_fadvise(fd, offset, length, advice)
    monkeypatch.setattr(os, 'posix_fadvise', fadvise)
    result = probe.probe(str(device), seconds=0.1, max_bytes=32 * 1024)
    assert result['method'] == 'dsync'
    assert result['note'].startswith('the filesystem refused O_DIRECT; ')
    assert 'reads may have come from memory' in result['note']
    # the fill's whole-file drop, then one block before each read
    per_read = [a for a in advised if a[1] == 4096]
    assert len(per_read) == result['reads']
    assert all(a[2] == os.POSIX_FADV_DONTNEED and a[0] % 4096 == 0
               and a[0] < 32 * 1024 for a in per_read)
    assert leftovers(device) == ['tmp']


def test_direct_refused_at_the_first_io_falls_back_too(device,
                                                       monkeypatch):
    refuse_direct(monkeypatch, at='io')
    result = probe.probe(str(device), seconds=0.05, max_bytes=8192)
    assert result['method'] == 'dsync'
    assert leftovers(device) == ['tmp']


def test_forced_methods(device, monkeypatch):
    result = probe.probe(str(device), seconds=0.05, max_bytes=8192,
                         method='dsync')
    # asked for, not refused: the note does not blame the filesystem
    assert result['method'] == 'dsync'
    assert not result['note'].startswith('the filesystem refused')
    refuse_direct(monkeypatch)
    with pytest.raises(OSError) as caught:
        probe.probe(str(device), seconds=0.05, max_bytes=8192,
                    method='direct')
    assert caught.value.errno == errno.EINVAL
    assert leftovers(device) == ['tmp']
    with pytest.raises(ValueError, match="allowed: direct, dsync"):
        probe.probe(str(device), method='buffered')


def test_bounded_by_time_with_at_least_one_of_each(device, opens):
    # each clock reading one second on: every I/O "takes" one second
    result = probe.probe(str(device), seconds=10, max_bytes=8192,
                         clock=itertools.count().__next__)
    assert (result['reads'], result['writes']) == (3, 2)
    assert (result['read_iops'], result['write_iops']) == (1.0, 1.0)
    assert result['iops'] == 0.5 and result['seconds'] == 10
    # however short the time, a read and a write
    result = probe.probe(str(device), seconds=1e-9, max_bytes=8192)
    assert (result['reads'], result['writes']) == (1, 1)


def test_file_size_bounded_and_offsets_inside(device, monkeypatch, opens):
    offsets = []
    real_pwritev = os.pwritev

    def pwritev(fd, buffers, offset):
        offsets.append(offset)
        return real_pwritev(fd, buffers, offset)
    monkeypatch.setattr(os, 'pwritev', pwritev)
    sizes = []
    real_unlink = os.unlink

    def unlink(path):
        sizes.append(os.path.getsize(path))
        real_unlink(path)
    monkeypatch.setattr(os, 'unlink', unlink)
    result = probe.probe(str(device), seconds=0.05,
                         max_bytes=3 * 4096 + 100)
    # the size rounded down to whole blocks, and never grown by writes
    assert result['bytes'] == 3 * 4096 and sizes == [3 * 4096]
    assert offsets and set(offsets) <= {0, 4096, 8192}


def test_file_removed_when_the_io_fails(device, monkeypatch, opens):
    def pwritev(fd, buffers, offset):
        raise OSError(errno.EIO, 'Input/output error')
    monkeypatch.setattr(os, 'pwritev', pwritev)
    with pytest.raises(OSError):
        probe.probe(str(device), seconds=0.05, max_bytes=8192)
    assert leftovers(device) == ['tmp']


def test_short_io_is_an_error(device, monkeypatch, opens):
    monkeypatch.setattr(os, 'preadv', lambda fd, buffers, offset: 100)
    with pytest.raises(OSError, match='short read: 100 of 4096 bytes'):
        probe.probe(str(device), seconds=0.05, max_bytes=8192,
                    method='dsync')
    assert leftovers(device) == ['tmp']


def test_without_a_tmp_dir_the_file_is_at_the_root(tmp_path, opens):
    probe.probe(str(tmp_path), seconds=0.01, max_bytes=4096)
    (path, _), = [o for o in opens if o[1] & os.O_DIRECT]
    assert os.path.dirname(path) == str(tmp_path)
    # and no tmp dir was made
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('kwargs, message', [
    ({'seconds': 0}, '--seconds 0 is not valid; allowed: more than 0 and '
     'at most 60'),
    ({'seconds': 61}, '--seconds 61 is not valid'),
    ({'max_bytes': 4095}, '--max-bytes 4095 is not valid; allowed: from '
     'the block size (4096) to 1073741824'),
    ({'max_bytes': 2 ** 31}, '--max-bytes 2147483648 is not valid'),
    ({'block_size': 512}, 'block size 512 is not valid; allowed: a '
     'positive multiple of 4096'),
])
def test_bounds(device, kwargs, message):
    with pytest.raises(ValueError) as caught:
        probe.probe(str(device), **kwargs)
    assert str(caught.value).startswith(message)
    assert leftovers(device) == ['tmp']


def test_not_a_device(tmp_path):
    with pytest.raises(ValueError, match='is not a directory'):
        probe.probe(str(tmp_path / 'sdz'))
