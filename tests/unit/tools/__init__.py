"""Unit tests of the scripts under tools/ that are not in a package."""
import importlib.util
import os

#: tools/saio.d: the SAIO's templates and its Python helpers
TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), 'tools', 'saio.d')


def saio_helper(name):
    """tools/saio.d/<name>.py loaded as a module (the directory is not a
    package: tools/saio runs the files as scripts)."""
    spec = importlib.util.spec_from_file_location(
        'saio_' + name, os.path.join(TEMPLATES, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
