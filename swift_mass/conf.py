"""Parsing of Mass options, once, at start-up.

Every parser raises :class:`ConfigError` whose message names the option, the
value it was given and what is allowed, so that a bad ``[filter:mass]`` line
stops the server with a sentence an operator can act on.
"""
from swift.common.storage_policy import POLICIES


class ConfigError(ValueError):
    pass


def invalid_option(section, option, value, allowed):
    """The error for an option whose value is not among `allowed`."""
    return ConfigError('[%s] %s = %r is not valid; allowed: %s'
                       % (section, option, value, allowed))


def _number_option(conf, section, option, default, minimum, maximum,
                   parse, kind, fmt):
    raw = conf.get(option, default)
    if minimum is not None and maximum is not None:
        allowed = ('%s from ' + fmt + ' to ' + fmt) % (kind, minimum,
                                                       maximum)
    elif minimum is not None:
        allowed = ('%s >= ' + fmt) % (kind, minimum)
    else:
        allowed = kind
    try:
        value = parse(str(raw).strip())
    except ValueError:
        raise invalid_option(section, option, raw, allowed)
    # value != value: NaN, which no range check would catch
    if value != value or ((minimum is not None and value < minimum) or
                          (maximum is not None and value > maximum)):
        raise invalid_option(section, option, raw, allowed)
    return value


def int_option(conf, section, option, default, minimum=None, maximum=None):
    """Read an integer option and check it lies in [minimum, maximum]."""
    return _number_option(conf, section, option, default, minimum, maximum,
                          int, 'an integer', '%d')


def float_option(conf, section, option, default, minimum=None,
                 maximum=None):
    """Read a number option and check it lies in [minimum, maximum]."""
    return _number_option(conf, section, option, default, minimum, maximum,
                          float, 'a number', '%g')


_TRUE = ('true', '1', 'yes', 'on', 't', 'y')
_FALSE = ('false', '0', 'no', 'off', 'f', 'n')


def bool_option(conf, section, option, default):
    """Read a boolean option; unlike swift's config_true_value, a typo such
    as ``ture`` is an error instead of silently meaning false."""
    raw = conf.get(option, default)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise invalid_option(section, option, raw,
                         'one of ' + ', '.join(_TRUE + _FALSE))


def choice_option(conf, section, option, default, choices):
    """Read an option that must be one of `choices`."""
    raw = conf.get(option, default)
    value = str(raw).strip().lower()
    if value not in choices:
        raise invalid_option(section, option, raw,
                             'one of ' + ', '.join(choices))
    return value


def substore_option(conf, section, option):
    """A storage policy name from swift.conf ('' = the default policy)."""
    name = str(conf.get(option, '')).strip()
    if not name:
        return ''
    policy = POLICIES.get_by_name(name)
    if policy is None or policy.is_deprecated:
        names = sorted(p.name for p in POLICIES if not p.is_deprecated)
        raise ConfigError(
            '[%s] %s = %r is not valid; allowed: a storage policy of '
            'swift.conf that is not deprecated (%s), or empty for the '
            'default policy' % (section, option, name, ', '.join(names)))
    return policy.name


def control_settings(conf, section):
    """The control loop's settings (swift_mass.control.controller.Settings)."""
    from swift_mass.control import classify, controller
    thresholds = classify.Thresholds(
        read_share=float_option(conf, section, 'read_share', 0.8, 0.0, 1.0),
        write_share=float_option(conf, section, 'write_share', 0.2, 0.0,
                                 1.0),
        min_requests=int_option(conf, section, 'min_requests', 50, 1),
        hysteresis=float_option(conf, section, 'hysteresis', 0.05, 0.0,
                                0.5))
    try:
        classify.check_thresholds(thresholds)
    except ValueError as err:
        raise ConfigError('[%s] read_share, write_share, hysteresis: %s'
                          % (section, err))
    rings, methods = {}, {}
    for cls in classify.CLASSES:
        rings[cls] = substore_option(conf, section, '%s_substore' % cls)
        methods[cls] = choice_option(
            conf, section, '%s_method' % cls,
            controller.DEFAULT_METHODS[cls], controller.METHODS)
    return controller.Settings(
        thresholds=thresholds, rings=rings, methods=methods,
        window=int_option(conf, section, 'window_seconds', 60, 10),
        margin=float_option(conf, section, 'validation_margin', 0.2, 0.0,
                            10.0),
        holdoff=int_option(conf, section, 'holdoff_seconds', 600, 0))
