"""Parsing of Mass options, once, at start-up.

Every parser raises :class:`ConfigError` whose message names the option, the
value it was given and what is allowed, so that a bad ``[filter:mass]`` line
stops the server with a sentence an operator can act on.
"""


class ConfigError(ValueError):
    pass


def _bad(section, option, value, allowed):
    return ConfigError('[%s] %s = %r is not valid; allowed: %s'
                       % (section, option, value, allowed))


def int_option(conf, section, option, default, minimum=None, maximum=None):
    """Read an integer option and check it lies in [minimum, maximum]."""
    raw = conf.get(option, default)
    if minimum is not None and maximum is not None:
        allowed = 'an integer from %d to %d' % (minimum, maximum)
    elif minimum is not None:
        allowed = 'an integer >= %d' % minimum
    else:
        allowed = 'an integer'
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise _bad(section, option, raw, allowed)
    if ((minimum is not None and value < minimum) or
            (maximum is not None and value > maximum)):
        raise _bad(section, option, raw, allowed)
    return value
