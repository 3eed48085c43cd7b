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
# tools/saio: `start`, `stop`, `restart`, `status`, `reset`, `up`
# (sourced by tools/saio, which sets the globals and runs main)

# ---------------------------------------------------------------- start/stop

# name ip port conf, one per line
servers() {
    echo "proxy-server 127.0.0.1 8080 $SWIFT_DIR/proxy-server.conf"
    echo "proxy-server 127.0.0.1 8081 $SWIFT_DIR/$PROXY2_CONF"
    echo "proxy-server 127.0.0.1 8082 $SWIFT_DIR/$PROXY3_CONF"
    # Keystone's proxy, while `tools/saio keystone up` has it (lib/keystone.sh)
    if [ -f "$SWIFT_DIR/$KS_PROXY_CONF" ]; then
        echo "proxy-server 127.0.0.1 $KS_PROXY_PORT $SWIFT_DIR/$KS_PROXY_CONF"
    fi
    local n
    for n in "${NODES[@]}"; do
        echo "account-server 127.0.0.$n 62${n}2 $SWIFT_DIR/account-server/$n.conf"
        echo "container-server 127.0.0.$n 62${n}1 $SWIFT_DIR/container-server/$n.conf"
        echo "object-server 127.0.0.$n 62${n}0 $SWIFT_DIR/object-server/$n.conf"
        if [ "$(profile)" = hetero ]; then
            echo "object-server 127.0.0.$n 62${n}6 $SWIFT_DIR/object-server/$n.conf"
        fi
    done
}

down_servers() {  # prints "name ip port conf" of servers not answering
    local name ip port conf
    while read -r name ip port conf; do
        healthy "$ip" "$port" || echo "$name $ip $port $conf"
    done < <(servers)
}

any_server_answers() {
    local name ip port conf
    while read -r name ip port conf; do
        [ "$(http_code "http://$ip:$port/healthcheck")" != 000 ] && return 0
    done < <(servers)
    return 1
}

# Hash of what the servers read at start-up, to notice changes made while
# they run (setup, pipeline, hand edits).
config_hash() {
    (cd "$SWIFT_DIR" && find . -maxdepth 2 -type f \( -name '*.conf' -o -name '*.ring.gz' \) \
        ! -name test.conf -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

config_stale() {  # the servers were started by us with another config
    [ -f "$CONFIG_STAMP" ] && [ "$(config_hash)" != "$(cat "$CONFIG_STAMP")" ]
}

require_setup() {
    [ -f "$MARKER" ] || die "no $MARKER: run 'tools/saio setup' (or 'tools/saio up') first"
}

daemon() {  # command...: start a daemon that keeps none of our open files
    # A daemon that inherits the fd of `flock LOCK tools/saio ...` would
    # hold that lock for as long as it runs.
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
        done
        exec "$@"
    )
}

ensure_memcached() {
    memcached_ok && { say "memcached answers on 127.0.0.1:11211"; return 0; }
    command -v memcached >/dev/null 2>&1 || die "memcached not installed; run: tools/saio install"
    local user=memcache
    id -u memcache >/dev/null 2>&1 || user=nobody
    say "starting memcached on 127.0.0.1:11211"
    daemon memcached -d -u "$user" -l 127.0.0.1 -p 11211 -m 128 || die "memcached failed to start"
    answers_within 20 0.25 "memcached on 127.0.0.1:11211" memcached_ok
}

ensure_storage() {
    if [ "$(marker_get storage)" = plain ]; then
        if mount_storage; then
            marker_set storage xfs
            warn "storage moved from plain directories to the XFS image: the cluster starts empty"
        else
            plain_storage_warning
        fi
    else
        mount_storage || die "storage $DISK_IMG is not mounted on $MNT and could not be mounted (see above); 'tools/saio setup' falls back to plain directories"
    fi
    make_storage_dirs
}

diagnose() {  # lines "name ip port conf" on stdin
    local name ip port conf
    echo "saio: swift-init main status:" >&2
    swift-init main status 2>&1 | sed 's/^/saio:   /' >&2 || true
    while read -r name ip port conf; do
        echo "saio: $name on $ip:$port does not answer /healthcheck; loading $conf:" >&2
        (cd / && timeout 30 "$PY" - "$conf" 2>&1 <<'EOF'
import sys
from swift.common.wsgi import loadapp
loadapp(sys.argv[1])
print('loads fine (so the problem is at run time: see the logs)')
EOF
        ) | tail -n 4 | sed 's/^/saio:   /' >&2 || true
    done
    # Errors logged since the start began, without the start/stop chatter.
    local f lines
    for f in "$LOG_DIR"/*.error; do
        [ -s "$f" ] || continue
        lines=$(tail -c +$((${LOG_OFFSETS[$f]:-0} + 1)) "$f" |
            grep -Ev 'Started child|SIGTERM received|Exited \(|digest algorithms are allowed' |
            tail -n 8 || true)
        [ -n "$lines" ] || continue
        echo "saio: new lines in $f:" >&2
        printf '%s\n' "$lines" | sed 's/^/saio:   /' >&2
    done
}

wait_healthy() {
    local deadline=$((SECONDS + START_TIMEOUT)) down
    while :; do
        down=$(down_servers)
        [ -z "$down" ] && return 0
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "saio: ERROR: after ${START_TIMEOUT}s these servers still do not answer:" >&2
            printf '%s\n' "$down" | awk '{print "saio:   " $1 " " $2 ":" $3 " (" $4 ")"}' >&2
            printf '%s\n' "$down" | diagnose
            return 1
        fi
        sleep 0.2
    done
}

# tempauth users from proxy-server.conf: "account user key groups..."
tempauth_users() {
    awk '
        /^[[:space:]]*\[/ { insec = ($0 ~ /^[[:space:]]*\[filter:tempauth\]/) ; next }
        insec && /^[[:space:]]*user_[^=]*=/ {
            line = $0
            name = line; sub(/[[:space:]]*=.*/, "", name); sub(/^[[:space:]]*user_/, "", name)
            val = line; sub(/^[^=]*=[[:space:]]*/, "", val)
            i = index(name, "_")
            if (i == 0) next
            print substr(name, 1, i - 1), substr(name, i + 1), val
        }' "$SWIFT_DIR/proxy-server.conf"
}

