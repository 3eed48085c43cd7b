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
"""The queue refusals the benchmark counts: swift-mass queue's answer
read, the command run (a fake: nothing here asks an object server), and
asked only in the modes with Mass in the pipelines."""
import json
import stat

import pytest

from mass_bench import driver, modes, queue_refusals


def answer(refused, servers=8, read=8):
    return {'totals': {'refused': refused, 'servers': servers,
                       'servers_read': read, 'devices': 8},
            'errors': []}


def test_refused_of_every_object_server():
    assert queue_refusals.refused_of(answer(12)) == 12
    assert queue_refusals.refused_of(answer(0)) == 0


@pytest.mark.parametrize('report', [
    answer(12, read=7),  # a server not read
    answer(0, servers=0, read=0),  # no object server in the rings
    {'totals': {'servers': 8, 'servers_read': 8}},  # no count
    {'totals': None}, 'nonsense', None])
def test_refused_of_what_is_not_every_servers_count(report):
    assert queue_refusals.refused_of(report) is None


def fake_swift_mass(tmp_path, body):
    path = tmp_path / 'swift-mass'
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return [str(path)]


def test_refused_so_far_asks_swift_mass_queue(tmp_path):
    command = fake_swift_mass(tmp_path, (
        '[ "$*" = "queue --json --swift-dir /etc/x --timeout 5" ] || exit 9\n'
        # the checkout's swift_mass, whatever the environment had
        'case "$PYTHONPATH" in %s*) ;; *) exit 8 ;; esac\n'
        "echo '%s'\n") % (queue_refusals.CHECKOUT, json.dumps(answer(3))))
    assert queue_refusals.refused_so_far('/etc/x', command=command) == 3


def test_refused_so_far_when_a_server_is_not_read(tmp_path):
    # swift-mass queue exits 1 when an object server could not be read
    command = fake_swift_mass(tmp_path, "echo '%s'; exit 1\n" % json.dumps(
        answer(3, read=7)))
    assert queue_refusals.refused_so_far('/etc/x', command=command) is None
    missing = [str(tmp_path / 'none')]
    assert queue_refusals.refused_so_far('/etc/x', command=missing) is None


@pytest.mark.parametrize('mode, asked', [
    ('default', False), ('placed', False), ('static', True),
    ('mass', True)])
def test_refusals_are_asked_only_with_mass_in_the_pipelines(
        monkeypatch, mode, asked):
    calls = []
    monkeypatch.setattr(queue_refusals, 'refused_so_far',
                        lambda swift_dir: calls.append(swift_dir) or 5)
    cluster = modes.Modes([], 'http://p/auth/v1.0', swift_dir='/etc/x')
    cluster.base_mode = mode
    assert cluster.queue_refusals() == (5 if asked else None)
    assert calls == (['/etc/x'] if asked else [])


def test_the_bench_samples_the_refusals(monkeypatch):
    monkeypatch.setattr(queue_refusals, 'refused_so_far',
                        lambda swift_dir: 5)
    runner = driver.Bench([], 'http://p/auth/v1.0', swift_dir='/etc/x')
    runner.base_mode = 'mass'
    assert runner.sampler.queue() == 5
    runner.base_mode = 'default'
    assert runner.sampler.queue() is None
