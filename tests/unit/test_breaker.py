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
"""The circuit breaker in front of each of Mass's backends."""
from swift_mass.breaker import Breaker
from tests.unit.helpers import Clock


def test_breaker_opens_on_the_first_failure_and_lets_one_probe_through():
    clock, events = Clock(), []
    breaker = Breaker(30, clock, on_open=events.append,
                      on_close=lambda: events.append('closed'))
    assert breaker.allows()
    breaker.failed('timeout')
    breaker.failed('timeout again')
    assert events == ['timeout']  # once per opening
    assert not breaker.allows()
    clock.now += 30
    assert breaker.allows()       # the probe...
    assert not breaker.allows()   # ...and only the probe
    breaker.succeeded()
    assert events == ['timeout', 'closed']
    assert breaker.allows() and breaker.error is None


def test_a_failed_probe_keeps_the_breaker_open_for_another_period():
    clock = Clock()
    breaker = Breaker(30, clock)
    breaker.failed('refused')
    clock.now += 30
    assert breaker.allows()
    breaker.failed('refused')
    clock.now += 29
    assert not breaker.allows()
    clock.now += 1
    assert breaker.allows()
