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
"""Item 6 of issue 25: a step of the wall clock, made real for one process.

An object server process and a proxy's generation reader run in a child
process under libfaketime (Debian's ``libfaketime``, which ``tools/saio
install`` installs), against the SAIO's real Redis.  Midway the test
steps that process's wall clock back an hour, as an NTP step would
(``FAKETIME_TIMESTAMP_FILE``, read at every call; the monotonic clock is
left alone, as a step leaves it).  Each local deadline must still end on
time:

* an object server whose heartbeats stop getting through must stop
  relying on its registration when it may have lapsed, and bump every
  tenant's writes again;
* a proxy that looked up which devices are covered must look again after
  its period, and see a device whose registration is gone.

Each is run twice: with the code's own clock, and, as the control that
shows the test can see the defect, with ``time.time`` (the clock these
deadlines were on before): the same step keeps the old set and freezes
the lookup there.
"""
import glob
import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.functional.conftest import ROOT

# Debian's multiarch path, whatever the architecture
LIBFAKETIMES = glob.glob('/usr/lib/*/faketime/libfaketime.so.1')
REDIS_URL = 'redis://127.0.0.1:6379/0'
STEP = '-3600'

# The child: it waits for the parent's word (a line on stdin) where the
# clock is stepped, and for time with select(), not time.sleep(), which
# libfaketime 0.9.10 breaks (EINVAL) when it leaves the monotonic clock
# alone.
CHILD = r'''
import json, logging, select, sys, time
from swift_mass.generations.publisher import BumpedSetPublisher
from swift_mass.generations.reader import GenerationReader
from swift_mass.generations.writer import GenerationWriter

url, prefix, clock_name = sys.argv[1:4]
kwargs = {'clock': time.time} if clock_name == 'time' else {}
logger = logging.getLogger('clock-steps')
device = '127.0.0.1:6010/sdb1'


def wait(seconds):
    select.select([], [], [], seconds)


def stepped():
    print('step', flush=True)
    sys.stdin.readline()


writer = GenerationWriter(url, logger, prefix=prefix, **kwargs)
writer.names = lambda: {device}
reader = GenerationReader(url, logger, prefix=prefix, **kwargs)
BumpedSetPublisher(reader).publish({'a'})
result = {'clock': writer.clock.__name__}
assert writer.heartbeat()
result['bumps_b_before'] = writer.bumps_writes_of('b')
result['uncovered_before'] = sorted(reader.uncovered(lambda: {device}))
began = time.time()
stepped()
result['wall_clock_moved'] = round(time.time() - began)
# the object server's registration is gone (its heartbeats no longer get
# through, Redis let it lapse): the proxy must see it within its period,
# the object server must stop relying on it within its lifetime
reader.client.delete(reader.bumper_prefix + device)
wait(writer.registration_ms / 1000.0 + 0.5)
result['bumps_b_after'] = writer.bumps_writes_of('b')
result['uncovered_after'] = sorted(reader.uncovered(lambda: {device}))
print(json.dumps(result), flush=True)
'''


def run_child(clock_name, tmp_path, library):
    """The child's result dict, its wall clock stepped back an hour where
    it asks."""
    clock_file = tmp_path / ('faketime-%s' % clock_name)
    clock_file.write_text('+0\n')
    env = dict(os.environ, PYTHONPATH=ROOT, LD_PRELOAD=library,
               FAKETIME_TIMESTAMP_FILE=str(clock_file),
               FAKETIME_NO_CACHE='1', DONT_FAKE_MONOTONIC='1')
    prefix = 'mass-clock-steps-%s:' % uuid.uuid4().hex
    child = subprocess.Popen(
        [sys.executable, '-c', CHILD, REDIS_URL, prefix, clock_name],
        env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == 'step', \
            child.stderr.read()
        clock_file.write_text(STEP + '\n')
        child.stdin.write('go\n')
        child.stdin.flush()
        line = child.stdout.readline()
        assert child.wait(timeout=60) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return json.loads(line)


@pytest.fixture(scope='module')
def libfaketime():
    if not LIBFAKETIMES:
        pytest.fail('no /usr/lib/*/faketime/libfaketime.so.1: tools/saio '
                    'install installs Debian\'s libfaketime')
    return LIBFAKETIMES[0]


def test_a_backward_step_of_the_wall_clock_ends_no_deadline_late(
        libfaketime, tmp_path):
    result = run_child('monotonic', tmp_path, libfaketime)
    assert result['clock'] == 'monotonic'
    # the step was real for the process
    assert result['wall_clock_moved'] <= -3599, result
    assert result['bumps_b_before'] is False
    assert result['uncovered_before'] == []
    # its registration may have lapsed: every tenant's writes are bumped
    assert result['bumps_b_after'] is True, result
    # the proxy looked again and found the device uncovered
    assert result['uncovered_after'] == ['127.0.0.1:6010/sdb1'], result


def test_the_control_on_the_wall_clock_misses_both(libfaketime, tmp_path):
    """The same run with the deadlines on ``time.time``: the object server
    keeps trusting its lapsed registration (it lets b's writes pass
    unbumped) and the proxy's coverage lookup stays frozen, for as long as
    the step, an hour."""
    result = run_child('time', tmp_path, libfaketime)
    assert result['clock'] == 'time'
    assert result['wall_clock_moved'] <= -3599, result
    assert result['bumps_b_after'] is False, result
    assert result['uncovered_after'] == [], result
