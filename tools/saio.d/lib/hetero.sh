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
# tools/saio: the hetero profile: its devices, the HDD-class model (hdd-model.c), `devices`
# (sourced by tools/saio, which sets the globals and runs main)

# ---------------------------------------------------------------- hetero

profile() {  # the profile set up: plain or hetero
    local p
    p=$(marker_get profile)
    echo "${p:-plain}"
}

probe_device_speeds() {  # the classes file the proxies route by (swift-mass devices probe)
    # As an operator would: the hetero profile's devices measured once set
    # up, so that Mass uses a substore only where its devices are faster
    # (substore_routing = measured).  The plain profile's devices share one
    # image, so it keeps no file, and its substores are used as configured.
    local file=$SWIFT_DIR/mass-devices.json
    if [ "$(profile)" != hetero ]; then
        rm -f "$file"
        return 0
    fi
    say "measuring the devices' speeds into $file (swift-mass devices probe)"
    # probed again at every up: the HDD model's budget may have changed
    rm -f "$file"
    swift-mass devices probe --seconds 3 --thresholds 600 --names hdd,ssd \
        || die "swift-mass devices probe failed"
}

hetero_devices() {  # "node device class size", one device a line
    local n
    for n in "${NODES[@]}"; do
        echo "$n sdb$n ssd $SSD_SIZE"
        echo "$n sdc$n hdd $HDD_SIZE"
    done
}

device_mount() { echo "/srv/$1/node/$2"; }  # node device

