"""swift-init reloads keep Mass in the pipeline and keep serving."""
import importlib.machinery
import os

from tests.functional.conftest import ROOT

reload_check = importlib.machinery.SourceFileLoader(
    'reload_check', os.path.join(ROOT, 'tools', 'reload-check')).load_module()


def test_reload_seamless_refuses_nothing(cluster):
    result = reload_check.measure('reload-seamless')
    assert result['mass_in_pipeline_after'] is True
    assert result['ok'] > 0
    assert result['refused'] == 0 and result['failed'] == 0, result


def test_graceful_reload_comes_back_with_mass(cluster):
    result = reload_check.measure('reload')
    assert result['mass_in_pipeline_after'] is True
    # requests sent after the reload has settled succeed again
    assert result['ok'] > 0 and result['failed'] == 0, result
