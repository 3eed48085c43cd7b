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
"""swift-mass's entry: each subcommand registered by its module, and only
the module of the subcommand given imported."""
import json
import subprocess
import sys

import pytest

import swift_mass
from swift_mass.cli import main as cli

COMMANDS = ['status', 'tenants', 'explain', 'pin', 'unpin', 'forget',
            'migrate', 'urgent', 'opt-out', 'check-rings', 'queue', 'devices',
            'weights', 'substores']


def modules_imported(*argv):
    """The modules of swift_mass.cli, mass_bench and swiftclient that
    parsing ``argv`` imports, in a fresh interpreter."""
    code = ('import sys, json\n'
            'from swift_mass.cli import main\n'
            'main.build_parser(main.subcommand(sys.argv[1:]))'
            '.parse_args(sys.argv[1:])\n'
            'print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0]'
            ' in ("swiftclient", "mass_bench") or m.startswith('
            '"swift_mass.cli.") or m in ("swift_mass.obj.middleware", '
            '"swift.common.ring", "redis"))))')
    out = subprocess.run([sys.executable, '-c', code] + list(argv),
                         stdout=subprocess.PIPE, check=True, text=True)
    return set(json.loads(out.stdout))


def test_a_subcommand_imports_its_module_only():
    assert modules_imported('--json', 'queue', '--timeout', '1') == {
        'swift_mass.cli.main', 'swift_mass.cli.output',
        'swift_mass.cli.queue', 'swift.common.ring'}
    urgent = modules_imported('urgent', 'AUTH_t', '--on')
    assert 'swift_mass.cli.migrate' not in urgent
    assert 'swift_mass.cli.client' in urgent
    assert 'redis' not in urgent
    status = modules_imported('--conf', 'x.conf', 'status')
    assert 'swift_mass.cli.control' in status
    assert not any(m.startswith('swiftclient') for m in status)


def test_every_subcommand_is_registered_and_bench_is_not(capsys):
    parser = cli.build_parser()
    for command in COMMANDS:
        assert cli.subcommand([command]) == command
        args = parser.parse_args(
            [command] + {'explain': ['T'], 'pin': ['T', '--class', 'read'],
                         'unpin': ['T'], 'forget': ['T', 'U'],
                         'urgent': ['T'],
                         'opt-out': ['T'],
                         'migrate': ['plan', 'T'],
                         'devices': ['classes'],
                         'weights': ['plan', '--ring', 'standard'],
                         'substores': ['plan', '--name', 'fast',
                                       '--classes', 'fast']}.get(
                             command, []))
        assert callable(args.func)
    with pytest.raises(SystemExit):
        cli.main(['bench'])
    assert "invalid choice: 'bench'" in capsys.readouterr().err


def test_subcommand_skips_the_top_options():
    assert cli.subcommand(['--conf', 'p.conf', '--json', 'pin', 'T']) == \
        'pin'
    assert cli.subcommand(['--help']) is None
    assert cli.subcommand(['--conf']) is None
    assert cli.build_parser('queue').parse_args(
        ['--json', 'queue']).json is True
    assert cli.build_parser('queue').parse_args(
        ['queue', '--json']).json is True
    assert cli.build_parser('queue').parse_args(['queue']).json is False


@pytest.mark.parametrize('command, argv', [
    ('status', ['--conf', 'p.conf', '--json', 'status']),
    ('status', ['status', '--conf', 'p.conf', '--json']),
    ('pin', ['--json', 'pin', 'T', '--class', 'read', '--conf', 'p.conf']),
    ('weights', ['weights', 'plan', '--ring', 'standard', '--conf',
                 'p.conf', '--json']),
    ('substores', ['substores', '--conf', 'p.conf', 'plan', '--name',
                   'fast', '--classes', 'fast', '--json']),
    ('migrate', ['migrate', 'plan', 'T', '--json', '--conf', 'p.conf']),
    ('queue', ['queue', '--conf', 'p.conf', '--json']),
])
def test_global_options_anywhere_on_the_line(command, argv):
    # --conf was taken only before the subcommand: "swift-mass status
    # --conf p.conf" failed with "unrecognized arguments"
    assert cli.subcommand(argv) == command
    args = cli.build_parser(command).parse_args(argv)
    assert (args.conf, args.json) == ('p.conf', True)


def test_global_options_default_wherever_they_are_not_given():
    for argv in (['status'], ['substores', 'plan', '--name', 'fast',
                              '--classes', 'fast']):
        args = cli.build_parser(argv[0]).parse_args(argv)
        assert (args.conf, args.json) == ('/etc/swift/proxy-server.conf',
                                          False)
    # the last one given wins, wherever it is
    args = cli.build_parser('status').parse_args(
        ['--conf', 'a.conf', 'status', '--conf', 'b.conf'])
    assert args.conf == 'b.conf'


def test_version(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(['--version'])
    assert caught.value.code == 0
    assert capsys.readouterr().out == 'swift-mass %s\n' % \
        swift_mass.__version__
