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
"""``tools/saio restart TYPE`` (tools/saio.d/lib/servers.sh) on a config
directory of its own: the library's real functions, with a stub
swift-init that keeps which server types run, and on which config, in a
file; nothing reaches /etc/swift, the network or a running server."""
import os
import time
import subprocess

import pytest

from tests.unit.tools import TEMPLATES

TYPES = ('account-server', 'container-server', 'object-server',
         'proxy-server')

# swift-init as tools/saio calls it: "TYPE[.N]... start|stop|restart|
# status|kill [--no-wait]"; a type it starts is recorded with a hash of
# its configs as they are then, as the real server would read them
SWIFT_INIT = r'''#!/bin/bash
echo "$*" >>"$SAIO_TEST_LOG"
touch "$SAIO_TEST_RUNNING"
types=() cmd=
for arg; do
    case $arg in
        start|stop|restart|status|kill) cmd=$arg ;;
        main|all) types+=(%(types)s) ;;
        -*) ;;
        *) types+=("${arg%%%%.*}") ;;
    esac
done
conf_of() {
    cat "$SWIFT_DIR/$1.conf" "$SWIFT_DIR/$1"/*.conf 2>/dev/null |
        sha256sum | cut -d' ' -f1
}
drop() { grep -v "^$1 " "$SAIO_TEST_RUNNING" >"$SAIO_TEST_RUNNING.new"
         mv "$SAIO_TEST_RUNNING.new" "$SAIO_TEST_RUNNING"; }
for t in "${types[@]}"; do
    case $cmd in
        stop|kill) drop "$t" ;;
        restart) drop "$t"; echo "$t $(conf_of "$t")" >>"$SAIO_TEST_RUNNING" ;;
        start) grep -q "^$t " "$SAIO_TEST_RUNNING" ||
                   echo "$t $(conf_of "$t")" >>"$SAIO_TEST_RUNNING" ;;
    esac
done
[ "$cmd" != status ] || [ -s "$SAIO_TEST_RUNNING" ]
''' % {'types': ' '.join(TYPES)}

# the library sourced as tools/saio sources it, its globals pointed at the
# test's directory, and what lies outside Swift's servers stubbed
HARNESS = r'''set -euo pipefail
. "$SAIO_LIB/common.sh"
. "$SAIO_LIB/servers.sh"
SWIFT_DIR=$SAIO_TEST_DIR/etc-swift
MARKER=$SWIFT_DIR/.swift-mass-saio
CONFIG_STAMP=$SAIO_TEST_DIR/run/saio-config.sha256
LOG_DIR=$SAIO_TEST_DIR/log
. "$SAIO_LIB/automigrate.sh"
PY=python3
AUTO_MIGRATE_PIDFILE=$SAIO_TEST_DIR/run/mass-auto-migrate.pid
RSYSLOG_CONF=$SAIO_TEST_DIR/no-rsyslog.conf
SCRIPT_DIR=$SAIO_TEST_DIR/tools
TEMPLATES=$SAIO_TEST_DIR/templates
PROXY_URL=http://127.0.0.1:8080
PROXY2_CONF=proxy-server/2.conf
PROXY3_CONF=proxy-server/3.conf
KS_PROXY_CONF=proxy-server/4.conf
NODES=(1 2)
START_TIMEOUT=5
declare -A LOG_OFFSETS=()
require_root() { :; }
ensure_memcached() { :; }
ensure_redis() { :; }
ensure_storage() { :; }
create_test_accounts() { :; }
profile() { echo plain; }
http_code() {  # a server answers while the stub swift-init runs its type
    local at=${1#http://} name ip port conf
    at=${at%%/*}
    while read -r name ip port conf; do
        [ "$ip:$port" = "$at" ] || continue
        if grep -q "^$name " "$SAIO_TEST_RUNNING" 2>/dev/null; then
            echo 200
        else
            echo 000
        fi
        return
    done < <(servers)
    echo 000
}
"$@"
'''


@pytest.fixture
def saio(tmp_path):
    """Runs a function of the library (and its arguments) in tmp_path;
    answers (exit status, output)."""
    conf = tmp_path / 'etc-swift'
    for name in ('proxy-server', 'account-server', 'container-server',
                 'object-server'):
        os.makedirs(str(conf / name))
    (conf / 'proxy-server.conf').write_text('[DEFAULT]\nbind_port = 8080\n')
    for n in (2, 3):
        (conf / 'proxy-server' / ('%d.conf' % n)).write_text(
            '[DEFAULT]\nbind_port = 808%d\n' % (n - 1))
    for name in TYPES[:3]:
        for n in (1, 2):
            (conf / name / ('%d.conf' % n)).write_text('[DEFAULT]\n')
    (conf / '.swift-mass-saio').write_text('profile=plain\n')
    stubs = tmp_path / 'bin'
    os.makedirs(str(stubs))
    (stubs / 'swift-init').write_text(SWIFT_INIT)
    os.makedirs(str(tmp_path / 'tools'))
    (tmp_path / 'tools' / 'saio-slow').write_text('#!/bin/sh\n')
    # the Redis topologies' script: records its calls, fails on demand
    os.makedirs(str(tmp_path / 'templates'))
    topology = tmp_path / 'templates' / 'redis-topology'
    topology.write_text('#!/bin/sh\necho "$*" >>"$SAIO_TEST_DIR/topology.log"'
                        '\n[ ! -e "$SAIO_TEST_DIR/topology-fails" ]\n')
    for stub in (stubs / 'swift-init', tmp_path / 'tools' / 'saio-slow',
                 topology):
        os.chmod(str(stub), 0o755)
    env = dict(os.environ, PATH='%s:%s' % (stubs, os.environ['PATH']),
               SAIO_LIB=os.path.join(TEMPLATES, 'lib'),
               SAIO_TEST_DIR=str(tmp_path), SWIFT_DIR=str(conf),
               SAIO_TEST_LOG=str(tmp_path / 'swift-init.log'),
               SAIO_TEST_RUNNING=str(tmp_path / 'running'))

    def run(*args):
        done = subprocess.run(['bash', '-c', HARNESS, 'harness'] + list(args),
                              env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=60)
        return done.returncode, done.stdout

    run.dir = tmp_path
    return run


