"""swift-mass devices: classes from IOPS thresholds, the classes file, the
devices a host serves, over real rings in a temporary swift_dir."""
import json
import os

import pytest

from swift_mass.cli import devices, main as cli
from tests.unit.cli import hetero


def test_classify_by_thresholds():
    iops = {'a': 150, 'b': 999.9, 'c': 1000, 'd': 20000}
    assert devices.classify(iops, [1000]) == {
        'a': 'slow', 'b': 'slow', 'c': 'fast', 'd': 'fast'}
    assert devices.classify(iops, [500, 5000]) == {
        'a': 'slow', 'b': 'medium', 'c': 'medium', 'd': 'fast'}
    assert devices.classify(iops, [200, 1000, 5000]) == {
        'a': 'class0', 'b': 'class1', 'c': 'class2', 'd': 'class3'}
    assert devices.classify(iops, ['1000'], ['hdd', 'ssd']) == {
        'a': 'hdd', 'b': 'hdd', 'c': 'ssd', 'd': 'ssd'}
    assert devices.parse_thresholds(' 500, 5000') == [500.0, 5000.0]


@pytest.mark.parametrize('thresholds', [
    [], [0], [-5], [1000, 1000], [5000, 500], ['fast'], None,
    [float('inf')]])
def test_thresholds_must_ascend_and_be_positive(thresholds):
    with pytest.raises(ValueError) as caught:
        devices.classify({'a': 1}, thresholds)
    assert str(caught.value).startswith('--thresholds ')
    assert 'allowed: ascending positive IOPS, one at least' in \
        str(caught.value)


@pytest.mark.parametrize('names', [
    ['ssd'], ['a', 'b', 'c'], ['x', 'x'], ['', 'y'], ['a,b', 'c'],
    [' a', 'b']])
def test_names_one_more_than_thresholds_and_distinct(names):
    with pytest.raises(ValueError) as caught:
        devices.classify({'a': 1}, [1000], names)
    assert 'allowed: 2 distinct names, slowest first' in str(caught.value)
    assert str(caught.value).startswith('--names ')


def test_device_key():
    assert devices.device_key({'ip': '127.0.0.1', 'port': 6210,
                               'device': 'sdb1'}) == '127.0.0.1:6210/sdb1'
    assert devices.device_key({'ip': 'fe80::1', 'port': 6200,
                               'device': 'd'}) == '[fe80::1]:6200/d'


def figures(iops, method='direct'):
    return {'read_iops': iops * 1.2, 'write_iops': iops * 0.8,
            'iops': iops, 'method': method, 'reads': 5, 'writes': 5}


def test_update_merges_and_classifies_everything_again():
    data = devices.update(devices.new_classes(), {
        'h1:1/a': figures(300), 'h1:1/b': figures(4000)}, now=10.0)
    assert data['classes'] == ['slow', 'fast']
    assert data['devices'] == {
        'h1:1/a': {'read_iops': 360.0, 'write_iops': 240.0, 'iops': 300,
                   'method': 'direct', 'probed_at': 10.0, 'class': 'slow'},
        'h1:1/b': {'read_iops': 4800.0, 'write_iops': 3200.0, 'iops': 4000,
                   'method': 'direct', 'probed_at': 10.0, 'class': 'fast'}}
    # another host's devices, and a device probed again
    data = devices.update(data, {'h2:1/a': figures(2000, 'dsync'),
                                 'h1:1/a': figures(250)}, now=20.0)
    assert sorted(data['devices']) == ['h1:1/a', 'h1:1/b', 'h2:1/a']
    assert data['devices']['h1:1/a']['iops'] == 250
    assert data['devices']['h1:1/a']['probed_at'] == 20.0
    assert data['devices']['h1:1/b']['probed_at'] == 10.0
    assert data['devices']['h2:1/a']['method'] == 'dsync'
    # other thresholds: the stored figures classified again, names kept
    # while their count fits
    named = devices.update(data, {}, names=['hdd', 'ssd'])
    assert named['devices']['h2:1/a']['class'] == 'ssd'
    assert devices.update(named, {}, [3000])['classes'] == ['hdd', 'ssd']
    three = devices.update(named, {}, [1000, 3000])
    assert three['classes'] == ['slow', 'medium', 'fast']
    assert {k: v['class'] for k, v in three['devices'].items()} == {
        'h1:1/a': 'slow', 'h1:1/b': 'fast', 'h2:1/a': 'medium'}


def test_classes_file_written_whole(tmp_path):
    path = str(tmp_path / 'mass-devices.json')
    data = devices.save_classes(path, {'h:1/a': figures(300)})
    assert devices.load_classes(path) == data
    assert data['thresholds'] == [1000.0]
    assert oct(os.stat(path).st_mode & 0o777) == '0o644'
    with pytest.raises(TypeError):
        devices.write_json(path, {'x': object()})
    # the old content stays, no temporary file is left
    assert devices.load_classes(path) == data
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
        devices.load_classes(str(path))


