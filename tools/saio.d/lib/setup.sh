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
# tools/saio: `setup`: /etc/swift from the templates, rings, the XFS storage, rsyslog
# (sourced by tools/saio, which sets the globals and runs main)

# ---------------------------------------------------------------- setup

render_node() {  # template N out  (facility LOG_LOCAL2..5, recon cache as in doc/saio)
    local tmpl=$1 n=$2 out=$3 recon=/var/cache/swift$2
    [ "$n" -eq 1 ] && recon=/var/cache/swift
    sed -e "s|@N@|$n|g" -e "s|@FACILITY@|$((n + 1))|g" -e "s|@RECON_CACHE@|$recon|g" \
        "$TEMPLATES/$tmpl" >"$out"
}

# The second proxy's config: the first's (pipeline mode included), on
# another port.  Encryption stays in its pipeline (it must decrypt what the
# first proxy encrypted) but does not encrypt new objects, so the Mass cache
# has plaintext objects to cache.
render_second_proxy() {  # first_conf out
    cp "$1" "$2"
    "$PY" "$INI" set "$2" DEFAULT bind_port=8081 log_name=proxy-server-2 &&
        "$PY" "$INI" set "$2" filter:encryption disable_encryption=true &&
        "$PY" "$INI" set "$2" filter:mass cache_backend=memcache ||
        die "could not render $2 from $1"
}

render_third_proxy() {  # first_conf out
    cp "$1" "$2"
    "$PY" "$INI" set "$2" DEFAULT bind_port=8082 log_name=proxy-server-3 &&
        "$PY" "$INI" set "$2" filter:encryption disable_encryption=true &&
        "$PY" "$INI" pipeline without mass proxy-server "$2" ||
        die "could not render $2 from $1"
}