# From sysfs, not `losetup -j`: once a model's daemon died the kernel
# calls the file its loop device is on "(deleted)", and losetup no longer
# finds it.
loops_of() {  # file: the loop devices attached to it, one a line
    local f backing
    for f in /sys/block/loop*/loop/backing_file; do
        backing=$(cat "$f" 2>/dev/null) || continue
        if [ "$backing" = "$1" ] || [ "$backing" = "$1 (deleted)" ]; then
            f=${f#/sys/block/}
            echo "/dev/${f%%/*}"
        fi
    done
}

loop_of() {  # file: the loop device it is attached to, if any
    loops_of "$1" | head -n1
}

# Is something (of a type starting with fstype, if given) mounted on path?
# From the mount table: a FUSE mount whose daemon died, or an XFS shut
# down after its device's errors, cannot even be stat'ed.
in_mount_table() {  # path [fstype]
    local dir
    dir=$(realpath -e "$(dirname "$1")" 2>/dev/null) || return 1
    awk -v d="$dir/$(basename "$1")" -v t="${2:-}" '
        $5 == d { for (i = 6; i <= NF; i++) if ($i == "-") {
                      if (t == "" || index($(i + 1), t) == 1) found = 1
                      break } }
        END { exit !found }' /proc/self/mountinfo
}

# ------------------------------------ the HDD-class model (hdd-model.c)

model_dir() { echo "$HDD_FUSE/$1"; }             # device: its FUSE directory
model_file() { echo "$HDD_FUSE/$1/$1.img"; }     # device: its loop device's file
model_ctl() { echo "$HDD_FUSE/$1/.hdd-model"; }  # device: its control file

model_status() {  # device: the control file's "key value" lines; fails when the daemon is gone
    timeout 5 cat "$(model_ctl "$1")" 2>/dev/null
}

model_get() {  # device key
    local st
    st=$(model_status "$1") || return 1
    printf '%s\n' "$st" | sed -n "s/^$2 //p"
}

model_answers() {  # device: its daemon runs and answers
    local st
    in_mount_table "$(model_dir "$1")" fuse || return 1
    st=$(model_status "$1") || return 1
    [[ $st == "model fuse-fifo"* ]]
}

valid_iops() {  # a number above 0, at most a million
    [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v v="$1" 'BEGIN { exit !(v > 0 && v <= 1000000) }'
}

load_hdd_iops() {  # HDD_IOPS from the marker, if set there
    local v
    v=$(marker_get hdd_iops)
    [ -n "$v" ] || return 0
    valid_iops "$v" || die "$MARKER: hdd_iops=$v is not an IOPS budget (a number above 0); 'tools/saio setup --hdd-iops N' sets it"
    HDD_IOPS=$v
}

hdd_model_stamp() {  # what the binary is built from
    { cat "$HDD_MODEL_SRC"; echo "$HDD_MODEL_CFLAGS"; pkg-config --modversion fuse3 2>/dev/null || true; } |
        sha256sum | cut -d' ' -f1
}

ensure_hdd_model() {  # its packages, and the binary built from the current source
    local pkgs=() want fuse_flags flags tmp
    command -v gcc >/dev/null 2>&1 || pkgs+=(gcc libc6-dev)
    command -v pkg-config >/dev/null 2>&1 || pkgs+=(pkg-config)
    pkg_installed libfuse3-dev || pkgs+=(libfuse3-dev)
    pkg_installed fuse3 || pkgs+=(fuse3)
    [ ${#pkgs[@]} -eq 0 ] || apt_install "${pkgs[@]}"
    want=$(hdd_model_stamp)
    if [ -x "$HDD_MODEL" ] && [ "$(cat "$HDD_MODEL.sha256" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    fuse_flags=$(pkg-config --cflags --libs fuse3) || die "pkg-config does not know fuse3 (apt-get install libfuse3-dev)"
    read -ra flags <<<"$HDD_MODEL_CFLAGS $fuse_flags"
    say "building $HDD_MODEL from $HDD_MODEL_SRC"
    mkdir -p "$(dirname "$HDD_MODEL")"
    tmp=$(mktemp "$HDD_MODEL.XXXXXX")
    CLEANUP+=("$tmp")
    gcc -o "$tmp" "$HDD_MODEL_SRC" "${flags[@]}" || die "building $HDD_MODEL_SRC failed"
    if cmp -s "$tmp" "$HDD_MODEL"; then
        rm -f "$tmp"
    else
        chmod 0755 "$tmp"
        # a rename: running models keep the binary they started with
        mv -f "$tmp" "$HDD_MODEL"
    fi
    echo "$want" >"$HDD_MODEL.sha256"
}

start_model() {  # device: its daemon on the device's image, in its FUSE directory
    local dev=$1 dir err
    dir=$(model_dir "$dev")
    mkdir -p "$dir"
    [ -c /dev/fuse ] || modprobe fuse 2>/dev/null || true
    [ -c /dev/fuse ] || die "$dev: no /dev/fuse here: the HDD-class devices' model (FUSE) cannot run"
    if ! err=$(daemon "$HDD_MODEL" --iops "$HDD_IOPS" --bps "$HDD_BPS" \
            "$DEVICE_IMAGES/$dev.img" "$dir" </dev/null 2>&1); then
        die "$dev: its model did not start ($HDD_MODEL $DEVICE_IMAGES/$dev.img $dir): $err"
    fi
    [ -z "$err" ] || warn "$dev: hdd-model: $err"
    model_answers "$dev" || die "$dev: its model started but $(model_ctl "$dev") does not answer"
}

stop_model() {  # device: unmount its FUSE directory (its loop device detached first); the daemon then exits
    local dev=$1 dir pid err=""
    dir=$(model_dir "$dev")
    in_mount_table "$dir" fuse || return 0
    pid=$(model_get "$dev" pid || true)
    # a detached loop device lets its file go once its last opener closed it
    for _ in $(seq 1 50); do
        err=$(umount "$dir" 2>&1) && break
        sleep 0.1
    done
    if in_mount_table "$dir" fuse; then
        warn "$dev: umount $dir: ${err:-failed}; detaching it lazily"
        umount -l "$dir" || die "$dev: cannot unmount its model's directory $dir"
    fi
    [ -n "$pid" ] || return 0
    for _ in $(seq 1 50); do
        alive "$pid" || return 0
        sleep 0.1
    done
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = hdd-model ]; then
        warn "$dev: its model (pid $pid) did not exit once unmounted: killing it"
        kill "$pid" 2>/dev/null || true
    fi
}

# One device: a sparse image with XFS on its own loop device, attached
# with direct I/O so that the host keeps no page cache of it (the reads
# Swift sends to the device reach it, as on a real disk), mounted where
# the object server looks for it.  An HDD-class device's loop device is on
# the file its model serves; a model found dead (after a reboot: not
# there; after a crash: its FUSE directory and loop device error) is
# started again, the device's mount and loop device made anew.
setup_device() {  # node device class size
    local n=$1 dev=$2 class=$3 size=$4 img backing loop mnt
    img=$DEVICE_IMAGES/$dev.img
    mnt=$(device_mount "$n" "$dev")
    mkdir -p "$DEVICE_IMAGES" "$mnt"
    [ -f "$img" ] || truncate -s "$size" "$img" || die "truncate $img failed"
    if [ "$(blkid -p -o value -s TYPE "$img" 2>/dev/null || true)" != xfs ]; then
        mkfs.xfs -q -f "$img" || die "mkfs.xfs $img failed"
    fi
    backing=$img
    if [ "$class" = hdd ]; then
        backing=$(model_file "$dev")
        if [ -n "$(loops_of "$img")" ]; then
            say "$dev: from the blkio throttle on its image to its model (hdd-model)"
            release_device "$n" "$dev" stop-servers
        elif ! model_answers "$dev" && { in_mount_table "$(model_dir "$dev")" ||
                [ -n "$(loops_of "$backing")" ] || in_mount_table "$mnt"; }; then
            warn "$dev: its model (hdd-model) is gone and its loop device errors: bringing the device back (model, loop device, mount)"
            release_device "$n" "$dev" stop-servers
        fi
        model_answers "$dev" || start_model "$dev"
        # the budget of now, also for a model that was running
        printf 'iops %s bps %s\n' "$HDD_IOPS" "$HDD_BPS" >"$(model_ctl "$dev")" ||
            die "$dev: its model refused the budget (iops $HDD_IOPS bps $HDD_BPS)"
    fi
    loop=$(loop_of "$backing")
    if [ -z "$loop" ]; then
        loop=$(losetup --find --show --direct-io=on "$backing") ||
            die "losetup --direct-io=on $backing failed"
    fi
    [ "$(cat "/sys/block/${loop#/dev/}/loop/dio" 2>/dev/null)" = 1 ] ||
        die "$loop ($backing) is not in direct I/O mode: its reads would come from the host's page cache"
    if [ "$class" = hdd ]; then
        # FUSE carries at most 1 MiB a request: one request of the loop
        # device is one I/O of the model
        echo 1024 >"/sys/block/${loop#/dev/}/queue/max_sectors_kb" 2>/dev/null ||
            warn "$loop: could not set max_sectors_kb to 1024"
    fi
    if ! in_mount_table "$mnt"; then
        mount -o noatime "$loop" "$mnt" || die "mount $loop $mnt failed"
    fi
    [ "$(findmnt -n -o SOURCE --target "$mnt")" = "$loop" ] ||
        die "$mnt is not on $loop ($(findmnt -n -o SOURCE --target "$mnt"))"
}

# Unmount a device and detach its loop devices (on its image, and on its
# model's file); stop an HDD-class device's model.  With stop-servers,
# Swift's servers are stopped when they keep the mount busy.
release_device() {  # node device [stop-servers]
    local n=$1 dev=$2 stop=${3:-} mnt loop
    mnt=$(device_mount "$n" "$dev")
    if in_mount_table "$mnt" && ! umount "$mnt" 2>/dev/null; then
        if [ "$stop" = stop-servers ] && any_server_answers; then
            say "$dev: Swift's servers keep $mnt busy: stopping them (start starts them again)"
            do_stop </dev/null
        fi
        umount "$mnt" ||
            die "$dev: umount $mnt failed (busy? $(fuser -vm "$mnt" 2>&1 | tail -n +2 | tr -s ' ' | head -c 300))"
    fi
    for loop in $(loops_of "$DEVICE_IMAGES/$dev.img") $(loops_of "$(model_file "$dev")"); do
        # rules of the blkio throttle, the HDD-class model before hdd-model
        [ ! -f "$BLKIO/blkio.throttle.read_iops_device" ] || clear_throttle "$loop"
        losetup -d "$loop" || warn "losetup -d $loop failed"
    done
    stop_model "$dev"
}

# Lift a loop device's rules in the root blkio group (the throttle the
# HDD-class devices had before their model).
clear_throttle() {  # loop
    local mm f
    mm=$(lsblk -n -d -o MAJ:MIN "$1" 2>/dev/null | tr -d ' ') || return 0
    [ -n "$mm" ] || return 0
    for f in read_iops write_iops read_bps write_bps; do
        echo "$mm 0" >"$BLKIO/blkio.throttle.${f}_device" 2>/dev/null || true
    done
}

setup_devices() {
    command -v mkfs.xfs >/dev/null 2>&1 || die "mkfs.xfs not found (tools/saio install)"
    ensure_hdd_model
    local lines line n dev class size pid
    mapfile -t lines < <(hetero_devices)
    for line in "${lines[@]}"; do
        read -r n dev class size <<<"$line"
        setup_device "$n" "$dev" "$class" "$size"
    done
    say "hetero devices mounted; HDD-class (sdc1-4) each behind its model: one FIFO budget of $HDD_IOPS I/Os a second, reads, writes and flushes alike (+ size at $((HDD_BPS / 1024 / 1024)) MiB/s)"
    for line in "${lines[@]}"; do
        read -r n dev class size <<<"$line"
        [ "$class" = hdd ] || continue
        pid=$(model_get "$dev" pid || true)
        if [ -n "$pid" ] && [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == *" (deleted)" ]]; then
            warn "$dev: its model runs an earlier build of $HDD_MODEL; the new one runs once the device is set up again (after a reboot, or 'tools/saio reset', which empties the cluster)"
        fi
    done
}

teardown_devices() {  # unmount and detach every device there is; stop the models
    local lines line n dev class size
    mapfile -t lines < <(hetero_devices)
    for line in "${lines[@]}"; do
        read -r n dev class size <<<"$line"
        release_device "$n" "$dev"
    done
}

wipe_devices() {
    teardown_devices
    local n dev class size
    while read -r n dev class size; do
        [ ! -f "$DEVICE_IMAGES/$dev.img" ] || mkfs.xfs -q -f "$DEVICE_IMAGES/$dev.img" ||
            die "mkfs.xfs $DEVICE_IMAGES/$dev.img failed"
    done < <(hetero_devices)
}

do_devices() {
    [ "$(profile)" = hetero ] || die "devices: this SAIO's profile is $(profile); 'tools/saio setup --profile hetero' first"
    local specs=() n dev class size dir
    while read -r n dev class size; do
        dir=
        [ "$class" != hdd ] || dir=$(model_dir "$dev")
        specs+=("$n:$dev:$class:$DEVICE_IMAGES/$dev.img:$dir")
    done < <(hetero_devices)
    "$PY" "$TEMPLATES/devices.py" "$@" "${specs[@]}"
}
