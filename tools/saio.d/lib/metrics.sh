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
# tools/saio: `metrics`: statsd_exporter, or collectd and Prometheus,
# beside the SAIO, on demand
# (sourced by tools/saio, which sets the globals and runs main)
#
# The SAIO's mass and mass_queue filters send statsd to 127.0.0.1:8125.
# The functional tests' `statsd` fixture and tools/demo bind that very
# port, each while it runs: a listener started with the SAIO would hold
# it for good, and they could not.  So the chain runs only between
# `metrics start` and `metrics stop`, on that port, and `start` refuses
# while anything else holds it.  Nothing of Swift's config changes, so the
# servers need no restart either way.
#
# Two backends (SAIO_METRICS_BACKEND; auto takes the first that is
# installed): statsd_exporter with etc/statsd_exporter-mapping.yml, or,
# where there is none (Debian 12), Debian's collectd (statsd in,
# write_prometheus out) scraped by Debian's Prometheus through
# etc/prometheus-collectd-relabel.yml, which names the series as the
# exporter does (docs/metrics.md).

METRICS_BACKEND=${SAIO_METRICS_BACKEND:-auto}
METRICS_STATSD_IP=127.0.0.1
METRICS_STATSD_PORT=${SAIO_METRICS_STATSD_PORT:-8125}
# not statsd_exporter's :9102, where a packaged exporter's own service
# may already listen
METRICS_WEB=${SAIO_METRICS_WEB:-127.0.0.1:9112}
METRICS_MAPPING=$REPO_ROOT/etc/statsd_exporter-mapping.yml
METRICS_PIDFILE=/var/run/swift/statsd-exporter.pid
METRICS_LOG=$LOG_DIR/statsd-exporter.log
# Debian's name for it (Debian 12 has none; see install_metrics)
METRICS_PKG=prometheus-statsd-exporter

# The collectd backend.  Not Debian's ports (Prometheus's :9090,
# write_prometheus's :9103), where the packages' own services may listen.
METRICS_COLLECTD_WEB=${SAIO_METRICS_COLLECTD_WEB:-127.0.0.1:19103}
METRICS_PROMETHEUS_WEB=${SAIO_METRICS_PROMETHEUS_WEB:-127.0.0.1:19090}
# the configs written from tools/saio.d at each start, and Prometheus's
# TSDB (kept across starts)
METRICS_DIR=${SAIO_METRICS_DIR:-/var/lib/swift-mass-metrics}
METRICS_RELABEL=$REPO_ROOT/etc/prometheus-collectd-relabel.yml
METRICS_ALERTS=$REPO_ROOT/etc/prometheus-mass-alerts.yml
COLLECTD_PIDFILE=/var/run/swift/metrics-collectd.pid
COLLECTD_LOG=$LOG_DIR/metrics-collectd.log
PROMETHEUS_PIDFILE=/var/run/swift/metrics-prometheus.pid
PROMETHEUS_LOG=$LOG_DIR/metrics-prometheus.log
# collectd-core only suggests write_prometheus's libraries
COLLECTD_PKGS=(collectd-core prometheus libmicrohttpd12 libprotobuf-c1)

statsd_exporter_bin() {  # prints the exporter's path; fails if there is none
    local name
    for name in ${SAIO_STATSD_EXPORTER:+"$SAIO_STATSD_EXPORTER"} "$METRICS_PKG" statsd_exporter; do
        command -v "$name" 2>/dev/null && return 0
    done
    return 1
}

collectd_chain_installed() {
    command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 &&
        [ -x /usr/sbin/collectd ] && [ -f /usr/lib/collectd/write_prometheus.so ] &&
        [ -f /usr/lib/collectd/statsd.so ] &&
        pkg_installed libmicrohttpd12 && pkg_installed libprotobuf-c1
}

