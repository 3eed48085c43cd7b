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
"""tools/saio.d/ini.py, the INI editor of tools/saio, on copies of the
SAIO's templates in tools/saio.d."""
import configparser
import os
import shutil

import pytest

from tests.unit.tools import TEMPLATES, saio_helper

ini = saio_helper('ini')


@pytest.fixture
def copy(tmp_path):
    def copy(name):
        path = str(tmp_path / name)
        shutil.copy(os.path.join(TEMPLATES, name), path)
        return path
    return copy


def text(path):
    with open(path) as fp:
        return fp.read()


def comments(path):
    return [line for line in text(path).splitlines()
            if line.lstrip().startswith('#')]


def swift_reads(path, section):
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read(path)
    return dict(parser.items(section))


def test_the_second_proxy_edits(copy):
    # tools/saio's render_second_proxy
    path = copy('proxy-server.conf')
    before = text(path).splitlines()
    assert ini.main(['set', path, 'DEFAULT', 'bind_port=8081',
                     'log_name=proxy-server-2']) == 0
    assert ini.main(['set', path, 'filter:encryption',
                     'disable_encryption=true']) == 0
    assert ini.main(['set', path, 'filter:mass',
                     'cache_backend=memcache']) == 0
    after = text(path).splitlines()
    # bind_port rewritten where it was, the others right after their
    # section's header, every comment kept
    assert after[after.index('[DEFAULT]') + 1] == 'log_name = proxy-server-2'
    assert after[before.index('bind_port = 8080') + 1] == 'bind_port = 8081'
    assert after[after.index('[filter:mass]') + 1] == \
        'cache_backend = memcache'
    assert len(after) == len(before) + 3
    assert comments(path) == [line for line in before
                              if line.lstrip().startswith('#')]
    assert swift_reads(path, 'filter:encryption')['disable_encryption'] == \
        'true'
    assert swift_reads(path, 'filter:mass')['bind_port'] == '8081'


@pytest.mark.parametrize('name, app, template', [
    ('mass', 'proxy-server', 'proxy-server.conf'),
    ('mass_queue', 'object-server', 'object-server.conf.in')])
def test_pipeline_without_then_with_gives_the_template_back(
        copy, name, app, template):
    path = copy(template)
    original = text(path)
    assert ini.main(['pipeline', 'without', name, app, path]) == 0
    words = swift_reads(path, 'pipeline:main')['pipeline'].split()
    assert name not in words and words[-1] == app
    assert ini.main(['pipeline', 'without', name, app, path]) == 0
    assert ini.main(['pipeline', 'with', name, app, path]) == 0
    assert text(path) == original
    # with, twice: still once, right before the app
    assert ini.main(['pipeline', 'with', name, app, path]) == 0
    assert text(path) == original


def test_pipeline_with_moves_the_filter_before_the_app_and_joins_lines(
        tmp_path):
    path = str(tmp_path / 'p.conf')
    with open(path, 'w') as fp:
        fp.write('[pipeline:main]\n# the pipeline\npipeline = catch_errors '
                 'mass\n    # continued\n    proxy-logging proxy-server\n'
                 '\n[app:proxy-server]\nuse = egg:swift#proxy\n')
    assert ini.main(['pipeline', 'with', 'mass', 'proxy-server', path]) == 0
    assert text(path) == (
        '[pipeline:main]\n# the pipeline\npipeline = catch_errors '
        'proxy-logging mass proxy-server\n\n[app:proxy-server]\n'
        'use = egg:swift#proxy\n')


def test_queue_options_shown_and_set(copy, capsys):
    # tools/saio queue, without and with OPTION=VALUE
    path = copy('object-server.conf.in')
    assert ini.main(['show', path, 'filter:mass_queue']) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[:3] == ['use = egg:swift_mass#mass_queue',
                         'log_statsd_host = 127.0.0.1',
                         'log_statsd_port = 8125']
    assert 'slots_per_device = 8' in shown
    assert not any(line.startswith('devices =') for line in shown)
    before = text(path).splitlines()
    assert ini.main(['set', path, 'filter:mass_queue', 'slots_per_device=4',
                     'deadline=8', 'adaptive_slots=']) == 0
    after = text(path).splitlines()
    assert after[before.index('slots_per_device = 8')] == \
        'slots_per_device = 4'
    assert after[before.index('deadline = 4')] == 'deadline = 8'
    assert after[before.index('adaptive_slots = false')] == \
        'adaptive_slots = '
    assert len(after) == len(before)
    section = swift_reads(path, 'filter:mass_queue')
    assert (section['slots_per_device'], section['batch_slots'],
            section['adaptive_slots']) == ('4', '2', '')
    assert comments(path) == [line for line in before
                              if line.lstrip().startswith('#')]


def test_only_the_option_itself_in_its_own_section_is_set(tmp_path):
    path = str(tmp_path / 'o.conf')
    with open(path, 'w') as fp:
        fp.write('[DEFAULT]\nslots = 1\n\n[filter:q]\n# slots = 2\n'
                 'slots_per_device = 3\n[other]\nslots = 4\n')
    assert ini.main(['set', path, 'filter:q', 'slots=5']) == 0
    assert text(path) == ('[DEFAULT]\nslots = 1\n\n[filter:q]\nslots = 5\n'
                          '# slots = 2\nslots_per_device = 3\n[other]\n'
                          'slots = 4\n')


def test_errors_name_the_file_and_change_nothing(copy, capsys):
    path = copy('object-server.conf.in')
    original = text(path)
    assert ini.main(['set', path, 'filter:nope', 'a=1']) == 1
    assert capsys.readouterr().err == \
        'ini.py: %s: no [filter:nope] section\n' % path
    assert ini.main(['set', path, 'filter:mass_queue', 'deadline']) == 1
    assert "expected OPTION=VALUE, got 'deadline'" in capsys.readouterr().err
    assert ini.main(['pipeline', 'with', 'mass', 'proxy-server', path]) == 1
    assert 'proxy-server is not in the pipeline' in capsys.readouterr().err
    assert text(path) == original
    assert ini.main(['show', path]) == 2
    assert ini.main(['show', str(path) + '.gone', 'DEFAULT']) == 1
