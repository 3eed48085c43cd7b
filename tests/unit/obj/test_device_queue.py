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
import random

import pytest

from swift_mass.conf import QueueConf
from swift_mass.obj import device_queue as q
from tests.unit.helpers import Clock

PRIORITIES = range(10)
STEP = 0.25


class Wakes(object):
    """Records which tickets the queue woke, in order."""

    def __init__(self):
        self.woken = []

    def watch(self, ticket):
        ticket.wake = lambda: self.woken.append(ticket)
        return ticket


def make(slots=1, clock=None, deadline=3.0, events=None, **options):
    """A queue with `slots` general slots and the other [filter:mass_queue]
    options given."""
    clock = clock or Clock()
    conf = QueueConf(dict(options, slots_per_device=slots, deadline=deadline,
                          priority_slack=STEP))
    queue = q.DeviceQueue(conf, clock, on_event=None if events is None
                          else events.append)
    return queue, clock


def drain(queue, tickets):
    """Release the running tickets one by one until none waits; the order
    in which the given tickets were admitted."""
    order = []
    running = [t for t in tickets if t.state == q.ADMITTED]
    while running:
        queue.release(running.pop(0))
        for ticket in tickets:
            if ticket.state == q.ADMITTED and ticket not in order and \
                    ticket not in running:
                order.append(ticket)
                running.append(ticket)
    return order


def test_admits_while_slots_are_free_then_waits():
    queue, _ = make(slots=2)
    first, second, third = [queue.arrive(5) for _ in range(3)]
    assert [first.state, second.state, third.state] == \
        [q.ADMITTED, q.ADMITTED, q.WAITING]
    assert queue.stats()['slots_in_use'] == 2
    assert queue.waiting == 1


def test_release_wakes_the_next_waiter_once():
    queue, _ = make()
    wakes = Wakes()
    running = queue.arrive(5)
    waiter = wakes.watch(queue.arrive(5))
    assert wakes.woken == []
    queue.release(running)
    assert waiter.state == q.ADMITTED
    assert wakes.woken == [waiter]
    queue.release(running)  # a second release of the same ticket
    assert queue.stats()['slots_in_use'] == 1
    assert wakes.woken == [waiter]


@pytest.mark.parametrize('arrivals, expected', [
    # (seconds after the first, priority) -> admission order (indexes)
    ([(0, 5), (0, 9), (0, 1)], [1, 0, 2]),
    ([(0, 5), (0, 5), (0, 5)], [0, 1, 2]),        # same key: FIFO
    # priority 1 waited longer than the 8 x 0.25 s window: it goes first
    ([(0, 1), (2.1, 9)], [0, 1]),
    # ... but not a request that arrives inside the window
    ([(0, 1), (1.9, 9)], [1, 0]),
    ([(0, 0), (0.9, 4), (1.5, 9), (3.0, 9)], [2, 1, 0, 3]),
    ([(0, 0), (1.0, 4)], [0, 1]),                 # equal keys: FIFO
])
def test_admission_order(arrivals, expected):
    queue, clock = make(deadline=60)
    start = clock.now
    blocker = queue.arrive(5)
    tickets = []
    for offset, priority in arrivals:
        clock.now = start + offset
        tickets.append(queue.arrive(priority))
    order = drain(queue, [blocker] + tickets)
    assert [tickets.index(t) for t in order] == expected


@pytest.mark.parametrize('low, high, window', [
    (5, 9, 1.0), (0, 9, 2.25), (1, 2, 0.25), (5, 5, 0.0), (9, 0, -2.25)])
def test_overtake_window(low, high, window):
    assert q.overtake_window(STEP, low, high) == pytest.approx(window)


@pytest.mark.parametrize('seed', range(5))
def test_only_requests_inside_the_window_overtake(seed):
    # The starvation bound: B admitted before an earlier A only if B arrived
    # less than slack[pB] - slack[pA] seconds after A.
    rng = random.Random(seed)
    queue, clock = make(slots=2, deadline=3600)
    start = clock.now
    arrivals = []
    for _ in range(300):
        clock.now += rng.expovariate(20.0)
        arrivals.append(queue.arrive(rng.choice(PRIORITIES)))
        if rng.random() < 0.045:
            running = [t for t in arrivals if t.state == q.ADMITTED]
            queue.release(running[0])
    drain(queue, arrivals)
    admitted = sorted(arrivals, key=lambda t: (t.admitted_at, t.order))
    assert clock.now - start > 5  # long enough for the windows to matter
    overtakes = 0
    for position, early in enumerate(admitted):
        for late in admitted[position + 1:]:
            # `early` admitted first although it arrived after `late`
            if early.arrival > late.arrival and \
                    early.admitted_at > late.arrival:
                overtakes += 1
                assert early.arrival - late.arrival < q.overtake_window(
                    STEP, late.priority, early.priority)
    assert overtakes > 0


