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
"""A substore is used only where measured faster than the default policy
(swift_mass.control.substores): the decision, and the leader's check over
real rings and a classes file written by the command's own writer."""
import os

import pytest
from swift.common.ring import RingBuilder
from swift.common.storage_policy import POLICIES

from swift_mass.control import controller, monitor, substores
from swift_mass.control.substores import SubstoreCheck, checked_substores, \
    request_seconds
from swift_mass.device_speeds import Speeds, read_speeds
from swift_mass.devices.classes import save_classes
from swift_mass.ring_devices import load_policies, ring_file_devs
from tests.unit.devices.test_rings import swift_conf
from tests.unit.helpers import Logger

SSD = Speeds(read_iops=2000.0, write_iops=1000.0, iops=1400.0)
HDD = Speeds(read_iops=100.0, write_iops=70.0, iops=80.0)
CONFIGURED = {'read': 'fast', 'write': 'bulk', 'mixed': ''}


def dev(name, weight):
    ip, rest = name.split(':')
    port, device = rest.split('/')
    return {'ip': ip, 'port': int(port), 'device': device, 'weight': weight}


# the hetero SAIO's shape: standard over SSDs (weight 4) and HDDs (12),
# fast over the SSDs, bulk over the HDDs
SSDS = ['127.0.0.%d:62%d0/sdb%d' % (n, n, n) for n in (1, 2)]
HDDS = ['127.0.0.%d:62%d6/sdc%d' % (n, n, n) for n in (1, 2)]
RINGS = {'standard': [dev(d, 4) for d in SSDS] + [dev(d, 12) for d in HDDS],
         'fast': [dev(d, 4) for d in SSDS],
         'bulk': [dev(d, 12) for d in HDDS]}
SPEEDS = dict([(d, SSD) for d in SSDS] + [(d, HDD) for d in HDDS])


def test_a_rings_time_per_request_weights_its_devices():
    # a quarter of standard's weight on SSDs, three quarters on HDDs
    assert request_seconds(RINGS['standard'], SPEEDS, 'write') == \
        pytest.approx(0.25 / 1000 + 0.75 / 70)
    assert request_seconds(RINGS['fast'], SPEEDS, 'read') == \
        pytest.approx(1 / 2000.0)
    assert request_seconds(RINGS['bulk'], SPEEDS, 'mixed') == \
        pytest.approx(1 / 80.0)


def test_a_device_without_figures_leaves_the_ring_unmeasured():
    speeds = dict(SPEEDS)
    del speeds[HDDS[0]]
    assert request_seconds(RINGS['standard'], speeds, 'read') is None
    # a device without weight holds no replica: it is not asked for
    assert request_seconds(RINGS['fast'] + [dev(HDDS[0], 0)], speeds,
                           'read') == pytest.approx(1 / 2000.0)
    assert request_seconds([dev(HDDS[0], 0)], speeds, 'read') is None


def test_a_slower_write_substore_is_not_used_a_faster_read_one_is():
    used, notes = checked_substores(CONFIGURED, RINGS, SPEEDS, 'standard')
    assert used == {'read': 'fast', 'write': '', 'mixed': ''}
    assert notes['read'].startswith("substore 'fast': measured faster, "
                                    "0.50 ms a read against 7.62 ms")
    assert notes['write'] == (
        "substore 'bulk' not used: not measured 10 % faster, 14.29 ms a "
        "write against 10.96 ms on the default policy 'standard'")
    assert 'mixed' not in notes


def test_faster_by_less_than_the_margin_is_not_faster():
    # bulk's HDDs 5 % faster than standard's mean: not worth routing
    fast_hdd = HDD._replace(write_iops=1 / (0.95 * (0.25 / 1000 +
                                                    0.75 / 70)))
    speeds = dict(SPEEDS, **{d: fast_hdd for d in HDDS})
    assert checked_substores(CONFIGURED, RINGS, speeds,
                             'standard')[0]['write'] == ''
    fast_hdd = HDD._replace(write_iops=2000.0)
    speeds = dict(SPEEDS, **{d: fast_hdd for d in HDDS})
    assert checked_substores(CONFIGURED, RINGS, speeds,
                             'standard')[0]['write'] == 'bulk'


def test_unmeasured_or_unreadable_keeps_the_mapping_as_configured():
    used, notes = checked_substores(CONFIGURED, RINGS, {}, 'standard')
    assert used == CONFIGURED
    assert 'not all measured' in notes['write']
    rings = dict(RINGS, bulk=IOError('no ring'))
    used, notes = checked_substores(CONFIGURED, rings, SPEEDS, 'standard')
    assert used['write'] == 'bulk' and used['read'] == 'fast'
    assert notes['write'] == "substore 'bulk' used as configured: cannot " \
        "read the ring of 'bulk' (no ring)"


def test_the_speeds_file_skips_bad_entries_and_refuses_other_files(
        tmp_path):
    path = str(tmp_path / 'mass-devices.json')
    assert read_speeds(path) == {}
    save_classes(path, {SSDS[0]: dict(SSD._asdict()),
                        HDDS[0]: dict(HDD._asdict(), write_iops=0)})
    # the HDD's write figure is no speed: that device stays unmeasured
    assert read_speeds(path) == {SSDS[0]: SSD}
    with open(path, 'w') as fp:
        fp.write('{"version": 7}')
    try:
        read_speeds(path)
    except ValueError as err:
        assert 'not a version 1 classes file' in str(err)
    else:
        raise AssertionError('a version 7 file was read')


