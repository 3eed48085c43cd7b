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
"""Performance classes (swift_mass.devices.classes): classes from IOPS
thresholds, the classes file, the object rings' devices, over real rings
in a temporary swift_dir."""
import os

import pytest

from swift_mass.devices import classes
from tests.unit.devices import hetero


def test_classify_by_thresholds():
    iops = {'a': 150, 'b': 999.9, 'c': 1000, 'd': 20000}
    assert classes.classify(iops, [1000]) == {
        'a': 'slow', 'b': 'slow', 'c': 'fast', 'd': 'fast'}
    assert classes.classify(iops, [500, 5000]) == {
        'a': 'slow', 'b': 'medium', 'c': 'medium', 'd': 'fast'}
    assert classes.classify(iops, [200, 1000, 5000]) == {
        'a': 'class0', 'b': 'class1', 'c': 'class2', 'd': 'class3'}
    assert classes.classify(iops, ['1000'], ['hdd', 'ssd']) == {
        'a': 'hdd', 'b': 'hdd', 'c': 'ssd', 'd': 'ssd'}
    assert classes.parse_thresholds(' 500, 5000') == [500.0, 5000.0]


@pytest.mark.parametrize('thresholds', [
    [], [0], [-5], [1000, 1000], [5000, 500], ['fast'], None,
    [float('inf')]])
def test_thresholds_must_ascend_and_be_positive(thresholds):
    with pytest.raises(ValueError) as caught:
        classes.classify({'a': 1}, thresholds)
    assert str(caught.value).startswith('--thresholds ')
    assert 'allowed: ascending positive IOPS, one at least' in \
        str(caught.value)


@pytest.mark.parametrize('names', [
    ['ssd'], ['a', 'b', 'c'], ['x', 'x'], ['', 'y'], ['a,b', 'c'],
    [' a', 'b']])
def test_names_one_more_than_thresholds_and_distinct(names):
    with pytest.raises(ValueError) as caught:
        classes.classify({'a': 1}, [1000], names)
    assert 'allowed: 2 distinct names, slowest first' in str(caught.value)
    assert str(caught.value).startswith('--names ')


def test_device_key():
    assert classes.device_key({'ip': '127.0.0.1', 'port': 6210,
                               'device': 'sdb1'}) == '127.0.0.1:6210/sdb1'
    assert classes.device_key({'ip': 'fe80::1', 'port': 6200,
                               'device': 'd'}) == '[fe80::1]:6200/d'


def figures(iops, method='direct'):
    return {'read_iops': iops * 1.2, 'write_iops': iops * 0.8,
            'iops': iops, 'method': method, 'reads': 5, 'writes': 5}


def test_update_merges_and_classifies_everything_again():
    data = classes.update(classes.new_classes(), {
        'h1:1/a': figures(300), 'h1:1/b': figures(4000)}, now=10.0)
    assert data['classes'] == ['slow', 'fast']
    assert data['devices'] == {
        'h1:1/a': {'read_iops': 360.0, 'write_iops': 240.0, 'iops': 300,
                   'method': 'direct', 'probed_at': 10.0, 'class': 'slow'},
        'h1:1/b': {'read_iops': 4800.0, 'write_iops': 3200.0, 'iops': 4000,
                   'method': 'direct', 'probed_at': 10.0, 'class': 'fast'}}
    # another host's devices, and a device probed again
    data = classes.update(data, {'h2:1/a': figures(2000, 'dsync'),
                                 'h1:1/a': figures(250)}, now=20.0)
    assert sorted(data['devices']) == ['h1:1/a', 'h1:1/b', 'h2:1/a']
    assert data['devices']['h1:1/a']['iops'] == 250
    assert data['devices']['h1:1/a']['probed_at'] == 20.0
    assert data['devices']['h1:1/b']['probed_at'] == 10.0
    assert data['devices']['h2:1/a']['method'] == 'dsync'
    # other thresholds: the stored figures classified again, names kept
    # while their count fits
    named = classes.update(data, {}, names=['hdd', 'ssd'])
    assert named['devices']['h2:1/a']['class'] == 'ssd'
    assert classes.update(named, {}, [3000])['classes'] == ['hdd', 'ssd']
    three = classes.update(named, {}, [1000, 3000])
    assert three['classes'] == ['slow', 'medium', 'fast']
    assert {k: v['class'] for k, v in three['devices'].items()} == {
        'h1:1/a': 'slow', 'h1:1/b': 'fast', 'h2:1/a': 'medium'}


def test_classes_file_written_whole(tmp_path):
    path = str(tmp_path / 'mass-devices.json')
    data = classes.save_classes(path, {'h:1/a': figures(300)})
    assert classes.load_classes(path) == data
    assert data['thresholds'] == [1000.0]
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'
    with pytest.raises(TypeError):
        classes.write_json(path, {'x': object()})
    # the old content stays, no temporary file is left
    assert classes.load_classes(path) == data
    assert sorted(os.listdir(tmp_path)) == ['.lock-mass-devices.json',
                                            'mass-devices.json']


@pytest.mark.parametrize('content, message', [
    (None, 'does not exist: probe the devices first'),
    ('{', 'is not JSON'),
    ('{"version": 2}', 'is not a version 1 classes file'),
    ('{"version": 1, "thresholds": [5, 1], "classes": ["a", "b"]}',
     '--thresholds 5,1 is not valid'),
    ('{"version": 1, "thresholds": [5], "classes": ["a", "b"], '
     '"devices": {"h:1/d": {"class": "c", "iops": 5}}}',
     "h:1/d has class 'c', not one of a, b"),
    ('{"version": 1, "thresholds": [5], "classes": ["a", "b"], '
     '"devices": {"h:1/d": {"class": "a", "iops": "x"}}}',
     'h:1/d has no IOPS figure'),
])
def test_bad_classes_files(tmp_path, content, message):
    path = tmp_path / 'c.json'
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        classes.load_classes(str(path))


def test_object_ring_devices_default_policy_first(tmp_path):
    cluster = hetero.cluster(tmp_path)
    found, errors = classes.object_ring_devices(cluster)
    assert errors == []
    assert len(found) == 8
    # the standard ring's ids: sdb1 0, sdc1 1, ...
    assert found['127.0.0.1:6216/sdc1']['id'] == 1
    os.unlink(os.path.join(cluster, 'object-1.ring.gz'))
    found, (error,) = classes.object_ring_devices(cluster)
    assert len(found) == 8 and error.startswith('fast: cannot read ')