def test_low_priority_is_served_under_a_stream_of_high_priority():
    queue, clock = make(deadline=60)
    start = clock.now
    tickets = [queue.arrive(9)]
    low = queue.arrive(0)
    window = q.overtake_window(STEP, 0, 9)
    # a new priority-9 request and a completion every 0.1 s, for as long
    # as the priority-0 request waits
    while low.state == q.WAITING:
        assert clock.now - start < window + 1.0
        clock.now += 0.1
        tickets.append(queue.arrive(9))
        queue.release(next(t for t in tickets if t.state == q.ADMITTED))
    assert window - 0.1 <= low.admitted_at - start <= window + 0.1
    assert sum(t.admitted_at is not None for t in tickets) > 15


def test_waiter_past_its_deadline_is_refused_and_woken():
    queue, clock = make(deadline=3.0)
    wakes = Wakes()
    running = queue.arrive(5)
    waiter = wakes.watch(queue.arrive(5))
    assert queue.wake_at() == waiter.deadline == clock.now + 3.0
    clock.now += 2.9
    queue.poll()
    assert waiter.state == q.WAITING
    clock.now += 0.1
    queue.poll()
    assert waiter.state == q.REFUSED
    assert wakes.woken == [waiter]
    assert queue.stats()['refused'] == 1
    assert queue.waiting == 0
    # the refused waiter is never admitted afterwards
    queue.release(running)
    assert waiter.state == q.REFUSED
    assert queue.stats()['slots_in_use'] == 0


def test_past_the_refusal_budget_an_expired_waiter_is_admitted():
    events = []
    queue, clock = make(deadline=1.0, max_refusals_per_minute=2,
                        events=events)
    wakes = Wakes()
    running = queue.arrive(5)
    waiters = [wakes.watch(queue.arrive(5)) for _ in range(4)]
    clock.now += 1.0
    queue.poll()
    # two refusals, then the others are admitted over the one slot
    assert [w.state for w in waiters] == [q.REFUSED, q.REFUSED,
                                          q.ADMITTED, q.ADMITTED]
    assert wakes.woken == waiters
    stats = queue.stats()
    assert (stats['refused'], stats['admitted_past_deadline']) == (2, 2)
    assert stats['slots_in_use'] == 3
    assert events == [q.EVENT_PAST_DEADLINE] * 2
    # over the slot count, nobody new gets in until the slots are back
    late = queue.arrive(5)
    assert late.state == q.WAITING
    for ticket in [running] + waiters[2:]:
        queue.release(ticket)
    assert late.state == q.ADMITTED
    assert queue.stats()['slots_in_use'] == 1
    queue.release(late)


def test_the_refusal_budget_is_per_minute():
    queue, clock = make(deadline=1.0, max_refusals_per_minute=1)
    running = queue.arrive(5)
    first = queue.arrive(5)
    clock.now += 1.0
    queue.poll()
    second = queue.arrive(5)
    clock.now += 1.0
    queue.poll()
    assert (first.state, second.state) == (q.REFUSED, q.ADMITTED)
    assert queue.stats()['refusals_left'] == 0
    queue.release(second)
    clock.now += q.REFUSAL_WINDOW - 1.0
    # the budget is back a minute after the refusal that spent it
    assert queue.stats()['refusals_left'] == 1
    third = queue.arrive(5)
    clock.now += 1.0
    queue.poll()
    assert third.state == q.REFUSED
    queue.release(running)


def test_a_zero_refusal_budget_never_refuses():
    queue, clock = make(deadline=0.0, max_refusals_per_minute=0)
    running = queue.arrive(5)
    waiter = queue.arrive(5)
    queue.poll()
    assert waiter.state == q.ADMITTED
    assert queue.stats()['refused'] == 0
    queue.release(running)
    queue.release(waiter)


