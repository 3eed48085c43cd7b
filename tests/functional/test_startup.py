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
"""A bad Mass option stops a real Swift server at start-up, with a message
that names the option and the allowed values."""
import configparser
import subprocess

import pytest

from tests.functional.conftest import saio


def start_with(conf_path, section, option, value, tmp_path, port):
    conf = configparser.RawConfigParser()
    conf.optionxform = str
    conf.read(conf_path)
    conf['DEFAULT']['bind_port'] = str(port)
    conf[section][option] = value
    path = tmp_path / 'server.conf'
    with open(path, 'w') as fp:
        conf.write(fp)
    return path


@pytest.mark.parametrize('server, conf_path, section, option, port', [
    ('swift-proxy-server', '/etc/swift/proxy-server.conf', 'filter:mass',
     'default_priority', 8099),
    ('swift-object-server', '/etc/swift/object-server/1.conf',
     'filter:mass_queue', 'background_priority', 6299),
])
def test_bad_option_stops_startup(cluster, tmp_path, server, conf_path,
                                  section, option, port):
    path = start_with(conf_path, section, option, 'high', tmp_path, port)
    proc = subprocess.run([server, str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode != 0
    assert "[%s] %s = 'high' is not valid; allowed: an integer from 0 " \
        "to 9" % (section, option) in proc.stdout, proc.stdout


def test_saio_mass_checks_an_option_before_any_proxy_sees_it(cluster):
    before = open('/etc/swift/proxy-server.conf').read()
    result = saio('mass', 'cache_budget_bytes=lots', check=False)
    assert result.returncode != 0
    assert "[filter:mass] cache_budget_bytes = 'lots' is not valid; " \
        "allowed: an integer >= 1" in result.stdout, result.stdout
    assert 'nothing was changed' in result.stdout
    assert open('/etc/swift/proxy-server.conf').read() == before
    shown = saio('mass').stdout
    assert 'cache_budget_bytes = ' in shown, shown
