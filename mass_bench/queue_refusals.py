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
"""The requests the object servers' ``mass_queue`` refused (503: waited
past its deadline), for the benchmark's snapshots (mass_bench.resources'
Sampler): each device's queue counts them (``refused``) in each
object-server worker, which writes them to its server's recon cache
(``mass_queue.recon``) and answers them with every worker's to ``GET
/mass_queue``; ``swift-mass queue --json`` asks every object server of
the rings and sums them (``totals``).  Statsd's ``queue.refused`` is not
kept anywhere the bench can read.

A count starts again when its server restarts (a mode switch with
``tools/saio pipeline`` or ``queue`` restarts them, so a run's two
snapshots see the same processes); a worker other than the one that
answers is counted as of its last report, at most ``stats_interval`` old
(the SAIO runs one per port).  Runs in the benchmark's process.
"""
import os
import sys

from mass_bench.resources import json_output

# the checkout, whose swift_mass the bench runs (tools/bench puts it first
# on its sys.path): the command's is that one too
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# seconds swift-mass queue waits for each object server
SERVER_TIMEOUT = 5


def refused_of(report):
    """The refusals in ``swift-mass queue --json``'s ``report``, summed
    over every object server; None unless every server was read (one
    missing from a snapshot would make refusals up, or hide them)."""
    totals = report.get('totals') if isinstance(report, dict) else None
    if not isinstance(totals, dict) or not totals.get('servers') or \
            totals.get('servers_read') != totals['servers'] or \
            not isinstance(totals.get('refused'), int):
        return None
    return totals['refused']


def refused_so_far(swift_dir, timeout=30, command=None):
    """The requests the ``mass_queue`` of every object server in
    ``swift_dir``'s object rings refused since it started
    (:func:`refused_of`); None when any could not be read.  ``command``:
    what runs swift-mass (by default this Python, with the checkout's
    swift_mass first)."""
    # a process, not an import: the benchmark does not import the
    # command (tests/unit/test_layout.py)
    command = command or [sys.executable, '-m', 'swift_mass.cli']
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (CHECKOUT, os.environ.get('PYTHONPATH')) if p))
    return refused_of(json_output(command + [
        'queue', '--json', '--swift-dir', swift_dir,
        '--timeout', str(SERVER_TIMEOUT)], timeout, env))
