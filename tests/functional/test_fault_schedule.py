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
"""A few seeded fault schedules (tests/functional/schedule.py) against the
SAIO: every schedule and its counts printed, and none may serve a stale or
wrong read or lose an acknowledged write.  The same seeds, and many more,
run from ``tools/fault-schedule`` (the soak: docs/testing.md).  In the
faults step of tools/test (``-m faults``)."""
import os

import pytest

from tests.functional import schedule
from tests.functional.test_cache import admin  # noqa: F401 (fixtures)
from tests.functional.test_cache import generations_trusted

pytestmark = pytest.mark.faults

# CI's schedules; MASS_SCHEDULE_SEEDS=1,2,... runs others (a replay)
SEEDS = [int(seed) for seed in os.environ.get(
    'MASS_SCHEDULE_SEEDS', '1,2,3,4').split(',')]


def test_seeded_fault_schedules_serve_nothing_stale_and_lose_nothing(
        admin, store):  # noqa: F811
    generations_trusted(store)
    tenants = schedule.Tenants(admin)
    results = []
    try:
        for seed in SEEDS:
            result = schedule.run_schedule(tenants, seed)
            print(schedule.line(result))
            if result.report:
                print(result.report)
            results.append(result)
    finally:
        tenants.remove(store)
    summary, sums = schedule.totals(results)
    print(summary)
    assert sums['stale'] == sums['wrong'] == sums['lost'] == 0
    assert sums['hits'] > 0
    assert sums['lagging'] > 0, 'no read reached a lagging replica'
