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