def swift_init_calls(saio):
    """The stub swift-init's calls so far, the log emptied."""
    path = saio.dir / 'swift-init.log'
    calls = path.read_text().splitlines() if path.exists() else []
    path.write_text('')
    return calls


def runs_its_config(saio):
    """{type: whether its servers run the configs on disk}."""
    rc, out = saio('bash', '-c', 'for t; do echo "$t $(cat '
                   '"$SWIFT_DIR/$t.conf" "$SWIFT_DIR/$t"/*.conf 2>/dev/null'
                   ' | sha256sum | cut -d" " -f1)"; done', '_', *TYPES)
    assert rc == 0, out
    running = (saio.dir / 'running').read_text().splitlines()
    return {line.split()[0]: line in running for line in out.splitlines()}


def test_restart_of_one_type_restarts_that_type_alone(saio):
    rc, out = saio('do_start')
    assert rc == 0, out
    swift_init_calls(saio)
    (saio.dir / 'etc-swift' / 'object-server' / '1.conf').write_text(
        '[DEFAULT]\nworkers = 2\n')
    # not a hand edit: the change a command makes between its check of
    # the stamp and its restart (tools/saio queue, say)
    rc, out = saio('restart_servers', '0', 'object-server')
    assert rc == 0, out
    calls = swift_init_calls(saio)
    assert calls[0] == 'object-server stop'
    assert not any(call.startswith(('main', 'proxy-server'))
                   for call in calls), calls
    assert runs_its_config(saio) == dict.fromkeys(TYPES, True)


def test_restart_of_one_type_after_a_hand_edit_restarts_them_all(saio):
    rc, out = saio('do_start')
    assert rc == 0, out
    assert runs_its_config(saio) == dict.fromkeys(TYPES, True)
    # a hand edit of the proxies' config, then a restart of the object
    # servers: the proxies must not go on with the old config unnoticed
    (saio.dir / 'etc-swift' / 'proxy-server.conf').write_text(
        '[DEFAULT]\nbind_port = 8080\nworkers = 2\n')
    rc, out = saio('do_restart', 'object-server')
    assert rc == 0, out
    assert runs_its_config(saio) == dict.fromkeys(TYPES, True)
    assert saio('config_stale')[0] != 0


def topology_calls(saio):
    path = saio.dir / 'topology.log'
    return path.read_text().splitlines() if path.exists() else []


def test_start_with_one_redis_starts_no_topology(saio):
    rc, out = saio('do_start')
    assert rc == 0, out
    assert topology_calls(saio) == []


def test_start_brings_up_the_chosen_redis_engine_first(saio):
    # the engine a stopped run of the engine tests left chosen: its
    # servers are gone (a new boot), the configs still name them
    marker = saio.dir / 'etc-swift' / '.swift-mass-saio'
    marker.write_text('profile=plain\nredis=sentinel\n')
    rc, out = saio('do_start')
    assert rc == 0, out
    assert topology_calls(saio) == ['sentinel up']
    assert runs_its_config(saio) == dict.fromkeys(TYPES, True)


def test_a_chosen_redis_engine_that_cannot_start_stops_the_start(saio):
    marker = saio.dir / 'etc-swift' / '.swift-mass-saio'
    marker.write_text('profile=plain\nredis=cluster\n')
    (saio.dir / 'topology-fails').write_text('')
    rc, out = saio('do_start')
    assert rc != 0
    assert 'the chosen Redis engine (cluster) did not come up' in out
    assert 'tools/saio redis single' in out
    assert swift_init_calls(saio) == []


# a swift-mass that records how it was started, then runs until stopped
SWIFT_MASS = """#!/bin/sh
echo "$ST_USER $*" >>"$SAIO_TEST_DIR/swift-mass.log"
exec sleep 60
"""


def test_the_auto_migrate_daemon_runs_while_its_option_is_on(saio):
    script = saio.dir / 'bin' / 'swift-mass'
    script.write_text(SWIFT_MASS)
    os.chmod(str(script), 0o755)
    conf = saio.dir / 'etc-swift' / 'proxy-server.conf'
    sync = ['eval', 'auto_migrate_script() { command -v swift-mass; }; '
            'sync_auto_migrate; cat "$AUTO_MIGRATE_PIDFILE" 2>/dev/null'
            ' || true']

    def running():
        rc, out = saio(*sync)
        assert rc == 0, out
        pid = out.split()[-1] if out.split() else ''
        alive = pid.isdigit() and os.path.exists('/proc/%s' % pid)
        return out, pid if alive else None

    try:
        out, first = running()
        assert first is None, out  # off: no section, no option
        conf.write_text('[filter:mass]\nauto_migrate = true\n')
        out, first = running()
        assert first, out
        assert (saio.dir / 'swift-mass.log').read_text() == \
            'admin:admin --conf %s auto-migrate -v\n' % conf
        # running the config as it is: kept, until the config changes
        assert running()[1] == first
        os.utime(str(conf), (time.time() + 5, time.time() + 5))
        out, second = running()
        assert second and second != first, out
        conf.write_text('[filter:mass]\nauto_migrate = false\n')
        out, third = running()
        assert third is None, out
        assert 'stopping swift-mass auto-migrate (pid %s)' % second in out
    finally:
        saio('stop_auto_migrate')
