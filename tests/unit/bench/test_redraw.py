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
"""``tools/bench --redraw DIR``: a run's plots drawn again from the
results it wrote (docs/benchmarks keeps them as results.json.gz and not
the plots), without a cluster."""
import gzip
import json
import os
import subprocess
import sys

import pytest

from mass_bench import bench, results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PNG = b'\x89PNG\r\n\x1a\n'


def smallest_result():
    """The least a result needs for its plots: one tenant, one mode, one
    run of two seconds."""
    figures = {'ops_per_s': 10.0, 'mean_ms': 5.0, 'p99_ms': 9.0,
               'timeline': {'ops': [10, 10]}}
    return {'modes': ['default'], 'staged': None,
            'tenants': {'photos': {'workload': {'name': 'A'}}},
            'runs': [{'mode': 'default', 'control': False, 'cycle': 0,
                      'tenants': {'photos': figures}}],
            'summary': {'photos': {'default': dict(figures)}}}


def write(folder, name, result):
    opener = gzip.open if name.endswith('.gz') else open
    with opener(os.path.join(str(folder), name), 'wt') as fp:
        json.dump(result, fp)


def pngs(folder):
    found = {}
    for name in sorted(os.listdir(str(folder))):
        if name.endswith('.png'):
            with open(os.path.join(str(folder), name), 'rb') as fp:
                found[name] = fp.read(8) == PNG
    return found


@pytest.mark.parametrize('name', ['results.json', 'results.json.gz'])
def test_redraw_draws_the_plots_from_the_results(name, tmp_path, capsys):
    write(tmp_path, name, smallest_result())
    assert bench.main(['--redraw', str(tmp_path)]) == 0
    expected = {'throughput.png': True, 'latency.png': True,
                'timeline-default.png': True}
    assert pngs(tmp_path) == expected
    assert capsys.readouterr().out.splitlines() == [
        'plot: %s' % (tmp_path / png) for png in (
            'throughput.png', 'latency.png', 'timeline-default.png')]


def test_results_json_is_read_before_the_gzipped_copy(tmp_path):
    write(tmp_path, 'results.json', smallest_result())
    write(tmp_path, 'results.json.gz', {'not': 'read'})
    path, result = results.load_results(str(tmp_path))
    assert path == str(tmp_path / 'results.json')
    assert result == smallest_result()


def test_redraw_without_results_fails_and_says_why(tmp_path, capsys):
    assert bench.main(['--redraw', str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        'tools/bench: --redraw: no results.json or results.json.gz in '
        '%s\n' % tmp_path)
    # a run of several comparisons keeps a result in each of its folders
    for sub in ('b', 'a'):
        (tmp_path / sub).mkdir()
        write(tmp_path / sub, 'results.json.gz', smallest_result())
    assert bench.main(['--redraw', str(tmp_path)]) == 2
    assert capsys.readouterr().err.endswith(
        '; its folders with one, each to be redrawn: a, b\n')
    assert pngs(tmp_path) == {}


def test_redraw_of_what_is_not_a_bench_result_fails(tmp_path, capsys):
    # e.g. tools/bench-group-commit's, which has no plots
    write(tmp_path, 'results.json.gz', {'args': {}, 'compared': {}})
    assert bench.main(['--redraw', str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        'tools/bench: --redraw: %s is not a tools/bench result (it has no '
        'runs and modes)\n' % (tmp_path / 'results.json.gz'))
    (tmp_path / 'results.json.gz').write_bytes(b'not gzip')
    assert bench.main(['--redraw', str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith('tools/bench: --redraw: ')


def test_redraw_without_matplotlib_fails_and_says_why(tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    write(tmp_path, 'results.json.gz', smallest_result())
    assert bench.main(['--redraw', str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        'tools/bench: --redraw: matplotlib is not installed (pip install '
        'matplotlib)\n')
    assert pngs(tmp_path) == {}


def test_redraw_fails_when_no_plot_could_be_drawn(tmp_path, capsys):
    result = smallest_result()
    del result['summary']
    write(tmp_path, 'results.json', result)
    assert bench.main(['--redraw', str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "plots: not drawn: KeyError: 'summary'\n"
    assert err == 'tools/bench: --redraw: no plot drawn from %s\n' % (
        tmp_path / 'results.json')


def test_tools_bench_redraws_from_anywhere(tmp_path):
    # the command the docs give: tools/bench --redraw docs/benchmarks/RUN
    run = tmp_path / 'run'
    run.mkdir()
    write(run, 'results.json.gz', smallest_result())
    proc = subprocess.run(
        [os.path.join(ROOT, 'tools', 'bench'), '--redraw', 'run'],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONPATH=''))
    assert (proc.returncode, proc.stderr) == (0, '')
    assert sorted(pngs(run)) == ['latency.png', 'throughput.png',
                                 'timeline-default.png']