auth() {  # account user key -> prints "storage_url token"
    local hdrs url tok
    for _ in $(seq 1 10); do
        hdrs=$(curl -s -m 10 -D - -o /dev/null -H "X-Auth-User: $1:$2" -H "X-Auth-Key: $3" \
            "$PROXY_URL/auth/v1.0" 2>/dev/null | tr -d '\r' || true)
        url=$(printf '%s\n' "$hdrs" | sed -n 's/^[Xx]-[Ss]torage-[Uu]rl: *//p' | head -n1)
        tok=$(printf '%s\n' "$hdrs" | sed -n 's/^[Xx]-[Aa]uth-[Tt]oken: *//p' | head -n1)
        if [ -n "$url" ] && [ -n "$tok" ]; then
            echo "$url $tok"
            return 0
        fi
        sleep 1
    done
    echo "saio: ERROR: cannot authenticate $1:$2 at $PROXY_URL/auth/v1.0: $(printf '%s\n' "$hdrs" | head -n1)" >&2
    return 1
}

create_test_accounts() {
    local acct user key groups cred url tok admin_tok="" code
    local -A urls=() toks=()
    while read -r acct user key groups; do
        cred=$(auth "$acct" "$user" "$key") || return 1
        url=${cred% *}; tok=${cred#* }
        if [[ " $groups " == *" .reseller_admin "* ]] && [ -z "$admin_tok" ]; then admin_tok=$tok; fi
        if [[ " $groups " == *" .admin "* ]] || [ -z "${toks[$url]:-}" ]; then toks[$url]=$tok; fi
        urls[$url]=1
    done < <(tempauth_users)
    [ ${#urls[@]} -gt 0 ] || { warn "no tempauth users in $SWIFT_DIR/proxy-server.conf"; return 0; }
    for url in "${!urls[@]}"; do
        tok=${admin_tok:-${toks[$url]}}
        code=$(http_code "$url" -X POST -H "X-Auth-Token: $tok")
        case $code in 2??) ;; *) echo "saio: ERROR: POST $url -> HTTP $code" >&2; return 1 ;; esac
        code=$(http_code "$url" -I -H "X-Auth-Token: $tok")
        case $code in 2??) ;; *) echo "saio: ERROR: HEAD $url -> HTTP $code" >&2; return 1 ;; esac
    done
    say "test accounts exist: $(printf '%s\n' "${!urls[@]}" | sed 's|.*/||' | sort | tr '\n' ' ')"
}

