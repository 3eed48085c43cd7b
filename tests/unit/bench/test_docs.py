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
"""docs/benchmarks.md and the runs' folders under docs/benchmarks: the page
stays short (how to run, and the current results), each run keeps its
results gzipped and no plot (``tools/bench --redraw`` draws them), and
every link into them resolves."""
import glob
import os
import re

from mass_bench import results

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DOCS = os.path.join(ROOT, 'docs')
PAGE = os.path.join(DOCS, 'benchmarks.md')
RUNS = os.path.join(DOCS, 'benchmarks')
LINK = re.compile(r'\]\(([^)\s]+)\)')


def anchors(path):
    """The anchors GitHub gives the headings of the Markdown at ``path``."""
    found, fence = set(), False
    with open(path) as f:
        for line in f:
            if line.startswith('```'):
                fence = not fence
            elif not fence and re.match(r'#+ ', line):
                text = line.split(' ', 1)[1].strip().lower()
                found.add(re.sub(r'[^\w\- ]', '', text).replace(' ', '-'))
    return found


def broken_links(path):
    """The relative links of the Markdown at ``path`` whose file, folder or
    heading is not there."""
    broken = []
    with open(path) as f:
        text = f.read()
    for target in LINK.findall(text):
        if re.match(r'[a-z]+:', target):
            continue
        where, _, anchor = target.partition('#')
        full = os.path.normpath(os.path.join(os.path.dirname(path), where)) \
            if where else path
        if not os.path.exists(full) or anchor and full.endswith('.md') \
                and anchor not in anchors(full):
            broken.append(target)
    return broken


def test_the_page_holds_how_to_run_and_the_current_results():
    with open(PAGE) as f:
        text = f.read()
    assert text.count('\n') <= 400
    assert 'Plots: `tools/bench --redraw docs/benchmarks/<run>`' in text
    # what another engineer fills in later, kept where it was
    assert '### Against what an operator runs: `placed`' in text
    assert "### S3 clients' A against Swift-API A" in text


def test_links_into_the_benchmarks_resolve():
    pages = [PAGE, os.path.join(ROOT, 'README.md')] + sorted(
        glob.glob(os.path.join(DOCS, '*.md')) +
        glob.glob(os.path.join(RUNS, '**', '*.md'), recursive=True))
    assert {os.path.relpath(p, ROOT): broken_links(p) for p in pages
            if broken_links(p)} == {}


def test_every_run_readme_leads_back_to_the_page():
    readmes = glob.glob(os.path.join(RUNS, '*', 'README.md'))
    assert len(readmes) >= 20
    for readme in readmes:
        with open(readme) as f:
            title, blank, back = f.read().split('\n')[:3]
        assert title.startswith('# ') and blank == '', readme
        assert back.startswith('[Back to benchmarks.md](../../benchmarks.md)')


def test_results_are_kept_gzipped_and_readable():
    kept = glob.glob(os.path.join(RUNS, '**', 'results.json*'),
                     recursive=True)
    assert kept and all(p.endswith('.json.gz') for p in kept)
    # every tools/bench result among them can be redrawn
    for path in kept:
        if 'group-commit' not in path:  # tools/bench-group-commit's
            results.load_results(os.path.dirname(path))
    sizes = sum(os.path.getsize(p) for p in glob.glob(
        os.path.join(RUNS, '**', '*'), recursive=True)
        if os.path.isfile(p) and not p.endswith('.png'))
    assert sizes <= 5 * 1024 * 1024
