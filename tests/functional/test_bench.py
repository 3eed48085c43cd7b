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
"""tools/bench end to end on the SAIO, on a tiny workload: it runs
every mode, leaves the cluster as it found it, and writes well-formed
results and plots.  How fast anything is, is not a test's business."""
import json
import os
import subprocess

from tests.functional.conftest import ROOT, saio

TENANTS = ['photos:web:web=A,objects=4,warmup=0.5,size=64k',
           'backup:job:job=C,warmup=0.5']


def run_bench(tenants, out, options, timeout=300):
    """``tools/bench`` as an operator runs it, with results in ``out``:
    its output and its results.json."""
    cmd = [os.path.join(ROOT, 'tools', 'bench'), '--out', str(out)] + \
        list(options)
    for tenant in tenants:
        cmd += ['--tenant', tenant]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout
    with open(os.path.join(str(out), 'results.json')) as fp:
        # NaN and Infinity are no JSON: refuse them
        return proc.stdout, json.load(fp, parse_constant=_refuse)


def _refuse(name):
    raise AssertionError('results.json holds %s' % name)


def test_bench_runs_every_mode_and_writes_results(cluster, store, tmp_path):
    before = store.get_pins()
    stdout, result = run_bench(TENANTS, tmp_path,
                               ['--cycles', '1', '--seconds', '2',
                                '--settle', '1'])
    assert result['modes'] == ['default', 'static', 'mass']
    # one cycle: each mode once, and default a second time (A/A control)
    assert [(r['mode'], r['control']) for r in result['runs']] == [
        ('default', False), ('default', True), ('static', False),
        ('mass', False)]
    for run in result['runs']:
        assert set(run['tenants']) == {'photos', 'backup'}
        for figures in run['tenants'].values():
            assert figures['operations'] > 0
            assert figures['errors'] == 0, figures['statuses']
            assert len(figures['timeline']['ops']) == 2
        # where the time went: the CPU always, devices on hetero only
        assert run['resources']['cpu']['busy_pct'] >= 0
    photos = result['runs'][0]['tenants']['photos']
    assert set(photos['by_operation']) == {'GET'}
    assert result['runs'][0]['tenants']['backup']['by_operation'].keys() \
        == {'PUT'}
    assert result['tenants']['photos']['workload']['intended_class'] == \
        'read'
    summary = result['summary']['photos']
    assert set(summary) == {'default', 'static', 'mass', 'control'}
    assert summary['mass']['throughput_ratio']['cycles']
    # the table and the plots
    assert 'ops/s vs default' in stdout
    assert 'hit %' in stdout and 'where the time went' in stdout
    assert 0 <= summary['mass']['hit_ratio'] <= 1
    for name in ('throughput.png', 'latency.png'):
        with open(os.path.join(str(tmp_path), name), 'rb') as fp:
            assert fp.read(8) == b'\x89PNG\r\n\x1a\n'
    # as found: Mass in the pipelines again, no pins left behind
    assert store.get_pins() == before
    assert 'with mass' in saio('status').stdout