def test_expired_waiter_is_refused_before_a_release_could_admit_it():
    queue, clock = make(deadline=1.0)
    running = queue.arrive(5)
    late = queue.arrive(9)
    clock.now += 0.5
    fresh = queue.arrive(0)
    clock.now += 0.6
    queue.release(running)
    assert (late.state, fresh.state) == (q.REFUSED, q.ADMITTED)


def test_per_request_deadline():
    queue, clock = make(deadline=3.0)
    queue.arrive(5)
    waiter = queue.arrive(5, deadline=0.5)
    clock.now += 0.5
    queue.poll()
    assert waiter.state == q.REFUSED


def test_withdrawn_waiter_is_not_admitted_nor_refused():
    queue, _ = make()
    wakes = Wakes()
    running = queue.arrive(5)
    waiter = wakes.watch(queue.arrive(9))
    queue.release(waiter)
    assert waiter.state == q.CANCELLED
    assert queue.waiting == 0
    queue.release(running)
    assert wakes.woken == []
    stats = queue.stats()
    assert (stats['refused'], stats['admitted'], stats['slots_in_use']) == \
        (0, 1, 0)


def test_wake_at_is_none_without_waiters():
    queue, _ = make(slots=2)
    queue.arrive(5)
    assert queue.wake_at() is None


@pytest.mark.parametrize('slots, share, reserved', [
    (4, 0.5, 2), (3, 0.5, 2), (8, 0.3, 3), (4, 1.0, 3), (1, 0.5, 0),
    (4, 0.0, 0)])
def test_reserved_slots(slots, share, reserved):
    queue, _ = make(slots=slots, urgent_tenants='AUTH_u',
                    urgent_share=share)
    assert queue.reserved_slots() == reserved


def test_nothing_is_reserved_without_urgent_tenants():
    queue, _ = make(slots=4, urgent_share=0.5)
    assert [queue.arrive(5, 'AUTH_u').state for _ in range(4)] == \
        [q.ADMITTED] * 4
    assert queue.mode == q.SHARED
    assert queue.stats()['reserved_slots'] == 0


def test_a_request_marked_urgent_reserves_like_a_configured_tenant():
    queue, _ = make(slots=4, deadline=600, urgent_share=0.5)
    urgent = queue.arrive(5, 'AUTH_marked', urgent=True)
    assert urgent.state == q.ADMITTED and urgent.urgent
    assert queue.mode == q.ISOLATED
    # 2 of the 4 slots are kept: other tenants get the other 2
    normals = [queue.arrive(5, 'AUTH_n') for _ in range(3)]
    assert [t.state for t in normals] == [q.ADMITTED, q.ADMITTED, q.WAITING]
    # the same tenant without the mark is a normal tenant
    assert queue.arrive(5, 'AUTH_marked').state == q.WAITING
    assert queue.arrive(5, 'AUTH_marked', urgent=True).state == q.ADMITTED


def urgent_queue(events=None, **kwargs):
    return make(slots=4, deadline=600, urgent_tenants='AUTH_u',
                urgent_share=0.5, urgent_idle_seconds=30.0, events=events,
                **kwargs)


def test_shared_mode_lends_every_slot_to_normal_tenants():
    queue, _ = urgent_queue()
    normals = [queue.arrive(5, 'AUTH_n') for _ in range(4)]
    assert [t.state for t in normals] == [q.ADMITTED] * 4
    assert queue.stats()['mode'] == q.SHARED
    assert queue.stats()['reserved_slots'] == 0


def test_isolated_mode_keeps_reserved_slots_for_urgent_tenants():
    events = []
    queue, _ = urgent_queue(events)
    urgent = queue.arrive(5, 'AUTH_u')
    assert (queue.mode, events) == (q.ISOLATED, [q.EVENT_ISOLATED])
    normals = [queue.arrive(9, 'AUTH_n') for _ in range(3)]
    # 4 slots, 2 reserved: the normal tenant gets 2, the third waits
    assert [t.state for t in normals] == [q.ADMITTED, q.ADMITTED, q.WAITING]
    # an urgent request of lower priority goes past it into a reserved slot
    second = queue.arrive(0, 'AUTH_u')
    assert second.state == q.ADMITTED
    assert queue.stats()['reserved_slots'] == 2
    # and a slot an urgent tenant gives back stays reserved
    queue.release(urgent)
    assert normals[2].state == q.WAITING
    queue.release(normals[0])
    assert normals[2].state == q.ADMITTED


