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
# tools/saio: `pipeline`, `queue`, `mass`, `redis`, `destroy`
# (sourced by tools/saio, which sets the globals and runs main)

do_pipeline() {
    [ $# -eq 1 ] || die "usage: tools/saio pipeline with|without"
    local mode=$1 n files=() was_stale=0
    case $mode in with|without) ;; *) die "usage: tools/saio pipeline with|without" ;; esac
    require_root
    require_setup
    if [ "$mode" = with ]; then
        local err
        err=$(mass_importable 2>&1) || die "the Mass filters do not load with $PY: $(printf '%s' "$err" | tail -n1)"
    fi
    for n in "${NODES[@]}"; do files+=("$SWIFT_DIR/object-server/$n.conf"); done
    config_stale && was_stale=1
    apply_mass_mode "$mode" "$SWIFT_DIR/proxy-server.conf" "${files[@]}"
    if [ -f "$SWIFT_DIR/$PROXY2_CONF" ]; then
        apply_mass_mode "$mode" "$SWIFT_DIR/$PROXY2_CONF"
    fi
    marker_set mass "$mode"
    say "pipelines now $(current_mass_mode) mass:"
    grep -E '^[[:space:]]*pipeline[[:space:]]*=' "$SWIFT_DIR/proxy-server.conf" "$SWIFT_DIR/object-server/1.conf" \
        $([ -f "$SWIFT_DIR/$PROXY2_CONF" ] && echo "$SWIFT_DIR/$PROXY2_CONF") |
        sed "s|^$SWIFT_DIR/|saio:   |"
    restart_servers "$was_stale" proxy-server object-server
}

# set_filter_options NAME SECTION CHECK WHAT TYPE FILE... -- [OPTION=VALUE ...]:
# without options show SECTION of the first FILE; with them, check them
# with CHECK (Python taking `conf`, a dict, raising ConfigError: the
# filter's own validation, before any server sees the change), set them in
# every FILE, show them and restart the servers of swift-init TYPE
set_filter_options() {
    local name=$1 section=$2 check=$3 what=$4 type=$5 files=() arg f was_stale=0
    shift 5
    while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    if [ $# -eq 0 ]; then
        "$PY" "$INI" show "${files[0]}" "$section" | sed 's/^/saio:   /'
        return
    fi
    for arg in "$@"; do
        [[ $arg =~ ^[a-z_]+=[^[:space:]]*$ ]] || die "$name: expected OPTION=VALUE, got '$arg'"
    done
    # checked with the section's other options, as the servers will read it
    # (auto_migrate_after against window_seconds, say)
    "$PY" - "$check" "${files[0]}" "$section" "$@" <<'EOF' || die "$name: nothing was changed"
import sys
from swift.common.utils import readconf
from swift_mass.conf import ConfigError
from swift_mass.proxy.conf import MassConf  # noqa: F401 (in CHECK)
from swift_mass.obj.middleware import MassQueueMiddleware  # noqa: F401
conf = dict(readconf(sys.argv[2], sys.argv[3]))
conf.update(arg.split('=', 1) for arg in sys.argv[4:])
try:
    exec(sys.argv[1])
except ConfigError as err:
    sys.exit('saio: ERROR: %s' % err)
EOF
    config_stale && was_stale=1
    for f in "${files[@]}"; do
        "$PY" "$INI" set "$f" "$section" "$@" || die "$name: $f could not be changed"
    done
    say "[$section] of $what now:"
    "$PY" "$INI" show "${files[0]}" "$section" | sed 's/^/saio:   /'
    restart_servers "$was_stale" "$type"
}

do_queue() {  # [OPTION=VALUE ...]
    require_root
    require_setup
    local n files=()
    for n in "${NODES[@]}"; do files+=("$SWIFT_DIR/object-server/$n.conf"); done
    set_filter_options queue filter:mass_queue 'MassQueueMiddleware(None, conf)' \
        'the object servers' object-server "${files[@]}" -- "$@"
}

do_mass() {  # [OPTION=VALUE ...]
    require_root
    require_setup
    local files=("$SWIFT_DIR/proxy-server.conf")
    [ ! -f "$SWIFT_DIR/$PROXY2_CONF" ] || files+=("$SWIFT_DIR/$PROXY2_CONF")
    [ ! -f "$SWIFT_DIR/$KS_PROXY_CONF" ] || files+=("$SWIFT_DIR/$KS_PROXY_CONF")
    set_filter_options mass filter:mass 'MassConf(conf)' \
        'the proxies with Mass' proxy-server "${files[@]}" -- "$@"
}

# Mass's redis_url for each engine (tools/saio.d/redis-topology runs the
# Sentinel set and the Cluster beside the SAIO's own Redis)
redis_engine_url() {  # single|sentinel|cluster
    case $1 in
        single)   echo "redis://127.0.0.1:6379/0" ;;
        sentinel) echo "redis+sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/mass" ;;
        cluster)  echo "redis+cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002" ;;
        *) return 1 ;;
    esac
}