quiet_packaged_services() {
    # The packages start collectd on Debian's config and Prometheus on
    # :9090 (scraping itself): neither is ours, and a second collectd
    # would only sample the machine.  Where no init runs (a container),
    # there is nothing to stop.
    local svc
    for svc in collectd prometheus; do
        if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
            if systemctl is-enabled --quiet "$svc" 2>/dev/null ||
                systemctl is-active --quiet "$svc" 2>/dev/null; then
                say "disabling Debian's own $svc service (tools/saio metrics runs its own)"
                systemctl disable --now "$svc" >/dev/null 2>&1 || warn "could not disable $svc.service"
            fi
        elif [ -x "/etc/init.d/$svc" ]; then
            # by its own pidfile (and user): never ours
            if "/etc/init.d/$svc" status >/dev/null 2>&1; then
                say "stopping Debian's own $svc service (tools/saio metrics runs its own)"
                "/etc/init.d/$svc" stop >/dev/null 2>&1 || warn "could not stop /etc/init.d/$svc"
            fi
            if command -v update-rc.d >/dev/null 2>&1; then
                update-rc.d "$svc" disable >/dev/null 2>&1 || true
            fi
        fi
    done
}

install_collectd_chain() {
    if collectd_chain_installed; then
        say "collectd and Prometheus present"
    else
        apt_install "${COLLECTD_PKGS[@]}"
    fi
    quiet_packaged_services
}

# `install`'s part: the collectd chain (Debian has it; tools/test's lint
# step needs its promtool), and statsd_exporter where the archive has it.
install_metrics() {
    install_collectd_chain
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
        say "this distribution's archive has no $METRICS_PKG: 'tools/saio metrics' runs collectd and Prometheus"
    fi
}

metrics_backend() {  # prints statsd_exporter or collectd
    case $METRICS_BACKEND in
        statsd_exporter|collectd) echo "$METRICS_BACKEND" ;;
        auto)
            if statsd_exporter_bin >/dev/null; then echo statsd_exporter; else echo collectd; fi ;;
        *) die "SAIO_METRICS_BACKEND=$METRICS_BACKEND: auto, statsd_exporter or collectd" ;;
    esac
}

metrics_pid() { pidfile_pid "$METRICS_PIDFILE"; }  # the exporter we started
collectd_pid() { pidfile_pid "$COLLECTD_PIDFILE"; }
prometheus_pid() { pidfile_pid "$PROMETHEUS_PIDFILE"; }

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

statsd_port_free_or_die() {  # what: the listener that needs it
    udp_port_free "$METRICS_STATSD_IP" "$METRICS_STATSD_PORT" ||
        die "UDP $METRICS_STATSD_IP:$METRICS_STATSD_PORT is taken (a functional test's statsd listener or tools/demo?): $1 must listen where the SAIO's servers send statsd"
}