def test_urgent_tenants_compete_with_normal_ones_for_unreserved_slots():
    queue, _ = urgent_queue()
    held = [queue.arrive(5, 'AUTH_u') for _ in range(4)]
    normal = queue.arrive(9, 'AUTH_n')
    urgent = queue.arrive(1, 'AUTH_u')
    queue.release(held[0])
    # the normal tenant may use this slot (it holds none) and has the
    # smaller key, so it goes first despite the isolation
    assert (normal.state, urgent.state) == (q.ADMITTED, q.WAITING)


def test_reservation_is_lent_after_urgent_idle_seconds():
    events = []
    # strict isolation: with lending, the slot the urgent request gives
    # back would go to the waiting request before the mode changes
    queue, clock = urgent_queue(events, lend_reserved_slots='false')
    wakes = Wakes()
    urgent = queue.arrive(5, 'AUTH_u')
    normals = [wakes.watch(queue.arrive(5, 'AUTH_n')) for _ in range(3)]
    assert normals[2].state == q.WAITING
    clock.now += 100  # an urgent request still running: stays isolated
    queue.poll()
    assert queue.mode == q.ISOLATED
    queue.release(urgent)
    released_at = clock.now
    assert queue.wake_at() == released_at + 30.0
    clock.now = released_at + 29.9
    queue.poll()
    assert (queue.mode, normals[2].state) == (q.ISOLATED, q.WAITING)
    clock.now = released_at + 30.0
    queue.poll()
    assert queue.mode == q.SHARED
    assert normals[2].state == q.ADMITTED
    assert wakes.woken == [normals[2]]
    assert events == [q.EVENT_ISOLATED, q.EVENT_SHARED]


def lending_queue(**options):
    """8 slots, 4 of them reserved while AUTH_u is active."""
    return make(slots=8, deadline=600, urgent_tenants='AUTH_u',
                urgent_share=0.5, **options)


def test_strict_isolation_keeps_reserved_slots_idle():
    queue, _ = lending_queue(lend_reserved_slots='false')
    queue.arrive(5, 'AUTH_u')
    normals = [queue.arrive(5, 'AUTH_n') for _ in range(7)]
    assert [t.state for t in normals] == [q.ADMITTED] * 4 + [q.WAITING] * 3
    assert queue.stats()['slots_in_use'] == 5


def test_reserved_slots_an_urgent_tenant_leaves_idle_are_lent_but_one():
    """The device-bound bench's case: an urgent tenant with one request at
    a time beside a writer that keeps every slot it may use busy."""
    queue, _ = lending_queue()
    assert queue.conf.lend_reserved_slots  # the default
    urgent = queue.arrive(5, 'AUTH_u')
    normals = [queue.arrive(5, 'AUTH_n') for _ in range(8)]
    # 4 unreserved, and 2 of the 3 reserved slots the urgent one leaves
    assert [t.state for t in normals] == [q.ADMITTED] * 6 + [q.WAITING] * 2
    assert (queue.mode, queue.stats()['slots_in_use']) == (q.ISOLATED, 7)
    # the slot kept free: the next urgent request starts at once
    second = queue.arrive(5, 'AUTH_u')
    assert second.state == q.ADMITTED
    # a slot given back is the free one again
    queue.release(urgent)
    assert [t.state for t in normals[6:]] == [q.WAITING] * 2
    queue.release(second)
    assert [t.state for t in normals[6:]] == [q.ADMITTED, q.WAITING]
    assert queue.stats()['slots_in_use'] == 7


def test_no_slot_is_lent_while_an_urgent_request_waits():
    queue, _ = lending_queue()
    wakes = Wakes()
    urgents = [queue.arrive(5, 'AUTH_u') for _ in range(2)]
    normals = [wakes.watch(queue.arrive(9, 'AUTH_n')) for _ in range(8)]
    assert [t.state for t in normals] == [q.ADMITTED] * 5 + [q.WAITING] * 3
    # the free slot to the next urgent request; then every slot is in use
    # and one of the lowest priority waits
    urgents.append(queue.arrive(5, 'AUTH_u'))
    fourth = wakes.watch(queue.arrive(0, 'AUTH_u'))
    assert (urgents[2].state, fourth.state) == (q.ADMITTED, q.WAITING)
    # a borrowed slot comes back: to the urgent request, not to the
    # normal requests that arrived before it with a higher priority
    queue.release(normals[0])
    assert fourth.state == q.ADMITTED
    assert [t.state for t in normals[5:]] == [q.WAITING] * 3
    # 3 normal requests run: the next one is within the normal share
    queue.release(normals[1])
    assert [t.state for t in normals[5:]] == [q.ADMITTED] + [q.WAITING] * 2
    assert queue.stats()['slots_in_use'] == 8
    assert wakes.woken == [fourth, normals[5]]
    # the urgent requests end: their slots are lent, all but one
    for urgent in urgents + [fourth]:
        queue.release(urgent)
    assert [t.state for t in normals[6:]] == [q.ADMITTED] * 2
    assert queue.stats()['slots_in_use'] == 6


