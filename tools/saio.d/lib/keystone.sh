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
# tools/saio: `keystone`: a real Keystone beside the SAIO, and a proxy that
# authenticates with it (sourced by tools/saio, which sets the globals and
# runs main)
#
# Most production Swift clusters authenticate with Keystone.  `keystone
# up` installs Debian's Keystone (python3-keystone, in Debian's own
# Python), keeps its state under $KS_ETC and $KS_VAR (SQLite, fernet
# keys), serves it on 127.0.0.1:$KS_PORT (tools/saio.d/keystone/serve.py),
# creates the users an operator would (tools/saio.d/keystone/accounts.py;
# their names, passwords and accounts in $KS_ACCOUNTS), and adds a fourth
# proxy, 127.0.0.1:$KS_PROXY_PORT, whose pipeline is the first proxy's
# (Mass and encryption included) with Keystone's auth in place of
# tempauth, as Swift's docs set it up with s3api: `authtoken s3api s3token
# keystoneauth` (s3token asks Keystone to check an S3 client's signature,
# made with an EC2 credential Keystone holds).  The other proxies keep
# tempauth.  `keystone down` takes the proxy away
# and stops Keystone; its state stays for the next `up`.

KS_PORT=${SAIO_KEYSTONE_PORT:-5000}
KS_URL=http://127.0.0.1:$KS_PORT/v3
KS_ETC=/etc/swift-mass-keystone
KS_VAR=/var/lib/swift-mass-keystone
KS_ACCOUNTS=$KS_ETC/accounts.json
KS_PIDFILE=/var/run/swift/keystone.pid
KS_LOG=$LOG_DIR/keystone.log
# where python3-keystone lives: Debian's Python, not $PY
KS_PY=/usr/bin/python3
KS_ADMIN_PASSWORD=admin-saio
KS_PROXY_CONF=proxy-server/4.conf
KS_PROXY_PORT=8083

keystone_importable() {
    [ -x "$KS_PY" ] && "$KS_PY" -c 'import keystone.server.wsgi' >/dev/null 2>&1
}

keystone_packages() {  # Debian's Keystone, into its own Python
    keystone_importable || apt_install python3-keystone
    keystone_importable || die "python3-keystone installed, but $KS_PY cannot import keystone"
}

keystone_install() {
    keystone_packages
    # the proxy's authtoken, and swiftclient's v3 auth for swift-mass
    "$PY" -c 'import keystonemiddleware.auth_token, keystoneclient.v3' >/dev/null 2>&1 ||
        py_pip_install -q -c "$REPO_ROOT/constraints.txt" keystonemiddleware python-keystoneclient
}

keystone_manage() {  # keystone-manage's arguments
    OS_KEYSTONE_CONFIG_DIR=$KS_ETC "$KS_PY" -c \
        'import sys; from keystone.cmd.manage import main; sys.exit(main())' \
        --config-file "$KS_ETC/keystone.conf" "$@"
}

keystone_configure() {
    mkdir -p "$KS_ETC" "$KS_VAR" "$LOG_DIR"
    cat >"$KS_ETC/keystone.conf.new" <<CONF
# written by tools/saio keystone up
[DEFAULT]
log_file = $KS_LOG
[database]
connection = sqlite:///$KS_VAR/keystone.db
[token]
provider = fernet
[fernet_tokens]
key_repository = $KS_ETC/fernet-keys/
[fernet_receipts]
key_repository = $KS_ETC/fernet-keys/
[credential]
key_repository = $KS_ETC/credential-keys/
[cache]
enabled = false
CONF
    mv "$KS_ETC/keystone.conf.new" "$KS_ETC/keystone.conf"
    say "keystone-manage db_sync, fernet_setup, credential_setup, bootstrap"
    keystone_manage db_sync >>"$KS_LOG" 2>&1 || die "keystone-manage db_sync failed (see $KS_LOG)"
    # Keystone keeps a read transaction open on one connection while it
    # commits on another (an endpoint's creation): in SQLite's default
    # journal mode the commit then fails, "database is locked".  With a
    # write-ahead log readers do not block the writer.
    "$KS_PY" -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' \
        "$KS_VAR/keystone.db" || die "could not put $KS_VAR/keystone.db in WAL mode"
    [ -d "$KS_ETC/fernet-keys" ] ||
        keystone_manage fernet_setup --keystone-user root --keystone-group root >>"$KS_LOG" 2>&1 ||
        die "keystone-manage fernet_setup failed (see $KS_LOG)"
    [ -d "$KS_ETC/credential-keys" ] ||
        keystone_manage credential_setup --keystone-user root --keystone-group root >>"$KS_LOG" 2>&1 ||
        die "keystone-manage credential_setup failed (see $KS_LOG)"
    keystone_manage bootstrap --bootstrap-password "$KS_ADMIN_PASSWORD" \
        --bootstrap-admin-url "$KS_URL" --bootstrap-public-url "$KS_URL" \
        --bootstrap-internal-url "$KS_URL" --bootstrap-region-id RegionOne \
        >>"$KS_LOG" 2>&1 || die "keystone-manage bootstrap failed (see $KS_LOG)"
}

keystone_pid() { pidfile_pid "$KS_PIDFILE"; }

keystone_answers() {
    [ "$(http_code "$KS_URL")" = 200 ]
}

