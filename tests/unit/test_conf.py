import pytest

from swift_mass.conf import ConfigError, bool_option, choice_option, \
    float_option, int_option


def test_int_option():
    assert int_option({}, 's', 'n', 5, 0, 9) == 5
    assert int_option({'n': ' 7 '}, 's', 'n', 5, 0, 9) == 7
    for bad in ('x', '10', '-1', '1.5'):
        with pytest.raises(ConfigError) as err:
            int_option({'n': bad}, 's', 'n', 5, 0, 9)
        assert str(err.value) == "[s] n = %r is not valid; allowed: an " \
            "integer from 0 to 9" % bad
    with pytest.raises(ConfigError) as err:
        int_option({'n': '0'}, 's', 'n', 5, 1)
    assert 'an integer >= 1' in str(err.value)


def test_float_option():
    assert float_option({'f': '0.25'}, 's', 'f', 0.5, 0.0, 1.0) == 0.25
    for bad in ('x', '1.5', '-0.1', 'nan'):
        with pytest.raises(ConfigError) as err:
            float_option({'f': bad}, 's', 'f', 0.5, 0.0, 1.0)
        assert 'allowed: a number from 0 to 1' in str(err.value)


def test_bool_option():
    assert bool_option({}, 's', 'b', True) is True
    assert bool_option({'b': 'No'}, 's', 'b', True) is False
    assert bool_option({'b': 'on'}, 's', 'b', False) is True
    with pytest.raises(ConfigError) as err:
        bool_option({'b': 'ture'}, 's', 'b', False)
    assert "[s] b = 'ture' is not valid; allowed: one of true" in \
        str(err.value)


def test_choice_option():
    assert choice_option({'m': ' Cache '}, 's', 'm', 'none',
                         ('cache', 'none')) == 'cache'
    with pytest.raises(ConfigError) as err:
        choice_option({'m': 'fast'}, 's', 'm', 'none', ('cache', 'none'))
    assert str(err.value) == \
        "[s] m = 'fast' is not valid; allowed: one of cache, none"