def test_served_devices_as_swift_decides():
    ring = {devices.device_key(d): d for d in [
        {'ip': '10.0.0.1', 'port': 6200, 'device': 'sdb'},
        {'ip': '10.0.0.1', 'port': 6206, 'device': 'sdc'},
        {'ip': '10.0.0.2', 'port': 6200, 'device': 'sdb'}]}

    def ips_of(ip):
        return ['10.0.0.1', '127.0.0.1'] if ip == '0.0.0.0' else [ip]
    # one server on its port only
    found = devices.served_devices(ring, [
        {'devices': '/srv/node', 'bind_ip': '0.0.0.0', 'bind_port': '6200',
         '__file__': 'o.conf'}], ips_of)
    assert found == [{'device': '10.0.0.1:6200/sdb',
                      'path': '/srv/node/sdb', 'conf': 'o.conf'}]
    # servers_per_port: every port of its IPs
    found = devices.served_devices(ring, [
        {'devices': '/d', 'bind_ip': '10.0.0.1', 'servers_per_port': '2'}],
        ips_of)
    assert [(f['device'], f['path']) for f in found] == [
        ('10.0.0.1:6200/sdb', '/d/sdb'), ('10.0.0.1:6206/sdc', '/d/sdc')]
    # the SAIO: one config per server, each its own devices dir; ring_ip
    # before bind_ip; a device is the first config's
    found = devices.served_devices(ring, [
        {'devices': '/srv/1/node', 'bind_ip': '10.0.0.1',
         'bind_port': '6206'},
        {'devices': '/srv/2/node', 'bind_ip': '0.0.0.0',
         'ring_ip': '10.0.0.2', 'bind_port': '6200'},
        {'devices': '/srv/9/node', 'bind_ip': '10.0.0.1',
         'servers_per_port': '1'}], ips_of)
    assert [(f['device'], f['path']) for f in found] == [
        ('10.0.0.1:6206/sdc', '/srv/1/node/sdc'),
        ('10.0.0.2:6200/sdb', '/srv/2/node/sdb'),
        ('10.0.0.1:6200/sdb', '/srv/9/node/sdb')]


@pytest.fixture
def cluster(tmp_path):
    return hetero.cluster(tmp_path)


def fake_prober(calls):
    def prober(path, seconds, max_bytes):
        calls.append((path, seconds, max_bytes))
        # sdb: an SSD, sdc: a disk
        return figures(8000 if os.path.basename(path).startswith('sdb')
                       else 300)
    return prober


def test_object_ring_devices_default_policy_first(cluster):
    found, errors = devices.object_ring_devices(cluster)
    assert errors == []
    assert len(found) == 8
    # the standard ring's ids: sdb1 0, sdc1 1, ...
    assert found['127.0.0.1:6216/sdc1']['id'] == 1
    os.unlink(os.path.join(cluster, 'object-1.ring.gz'))
    found, (error,) = devices.object_ring_devices(cluster)
    assert len(found) == 8 and error.startswith('fast: cannot read ')


def test_probe_here_probes_the_devices_served_and_merges(cluster):
    calls = []
    # this host runs the object servers of 127.0.0.1 and 127.0.0.2
    confs = [os.path.join(cluster, 'object-server', '%d.conf' % n)
             for n in (1, 2)]
    result = devices.probe_here(cluster, conf_paths=confs, seconds=0.5,
                                max_bytes=8192, prober=fake_prober(calls))
    assert result['errors'] == [] and result['written']
    root = os.path.dirname(cluster)
    assert calls == [(os.path.join(root, 'srv/1/node', d), 0.5, 8192)
                     for d in ('sdb1', 'sdc1')] + \
        [(os.path.join(root, 'srv/2/node', d), 0.5, 8192)
         for d in ('sdb2', 'sdc2')]
    assert [(d['device'], d['class']) for d in result['devices']] == [
        ('127.0.0.1:6210/sdb1', 'fast'), ('127.0.0.1:6216/sdc1', 'slow'),
        ('127.0.0.2:6220/sdb2', 'fast'), ('127.0.0.2:6226/sdc2', 'slow')]
    path = os.path.join(cluster, 'mass-devices.json')
    assert result['classes_file'] == path
    # the other host, other thresholds: all eight classified with them
    confs = [os.path.join(cluster, 'object-server', '%d.conf' % n)
             for n in (3, 4)]
    result = devices.probe_here(cluster, conf_paths=confs,
                                thresholds=[200, 1000],
                                names=['disk', 'hybrid', 'ssd'],
                                prober=fake_prober(calls))
    data = devices.load_classes(path)
    assert data['thresholds'] == [200, 1000]
    assert sorted(data['devices']) == sorted(
        devices.object_ring_devices(cluster)[0])
    assert {e['class'] for e in data['devices'].values()} == {'hybrid',
                                                              'ssd'}