metrics_answer() {
    [ "$(http_code "http://$METRICS_WEB/metrics")" = 200 ]
}
collectd_answer() {
    [ "$(http_code "http://$METRICS_COLLECTD_WEB/metrics")" = 200 ]
}
prometheus_answer() {
    [ "$(http_code "http://$METRICS_PROMETHEUS_WEB/-/ready")" = 200 ]
}

metrics_write_configs() {  # dir: collectd.conf and prometheus.yml from tools/saio.d
    local dir=$1
    [ -f "$METRICS_RELABEL" ] || die "no $METRICS_RELABEL"
    [ -f "$METRICS_ALERTS" ] || die "no $METRICS_ALERTS"
    mkdir -p "$dir"
    sed -e "s|@DIR@|$dir|g" \
        -e "s|@STATSD_IP@|$METRICS_STATSD_IP|g" -e "s|@STATSD_PORT@|$METRICS_STATSD_PORT|g" \
        -e "s|@WEB_IP@|${METRICS_COLLECTD_WEB%:*}|g" -e "s|@WEB_PORT@|${METRICS_COLLECTD_WEB##*:}|g" \
        "$TEMPLATES/collectd.conf.in" >"$dir/collectd.conf"
    # the relabels as one line of JSON (which YAML reads): Prometheus has
    # no include for them
    "$PY" - "$TEMPLATES/prometheus.yml.in" "$METRICS_RELABEL" "$METRICS_ALERTS" \
        "$METRICS_COLLECTD_WEB" >"$dir/prometheus.yml" <<'EOF' || die "could not write $dir/prometheus.yml"
import json, sys
import yaml
template, relabel, alerts, collectd = sys.argv[1:]
with open(relabel) as f:
    configs = yaml.safe_load(f)['metric_relabel_configs']
with open(template) as f:
    text = f.read()
for key, value in (('@ALERTS@', json.dumps(alerts)),
                   ('@COLLECTD_WEB@', collectd),
                   ('@METRIC_RELABEL_CONFIGS@', json.dumps(configs))):
    text = text.replace(key, value)
sys.stdout.write(text)
EOF
}

metrics_check_configs() {  # dir: what collectd and promtool say of them
    /usr/sbin/collectd -t -C "$1/collectd.conf" ||
        die "collectd -t refused $1/collectd.conf"
    promtool check config "$1/prometheus.yml" ||
        die "promtool check config refused $1/prometheus.yml"
}

exporter_start() {
    local bin pid
    if pid=$(metrics_pid); then
        say "statsd_exporter already runs (pid $pid): statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT, http://$METRICS_WEB/metrics"
        return 0
    fi
    if pid=$(collectd_pid); then
        die "collectd runs (pid $pid) and holds the statsd port: 'tools/saio metrics stop' first"
    fi
    bin=$(statsd_exporter_bin) ||
        die "no statsd_exporter: 'tools/saio install' installs Debian's $METRICS_PKG where the archive has it; else put statsd_exporter on PATH or set SAIO_STATSD_EXPORTER"
    [ -f "$METRICS_MAPPING" ] || die "no $METRICS_MAPPING"
    statsd_port_free_or_die "the exporter"
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

collectd_chain_start() {
    local cpid ppid pid
    if cpid=$(collectd_pid) && ppid=$(prometheus_pid); then
        say "collectd (pid $cpid) and Prometheus (pid $ppid) already run: http://$METRICS_PROMETHEUS_WEB"
        return 0
    fi
    if pid=$(metrics_pid); then
        die "statsd_exporter runs (pid $pid) and holds the statsd port: 'tools/saio metrics stop' first"
    fi
    # half a chain (one of them died): start both afresh
    metrics_stop >/dev/null
    collectd_chain_installed || install_collectd_chain
    statsd_port_free_or_die "collectd"
    if collectd_answer; then
        die "something already answers http://$METRICS_COLLECTD_WEB/metrics: set SAIO_METRICS_COLLECTD_WEB to a free address"
    fi
    if prometheus_answer; then
        die "something already answers http://$METRICS_PROMETHEUS_WEB: set SAIO_METRICS_PROMETHEUS_WEB to a free address"
    fi
    metrics_write_configs "$METRICS_DIR"
    metrics_check_configs "$METRICS_DIR" >/dev/null
    say "starting collectd: statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT (UDP), http://$METRICS_COLLECTD_WEB/metrics ($METRICS_DIR/collectd.conf)"
    start_background "$COLLECTD_PIDFILE" "$COLLECTD_LOG" /usr/sbin/collectd -f -C "$METRICS_DIR/collectd.conf"
    if ! await_background collectd "$COLLECTD_PIDFILE" "$COLLECTD_LOG" 50 collectd_answer; then
        metrics_stop >/dev/null 2>&1 || true
        die "collectd did not come up (its log, $COLLECTD_LOG, above)"
    fi
    say "starting Prometheus: http://$METRICS_PROMETHEUS_WEB ($METRICS_DIR/prometheus.yml, data in $METRICS_DIR/prometheus)"
    start_background "$PROMETHEUS_PIDFILE" "$PROMETHEUS_LOG" prometheus \
        --config.file="$METRICS_DIR/prometheus.yml" \
        --storage.tsdb.path="$METRICS_DIR/prometheus" \
        --storage.tsdb.retention.time=2d \
        --web.listen-address="$METRICS_PROMETHEUS_WEB"
    if ! await_background Prometheus "$PROMETHEUS_PIDFILE" "$PROMETHEUS_LOG" 150 prometheus_answer; then
        metrics_stop >/dev/null 2>&1 || true
        die "Prometheus did not come up (its log, $PROMETHEUS_LOG, above)"
    fi
    say "Prometheus: http://$METRICS_PROMETHEUS_WEB (Mass's series: mass_*; alerts: /alerts)"
}

metrics_start() {
    local backend
    backend=$(metrics_backend) || exit 1
    case $backend in
        statsd_exporter) exporter_start ;;
        collectd) collectd_chain_start ;;
    esac
}

metrics_stop() {  # whatever of either backend runs
    local pid what pidfile stopped=0
    for what in statsd_exporter:$METRICS_PIDFILE Prometheus:$PROMETHEUS_PIDFILE collectd:$COLLECTD_PIDFILE; do
        pidfile=${what#*:}
        if pid=$(pidfile_pid "$pidfile"); then
            stop_process "$pid"
            say "${what%%:*} stopped"
            stopped=1
        fi
        rm -f "$pidfile"
    done
    if [ "$stopped" -eq 1 ]; then
        say "UDP $METRICS_STATSD_IP:$METRICS_STATSD_PORT is free again"
    else
        say "no metrics backend running"
    fi
}

metrics_status() {  # 0 if one backend runs whole and answers
    local pid up=1
    if pid=$(metrics_pid); then
        if metrics_answer; then
            say "statsd_exporter   running (pid $pid): statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT, http://$METRICS_WEB/metrics"
            up=0
        else
            say "statsd_exporter   pid $pid runs but http://$METRICS_WEB/metrics does not answer"
        fi
    fi
    local cpid ppid cup=1 pup=1
    if cpid=$(collectd_pid); then
        if collectd_answer; then
            say "collectd          running (pid $cpid): statsd $METRICS_STATSD_IP:$METRICS_STATSD_PORT, http://$METRICS_COLLECTD_WEB/metrics"
            cup=0
        else
            say "collectd          pid $cpid runs but http://$METRICS_COLLECTD_WEB/metrics does not answer"
        fi
    fi
    if ppid=$(prometheus_pid); then
        if prometheus_answer; then
            say "Prometheus        running (pid $ppid): http://$METRICS_PROMETHEUS_WEB"
            pup=0
        else
            say "Prometheus        pid $ppid runs but http://$METRICS_PROMETHEUS_WEB/-/ready does not answer"
        fi
    fi
    if [ -n "$cpid" ] || [ -n "$ppid" ]; then
        [ -n "$cpid" ] || say "collectd          not running ('tools/saio metrics start' starts both)"
        [ -n "$ppid" ] || say "Prometheus        not running ('tools/saio metrics start' starts both)"
        [ "$cup" -eq 0 ] && [ "$pup" -eq 0 ] && up=0
    fi
    if [ -z "$pid" ] && [ -z "$cpid" ] && [ -z "$ppid" ]; then
        say "metrics           not running ('tools/saio metrics start': $(metrics_backend))"
    fi
    return "$up"
}

metrics_check() {  # the configs a start would write, checked; the alert rules
    command -v promtool >/dev/null 2>&1 ||
        die "no promtool: 'tools/saio install' installs Debian's prometheus"
    [ -x /usr/sbin/collectd ] || die "no collectd: 'tools/saio install' installs Debian's collectd-core"
    local dir
    dir=$(mktemp -d)
    CLEANUP+=("$dir")
    metrics_write_configs "$dir"
    metrics_check_configs "$dir"
    promtool check rules "$METRICS_ALERTS" || die "promtool check rules refused $METRICS_ALERTS"
}

do_metrics() {  # start|stop|status|check
    [ $# -eq 1 ] || die "usage: tools/saio metrics start|stop|status|check"
    case $1 in
        start) require_root; metrics_start ;;
        stop) require_root; metrics_stop ;;
        status) metrics_status ;;
        check) metrics_check ;;
        *) die "usage: tools/saio metrics start|stop|status|check" ;;
    esac
}
