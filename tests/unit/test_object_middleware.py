import pytest

from swift.common.swob import Request

from swift_mass.config import ConfigError
from swift_mass.middleware import object as object_mw
from tests.unit.helpers import RecordingApp


class CountingLogger(object):
    """Captures what would go to statsd."""

    def __init__(self):
        self.counts = {}

    def increment(self, metric):
        self.counts[metric] = self.counts.get(metric, 0) + 1


def make(conf=None):
    app = RecordingApp()
    logger = CountingLogger()
    mw = object_mw.MassQueueMiddleware(app, conf or {}, logger=logger)
    return mw, app, logger


def call(mw, method='GET', headers=None, path='/sdb1/123/AUTH_test/c/o'):
    req = Request.blank(path, method=method, headers=headers or {})
    return req.get_response(mw)


@pytest.mark.parametrize('header, priority', [
    (None, 5), ('7', 7), ('0', 0), ('9', 9),
    ('10', 5), ('-3', 5), ('urgent', 5), ('', 5),
])
def test_priority_from_header(header, priority):
    mw, app, logger = make()
    headers = {} if header is None else {'X-Backend-Mass-Priority': header}
    assert call(mw, headers=headers).status_int == 200
    assert app.environs[0]['mass.priority'] == priority
    assert logger.counts == {'priority.%d' % priority: 1}


def test_default_priority_is_configurable():
    mw, app, _ = make({'default_priority': '2'})
    call(mw)
    assert app.environs[0]['mass.priority'] == 2


@pytest.mark.parametrize('method, headers', [
    ('REPLICATE', {}),
    ('SSYNC', {}),
    ('PUT', {'X-Backend-Replication': 'True'}),
    ('DELETE', {'X-Backend-Replication': 'true'}),
])
def test_replication_is_background(method, headers):
    mw, app, logger = make({'background_priority': '0'})
    headers = dict(headers, **{'X-Backend-Mass-Priority': '9'})
    call(mw, method=method, headers=headers)
    assert app.environs[0]['mass.priority'] == 0
    assert logger.counts == {'priority.background': 1}


def test_tenant_is_unquoted():
    mw, app, _ = make()
    call(mw, headers={'X-Backend-Mass-Tenant': 'AUTH_%C3%A9%0Ax'})
    assert app.environs[0]['mass.tenant'] == 'AUTH_\xc3\xa9\nx'


def test_no_tenant_header():
    mw, app, _ = make()
    call(mw)
    assert 'mass.tenant' not in app.environs[0]


@pytest.mark.parametrize('option', ['default_priority', 'background_priority'])
def test_bad_options_stop_startup(option):
    with pytest.raises(ConfigError) as err:
        object_mw.filter_factory({}, **{option: 'x'})(RecordingApp())
    assert option in str(err.value)
    assert '[filter:mass_queue]' in str(err.value)


@pytest.mark.parametrize('value, cls', [
    ('read', 'read'), ('write', 'write'), ('mixed', 'mixed'),
    ('bogus', None), ('', None), (None, None)])
def test_class_tag(value, cls):
    mw, app, logger = make()
    headers = {} if value is None else {'X-Backend-Mass-Class': value}
    call(mw, headers=headers)
    assert app.environs[0].get('mass.class') == cls
    if cls:
        assert logger.counts['class.' + cls] == 1
    else:
        assert not [m for m in logger.counts if m.startswith('class.')]