def write_rings(swift_dir, monkeypatch):
    """Real rings in ``swift_dir``: standard, fast and bulk as RINGS; the
    policies of its swift.conf."""
    for policy in POLICIES:
        # each policy keeps the ring it loaded first, from any swift_dir
        monkeypatch.setattr(policy, 'object_ring', None)
    swift_conf(swift_dir, [(0, 'standard', {'default': 'yes'}),
                           (1, 'fast', {}), (2, 'bulk', {})])
    for ring, name in (('object', 'standard'), ('object-1', 'fast'),
                       ('object-2', 'bulk')):
        builder = RingBuilder(6, 2, 1)
        for i, d in enumerate(RINGS[name]):
            builder.add_dev(dict(d, id=i, region=1, zone=i % 2 + 1))
        builder.rebalance(seed=1)
        builder.get_ring().save(os.path.join(swift_dir, ring + '.ring.gz'))
    return load_policies(swift_dir)


def info_lines(logger, text):
    return [line for level, line in logger.lines
            if level == 'info' and text in line]


def test_the_leaders_check_reads_the_rings_and_the_file(
        tmp_path, monkeypatch):
    swift_dir = str(tmp_path)
    logger = Logger()
    path = os.path.join(swift_dir, 'mass-devices.json')
    check = SubstoreCheck(swift_dir, logger,
                          policies=write_rings(swift_dir, monkeypatch),
                          read_devs=ring_file_devs, path=path)
    base = controller.DEFAULT_SETTINGS._replace(substores=CONFIGURED)
    # no classes file yet: as configured
    settings = check.settings(base, 1000)
    assert settings.substores == CONFIGURED
    save_classes(path, {d: dict(s._asdict()) for d, s in SPEEDS.items()})
    # read again only once CHECK_SECONDS have passed
    assert check.settings(base, 1000 + substores.CHECK_SECONDS - 1) is \
        settings
    settings = check.settings(base, 1000 + substores.CHECK_SECONDS)
    assert settings.substores == {'read': 'fast', 'write': '', 'mixed': ''}
    assert "substore 'bulk' not used" in settings.substore_notes['write']
    assert len(info_lines(logger, 'not used')) == 1
    check.settings(base, 1000 + 3 * substores.CHECK_SECONDS)
    # the same result is not logged again
    assert len(info_lines(logger, 'not used')) == 1


def test_a_writer_lands_on_the_default_policy_and_explains_why():
    settings = controller.DEFAULT_SETTINGS._replace(
        substores={'read': 'fast', 'write': '', 'mixed': ''},
        substore_notes={'write': "substore 'bulk' not used: slower"})
    entry, reasons = controller.decide(
        't', None, _figures(puts=100), 0, settings)
    assert (entry.cls, entry.substore, entry.method) == ('write', '',
                                                         'batch')
    assert entry.reason.endswith("; substore 'bulk' not used: slower")


def test_an_entry_follows_a_substore_the_check_changed():
    routed = controller.DEFAULT_SETTINGS._replace(substores=CONFIGURED)
    entry, _ = controller.decide('t', None, _figures(puts=100), 0, routed)
    assert entry.substore == 'bulk'
    unrouted = routed._replace(
        substores=dict(CONFIGURED, write=''),
        substore_notes={'write': "substore 'bulk' not used: slower"})
    moved, reasons = controller.decide('t', entry, _figures(puts=100), 5,
                                       unrouted)
    # the same method and validation, the tenant's new containers elsewhere
    assert moved.substore == ''
    assert (moved.method, moved.since, moved.baseline_ms) == (
        entry.method, entry.since, entry.baseline_ms)
    assert reasons == ["t: substore '' instead of 'bulk': substore 'bulk' "
                       "not used: slower"]
    assert controller.decide('t', moved, _figures(puts=100), 10,
                             unrouted) == (moved, [])


def _figures(puts):
    return monitor.figures([monitor.request_counts('PUT', 201, 0, 0, 0.01)
                            for _ in range(puts)])


def test_a_pin_without_a_substore_takes_the_checked_one_and_says_why():
    settings = controller.DEFAULT_SETTINGS._replace(
        substores={'read': 'fast', 'write': '', 'mixed': ''},
        substore_notes={'write': "substore 'bulk' not used: slower"})
    entry, _ = controller.decide('t', None, _figures(puts=0), 0, settings,
                                 pin={'class': 'write'})
    assert (entry.substore, entry.pinned) == ('', True)
    assert entry.reason == "pinned by operator; substore 'bulk' not " \
        "used: slower"
    # a pin that names its substore is used as pinned
    entry, _ = controller.decide('t', None, _figures(puts=0), 0, settings,
                                 pin={'class': 'write', 'ring': 'bulk'})
    assert (entry.substore, entry.reason) == ('bulk', 'pinned by operator')
