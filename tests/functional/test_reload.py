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
"""swift-init reloads keep Mass in the pipeline and keep serving."""
import importlib.machinery
import importlib.util
import os

from tests.functional.conftest import ROOT

_loader = importlib.machinery.SourceFileLoader(
    'reload_check', os.path.join(ROOT, 'tools', 'reload-check'))
reload_check = importlib.util.module_from_spec(
    importlib.util.spec_from_loader('reload_check', _loader))
_loader.exec_module(reload_check)


def test_reload_seamless_refuses_nothing(cluster):
    result = reload_check.measure('reload-seamless')
    assert result['mass_in_pipeline_after'] is True
    assert result['ok'] > 0
    assert result['refused'] == 0 and result['failed'] == 0, result
    # at most each client's idle keep-alive connection to the old worker
    assert result['dropped'] <= 4, result


def test_graceful_reload_comes_back_with_mass(cluster):
    result = reload_check.measure('reload')
    assert result['mass_in_pipeline_after'] is True
    # requests sent after the reload has settled succeed again
    assert result['ok'] > 0 and result['failed'] == 0, result
