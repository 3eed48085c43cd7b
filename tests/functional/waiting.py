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
"""Waiting on a condition instead of for a fixed time: a fixed sleep is too
short on a loaded machine and too long on an idle one."""
import time

import pytest


def until(condition, timeout, what, interval=0.2):
    """``condition()``'s first truthy value, tried every ``interval``
    seconds; the test fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.time() > deadline:
            pytest.fail('%s: not within %s s' % (what, timeout))
        time.sleep(interval)
