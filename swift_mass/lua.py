"""Mass's Lua scripts for Redis, each in a file a linter or ``redis-cli
--eval`` reads as it is: a package that runs scripts keeps them in its
``lua/`` folder, shipped as package data (setup.cfg), and reads each once,
at import (a script's text is what names it to Redis)."""

import importlib.resources


def read_script(package, name):
    """The text of ``lua/<name>.lua`` of ``package``."""
    return importlib.resources.files(package).joinpath(
        'lua', name + '.lua').read_text(encoding='utf-8')
