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
"""``swift-mass``: what the Mass control loop knows and decided, pins, and
the operator's tools around it.

Subcommands, by the module of :mod:`swift_mass.cli` that runs them::

    swift-mass status              leader, store health, table version
    swift-mass tenants [--top N] [--sort requests]
                                   each tenant's class, substore, method
                                   and figures, the busiest first
    swift-mass explain TENANT      the numbers behind the tenant's decision
                                   (exit 1 when the store knows nothing of
                                   TENANT)
    swift-mass pin TENANT --class write [--substore bulk] [--method batch]
    swift-mass unpin TENANT
    swift-mass forget TENANT [TENANT...]
                                   (control: the shared store the proxies
                                   use, from the [filter:mass] section of
                                   --conf)
    swift-mass migrate plan|run TENANT [CONTAINER...] [--policy NAME]
                                   (migrate: a tenant's containers to its
                                   substore, with a reseller admin's
                                   credentials as swift takes them:
                                   ST_AUTH, ST_USER, ST_KEY or Keystone's
                                   OS_* (or -A, -U, --os-auth-url, ...))
    swift-mass auto-migrate [TENANT...] [--once] [-v]
                                   (the same moves, started as tenants'
                                   policies stand: opt-in, auto_migrate =
                                   true in [filter:mass]; same credentials)
    swift-mass urgent TENANT [--on | --off]
    swift-mass opt-out TENANT [--on | --off]
                                   (urgent: the tenant's urgent mark, or
                                   its opt-out of Mass, through a proxy,
                                   same credentials)
    swift-mass check-rings [--swift-dir /etc/swift] [--strict]
                                   (rings: each storage policy's ring
                                   spread over servers)
    swift-mass queue [--swift-dir /etc/swift] [--timeout 5]
                                   (queue: every object server's
                                   mass_queue, per device; the figures of
                                   the worker that answered)
    swift-mass devices probe [--seconds 5] [--thresholds 1000]
    swift-mass devices classes | classify --thresholds 500,5000
                                   (devices: the IOPS of the object-ring
                                   devices this host serves, and their
                                   performance classes, kept in
                                   /etc/swift/mass-devices.json)
    swift-mass weights plan|apply --ring standard --alpha 0.5
               (--weights 0.3,0.7 | --table T --clients N --read-ratio R
                | --table T --from-monitor)
                                   (weights: a ring's device weights a
                                   step towards class weights W)
    swift-mass substores plan|apply --name NAME --classes fast
               [--replicas 3] [--part-power 10 --min-part-hours 1]
               [--exclude DEV] [--force]
                                   (substores: a new policy's ring over
                                   every server holding those classes;
                                   part power and min_part_hours, unless
                                   given, those of the cluster's builder)

The global options, ``--conf`` (the proxy config, default
/etc/swift/proxy-server.conf) and ``--json`` (the result as JSON), go
anywhere on the line, before or after the subcommand's name (the last one
given wins); ``swift-mass --version`` prints the version.  A storage
policy Mass routes tenants to is a substore, in the CLI as in
``[filter:mass]`` (``read_substore``, ...); ``pin --ring`` is the old
spelling of ``pin --substore``, still taken.  The benchmark is not part of
the installed command: it runs from a checkout, beside the SAIO
(``tools/bench``).
"""
import argparse
import importlib
import sys

import swift_mass

# The modules of swift_mass.cli and the subcommands each registers, in the
# order of --help.  Only the module of the subcommand given is imported:
# the store's, the rings' and swiftclient's imports are paid by the
# subcommands that use them.
GROUPS = (
    ('control', ('status', 'tenants', 'explain', 'pin', 'unpin',
                 'forget')),
    ('migrate', ('migrate', 'auto-migrate')),
    ('urgent', ('urgent', 'opt-out')),
    ('rings', ('check-rings',)),
    ('queue', ('queue',)),
    ('devices', ('devices',)),
    ('weights', ('weights',)),
    ('substores', ('substores',)),
)


CONF = '/etc/swift/proxy-server.conf'


class Parser(argparse.ArgumentParser):
    """Every parser of ``swift-mass``, each subcommand's too (argparse makes
    subparsers of their parent's class): each takes the global options, so
    they go anywhere on the line."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse copies a subcommand's namespace over its parent's: an
        # option a parser was not given must leave it unset there, so that
        # the value given at another place on the line (or the top
        # parser's default) holds.
        self.add_argument('--conf', default=argparse.SUPPRESS,
                          help='proxy config with the [filter:mass] '
                          'section (default: %s)' % CONF)
        self.add_argument('--json', action='store_true',
                          default=argparse.SUPPRESS,
                          help='print the result as JSON')


class _FirstPass(Parser):
    """Finds the subcommand; leaves every error to the full parser."""

    def error(self, message):
        raise ValueError(message)


def subcommand(argv):
    """The subcommand ``argv`` names, or None (none, or an error the full
    parser reports)."""
    first = _FirstPass(add_help=False)
    first.add_argument('command', nargs='?')
    try:
        known, _ = first.parse_known_args(argv)
    except ValueError:
        return None
    return known.command


def build_parser(command=None):
    """The parser of ``swift-mass``, with the subparsers of ``command``'s
    module only (all of them when ``command`` is None or unknown: for
    --help and for the error that lists the subcommands)."""
    parser = Parser(
        prog='swift-mass', description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(conf=CONF, json=False)
    parser.add_argument('--version', action='version',
                        version='%(prog)s ' + swift_mass.__version__)
    subparsers = parser.add_subparsers(dest='command', required=True)
    known = any(command in commands for _, commands in GROUPS)
    for module, commands in GROUPS:
        if command in commands or not known:
            importlib.import_module('swift_mass.cli.' + module) \
                .add_parsers(subparsers)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(subcommand(argv)).parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