# Rewrite the [pipeline:main] lines: mode = with | without
apply_mass_mode() {
    local mode=$1 proxy_conf=$2; shift 2
    "$PY" "$INI" pipeline "$mode" mass proxy-server "$proxy_conf" ||
        die "could not change the pipeline of $proxy_conf"
    [ $# -eq 0 ] || "$PY" "$INI" pipeline "$mode" mass_queue object-server "$@" ||
        die "could not change the pipelines of the object servers"
}

install_file() {  # src dst: copy if different, note the change
    if ! cmp -s "$1" "$2"; then
        mkdir -p "$(dirname "$2")"
        install -m 0644 "$1" "$2"
        say "wrote $2"
        SETUP_CHANGED=1
    fi
}

write_configs() {  # mass mode
    local mode=$1 tmp n t
    tmp=$(mktemp -d)
    CLEANUP+=("$tmp")
    for t in swift.conf proxy-server.conf container-sync-realms.conf internal-client.conf object-expirer.conf test.conf; do
        cp "$TEMPLATES/$t" "$tmp/$t"
    done
    for t in account container object; do
        mkdir -p "$tmp/$t-server"
        for n in "${NODES[@]}"; do
            render_node "$t-server.conf.in" "$n" "$tmp/$t-server/$n.conf"
        done
    done
    if [ "$(profile)" = hetero ]; then
        # one process per device (port), as operators run slow disks: a
        # throttled read blocks its process's hub, not the other devices';
        # Swift then gives each process one tpool thread, which would
        # serialise a device's writes: as many as the device's queue slots,
        # so that concurrent writes can share the bulk policy's flushes;
        # and a working set larger than the nodes' memory: Swift keeps no
        # object it reads in the page cache (keep_cache_size, 5 MiB by
        # default), so reads reach the device
        for n in "${NODES[@]}"; do
            "$PY" "$INI" set "$tmp/object-server/$n.conf" DEFAULT servers_per_port=1 \
                eventlet_tpool_num_threads=8 keep_cache_size=0 ||
                die "could not set servers_per_port"
        done
        # the benchmark's cache: smaller than its readers' set (200 x 512
        # KiB), not the 2 MiB the functional tests evict with
        "$PY" "$INI" set "$tmp/proxy-server.conf" filter:mass \
            cache_budget_bytes=$((64 * 1024 * 1024)) \
            cache_local_budget_bytes=$((64 * 1024 * 1024)) ||
            die "could not set the cache budget"
        "$PY" "$INI" set "$tmp/swift.conf" storage-policy:2 \
            diskfile_module=egg:swift_mass#replication.group_commit ||
            die "could not set the bulk policy's diskfile_module"
    fi
    apply_mass_mode "$mode" "$tmp/proxy-server.conf" "$tmp"/object-server/*.conf
    local engine
    engine=$(marker_get redis)
    if [ -n "$engine" ] && [ "$engine" != single ]; then
        # the Redis engine chosen with `tools/saio redis` stays chosen
        set_redis_url "$tmp" "$(redis_engine_url "$engine")"
    fi
    mkdir -p "$tmp/proxy-server"
    render_second_proxy "$tmp/proxy-server.conf" "$tmp/$PROXY2_CONF"
    render_third_proxy "$tmp/proxy-server.conf" "$tmp/$PROXY3_CONF"
    for t in swift.conf proxy-server.conf container-sync-realms.conf internal-client.conf object-expirer.conf test.conf "$PROXY2_CONF" "$PROXY3_CONF"; do
        install_file "$tmp/$t" "$SWIFT_DIR/$t"
    done
    for t in account container object; do
        for n in "${NODES[@]}"; do
            install_file "$tmp/$t-server/$n.conf" "$SWIFT_DIR/$t-server/$n.conf"
        done
    done
    # Keystone's proxy (lib/keystone.sh) follows the first proxy's config
    if [ -f "$SWIFT_DIR/$KS_PROXY_CONF" ] && [ -f "$KS_ACCOUNTS" ]; then
        keystone_proxy_conf
    fi
}

# The ring layout; its text is hashed so that a change rebuilds the rings.
# A device is ZONE-IP:PORT/NAME[=WEIGHT] (weight 1 if none).
ring_spec() {
    if [ "$(profile)" = hetero ]; then
        # weights are the capacities in GiB, as Swift's docs advise; each
        # server is a zone, so a partition's replicas are on three servers
        local n ssd hdd std="" fast="" bulk=""
        for n in "${NODES[@]}"; do
            ssd="r1z$n-127.0.0.$n:62${n}0/sdb$n=${SSD_SIZE%G}"
            hdd="r1z$n-127.0.0.$n:62${n}6/sdc$n=${HDD_SIZE%G}"
            std+=" $ssd $hdd"; fast+=" $ssd"; bulk+=" $hdd"
        done
        echo "account.builder 10 3 1 r1z1-127.0.0.1:6212/sdb1 r1z2-127.0.0.2:6222/sdb2 r1z3-127.0.0.3:6232/sdb3 r1z4-127.0.0.4:6242/sdb4"
        echo "container.builder 10 3 1 r1z1-127.0.0.1:6211/sdb1 r1z2-127.0.0.2:6221/sdb2 r1z3-127.0.0.3:6231/sdb3 r1z4-127.0.0.4:6241/sdb4"
        echo "object.builder 10 3 1$std"
        echo "object-1.builder 10 3 1$fast"
        echo "object-2.builder 10 3 1$bulk"
        return
    fi
    cat <<'EOF'
account.builder 10 3 1 r1z1-127.0.0.1:6212/sdb1 r1z2-127.0.0.2:6222/sdb2 r1z3-127.0.0.3:6232/sdb3 r1z4-127.0.0.4:6242/sdb4
container.builder 10 3 1 r1z1-127.0.0.1:6211/sdb1 r1z2-127.0.0.2:6221/sdb2 r1z3-127.0.0.3:6231/sdb3 r1z4-127.0.0.4:6241/sdb4
object.builder 10 3 1 r1z1-127.0.0.1:6210/sdb1 r1z2-127.0.0.2:6220/sdb2 r1z3-127.0.0.3:6230/sdb3 r1z4-127.0.0.4:6240/sdb4
object-1.builder 10 2 1 r1z1-127.0.0.1:6210/sdb1 r1z2-127.0.0.2:6220/sdb2
object-2.builder 10 2 1 r1z3-127.0.0.3:6230/sdb3 r1z4-127.0.0.4:6240/sdb4
EOF
}

build_rings() {
    local want have ok=1 b
    want=$(ring_spec | sha256sum | cut -d' ' -f1)
    have=$(cat "$RINGS_STAMP" 2>/dev/null || true)
    for b in account container object object-1 object-2; do
        [ -f "$SWIFT_DIR/$b.ring.gz" ] || ok=0
    done
    if [ "$ok" -eq 1 ] && [ "$want" = "$have" ]; then
        say "rings up to date"
        return 0
    fi
    local cached=$RING_CACHE/$want
    (
        cd "$SWIFT_DIR"
        rm -f ./*.builder ./*.ring.gz backups/*.builder backups/*.ring.gz
        # the devices' probed speeds were of the rings' devices before
        rm -f ./mass-devices.json
    ) || die "removing the old rings failed"
    if [ -f "$cached/object-2.ring.gz" ]; then
        say "rings of this spec built before: copied from $cached"
        cp -p "$cached"/* "$SWIFT_DIR"/ || die "copying the rings from $cached failed"
    else
        say "building rings (part power 10, min_part_hours 1)"
        (
            cd "$SWIFT_DIR"
            local name power replicas hours devs dev rc
            while read -r name power replicas hours devs; do
                swift-ring-builder "$name" create "$power" "$replicas" "$hours" >/dev/null
                for dev in $devs; do
                    case $dev in
                        *=*) swift-ring-builder "$name" add "${dev%=*}" "${dev##*=}" >/dev/null ;;
                        *) swift-ring-builder "$name" add "$dev" 1 >/dev/null ;;
                    esac
                done
                rc=0
                swift-ring-builder "$name" rebalance --seed 1 >/dev/null || rc=$?
                # 1 = EXIT_WARNING (e.g. balance not perfect): the ring is written
                [ "$rc" -le 1 ] || { echo "saio: ERROR: swift-ring-builder $name rebalance failed (rc=$rc)" >&2; exit 1; }
            done < <(ring_spec)
        ) || die "ring building failed"
        # as built, before any test or operator changes a weight
        rm -rf "$cached" && mkdir -p "$cached" &&
            cp -p "$SWIFT_DIR"/*.builder "$SWIFT_DIR"/*.ring.gz "$cached"/ ||
            warn "could not keep the rings in $cached"
    fi
    echo "$want" >"$RINGS_STAMP"
    SETUP_CHANGED=1
    say "rings in place: $(cd "$SWIFT_DIR" && echo ./*.ring.gz | sed 's|\./||g')"
}

mount_storage() {  # returns 1 if the XFS image could not be mounted
    storage_mounted && return 0
    if mountpoint -q "$MNT" 2>/dev/null; then
        warn "$MNT is a mount point but not XFS ($(findmnt -n -o SOURCE,FSTYPE --target "$MNT"))"
        return 1
    fi
    command -v mkfs.xfs >/dev/null 2>&1 || { warn "mkfs.xfs not found (apt-get install xfsprogs)"; return 1; }
    mkdir -p "$(dirname "$DISK_IMG")" "$MNT"
    if [ ! -f "$DISK_IMG" ]; then
        say "creating sparse $DISK_SIZE image $DISK_IMG"
        truncate -s "$DISK_SIZE" "$DISK_IMG" || { warn "truncate $DISK_IMG failed"; return 1; }
    fi
    local fstype
    fstype=$(blkid -p -o value -s TYPE "$DISK_IMG" 2>/dev/null || true)
    if [ "$fstype" != xfs ]; then
        say "mkfs.xfs $DISK_IMG"
        mkfs.xfs -q -f "$DISK_IMG" || { warn "mkfs.xfs $DISK_IMG failed"; return 1; }
    fi
    local err hidden
    hidden=$(ls -A "$MNT" 2>/dev/null || true)
    if ! err=$(mount -o loop,noatime "$DISK_IMG" "$MNT" 2>&1); then
        warn "mount -o loop,noatime $DISK_IMG $MNT failed: $err"
        return 1
    fi
    say "mounted $DISK_IMG (XFS) on $MNT"
    # e.g. plain directories from an earlier fallback
    [ -z "$hidden" ] || warn "what $MNT held before ($(printf '%s' "$hidden" | tr '\n' ' ')) is hidden under the mount now"
}

make_storage_dirs() {
    local n
    for n in "${NODES[@]}"; do
        mkdir -p "$MNT/$n"
        if [ -e "/srv/$n" ] && [ ! -L "/srv/$n" ]; then
            die "/srv/$n exists and is not a symlink; move it away and re-run"
        fi
        [ "$(readlink "/srv/$n" 2>/dev/null || true)" = "$MNT/$n" ] || ln -sfn "$MNT/$n" "/srv/$n"
        mkdir -p "/srv/$n/node/sdb$n"
    done
    [ "$(profile)" != hetero ] || setup_devices
    mkdir -p /var/cache/swift /var/cache/swift2 /var/cache/swift3 /var/cache/swift4 /var/run/swift
}

plain_storage_warning() {
    loud_warning \
        "$MNT is NOT an XFS loop mount: using plain directories on the root" \
        "filesystem ($(findmnt -n -o FSTYPE --target "$MNT" 2>/dev/null || echo '?'))." \
        "ext4 keeps all xattrs of a file in one block (~4 KiB): objects with" \
        "large metadata (long names, many X-Object-Meta-*, encryption) FAIL." \
        "Fix the loop mount (mount -o loop,noatime $DISK_IMG $MNT) and run" \
        "'tools/saio reset'."
}


setup_storage() {
    mkdir -p /srv "$MNT"
    if mount_storage; then
        marker_set storage xfs
    else
        marker_set storage plain
        plain_storage_warning
    fi
    make_storage_dirs
}

alive() {  # pid: exists and is not a zombie
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

rsyslogd_pid() {  # prints the pid of a running rsyslogd, if any
    local pid pidfile d
    for pidfile in /run/rsyslogd.pid /var/run/rsyslogd.pid; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$pid" ] && alive "$pid"; then echo "$pid"; return 0; fi
    done
    for d in /proc/[0-9]*; do
        if [ "$(cat "$d/comm" 2>/dev/null)" = rsyslogd ] && alive "${d#/proc/}"; then
            echo "${d#/proc/}"
            return 0
        fi
    done
    return 0
}

start_rsyslogd() {  # restart if asked
    local pid
    pid=$(rsyslogd_pid)
    if [ -n "$pid" ] && [ "${1:-}" = restart ]; then
        say "restarting rsyslogd (pid $pid) to load $RSYSLOG_CONF"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
        pid=
    fi
    if [ -z "$pid" ]; then
        rm -f /run/rsyslogd.pid
        local err
        if ! err=$(daemon rsyslogd 2>&1); then
            warn "rsyslogd did not start ($err); Swift logs go nowhere"
            return 0
        fi
        for _ in $(seq 1 30); do [ -S /dev/log ] && break; sleep 0.1; done
        if [ -n "$(rsyslogd_pid)" ] && [ -S /dev/log ]; then
            say "rsyslogd running; Swift logs in $LOG_DIR/"
        else
            warn "rsyslogd did not come up (no /dev/log); Swift logs go nowhere"
        fi
    fi
}

setup_rsyslog() {
    if ! command -v rsyslogd >/dev/null 2>&1; then
        warn "rsyslogd not installed: Swift logs go nowhere (tools/saio install adds it)"
        return 0
    fi
    mkdir -p "$LOG_DIR" "$(dirname "$RSYSLOG_CONF")"
    local changed=0
    if ! cmp -s "$TEMPLATES/rsyslog-10-swift.conf" "$RSYSLOG_CONF"; then
        install -m 0644 "$TEMPLATES/rsyslog-10-swift.conf" "$RSYSLOG_CONF"
        say "wrote $RSYSLOG_CONF"
        changed=1
    fi
    if [ -f /etc/rsyslog.conf ] && ! grep -Eq '^[[:space:]]*(\$IncludeConfig|include).*rsyslog\.d' /etc/rsyslog.conf; then
        warn "/etc/rsyslog.conf does not include /etc/rsyslog.d/*.conf; Swift logs go to the default files"
    fi
    if [ "$changed" -eq 1 ]; then start_rsyslogd restart; else start_rsyslogd; fi
}

do_setup() {
    local force=0 mode=${SAIO_MASS:-} arg new_profile="" want=""
    local hdd_iops=${SAIO_HDD_IOPS:-} iops_from=SAIO_HDD_IOPS
    case $mode in
        '') ;;
        1|yes|true|on|with) mode=with ;;
        0|no|false|off|without) mode=without ;;
        *) die "SAIO_MASS=$mode: use 0 or 1" ;;
    esac
    for arg in "$@"; do
        if [ -n "$want" ]; then  # the value of the option before
            case $want in
                --profile) new_profile=$arg ;;
                --hdd-iops) hdd_iops=$arg; iops_from=--hdd-iops ;;
            esac
            want=""
            continue
        fi
        case $arg in
            --force) force=1 ;;
            --without-mass) mode=without ;;
            --with-mass) mode=with ;;
            --profile=*) new_profile=${arg#--profile=} ;;
            --hdd-iops=*) hdd_iops=${arg#--hdd-iops=}; iops_from=--hdd-iops ;;
            --profile|--hdd-iops) want=$arg ;;
            *) die "setup: unknown option $arg" ;;
        esac
    done
    case $want in
        --profile) die "setup: --profile needs plain or hetero" ;;
        --hdd-iops) die "setup: --hdd-iops needs the HDD-class devices' IOPS budget (e.g. 150)" ;;
    esac
    case $new_profile in
        ''|plain|hetero) ;;
        *) die "setup: --profile $new_profile: use plain or hetero" ;;
    esac
    if [ "$hdd_iops" != default ] && { [ "$iops_from" = --hdd-iops ] || [ -n "$hdd_iops" ]; }; then
        valid_iops "$hdd_iops" ||
            die "setup: $iops_from '$hdd_iops': the HDD-class devices' IOPS budget is a number above 0 and at most 1000000 (e.g. 150)"
    fi
    require_root
    [ -d "$TEMPLATES" ] || die "templates not found: $TEMPLATES"
    command -v swift-ring-builder >/dev/null 2>&1 || die "swift-ring-builder not on PATH; run: tools/saio install"

    if [ -e "$SWIFT_DIR" ] && [ ! -f "$MARKER" ]; then
        if [ -d "$SWIFT_DIR" ] && [ -z "$(ls -A "$SWIFT_DIR")" ]; then
            :  # empty: ours to take
        elif [ "$force" -eq 1 ]; then
            local backup
            backup=$SWIFT_DIR.saio-backup.$(date +%Y%m%d-%H%M%S)
            warn "--force: moving the existing $SWIFT_DIR (not created by tools/saio) to $backup"
            mv "$SWIFT_DIR" "$backup"
        else
            die "$SWIFT_DIR exists and was not created by tools/saio (no $MARKER); refusing to overwrite it. Move it away or use 'tools/saio setup --force' (which moves it to $SWIFT_DIR.saio-backup.<date>)."
        fi
    fi

    if [ -z "$mode" ]; then
        mode=$(current_mass_mode)
        case $mode in with|without) ;; *) mode=with ;; esac
    fi
    if [ "$mode" = with ]; then
        local err
        if ! err=$(mass_importable 2>&1); then
            die "the Mass filters do not load with $PY: $(printf '%s' "$err" | tail -n1). Run 'tools/saio install' or use 'setup --without-mass' (SAIO_MASS=0)."
        fi
    fi

    mkdir -p "$SWIFT_DIR"
    if [ ! -f "$MARKER" ]; then
        {
            echo "# Created by $REPO_ROOT/tools/saio: this /etc/swift belongs to the swift_mass SAIO."
            echo "# tools/saio refuses to overwrite or remove an /etc/swift without this file."
            echo "created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
            echo "repo=$REPO_ROOT"
        } >"$MARKER"
    fi

    if [ "$hdd_iops" = default ]; then
        sed -i '/^hdd_iops=/d' "$MARKER"
        HDD_IOPS=$HDD_IOPS_DEFAULT
    elif [ -n "$hdd_iops" ]; then
        # kept for every later setup, up and start
        marker_set hdd_iops "$hdd_iops"
        HDD_IOPS=$hdd_iops
    fi
    if [ -n "$new_profile" ] && [ "$new_profile" != "$(profile)" ]; then
        local old_profile
        old_profile=$(profile)
        say "profile $old_profile -> $new_profile: the cluster starts empty"
        if any_server_answers; then do_stop; fi
        if storage_mounted || [ "$old_profile" = hetero ]; then wipe_storage_for_profile "$new_profile"; fi
        marker_set profile "$new_profile"
        SETUP_CHANGED=1
    fi
    setup_storage
    write_configs "$mode"
    build_rings
    setup_rsyslog
    marker_set mass "$mode"
    local budget=""
    [ "$(profile)" != hetero ] || budget="; HDD-class budget $HDD_IOPS IOPS"
    say "setup done (profile $(profile)$budget; pipelines $mode mass; storage $(marker_get storage))"
    if [ "$SETUP_CHANGED" -eq 1 ] && [ -z "${IN_UP:-}" ] && any_server_answers; then
        say "running servers use the old configuration: 'tools/saio start' (or up) restarts them"
    fi
}
