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
# shellcheck shell=bash
# tools/saio: `swift-mass auto-migrate` beside the proxies, as an operator
# runs it under an init system: running while the first proxy's
# [filter:mass] has auto_migrate on, with the SAIO's reseller admin
# (sourced by tools/saio, which sets the globals and runs main)

AUTO_MIGRATE_PIDFILE=/var/run/swift/mass-auto-migrate.pid
AUTO_MIGRATE_LOG=$LOG_DIR/mass-auto-migrate.log

auto_migrate_enabled() {  # the first proxy's [filter:mass] auto_migrate is on
    # read as the proxies and the daemon read it (MassConf), not by a
    # pattern of our own; a config they would refuse counts as off
    "$PY" - "$SWIFT_DIR/proxy-server.conf" 2>/dev/null <<'EOF'
import sys
from swift.common.utils import readconf
from swift_mass.proxy.conf import MassConf
conf = MassConf(readconf(sys.argv[1], 'filter:mass'))
sys.exit(0 if conf.auto_migrate.enabled else 1)
EOF
}

auto_migrate_script() {
    # the installed script, as an operator's init system runs it (and as
    # the benchmark's process groups count it: "swift-" in its name)
    echo "$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/swift-mass"
}

stop_auto_migrate() {
    local pid
    pid=$(pidfile_pid "$AUTO_MIGRATE_PIDFILE") || return 0
    say "stopping swift-mass auto-migrate (pid $pid)"
    # SIGTERM: a move under way takes its write mark off, its journal stays
    stop_process "$pid"
}

sync_auto_migrate() {  # after the proxies started: the daemon runs the config they run, or none
    local enabled=0
    auto_migrate_enabled && enabled=1
    if [ "$SWIFT_DIR/proxy-server.conf" -nt "$AUTO_MIGRATE_PIDFILE" ] || [ "$enabled" -eq 0 ]; then
        stop_auto_migrate
    fi
    [ "$enabled" -eq 1 ] || return 0
    pidfile_pid "$AUTO_MIGRATE_PIDFILE" >/dev/null && return 0
    local script
    script=$(auto_migrate_script)
    [ -x "$script" ] || die "no $script: run tools/saio install"
    start_background "$AUTO_MIGRATE_PIDFILE" "$AUTO_MIGRATE_LOG" \
        env ST_AUTH="$PROXY_URL/auth/v1.0" ST_USER=admin:admin ST_KEY=admin \
        "$script" --conf "$SWIFT_DIR/proxy-server.conf" auto-migrate -v
    sleep 1
    pidfile_pid "$AUTO_MIGRATE_PIDFILE" >/dev/null || {
        tail -n 20 "$AUTO_MIGRATE_LOG" | sed 's/^/saio:   /' >&2
        die "swift-mass auto-migrate did not start (see above)"
    }
    say "swift-mass auto-migrate runs (pid $(cat "$AUTO_MIGRATE_PIDFILE"), log $AUTO_MIGRATE_LOG)"
}