# redis_url in the proxies' [filter:mass] (the second's and Keystone's once
# rendered) and every object server's [filter:mass_queue] under a config dir
set_redis_url() {  # dir url
    local dir=$1 url=$2 f files=("$1/proxy-server.conf") n
    [ ! -f "$dir/$PROXY2_CONF" ] || files+=("$dir/$PROXY2_CONF")
    [ ! -f "$dir/$KS_PROXY_CONF" ] || files+=("$dir/$KS_PROXY_CONF")
    for f in "${files[@]}"; do
        "$PY" "$INI" set "$f" filter:mass "redis_url=$url" || die "redis_url: $f could not be changed"
    done
    for n in "${NODES[@]}"; do
        f=$dir/object-server/$n.conf
        "$PY" "$INI" set "$f" filter:mass_queue "redis_url=$url" || die "redis_url: $f could not be changed"
    done
}

do_redis() {  # [single|sentinel|cluster]
    local usage="usage: tools/saio redis [single|sentinel|cluster]"
    require_root
    require_setup
    if [ $# -eq 0 ]; then
        local engine
        engine=$(marker_get redis)
        say "Redis of the proxies and object servers: ${engine:-single}, $(redis_engine_url "${engine:-single}")"
        return
    fi
    [ $# -eq 1 ] || die "$usage"
    local kind=$1 url other was_stale=0 chosen
    url=$(redis_engine_url "$kind") || die "$usage"
    chosen=$(marker_get redis)
    if [ "$kind" = single ] && [ "${chosen:-single}" = single ]; then
        say "proxies and object servers already use $url"
        return
    fi
    config_stale && was_stale=1
    if [ "$kind" != single ]; then
        if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
            apt_install redis-server redis-tools
        fi
        redis_engine_up "$kind"
    fi
    set_redis_url "$SWIFT_DIR" "$url"
    marker_set redis "$kind"
    say "proxies and object servers now use $url"
    restart_servers "$was_stale" proxy-server object-server
    if [ "$kind" = single ]; then
        for other in sentinel cluster; do
            "$TEMPLATES/redis-topology" "$other" down >/dev/null 2>&1 || true
        done
    fi
}

do_destroy() {
    local arg pid
    for arg in "$@"; do die "destroy: unknown option $arg"; done
    require_root
    if [ ! -f "$MARKER" ]; then
        if [ -e "$SWIFT_DIR" ]; then
            die "$SWIFT_DIR was not created by tools/saio (no $MARKER); not touching it or the storage"
        fi
        warn "no $SWIFT_DIR: cleaning up storage left by tools/saio, if any"
    fi
    if command -v swift-init >/dev/null 2>&1 && { any_server_answers || swift-init main status >/dev/null 2>&1; }; then
        do_stop
    fi
    # Keystone (lib/keystone.sh): stopped, its state removed
    if pid=$(keystone_pid); then
        stop_process "$pid"
    fi
    rm -rf "$KS_ETC" "$KS_VAR" "$KS_PIDFILE"
    teardown_devices
    rm -rf "$DEVICE_IMAGES"
    if mountpoint -q "$MNT" 2>/dev/null; then
        umount "$MNT" || die "umount $MNT failed"
        say "unmounted $MNT"
    fi
    local n
    for n in "${NODES[@]}"; do
        [ -L "/srv/$n" ] && rm -f "/srv/$n"
        [ -d "$MNT/$n" ] && rm -rf "${MNT:?}/$n"  # plain-directory fallback
    done
    rmdir "$MNT" 2>/dev/null || true
    rm -f "$DISK_IMG"
    rm -rf /var/cache/swift /var/cache/swift2 /var/cache/swift3 /var/cache/swift4 /var/run/swift
    if [ -f "$RSYSLOG_CONF" ] && grep -q 'tools/saio' "$RSYSLOG_CONF"; then
        rm -f "$RSYSLOG_CONF"
        [ -n "$(rsyslogd_pid)" ] && start_rsyslogd restart >/dev/null
    fi
    [ -f "$MARKER" ] && rm -rf "$SWIFT_DIR"
    say "destroyed (logs in $LOG_DIR kept; memcached and Redis left running)"
}
