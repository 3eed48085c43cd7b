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
"""tools/bench's results files: what a run writes (``results.json``, and
``runs-so-far.json`` while it runs) holds only finite numbers, JSON having
neither NaN nor infinity; and a folder's results read back, plain or
gzipped as docs/benchmarks keeps them (``tools/bench --redraw``).  Plain
Python, in the benchmark's process."""
import gzip
import json
import math
import os


def finite(value):
    """``value`` with every NaN or infinity replaced by None (JSON has
    neither), tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


# what a run writes, and what docs/benchmarks keeps of it
RESULTS_FILES = ('results.json', 'results.json.gz')


def load_results(folder):
    """(path, result) of ``folder``'s results.json, or else of its
    results.json.gz; ValueError if it has neither or the file is not a
    tools/bench result, OSError if it cannot be read."""
    for name in RESULTS_FILES:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        opener = gzip.open if name.endswith('.gz') else open
        with opener(path, 'rt') as fp:
            result = json.load(fp)
        if not isinstance(result, dict) or not {'runs', 'modes'} <= set(
                result):
            raise ValueError('%s is not a tools/bench result (it has no '
                             'runs and modes)' % path)
        return path, result
    inside = _folders_with_results(folder)
    raise ValueError('no %s in %s%s' % (
        ' or '.join(RESULTS_FILES), folder,
        '; its folders with one, each to be redrawn: %s' % ', '.join(inside)
        if inside else ''))


def _folders_with_results(folder):
    """The names of ``folder``'s folders that hold results (a run of
    several comparisons keeps one in each)."""
    if not os.path.isdir(folder):
        return []
    return sorted(name for name in os.listdir(folder) if any(
        os.path.exists(os.path.join(folder, name, results))
        for results in RESULTS_FILES))