redis_engine_up() {  # sentinel|cluster: its servers started (idempotent)
    "$TEMPLATES/redis-topology" "$1" up ||
        die "the chosen Redis engine ($1) did not come up; tools/saio redis single goes back to one Redis"
}

# The Redis engine chosen with `tools/saio redis` runs whenever the SAIO
# does: after a reboot its servers are gone while the configs still name
# them, and every request's Redis call would fail.
ensure_redis_engine() {
    local engine
    engine=$(marker_get redis)
    if [ -n "$engine" ] && [ "$engine" != single ]; then
        redis_engine_up "$engine"
    fi
}

do_start() {
    [ $# -eq 0 ] || die "start takes no options"
    require_root
    require_setup
    command -v swift-init >/dev/null 2>&1 || die "swift-init not on PATH; run: tools/saio install"
    ensure_memcached
    ensure_redis
    ensure_redis_engine
    ensure_storage
    if command -v rsyslogd >/dev/null 2>&1 && [ -f "$RSYSLOG_CONF" ]; then
        mkdir -p "$LOG_DIR"
        start_rsyslogd
    fi
    if config_stale && any_server_answers; then
        say "$SWIFT_DIR changed since the servers were started: restarting them"
        do_stop
    fi
    local down f name ip port conf target targets=() restart_proxies=0
    down=$(down_servers)
    if [ -z "$down" ]; then
        say "all Swift servers already answer"
    else
        for f in "$LOG_DIR"/*.error; do
            [ -f "$f" ] && LOG_OFFSETS[$f]=$(stat -c %s "$f")
        done
        if [ "$(printf '%s\n' "$down" | wc -l)" -eq "$(servers | wc -l)" ]; then
            targets=(main)
        else
            # "swift-init main start" skips a server type as soon as one of
            # its instances runs: name the missing ones (object-server.4 =
            # /etc/swift/object-server/4.conf).
            while read -r name ip port conf; do
                case $name:$conf in
                    # One proxy cannot be started alone: with proxy-server.conf
                    # beside proxy-server/2.conf, swift-init counts
                    # proxy-server.pid as every proxy instance's pid file, so
                    # "proxy-server.2 start" finds it "already started" (and
                    # "proxy-server.2 stop" stops both).  Restart both.
                    proxy-server:*) restart_proxies=1 ;;
                    *:*/"$name"/*.conf) targets+=("$name.$(basename "$conf" .conf)") ;;
                    *) targets+=("$name") ;;
                esac
            done <<<"$down"
        fi
        # one swift-init per target: given object-server.1 and
        # object-server.3 together it starts only the first (it keeps a set
        # of servers, and two instances of one type count as one); it does
        # not wait for them (wait_healthy does, for all at once)
        for target in "${targets[@]}"; do
            say "swift-init $target start"
            swift-init "$target" start --no-wait 2>&1 | sed 's/^/saio:   /' || true
        done
        if [ "$restart_proxies" -eq 1 ]; then
            say "swift-init proxy-server restart (a proxy was down)"
            swift-init proxy-server restart --no-wait 2>&1 | sed 's/^/saio:   /' || true
        fi
        wait_healthy || die "Swift did not come up (see above)"
        say "all Swift servers answer /healthcheck"
    fi
    mkdir -p "$(dirname "$CONFIG_STAMP")"
    config_hash >"$CONFIG_STAMP"
    # devices made slow with tools/saio-slow stay slow across restarts
    "$SCRIPT_DIR/saio-slow" reapply | sed 's/^/saio: /' ||
        die "tools/saio-slow reapply failed (see above)"
    create_test_accounts || die "could not create the test accounts (see above)"
    sync_auto_migrate
    say "cluster is up: $PROXY_URL (pipelines $(current_mass_mode) mass)"
}

do_stop() {
    [ $# -eq 0 ] || die "stop takes no options"
    require_root
    command -v swift-init >/dev/null 2>&1 || die "swift-init not on PATH"
    stop_auto_migrate
    say "swift-init main stop"
    swift-init main stop 2>&1 | sed 's/^/saio:   /' || true
    for _ in $(seq 1 10); do
        any_server_answers || break
        sleep 0.5
    done
    if any_server_answers || swift-init main status >/dev/null 2>&1; then
        warn "servers left over; swift-init all kill"
        swift-init all kill 2>&1 | sed 's/^/saio:   /' || true
        for _ in $(seq 1 10); do any_server_answers || break; sleep 0.5; done
    fi
    if any_server_answers; then
        local name ip port conf busy=""
        while read -r name ip port conf; do
            [ "$(http_code "http://$ip:$port/healthcheck")" = 000 ] || busy+=" $ip:$port"
        done < <(servers)
        die "these Swift ports still answer after stop:$busy"
    fi
    say "Swift servers stopped (memcached and Redis left running)"
}

do_restart() {  # [TYPE...]
    local type was_stale=0
    if [ $# -gt 0 ]; then
        for type in "$@"; do
            case $type in
                proxy-server|object-server|container-server|account-server) ;;
                *) die "restart: unknown server type '$type' (proxy-server, object-server, container-server, account-server)" ;;
            esac
        done
        require_root
        require_setup
        # As the commands that change a config before a restart do: the
        # stamp cannot tell which type's configs changed by hand since the
        # servers started, so a stale one restarts everything; restarting
        # these types alone and stamping every config as applied would
        # leave the others on the old one, and `start` blind to it.
        if config_stale; then
            say "$SWIFT_DIR changed since the servers were started: restarting them all"
            was_stale=1
        fi
        restart_servers "$was_stale" "$@"
        return
    fi
    do_stop
    do_start
}

# restart_servers WAS_STALE TYPE...: after a change to the configs of the
# servers of these swift-init types alone (proxy-server, object-server,
# container-server, account-server), restart those and leave the rest running what they read at start-up;
# WAS_STALE=1 (the configs had changed before this change: a hand edit,
# say) restarts everything, as `tools/saio restart` does.  A full restart
# starts some 20 servers on the SAIO's two cores (12-15 s); the proxies
# alone come back in 3-4 s.
restart_servers() {
    local was_stale=$1 type
    shift
    if [ "$was_stale" -eq 1 ] || ! any_server_answers; then
        do_restart
        return
    fi
    say "swift-init $* stop"
    swift-init "$@" stop 2>&1 | sed 's/^/saio:   /' || true
    for type in "$@"; do
        wait_type_down "$type" ||
            die "these $type ports still answer after stop: $(answering_ports "$type")"
    done
    # every server now runs, or will, the configs as they are
    mkdir -p "$(dirname "$CONFIG_STAMP")"
    config_hash >"$CONFIG_STAMP"
    do_start
}

answering_ports() {  # type: "ip:port" of its servers that still answer
    local want=$1 name ip port conf out=""
    while read -r name ip port conf; do
        [ "$name" = "$want" ] || continue
        [ "$(http_code "http://$ip:$port/healthcheck")" = 000 ] || out+=" $ip:$port"
    done < <(servers)
    echo "${out# }"
}

wait_type_down() {  # type: its servers stop answering within 10 s
    local _
    for _ in $(seq 1 50); do
        [ -z "$(answering_ports "$1")" ] && return 0
        sleep 0.2
    done
    return 1
}

do_status() {
    [ $# -eq 0 ] || die "status takes no options"
    local bad=0 name ip port conf
    if [ -f "$MARKER" ]; then
        say "config      $SWIFT_DIR (created by tools/saio), pipelines $(current_mass_mode) mass"
    else
        say "config      $SWIFT_DIR: not set up by tools/saio (no $MARKER)"
        bad=1
    fi
    while read -r name ip port conf; do
        if healthy "$ip" "$port"; then
            printf 'saio: %-17s %-15s up\n' "$name" "$ip:$port"
        else
            printf 'saio: %-17s %-15s DOWN\n' "$name" "$ip:$port"
            bad=1
        fi
    done < <(servers)
    if memcached_ok; then say "memcached         127.0.0.1:11211 up"; else say "memcached         127.0.0.1:11211 DOWN"; bad=1; fi
    if redis_ok; then say "redis             127.0.0.1:6379  up"; else say "redis             127.0.0.1:6379  DOWN"; bad=1; fi
    local engine
    engine=$(marker_get redis)
    if [ -n "$engine" ] && [ "$engine" != single ]; then
        say "mass's redis      $engine: $(redis_engine_url "$engine")"
        "$TEMPLATES/redis-topology" "$engine" status 2>&1 | sed 's/^/saio:   /' || bad=1
    fi
    if storage_mounted; then
        say "storage           $MNT xfs ($(findmnt -n -o SOURCE --target "$MNT")) $(df -h --output=used,size "$MNT" | tail -n1 | awk '{print $1 " used of " $2}')"
    elif [ "$(marker_get storage)" = plain ] && [ -d "$MNT/1" ]; then
        say "storage           $MNT plain directories (NOT XFS: large metadata fails)"
    else
        say "storage           $MNT NOT MOUNTED"
        bad=1
    fi
    if [ "$(profile)" = hetero ]; then
        say "profile           hetero:"
        do_devices | sed 's/^/saio:   /' || bad=1
        local n dev class size
        while read -r n dev class size; do
            [ "$class" = hdd ] || continue
            if ! model_answers "$dev"; then
                say "$dev: its model (hdd-model) does not answer: 'tools/saio start' brings it back"
                bad=1
            fi
        done < <(hetero_devices)
    fi
    if [ -n "$(rsyslogd_pid)" ]; then say "rsyslogd          running (logs in $LOG_DIR)"; else say "rsyslogd          not running (no Swift logs)"; fi
    if [ "$bad" -eq 0 ]; then say "everything is up"; else say "NOT everything is up"; fi
    return "$bad"
}

wipe_storage() {
    # the hetero devices are mounted inside the image's tree
    if [ "$(profile)" = hetero ]; then wipe_devices; else teardown_devices; fi
    if storage_mounted; then
        say "re-creating the XFS filesystem on $DISK_IMG"
        umount "$MNT" || die "umount $MNT failed (busy? $(fuser -vm "$MNT" 2>&1 | tail -n +2 | tr -s ' ' | head -c 300))"
        mkfs.xfs -q -f "$DISK_IMG" || die "mkfs.xfs $DISK_IMG failed"
        mount -o loop,noatime "$DISK_IMG" "$MNT" || die "mount -o loop,noatime $DISK_IMG $MNT failed"
    else
        local n
        say "wiping the device directories"
        for n in "${NODES[@]}"; do
            [ -d "$MNT/$n" ] && find "$MNT/$n" -mindepth 1 -delete
        done
    fi
    make_storage_dirs
    find /var/cache/swift /var/cache/swift2 /var/cache/swift3 /var/cache/swift4 \
        -maxdepth 1 -type f -name '*.recon' -delete 2>/dev/null || true
}

wipe_storage_for_profile() {  # new profile
    teardown_devices
    if [ "$1" = hetero ]; then
        local n dev class size
        while read -r n dev class size; do rm -f "$DEVICE_IMAGES/$dev.img"; done < <(hetero_devices)
    fi
    if storage_mounted; then
        umount "$MNT" || die "umount $MNT failed"
        mkfs.xfs -q -f "$DISK_IMG" || die "mkfs.xfs $DISK_IMG failed"
    fi
    find /var/cache/swift /var/cache/swift2 /var/cache/swift3 /var/cache/swift4 \
        -maxdepth 1 -type f -name '*.recon' -delete 2>/dev/null || true
}

do_reset() {
    local flush_redis=0 arg
    for arg in "$@"; do
        case $arg in
            --flush-redis) flush_redis=1 ;;
            *) die "reset: unknown option $arg" ;;
        esac
    done
    require_root
    require_setup
    do_stop
    wipe_storage
    if memcached_ok; then
        if memcached_flush; then say "memcached flushed"; else warn "memcached flush_all failed"; fi
    fi
    if [ "$flush_redis" -eq 1 ]; then
        if [ "$(redis_cmd FLUSHDB || true)" = OK ]; then say "Redis db 0 flushed"; else warn "Redis FLUSHDB failed"; fi
    fi
    do_start
}

do_up() {
    local t0=$SECONDS
    do_install
    IN_UP=1 do_setup "$@"
    do_start  # restarts the servers if setup changed their configuration
    probe_device_speeds
    say "up done in $((SECONDS - t0))s"
}
