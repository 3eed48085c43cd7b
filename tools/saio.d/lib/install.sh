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
# tools/saio: `install`: packages, Redis, the editable install of this repo,
# the metrics backends (lib/metrics.sh)
# (sourced by tools/saio, which sets the globals and runs main)

# ---------------------------------------------------------------- install

pkg_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

apt_lists_stale() {
    local lists=/var/lib/apt/lists
    compgen -G "$lists/*_Packages*" >/dev/null || return 0
    [ -n "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 -print -quit)" ] && return 1
    return 0
}

apt_install() {
    [ $# -gt 0 ] || return 0
    command -v apt-get >/dev/null || die "apt-get not found; install these yourself: $*"
    say "apt-get install $*"
    if apt_lists_stale; then
        say "apt lists missing or older than a day: apt-get update"
        apt-get update -q || die "apt-get update failed"
    fi
    if ! apt-get install -y -q --no-install-recommends "$@"; then
        say "apt-get install failed; retrying after apt-get update"
        apt-get update -q || die "apt-get update failed"
        apt-get install -y -q --no-install-recommends "$@" || die "apt-get install $* failed"
    fi
}

py_pip_install() {  # pip install's arguments: into $PY, or die
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        apt_install python3-pip
    fi
    local pipargs=(install "$@") stdlib
    stdlib=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
    if [ -f "$stdlib/EXTERNALLY-MANAGED" ]; then
        warn "$PY is an externally managed (distro) Python: using --break-system-packages"
        pipargs+=(--break-system-packages)
    fi
    say "$PY -m pip ${pipargs[*]}"
    "$PY" -m pip "${pipargs[@]}" || die "pip install $* failed"
}

project_installed() {  # editable install of this repo with both entry points
    (cd / && "$PY" - "$REPO_ROOT" <<'EOF'
import json, os, sys
from importlib import metadata
try:
    dist = metadata.distribution('swift_mass')
    metadata.distribution('swift')
except metadata.PackageNotFoundError:
    sys.exit(1)
eps = {e.name for e in dist.entry_points if e.group == 'paste.filter_factory'}
if not {'mass', 'mass_queue'} <= eps:
    sys.exit(1)
# entry points recorded by an install of an older checkout may name modules
# that moved since: they must load as they are now
try:
    for e in dist.entry_points:
        if e.group in ('paste.filter_factory', 'console_scripts'):
            e.load()
except Exception:
    sys.exit(1)
try:
    direct = json.loads(dist.read_text('direct_url.json') or '{}')
except ValueError:
    direct = {}
url = direct.get('url', '')
if not (direct.get('dir_info', {}).get('editable') and url.startswith('file://')
        and os.path.realpath(url[len('file://'):]) == os.path.realpath(sys.argv[1])):
    sys.exit(1)
# the version file an install writes into the checkout: a fresh clone in
# the same place has none, and its import would not know its version
if not os.path.exists(os.path.join(sys.argv[1], 'swift_mass', '_version.py')):
    sys.exit(1)
EOF
    ) >/dev/null 2>&1
}

ensure_redis() {  # [install]: may apt-get install redis-server
    if redis_ok; then
        say "Redis answers on 127.0.0.1:6379"
        return 0
    fi
    if ! command -v redis-server >/dev/null 2>&1; then
        [ "${1:-}" = install ] || die "Redis does not answer on 127.0.0.1:6379 and redis-server is not installed; run: tools/saio install"
        apt_install redis-server
        # Without systemd the package's init script may already have started it.
        for _ in 1 2 3; do redis_ok && { say "Redis answers on 127.0.0.1:6379"; return 0; }; sleep 1; done
    fi
    say "starting redis-server on 127.0.0.1:6379"
    # --dir: where a SAVE (the never-stale tests' snapshots) writes its
    # dump.rdb; the working directory would be a checkout's
    mkdir -p /var/lib/swift-mass-saio/redis
    daemon redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/swift-mass-saio/redis >/dev/null ||
        die "redis-server failed to start"
    answers_within 20 0.5 "Redis on 127.0.0.1:6379" redis_ok
}

# `pip install` does not refresh pyenv's shims, and $PY's scripts directory
# need not be on the PATH of the shell that ran us: make `swift-mass`
# reachable from there.
expose_swift_mass() {
    local scripts script
    # again: $PY may have been installed only now
    scripts=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
    script=$scripts/swift-mass
    [ -x "$script" ] || { warn "no $script: swift-mass is not on PATH"; return 0; }
    case $scripts in
        /usr/bin|/usr/local/bin) return 0 ;;
    esac
    if command -v pyenv >/dev/null 2>&1 && [[ $scripts == "$(pyenv root)"/* ]]; then
        pyenv rehash || warn "pyenv rehash failed: run it yourself for swift-mass"
        return 0
    fi
    ln -sfn "$script" /usr/local/bin/swift-mass
    say "linked /usr/local/bin/swift-mass -> $script"
}

do_install() {
    local force=0 arg
    for arg in "$@"; do
        case $arg in
            --force) force=1 ;;
            *) die "install: unknown option $arg" ;;
        esac
    done
    require_root

    local pkgs=()
    command -v memcached >/dev/null 2>&1 || pkg_installed memcached || pkgs+=(memcached)
    command -v mkfs.xfs >/dev/null 2>&1 || pkg_installed xfsprogs || pkgs+=(xfsprogs)
    command -v rsyslogd >/dev/null 2>&1 || pkg_installed rsyslog || pkgs+=(rsyslog)
    command -v curl >/dev/null 2>&1 || pkgs+=(curl)
    # the TCP front of the never-stale tests' Redis failover
    command -v socat >/dev/null 2>&1 || pkgs+=(socat)
    # the group-commit durability test traces the object servers' syscalls
    command -v strace >/dev/null 2>&1 || pkgs+=(strace)
    # the clock-step test steps one process's wall clock with it
    pkg_installed libfaketime || pkgs+=(libfaketime)
    command -v mountpoint >/dev/null 2>&1 && command -v findmnt >/dev/null 2>&1 || pkgs+=(util-linux)
    if [ ${#pkgs[@]} -gt 0 ]; then
        apt_install "${pkgs[@]}"
    else
        say "system packages present (memcached xfsprogs rsyslog curl socat strace libfaketime)"
    fi
    # the hetero profile's HDD-class devices run behind it
    ensure_hdd_model
    # `tools/saio metrics` runs it (lib/metrics.sh)
    install_metrics

    if [ "$force" -eq 0 ] && project_installed; then
        say "swift_mass already installed (editable, from $REPO_ROOT); 'install --force' reinstalls"
    else
        py_pip_install -c "$REPO_ROOT/constraints.txt" -e "$REPO_ROOT"
        hash -r
    fi
    expose_swift_mass
    command -v swift-init >/dev/null 2>&1 || die "swift-init not on PATH after installing (is $PY's bin directory on PATH?)"

    ensure_redis install
    say "install done"
}