def test_stats_report_the_mode_the_clock_has_reached():
    queue, clock = urgent_queue()
    queue.release(queue.arrive(5, 'AUTH_u'))
    assert queue.stats()['mode'] == q.ISOLATED
    clock.now += 30
    assert queue.stats()['mode'] == q.SHARED


def test_an_urgent_arrival_restarts_the_idle_period():
    queue, clock = urgent_queue()
    queue.release(queue.arrive(5, 'AUTH_u'))
    clock.now += 20
    queue.release(queue.arrive(5, 'AUTH_u'))
    clock.now += 20
    queue.poll()
    assert queue.mode == q.ISOLATED
    clock.now += 10
    queue.poll()
    assert queue.mode == q.SHARED


def test_a_waiting_urgent_request_keeps_the_queue_isolated():
    queue, clock = urgent_queue()
    normals = [queue.arrive(5, 'AUTH_n') for _ in range(4)]
    urgent = queue.arrive(5, 'AUTH_u')
    assert (queue.mode, urgent.state) == (q.ISOLATED, q.WAITING)
    clock.now += 31
    queue.poll()
    assert queue.mode == q.ISOLATED
    queue.release(normals[0])
    assert urgent.state == q.ADMITTED
    clock.now += 31
    queue.poll()
    assert queue.mode == q.ISOLATED  # and while it runs


def adaptive_queue(events, slots=2, bounds=(1, 8), batch_bounds=(0, 0),
                   **kwargs):
    return make(slots=slots, deadline=600, events=events,
                adaptive_slots=True, adaptive_interval=10.0,
                adaptive_low=0.3, adaptive_high=0.9,
                adaptive_min_slots=bounds[0], adaptive_max_slots=bounds[1],
                adaptive_min_batch_slots=batch_bounds[0],
                adaptive_max_batch_slots=batch_bounds[1], **kwargs)


def test_adaptive_slots_double_when_busy_with_waiters():
    events = []
    queue, clock = adaptive_queue(events)
    wakes = Wakes()
    [queue.arrive(5) for _ in range(2)]
    waiters = [wakes.watch(queue.arrive(5)) for _ in range(3)]
    assert queue.wake_at() == clock.now + 10.0
    clock.now += 10.0
    queue.poll()
    assert queue.general.capacity == 4
    assert [t.state for t in waiters] == [q.ADMITTED, q.ADMITTED, q.WAITING]
    assert wakes.woken == waiters[:2]
    clock.now += 10.0
    queue.poll()
    assert queue.general.capacity == 8
    assert waiters[2].state == q.ADMITTED
    assert events == [q.EVENT_GROW, q.EVENT_GROW]


def test_adaptive_slots_stay_within_the_high_bound():
    events = []
    queue, clock = adaptive_queue(events, bounds=(1, 3))
    [queue.arrive(5) for _ in range(10)]
    for _ in range(3):
        clock.now += 10.0
        queue.poll()
    assert queue.general.capacity == 3
    assert events == [q.EVENT_GROW]


def test_busy_slots_without_waiters_do_not_grow():
    events = []
    queue, clock = adaptive_queue(events)
    [queue.arrive(5) for _ in range(2)]
    clock.now += 10.0
    queue.poll()
    assert queue.general.capacity == 2
    assert events == []


def test_adaptive_slots_shrink_one_at_a_time_when_idle():
    events = []
    queue, clock = adaptive_queue(events, slots=4)
    for expected in (3, 2, 1, 1):
        clock.now += 10.0
        queue.poll()
        assert queue.general.capacity == expected
    assert events == [q.EVENT_SHRINK] * 3


def test_half_used_slots_keep_their_count():
    events = []
    queue, clock = adaptive_queue(events, slots=4)
    [queue.arrive(5) for _ in range(2)]
    clock.now += 10.0
    queue.poll()
    assert queue.general.capacity == 4
    assert queue.general.utilisation(clock.now) == 0.0  # a fresh period


