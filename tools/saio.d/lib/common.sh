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
# tools/saio: messages, probes of what answers, the marker file
# (sourced by tools/saio, which sets the globals and runs main)

# ---------------------------------------------------------------- messages

say()  { printf 'saio: %s\n' "$*"; }
warn() { printf 'saio: WARNING: %s\n' "$*" >&2; }
die()  { printf 'saio: ERROR: %s\n' "$*" >&2; exit 1; }

loud_warning() {
    {
        echo
        echo 'saio: ##################################################################'
        echo 'saio: ##  WARNING WARNING WARNING WARNING WARNING WARNING WARNING     ##'
        echo 'saio: ##################################################################'
        local line
        for line in "$@"; do echo "saio: ##  $line"; done
        echo 'saio: ##################################################################'
        echo
    } >&2
}

require_root() {
    [ "$(id -u)" -eq 0 ] || die "must be run as root (it installs packages, mounts, writes /etc/swift)"
}

# ---------------------------------------------------------------- processes

start_background() {  # pidfile log command...: a daemon of ours, its pid in pidfile
    # As daemon() (lib/servers.sh), keeping none of our open files, but in
    # the background and exec'd by the very subshell whose pid $! is, for
    # a command that does not daemonize itself (statsd_exporter, Keystone)
    local pidfile=$1 log=$2
    shift 2
    mkdir -p "$(dirname "$pidfile")" "$(dirname "$log")"
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
        done
        exec "$@"
    ) >>"$log" 2>&1 </dev/null &
    echo $! >"$pidfile"
}

await_background() {  # what pidfile log tries check...: 0 once `check...` succeeds
    # (tried every 0.2 s), 1 if the process dies or the tries run out,
    # its log's last lines shown
    local what=$1 pidfile=$2 log=$3 tries=$4 pid _
    shift 4
    pid=$(cat "$pidfile")
    for _ in $(seq 1 "$tries"); do
        "$@" && { say "$what answers (pid $pid)"; return 0; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    tail -n 20 "$log" | sed 's/^/saio:   /' >&2
    return 1
}

pidfile_pid() {  # pidfile: prints its pid if that process runs
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

stop_process() {  # pid: TERM, then KILL if it still runs 5 s later
    local pid=$1 _
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 25); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
}


# ---------------------------------------------------------------- probes

http_code() {  # url [curl args...] -> prints the HTTP status (000 if none)
    local url=$1; shift
    curl -s -o /dev/null -m 3 -w '%{http_code}' "$@" "$url" 2>/dev/null || true
}

healthy() {  # ip port
    [ "$(http_code "http://$1:$2/healthcheck")" = 200 ]
}

memcached_ask() {  # command reply-prefix: whether memcached answers so
    timeout 3 bash -c '
        exec 3<>/dev/tcp/127.0.0.1/11211 || exit 1
        printf "%s\r\n" "$1" >&3
        IFS= read -r line <&3 || exit 1
        [[ $line == "$2"* ]]' _ "$1" "$2" 2>/dev/null
}

memcached_ok() { memcached_ask version VERSION; }
memcached_flush() { memcached_ask flush_all OK; }

# answers_within TRIES DELAY WHAT PROBE...: wait until PROBE succeeds
# (saying so) or die saying WHAT does not answer
answers_within() {
    local tries=$1 delay=$2 what=$3
    shift 3
    for _ in $(seq 1 "$tries"); do
        "$@" && { say "$what answers"; return 0; }
        sleep "$delay"
    done
    die "$what was started but does not answer"
}

redis_cmd() {  # command... ; prints the reply's first line
    if command -v redis-cli >/dev/null 2>&1; then
        timeout 5 redis-cli -h 127.0.0.1 -p 6379 "$@" 2>/dev/null | head -n1
    else
        # Inline command over /dev/tcp (enough for PING / FLUSHDB).
        timeout 5 bash -c '
            exec 3<>/dev/tcp/127.0.0.1/6379 || exit 1
            printf "%s\r\n" "$*" >&3
            IFS= read -r line <&3 || exit 1
            printf "%s\n" "$line"' _ "$@" 2>/dev/null | tr -d '\r' | sed 's/^[+]//'
    fi
}

redis_ok() {
    [ "$(redis_cmd PING || true)" = PONG ]
}

storage_mounted() {  # is the XFS image mounted at $MNT?
    mountpoint -q "$MNT" 2>/dev/null &&
        [ "$(findmnt -n -o FSTYPE --target "$MNT" 2>/dev/null)" = xfs ]
}

marker_get() {  # key -> value from the marker file
    [ -f "$MARKER" ] || return 0
    sed -n "s/^$1=//p" "$MARKER" | tail -n1
}

marker_set() {  # key value
    if grep -q "^$1=" "$MARKER" 2>/dev/null; then
        sed -i "s|^$1=.*|$1=$2|" "$MARKER"
    else
        echo "$1=$2" >>"$MARKER"
    fi
}

# "with" / "without" / "mixed" / "none" according to the installed pipelines
current_mass_mode() {
    local files=("$SWIFT_DIR/proxy-server.conf") with=0 without=0 f n
    if [ -f "$SWIFT_DIR/$PROXY2_CONF" ]; then files+=("$SWIFT_DIR/$PROXY2_CONF"); fi
    for n in "${NODES[@]}"; do files+=("$SWIFT_DIR/object-server/$n.conf"); done
    for f in "${files[@]}"; do
        [ -f "$f" ] || { echo none; return; }
        if grep -Eq '^[[:space:]]*pipeline[[:space:]]*=.*[[:space:]](mass|mass_queue)([[:space:]]|$)' "$f"; then
            with=$((with + 1))
        else
            without=$((without + 1))
        fi
    done
    if [ "$without" -eq 0 ]; then echo with
    elif [ "$with" -eq 0 ]; then echo without
    else echo mixed; fi
}

mass_importable() {  # also checks the paste entry points are registered
    (cd / && "$PY" - <<'EOF'
import sys
from importlib import metadata
import swift_mass.proxy.middleware, swift_mass.obj.middleware  # noqa
eps = {e.name for e in metadata.distribution('swift_mass').entry_points
       if e.group == 'paste.filter_factory'}
missing = {'mass', 'mass_queue'} - eps
if missing:
    sys.exit('entry points missing: %s' % ', '.join(sorted(missing)))
EOF
    )
}
