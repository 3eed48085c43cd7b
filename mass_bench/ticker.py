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
"""The clock a control-loop Agent's ticks are due by, in the benchmark's
hands: ``tools/bench-scale`` and ``tools/bench-overhead`` run the real
Agent (swift_mass.control.agent) in this process and say themselves when
an interval has passed, through the Agent's ``ticker`` (what it is built
with, and a public attribute), not by reaching into the Agent."""


class Ticker(object):
    """An Agent's ticker (``Agent(ticker=...)``, ``agent.ticker``) that
    only the benchmark moves: a tick is due once :meth:`step` has passed
    an interval since the agent's last one, whatever time went by.

    ``interval``: at least the agents' own.  ``held``: no tick is due
    until the first step, not even an agent's first (a MassMiddleware
    whose control loop, started by its first request, must not tick on
    its own); otherwise an agent's first tick is due, as with a real
    clock."""

    def __init__(self, interval, held=False):
        self.interval = float(interval)
        self.now = -self.interval if held else 0.0

    def __call__(self):
        return self.now

    def step(self):
        """An interval passes: every agent on this ticker has a tick
        due."""
        self.now += self.interval