keystone_serve() {
    local pid
    if pid=$(keystone_pid) && keystone_answers; then
        say "keystone already answers $KS_URL (pid $pid)"
        return 0
    fi
    keystone_answers && die "something else answers $KS_URL"
    say "starting keystone on $KS_URL"
    start_background "$KS_PIDFILE" "$KS_LOG" env OS_KEYSTONE_CONFIG_DIR="$KS_ETC" \
        "$KS_PY" "$TEMPLATES/keystone/serve.py" "$KS_PORT"
    await_background keystone "$KS_PIDFILE" "$KS_LOG" 150 keystone_answers ||
        die "keystone did not come up (its log, $KS_LOG, above)"
}

keystone_proxy_conf() {  # the fourth proxy: the first's pipeline, Keystone's auth
    local conf=$SWIFT_DIR/$KS_PROXY_CONF swift_password
    swift_password=$("$KS_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["swift"]["password"])' "$KS_ACCOUNTS")
    cp "$SWIFT_DIR/proxy-server.conf" "$conf.new"
    "$PY" "$INI" set "$conf.new" DEFAULT bind_port=$KS_PROXY_PORT log_name=proxy-server-4 &&
        "$PY" "$INI" set "$conf.new" filter:encryption disable_encryption=true &&
        "$PY" "$INI" pipeline without tempauth proxy-server "$conf.new" &&
        "$PY" "$INI" pipeline with keystoneauth staticweb "$conf.new" &&
        "$PY" "$INI" pipeline with authtoken s3api "$conf.new" &&
        "$PY" "$INI" pipeline with s3token keystoneauth "$conf.new" ||
        die "could not render $conf"
    cat >>"$conf.new" <<CONF

# tools/saio keystone up: Keystone's auth in place of tempauth
[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
www_authenticate_uri = http://127.0.0.1:$KS_PORT
auth_url = http://127.0.0.1:$KS_PORT
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = swift
password = $swift_password
delay_auth_decision = True
# Swift's own memcache client, as Swift's docs configure authtoken
cache = swift.cache
include_service_catalog = False

[filter:s3token]
use = egg:swift#s3token
auth_uri = http://127.0.0.1:$KS_PORT/v3
reseller_prefix = AUTH_
# Keystone answers /v3/s3tokens only to an authenticated service (401
# otherwise, seen with Debian's): the proxy's service user, as authtoken's
auth_type = password
auth_url = http://127.0.0.1:$KS_PORT
username = swift
password = $swift_password
project_name = service
user_domain_id = default
project_domain_id = default

[filter:keystoneauth]
use = egg:swift#keystoneauth
operator_roles = admin, member
reseller_admin_role = ResellerAdmin
CONF
    mv "$conf.new" "$conf"
}

keystone_up() {
    require_root
    require_setup
    local was_stale=0
    config_stale && was_stale=1
    keystone_install
    keystone_configure
    keystone_serve
    say "creating the Keystone users (tools/saio.d/keystone/accounts.py -> $KS_ACCOUNTS)"
    "$KS_PY" "$TEMPLATES/keystone/accounts.py" "$KS_URL" "$KS_ADMIN_PASSWORD" \
        "http://127.0.0.1:$KS_PROXY_PORT" "$KS_ACCOUNTS" >>"$KS_LOG" 2>&1 ||
        die "creating the Keystone users failed (see $KS_LOG)"
    keystone_proxy_conf
    # a proxy cannot be started alone (lib/servers.sh): the proxies restart
    restart_servers "$was_stale" proxy-server
    say "keystone up: $KS_URL, proxy http://127.0.0.1:$KS_PROXY_PORT (users in $KS_ACCOUNTS)"
}

keystone_down() {
    require_root
    local pid was_stale=0
    if [ -f "$SWIFT_DIR/$KS_PROXY_CONF" ]; then
        config_stale && was_stale=1
        # stopped while its config is there for swift-init to find
        swift-init proxy-server stop 2>&1 | sed 's/^/saio:   /' || true
        rm -f "$SWIFT_DIR/$KS_PROXY_CONF"
        restart_servers "$was_stale" proxy-server
    fi
    if pid=$(keystone_pid); then
        stop_process "$pid"
    fi
    rm -f "$KS_PIDFILE"
    say "keystone stopped, its proxy removed (state kept in $KS_ETC, $KS_VAR)"
}

keystone_status() {
    local pid
    if pid=$(keystone_pid) && keystone_answers; then
        say "keystone          running (pid $pid): $KS_URL"
    else
        say "keystone          not running ('tools/saio keystone up')"
        return 1
    fi
    if [ -f "$SWIFT_DIR/$KS_PROXY_CONF" ] && healthy 127.0.0.1 "$KS_PROXY_PORT"; then
        say "keystone proxy    answers http://127.0.0.1:$KS_PROXY_PORT"
    else
        say "keystone proxy    DOWN (http://127.0.0.1:$KS_PROXY_PORT)"
        return 1
    fi
}

do_keystone() {  # up|down|status|packages
    local usage="usage: tools/saio keystone up|down|status|packages"
    [ $# -eq 1 ] || die "$usage"
    case $1 in
        up) keystone_up ;;
        down) keystone_down ;;
        status) keystone_status ;;
        packages) require_root; keystone_packages ;;
        *) die "$usage" ;;
    esac
}