def test_probe_here_errors_dry_run_and_only(cluster):
    calls = []
    root = os.path.dirname(cluster)
    os.rmdir(os.path.join(root, 'srv/1/node/sdc1/tmp'))
    os.rmdir(os.path.join(root, 'srv/1/node/sdc1'))
    conf = [os.path.join(cluster, 'object-server', '1.conf')]
    result = devices.probe_here(cluster, conf_paths=conf, dry_run=True,
                                prober=fake_prober(calls))
    assert calls == [] and not result['written']
    assert not os.path.exists(os.path.join(cluster, 'mass-devices.json'))
    assert result['errors'] == [
        '127.0.0.1:6216/sdc1: not mounted: %s is not a directory'
        % os.path.join(root, 'srv/1/node/sdc1')]
    result = devices.probe_here(cluster, conf_paths=conf,
                                only=['127.0.0.1:6210/sdb1'],
                                prober=fake_prober(calls))
    assert result['errors'] == [] and len(calls) == 1
    with pytest.raises(ValueError) as caught:
        devices.probe_here(cluster, conf_paths=conf,
                           only=['127.0.0.2:6220/sdb2'])
    assert str(caught.value) == (
        '--device 127.0.0.2:6220/sdb2 is not valid; allowed: the devices '
        'served here: 127.0.0.1:6210/sdb1, 127.0.0.1:6216/sdc1')

    def failing(path, seconds, max_bytes):
        raise OSError(28, 'No space left on device')
    result = devices.probe_here(cluster, conf_paths=conf,
                                only=['127.0.0.1:6210/sdb1'],
                                prober=failing)
    assert result['errors'] == [
        '127.0.0.1:6210/sdb1: OSError: [Errno 28] No space left on device']


def test_probe_here_refuses_before_probing(cluster):
    with pytest.raises(ValueError, match='--seconds 100 is not valid'):
        devices.probe_here(cluster, seconds=100)
    with pytest.raises(ValueError, match='--names a is not valid'):
        devices.probe_here(cluster, thresholds=[5], names=['a'])
    os.rename(os.path.join(cluster, 'object-server'),
              os.path.join(cluster, 'elsewhere'))
    with pytest.raises(ValueError, match='no object-server config in'):
        devices.probe_here(cluster)


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_probe_for_real_then_classes_and_classify(cluster, capsys):
    # the object servers of 127.0.0.3 (their bind_ip: whataremyips takes
    # it as this host's) probed for real, briefly
    status, out, err = run(
        capsys, 'devices', 'probe', '--swift-dir', cluster,
        '--object-conf', os.path.join(cluster, 'object-server', '3.conf'),
        '--seconds', '0.05', '--max-bytes', '8192', '--json')
    assert (status, err) == (0, '')
    result = json.loads(out)
    assert [d['device'] for d in result['devices']] == [
        '127.0.0.3:6230/sdb3', '127.0.0.3:6236/sdc3']
    for d in result['devices']:
        assert d['iops'] > 0 and d['reads'] >= 1 and d['writes'] >= 1
        assert os.listdir(os.path.join(d['path'], 'tmp')) == []
    status, out, _ = run(capsys, 'devices', 'classes', '--swift-dir',
                         cluster)
    assert status == 0
    assert 'slow       0-1000 IOPS' in out and 'fast       1000- IOPS' in out
    assert '127.0.0.3:6230/sdb3' in out
    # classify again: a threshold above any device puts all in the slowest
    status, out, _ = run(capsys, 'devices', 'classify', '--swift-dir',
                         cluster, '--thresholds', '1e12', '--names',
                         'hdd,ssd', '--json')
    assert status == 0
    data = json.loads(out)
    assert data['counts'] == {'hdd': 2, 'ssd': 0}
    assert data['thresholds'] == [1e12]


def test_cli_probe_text_dry_run_and_errors(cluster, capsys):
    conf = os.path.join(cluster, 'object-server', '4.conf')
    status, out, _ = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--object-conf', conf, '--dry-run')
    assert status == 0
    assert out.splitlines()[1].startswith('127.0.0.4:6240/sdb4')
    assert '(dry run)' in out
    status, _, err = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--object-conf', conf, '--thresholds', '9,3')
    assert status == 1
    assert 'ValueError: --thresholds 9,3 is not valid; allowed: ' in err
    status, _, err = run(capsys, 'devices', 'classes', '--swift-dir',
                         cluster)
    assert status == 1 and 'does not exist: probe the devices first' in err
    status, out, _ = run(capsys, 'devices', 'probe', '--swift-dir', cluster,
                         '--devices', '/nonexistent', '--dry-run')
    # 127.0.0.1 is this host's by any count; its devices are not there
    assert status == 1
    assert 'ERROR: 127.0.0.1:6210/sdb1: not mounted: /nonexistent/sdb1' \
        in out
