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
# tools/saio: `metrics`: statsd_exporter beside the SAIO, on demand
# (sourced by tools/saio, which sets the globals and runs main)
#
# The SAIO's mass and mass_queue filters send statsd to 127.0.0.1:8125.
# The functional tests' `statsd` fixture and tools/demo bind that very
# port, each while it runs: an exporter started with the SAIO would hold
# it for good, and they could not.  So the exporter runs only between
# `metrics start` and `metrics stop`, on that port, and `start` refuses
# while anything else holds it.  Nothing of Swift's config changes, so the
# servers need no restart either way.

METRICS_STATSD_IP=127.0.0.1
METRICS_STATSD_PORT=${SAIO_METRICS_STATSD_PORT:-8125}
# not statsd_exporter's :9102, where a packaged exporter's own service
# may already listen
METRICS_WEB=${SAIO_METRICS_WEB:-127.0.0.1:9112}
METRICS_MAPPING=$REPO_ROOT/etc/statsd_exporter-mapping.yml
METRICS_PIDFILE=/var/run/swift/statsd-exporter.pid
METRICS_LOG=$LOG_DIR/statsd-exporter.log
# Debian's name for it (Debian 12 has none; see install_statsd_exporter)
METRICS_PKG=prometheus-statsd-exporter

statsd_exporter_bin() {  # prints the exporter's path; fails if there is none
    local name
    for name in ${SAIO_STATSD_EXPORTER:+"$SAIO_STATSD_EXPORTER"} "$METRICS_PKG" statsd_exporter; do
        command -v "$name" 2>/dev/null && return 0
    done
    return 1
}

# `install`'s part: Debian's package where the archive has one.  Not
# fatal: everything else of the SAIO works without it, and on Debian 12
# (which has no such package) the binary must come from elsewhere.
install_statsd_exporter() {
    if statsd_exporter_bin >/dev/null; then
        say "statsd_exporter present ($(statsd_exporter_bin))"
        return 0
    fi
    if apt_lists_stale; then
        apt-get update -q || { warn "apt-get update failed: no $METRICS_PKG"; return 0; }
    fi
    if [ -n "$(apt-cache policy "$METRICS_PKG" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2}')" ]; then
        apt_install "$METRICS_PKG"
        # the package may start its own service (UDP :9125, web :9102);
        # ours listens elsewhere and does not need it
    else
        warn "this distribution's archive has no $METRICS_PKG: 'tools/saio metrics' needs statsd_exporter on PATH (or SAIO_STATSD_EXPORTER=/path/to/it)"
    fi
}

metrics_pid() { pidfile_pid "$METRICS_PIDFILE"; }  # the exporter we started

udp_port_free() {  # ip port
    "$PY" - "$1" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)
EOF
}

metrics_answer() {
    [ "$(http_code "http://$METRICS_WEB/metrics")" = 200 ]
}

metrics_start() {
    local bin pid
    if pid=$(metrics_pid); then
        say "statsd_exporter already runs (pid $pid): statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT, http://$METRICS_WEB/metrics"
        return 0
    fi
    bin=$(statsd_exporter_bin) ||
        die "no statsd_exporter: 'tools/saio install' installs Debian's $METRICS_PKG where the archive has it; else put statsd_exporter on PATH or set SAIO_STATSD_EXPORTER"
    [ -f "$METRICS_MAPPING" ] || die "no $METRICS_MAPPING"
    udp_port_free "$METRICS_STATSD_IP" "$METRICS_STATSD_PORT" ||
        die "UDP $METRICS_STATSD_IP:$METRICS_STATSD_PORT is taken (a functional test's statsd listener or tools/demo?): the exporter must listen where the SAIO's servers send statsd"
    if metrics_answer; then
        die "something already answers http://$METRICS_WEB/metrics: set SAIO_METRICS_WEB to a free address"
    fi
    "$bin" --check-config --statsd.mapping-config="$METRICS_MAPPING" >/dev/null 2>&1 ||
        warn "$bin --check-config refused $METRICS_MAPPING (or knows no --check-config); trying anyway"
    say "starting $bin: statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT (UDP), http://$METRICS_WEB/metrics, mapping $METRICS_MAPPING"
    start_background "$METRICS_PIDFILE" "$METRICS_LOG" "$bin" \
        --statsd.listen-udp="$METRICS_STATSD_IP:$METRICS_STATSD_PORT" \
        --statsd.listen-tcp="" \
        --web.listen-address="$METRICS_WEB" \
        --statsd.mapping-config="$METRICS_MAPPING"
    await_background statsd_exporter "$METRICS_PIDFILE" "$METRICS_LOG" 50 metrics_answer &&
        return 0
    metrics_stop >/dev/null 2>&1 || true
    die "statsd_exporter did not come up (its log, $METRICS_LOG, above)"
}

metrics_stop() {
    local pid
    if ! pid=$(metrics_pid); then
        rm -f "$METRICS_PIDFILE"
        say "statsd_exporter not running"
        return 0
    fi
    stop_process "$pid"
    rm -f "$METRICS_PIDFILE"
    say "statsd_exporter stopped; UDP $METRICS_STATSD_IP:$METRICS_STATSD_PORT is free again"
}

metrics_status() {
    local pid
    if pid=$(metrics_pid) && metrics_answer; then
        say "statsd_exporter   running (pid $pid): statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT, http://$METRICS_WEB/metrics"
        return 0
    fi
    if [ -n "${pid:-}" ]; then
        say "statsd_exporter   pid $pid runs but http://$METRICS_WEB/metrics does not answer"
    else
        say "statsd_exporter   not running ('tools/saio metrics start')"
    fi
    return 1
}

do_metrics() {  # start|stop|status
    [ $# -eq 1 ] || die "usage: tools/saio metrics start|stop|status"
    case $1 in
        start) require_root; metrics_start ;;
        stop) require_root; metrics_stop ;;
        status) metrics_status ;;
        *) die "usage: tools/saio metrics start|stop|status" ;;
    esac
}
