"""The package's layout rules: where code runs is the first thing its path
says, and imports go one way (servers never import the operator's
command, its device-class library or the benchmark; the benchmark and the
library never import the command; and no module imports itself back)."""
import ast
import os
import subprocess
import sys

import pytest

import swift_mass

PACKAGE = os.path.dirname(swift_mass.__file__)
ROOT = os.path.dirname(PACKAGE)
COMMAND = 'swift_mass.cli'


def modules():
    """{module name: path} of every module of the package."""
    found = {}
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
            found[rel[:-len('.__init__')] if rel.endswith('__init__')
                  else rel] = path
    return found


def imports_of(name, path, known):
    """The package's modules that ``name`` imports at module level (those
    imported inside a function load only when it runs)."""
    tree = ast.parse(open(path).read(), path)
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = '%s.%s' % (node.module, alias.name)
                found.add(full if full in known else node.module)
    return {m for m in found if m in known and m != name}


def imported_anywhere(path):
    """Every module ``path`` imports, at module level or in a function;
    for ``from X import Y``, X and X.Y (Y may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update('%s.%s' % (node.module, alias.name)
                         for alias in node.names)
    return found


def within(name, packages):
    """Whether module ``name`` is one of ``packages`` or in one."""
    return any(name == p or name.startswith(p + '.') for p in packages)


def test_no_import_circle():
    known = modules()
    graph = {name: imports_of(name, path, known)
             for name, path in known.items()}
    # a package's __init__ importing its own modules is no circle
    for name in graph:
        graph[name] = {m for m in graph[name]
                       if not (m.startswith(name + '.'))}
    state = {}

    def visit(name, stack):
        state[name] = 'open'
        for dep in sorted(graph[name]):
            if state.get(dep) == 'open':
                pytest.fail('import circle: %s' % ' -> '.join(
                    stack[stack.index(dep):] + [dep]))
            if dep not in state:
                visit(dep, stack + [dep])
        state[name] = 'done'
    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


@pytest.mark.parametrize('server_module', [
    'swift_mass.proxy.middleware', 'swift_mass.obj.middleware'])
def test_servers_import_neither_the_command_nor_the_benchmark(
        server_module):
    loaded = subprocess.check_output([
        sys.executable, '-W', 'ignore', '-c',
        'import sys, %s; print("\\n".join(sys.modules))' % server_module],
        text=True, cwd=ROOT).split()
    # the servers find their ring devices in swift_mass.ring_devices, not
    # in the operator's device-class library
    assert [m for m in loaded if within(
        m, (COMMAND, 'swift_mass.devices', 'mass_bench'))] == []


def command_imports(paths, allowed=()):
    """{name: the modules of the command it imports, ``allowed``'s aside}
    of the modules ``paths`` ({name: path}) that import any."""
    found = {name: sorted(m for m in imported_anywhere(path)
                          if within(m, (COMMAND,)) and
                          not within(m, allowed))
             for name, path in paths.items()}
    return {name: modules for name, modules in found.items() if modules}


def test_the_benchmark_does_not_import_the_command():
    # it weights rings with the device-class library, as the command does
    benchmark = {}
    for folder, _dirs, files in os.walk(os.path.join(ROOT, 'mass_bench')):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                benchmark[os.path.relpath(path, ROOT)] = path
    assert 'mass_bench/rings.py' in benchmark
    assert command_imports(benchmark) == {}


def test_the_device_library_does_not_import_the_command():
    library = {name: path for name, path in modules().items()
               if within(name, ('swift_mass.devices',
                                'swift_mass.ring_devices'))}
    assert 'swift_mass.devices.weights' in library
    assert command_imports(library) == {}


def test_every_module_says_where_it_runs():
    # swift_mass.devices: the device-class library, for the command and
    # the benchmark
    places = ('swift_mass.proxy', 'swift_mass.obj', 'swift_mass.cli',
              'swift_mass.control', 'swift_mass.devices')
    shared = ('swift_mass', 'swift_mass.tags', 'swift_mass.conf',
              'swift_mass.redis_client', 'swift_mass.metrics',
              'swift_mass.ring_devices', 'swift_mass.shared_store',
              'swift_mass.lua', 'swift_mass.breaker')
    # the generations: read by the proxies, bumped by the object servers
    shared_packages = ('swift_mass.generations',)
    stray = [name for name in modules()
             if name not in shared and not within(name, shared_packages) and
             not name.startswith(places)]
    assert stray == []


def test_the_control_loop_does_not_import_conf():
    # conf.py builds the control loop's settings from classify and
    # controller: control/ takes its options as arguments, so that the two
    # packages do not import each other
    known = modules()
    assert [name for name, path in sorted(known.items())
            if name.startswith('swift_mass.control') and
            'swift_mass.conf' in imports_of(name, path, known)] == []