def test_utilisation_is_time_averaged():
    clock = Clock()
    pool = q.SlotPool('slots', 4, 1, 8, clock.now)
    pool.take(clock.now)
    clock.now += 5
    pool.take(clock.now)
    clock.now += 5
    # 1 slot for 5 s then 2 for 5 s, of 4 slots over 10 s
    assert pool.utilisation(clock.now) == pytest.approx(15.0 / 40.0)


def test_adaptive_batch_slots_follow_their_own_use():
    events = []
    queue, clock = adaptive_queue(events, slots=2, batch_slots=1,
                                  batch_bounds=(1, 4))
    [queue.arrive(5, batch=True) for _ in range(3)]
    waiter = queue.arrive(5, batch=True)
    clock.now += 10.0
    queue.poll()
    assert (queue.batch.capacity, queue.general.capacity) == (2, 4)
    assert waiter.state == q.ADMITTED


def test_a_batch_pool_shrunk_to_nothing_grows_back_when_needed():
    events = []
    queue, clock = adaptive_queue(events, slots=1, batch_slots=1,
                                  batch_bounds=(0, 4))
    clock.now += 10.0
    queue.poll()
    assert queue.batch.capacity == 0
    queue.arrive(5)
    waiter = queue.arrive(5, batch=True)
    clock.now += 10.0
    queue.poll()
    assert queue.batch.capacity == 1
    assert (waiter.state, waiter.pool) == (q.ADMITTED, queue.batch)


def test_batch_tickets_use_batch_slots_first():
    queue, _ = make(slots=1, batch_slots=2)
    writes = [queue.arrive(5, batch=True) for _ in range(3)]
    assert [t.state for t in writes] == [q.ADMITTED] * 3
    assert [t.pool for t in writes] == [queue.batch, queue.batch,
                                        queue.general]
    read = queue.arrive(9)
    assert read.state == q.WAITING
    fourth = queue.arrive(5, batch=True)
    assert fourth.state == q.WAITING
    queue.release(writes[0])  # a batch slot: only a batch ticket fits
    assert (fourth.state, read.state) == (q.ADMITTED, q.WAITING)
    queue.release(writes[2])  # the general slot: priority 9 first
    assert read.state == q.ADMITTED


def test_other_requests_never_use_batch_slots():
    queue, _ = make(slots=1, batch_slots=4)
    first, second = queue.arrive(5), queue.arrive(5)
    assert (first.state, second.state) == (q.ADMITTED, q.WAITING)
    assert queue.stats()['batch_slots_in_use'] == 0


def test_stats_count_admissions_waits_and_refusals():
    queue, clock = make(slots=1, deadline=2.0)
    first = queue.arrive(7)
    second = queue.arrive(3)
    third = queue.arrive(3)
    assert queue.stats()['waiting_by_priority'] == {3: 2}
    clock.now += 1.5
    queue.release(first)
    clock.now += 1.0
    queue.poll()
    assert (second.state, third.state) == (q.ADMITTED, q.REFUSED)
    assert second.waited == pytest.approx(1.5)
    stats = queue.stats()
    assert stats == {
        'mode': q.SHARED, 'slots': 1, 'slots_in_use': 1, 'batch_slots': 0,
        'batch_slots_in_use': 0, 'reserved_slots': 0, 'waiting': 0,
        'waiting_by_priority': {}, 'admitted': 2,
        'admitted_after_wait': 1, 'refused': 1,
        # of the default budget of 5 a minute, one spent
        'refusals_left': 4, 'admitted_past_deadline': 0,
        'admitted_by_priority': {7: 1, 3: 1},
        'wait_seconds_by_priority': {7: 0.0, 3: pytest.approx(1.5)},
    }


def test_a_queue_needs_a_slot():
    # slots_per_device = 0 turns the queue off: no device queue then
    with pytest.raises(ValueError):
        make(slots=0)


def test_a_pool_outside_its_bounds_is_refused():
    with pytest.raises(ValueError):
        q.SlotPool('slots', 2, 3, 8, 0.0)


def test_requests_admitted_at_once_leave_nothing_queued_behind():
    # the common path must not grow the heaps (memory, and their cost)
    queue, clock = make(slots=2)
    for _ in range(1000):
        clock.now += 0.001
        queue.release(queue.arrive(5))
    assert (queue._deadlines, queue._lanes) == ([], {})
    assert queue.stats()['admitted'] == 1000
