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
import fnmatch
import os
import subprocess
from importlib.metadata import entry_points

from paste.deploy import loadwsgi
from setuptools.config.setupcfg import read_configuration

import swift_mass

ROOT = os.path.dirname(os.path.dirname(swift_mass.__file__))


def test_paste_entry_points_resolve():
    eps = {ep.name: ep for ep in
           entry_points(group='paste.filter_factory')
           if ep.value.startswith('swift_mass.')}
    assert set(eps) == {'mass', 'mass_queue'}
    from swift_mass.obj import middleware as object_mw
    from swift_mass.proxy import middleware as proxy
    assert eps['mass'].load() is proxy.filter_factory
    assert eps['mass_queue'].load() is object_mw.filter_factory


def test_egg_uris_load_through_paste(tmp_path):
    conf = tmp_path / 'p.conf'
    conf.write_text(
        '[filter:mass]\nuse = egg:swift_mass#mass\ndefault_priority = 6\n'
        '[filter:mass_queue]\nuse = egg:swift_mass#mass_queue\n')
    for name in ('mass', 'mass_queue'):
        factory = loadwsgi.loadfilter('config:%s' % conf, name=name)
        assert callable(factory)


def test_the_installed_version_is_the_packages():
    # setup.cfg reads the version from the package: an installed
    # distribution that says another was built from another tree
    from importlib.metadata import version
    import swift_mass
    assert version('swift_mass') == swift_mass.__version__


def test_every_lua_script_ships_as_package_data():
    # the scripts are read from their package at import: one a wheel
    # leaves out stops the proxy or the object server at start-up
    shipped = read_configuration(os.path.join(ROOT, 'setup.cfg'))[
        'options']['package_data']
    scripts = []
    for folder, _dirs, files in os.walk(os.path.join(ROOT, 'swift_mass')):
        scripts.extend(os.path.join(folder, name) for name in files
                       if name.endswith('.lua'))
    assert scripts
    unshipped = []
    for path in scripts:
        # the package is the folder holding lua/
        package_dir = os.path.dirname(os.path.dirname(path))
        package = os.path.relpath(package_dir, ROOT).replace(os.sep, '.')
        name = os.path.relpath(path, package_dir).replace(os.sep, '/')
        if not any(fnmatch.fnmatch(name, pattern)
                   for pattern in shipped.get(package, ())):
            unshipped.append(os.path.relpath(path, ROOT))
    assert unshipped == []


def test_every_source_file_carries_the_license_header():
    # setup.cfg declares Apache-2.0; each file says so itself, as Swift's
    # do, so that a file copied out of the tree keeps its terms
    files = subprocess.check_output(['git', 'ls-files'], cwd=ROOT,
                                    text=True).split()
    missing = []
    for rel in files:
        path = os.path.join(ROOT, rel)
        with open(path, errors='replace') as f:
            head = f.read(3000)
        first = head.split('\n', 1)[0]
        source = rel.endswith(('.py', '.lua', '.c', '.sh')) or (
            first.startswith('#!') and any(
                shell in first for shell in ('python', 'bash', '/sh')))
        if source and head.strip() and \
                'Licensed under the Apache License' not in head:
            missing.append(rel)
    assert missing == []
