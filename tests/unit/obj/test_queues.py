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
"""One worker's admission to its devices (swift_mass.obj.queues), without
WSGI: DeviceQueues waits in the caller's green thread; ObservedDevices
admits at once and counts what would have waited."""
import eventlet

from swift_mass.conf import QueueConf
from swift_mass.obj import device_queue, queues
from tests.unit.helpers import Clock, Logger


def device_queues(**conf):
    conf = QueueConf(dict({'slots_per_device': '1'}, **conf))
    logger = Logger()
    return queues.DeviceQueues(conf, logger, Clock()), logger


def test_a_request_admitted_at_once_holds_a_slot_until_released():
    mine, logger = device_queues()
    assert dict(mine) == {}
    release = mine.admit('sdb1', 'GET', 5, '5', 'AUTH_t')
    assert set(mine) == {'sdb1'}
    assert mine.stats()['sdb1']['slots_in_use'] == 1
    release()
    release()  # only the first call counts
    assert mine['sdb1'].stats()['slots_in_use'] == 0
    # admitted at once: no statsd packet
    assert (logger.counters, logger.timings) == ([], [])


def test_a_request_waiting_past_its_deadline_is_refused():
    mine, logger = device_queues(deadline='0')
    held = mine.admit('sdb1', 'GET', 5, '5', 'AUTH_t')
    assert eventlet.spawn(mine.admit, 'sdb1', 'GET', 7, '7',
                          'AUTH_t').wait() is None
    assert 'queue.refused' in logger.counters
    assert mine.stats()['sdb1']['waiting'] == 0
    held()


def test_a_waiter_is_admitted_once_the_slot_is_given_back():
    mine, logger = device_queues()
    held = mine.admit('sdb1', 'GET', 5, '5', 'AUTH_t')
    waiter = eventlet.spawn(mine.admit, 'sdb1', 'GET', 7, '7', 'AUTH_t')
    eventlet.sleep(0)
    assert mine.stats()['sdb1']['waiting'] == 1
    held()
    waiter.wait()()
    assert [name for name, _ in logger.timings] == [
        'queue.depth', 'queue.wait.7']
    assert mine.stats()['sdb1']['slots_in_use'] == 0


def test_only_a_put_tagged_batch_takes_a_batch_slot():
    mine, _ = device_queues(batch_slots='1', deadline='0')
    held = mine.admit('sdb1', 'GET', 5, '5', 'AUTH_t')
    # the general slot is taken: a GET tagged batch waits (and, with no
    # time to wait, is refused)
    assert eventlet.spawn(mine.admit, 'sdb1', 'GET', 5, '5', 'AUTH_t',
                          batch=True).wait() is None
    put = mine.admit('sdb1', 'PUT', 5, '5', 'AUTH_t', batch=True)
    assert mine.stats()['sdb1']['batch_slots_in_use'] == 1
    put()
    held()


def test_without_batch_slots_a_batch_put_waits_for_a_general_slot():
    mine, _ = device_queues(deadline='0')
    held = mine.admit('sdb1', 'PUT', 5, '5', 'AUTH_t')
    assert eventlet.spawn(mine.admit, 'sdb1', 'PUT', 5, '5', 'AUTH_t',
                          batch=True).wait() is None
    held()


def test_the_proxys_urgent_mark_isolates_and_is_seen():
    mine, _ = device_queues(slots_per_device='4')
    mine.admit('sdb1', 'GET', 5, '5', 'AUTH_u', urgent=True)()
    assert mine.stats()['sdb1']['mode'] == device_queue.ISOLATED
    assert mine.urgent_seen == {'AUTH_u'}


def test_urgent_tenants_seen_are_capped(monkeypatch):
    monkeypatch.setattr(queues, 'MAX_URGENT_SEEN', 2)
    mine, _ = device_queues(slots_per_device='4')
    for account in ('AUTH_a', 'AUTH_b', 'AUTH_c'):
        mine.admit('sdb1', 'GET', 5, '5', account, urgent=True)()
    assert mine.urgent_seen == {'AUTH_a', 'AUTH_b'}


def test_a_configured_urgent_tenant_is_the_paths_account():
    mine, _ = device_queues(slots_per_device='4', urgent_tenants='AUTH_u')
    mine.admit('sdb1', 'GET', 5, '5', 'AUTH_other')()
    assert mine.stats()['sdb1']['mode'] == device_queue.SHARED
    mine.admit('sdb1', 'GET', 5, '5', 'AUTH_u')()
    assert mine.stats()['sdb1']['mode'] == device_queue.ISOLATED
    # configured, not marked: not what the proxies marked urgent
    assert mine.urgent_seen == set()


def test_observed_counts_what_would_have_waited():
    logger = Logger()
    observed = queues.ObservedDevices(1, logger)
    first = observed.arrive('sdb1', '5')
    second = observed.arrive('sdb1', '7')
    other = observed.arrive('sdb2', '7')
    assert logger.counters == ['queue.would_wait']
    second()
    second()  # only the first call counts
    assert observed['sdb1'].in_flight == 1
    first()
    other()
    assert observed.stats() == {
        'sdb1': {'in_flight': 0, 'peak_in_flight': 2, 'arrived': 2,
                 'would_wait': 1},
        'sdb2': {'in_flight': 0, 'peak_in_flight': 1, 'arrived': 1,
                 'would_wait': 0}}
