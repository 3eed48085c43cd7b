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
"""``build_rings`` of tools/saio.d/lib/setup.sh on a directory of its own:
a profile's rings are built once, and switching back to a profile copies
them as they were built.  swift-ring-builder is a stub that writes what it
was asked into the files it names and logs its calls: the real one takes
some 20 s for the two profiles here, and runs at every SAIO set-up of the
functional suite."""
import os
import subprocess

import pytest

from tests.unit.tools import TEMPLATES

# "NAME create|add|rebalance ARGS...": the builder file records its calls,
# the ring is the builder's text at its rebalance
RING_BUILDER = r'''#!/bin/bash
echo "$*" >>"$SAIO_TEST_DIR/builder.log"
name=$1; shift
case $1 in
    create) echo "$*" >"$name" ;;
    add) echo "$*" >>"$name" ;;
    rebalance) cp "$name" "${name%.builder}.ring.gz" ;;
esac
'''

HARNESS = r'''set -euo pipefail
. "$SAIO_LIB/common.sh"
. "$SAIO_LIB/setup.sh"
SWIFT_DIR=$SAIO_TEST_DIR/etc-swift
RINGS_STAMP=$SWIFT_DIR/.swift-mass-saio-rings
RING_CACHE=$SWIFT_DIR/.swift-mass-saio-ring-cache
NODES=(1 2 3 4)
SSD_SIZE=4G
HDD_SIZE=12G
SETUP_CHANGED=0
profile() { cat "$SAIO_TEST_DIR/profile"; }
"$@"
'''


@pytest.fixture
def rings(tmp_path):
    """Runs build_rings in tmp_path for a profile; answers its output."""
    os.makedirs(str(tmp_path / 'etc-swift'))
    stubs = tmp_path / 'bin'
    os.makedirs(str(stubs))
    (stubs / 'swift-ring-builder').write_text(RING_BUILDER)
    os.chmod(str(stubs / 'swift-ring-builder'), 0o755)
    env = dict(os.environ, SAIO_LIB=os.path.join(TEMPLATES, 'lib'),
               SAIO_TEST_DIR=str(tmp_path),
               PATH='%s:%s' % (stubs, os.environ['PATH']))

    def build(profile):
        (tmp_path / 'profile').write_text(profile + '\n')
        done = subprocess.run(['bash', '-c', HARNESS, 'harness',
                               'build_rings'], env=env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=300)
        assert done.returncode == 0, done.stdout
        log = tmp_path / 'builder.log'
        calls = log.read_text().splitlines() if log.exists() else []
        log.write_text('')
        return done.stdout, calls

    build.dir = tmp_path / 'etc-swift'
    return build


def ring_files(directory):
    return {name: (directory / name).read_bytes()
            for name in sorted(os.listdir(str(directory)))
            if name.endswith(('.builder', '.ring.gz'))}


def test_switching_back_to_a_profile_copies_its_rings_as_built(rings):
    out, calls = rings('plain')
    assert 'building rings' in out and calls
    plain = ring_files(rings.dir)
    assert len(plain) == 10
    assert rings('plain') == ('saio: rings up to date\n', [])
    # as a test or an operator changes a weight after the rings are built
    (rings.dir / 'object.ring.gz').write_bytes(b'changed')
    out, calls = rings('hetero')
    assert 'building rings' in out and calls
    hetero = ring_files(rings.dir)
    assert hetero['object-2.ring.gz'] != plain['object-2.ring.gz']
    out, calls = rings('plain')
    assert 'copied from' in out and calls == []
    assert ring_files(rings.dir) == plain
    out, calls = rings('hetero')
    assert 'copied from' in out and calls == []
    assert ring_files(rings.dir) == hetero
