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
"""The package's layout rules: where code runs is the first thing its path
says, and imports go one way (servers never import the operator's
command, its device-class library or the benchmark; the object servers
never load the proxies' control loop; the benchmark and the library never
import the command; no module imports itself back, and no package another
that imports it; the shared configuration imports nothing of the control
loop, the tags nothing of the project); and the size rules, which the
benchmark keeps too, as it keeps out of the package's private members."""
import ast
import os
import subprocess
import sys

import pytest

import swift_mass

PACKAGE = os.path.dirname(swift_mass.__file__)
ROOT = os.path.dirname(PACKAGE)
# the benchmark: not installed, run from the checkout (tools/bench...)
BENCHMARK = os.path.join(ROOT, 'mass_bench')
COMMAND = 'swift_mass.cli'
CONTROL = 'swift_mass.control'


# written by setuptools_scm at build and install time (pyproject.toml),
# not the project's source
GENERATED = ('_version.py',)


def modules(top=PACKAGE):
    """{module name: path} of every module of the package's source (or of
    the benchmark's, ``top`` BENCHMARK)."""
    found = {}
    for folder, _dirs, files in os.walk(top):
        for name in files:
            if not name.endswith('.py') or name in GENERATED:
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


def package_of(name, known):
    """The package of the project that module ``name`` is in
    (``swift_mass.control`` for ``swift_mass.control.stores.base``); a
    module of the top level (``swift_mass.conf``) stands for itself."""
    top = '.'.join(name.split('.')[:2])
    return top if any(m.startswith(top + '.') for m in known) else name


def test_no_import_circle_between_packages():
    known = modules()
    graph = {}
    for name, path in known.items():
        for dep in imports_of(name, path, known):
            if package_of(dep, known) != package_of(name, known):
                graph.setdefault(package_of(name, known), {}).setdefault(
                    package_of(dep, known), (name, dep))

    def reaches(start, goal, seen):
        for dep in graph.get(start, {}):
            if dep == goal or (dep not in seen and
                               reaches(dep, goal, seen | {dep})):
                return True
        return False
    circles = sorted('%s -> %s (%s imports %s)' % ((package, dep) + why)
                     for package, deps in graph.items()
                     for dep, why in deps.items()
                     if reaches(dep, package, {dep}))
    assert circles == []


def loaded_by(module):
    """Every module that importing ``module`` loads, in a fresh
    interpreter."""
    return subprocess.check_output([
        sys.executable, '-W', 'ignore', '-c',
        'import sys, %s; print("\\n".join(sys.modules))' % module],
        text=True, cwd=ROOT).split()


@pytest.mark.parametrize('server_module', [
    'swift_mass.proxy.middleware', 'swift_mass.obj.middleware'])
def test_servers_import_neither_the_command_nor_the_benchmark(
        server_module):
    loaded = loaded_by(server_module)
    # the servers find their ring devices in swift_mass.ring_devices, not
    # in the operator's device-class library
    assert [m for m in loaded if within(
        m, (COMMAND, 'swift_mass.devices', 'mass_bench'))] == []


def test_the_object_servers_do_not_load_the_control_loop():
    # the control loop runs in the proxies (and is read by the command):
    # mass_queue takes its options from swift_mass.conf, its breaker from
    # swift_mass.breaker, neither of which imports it
    loaded = loaded_by('swift_mass.obj.middleware')
    assert 'swift_mass.obj.middleware' in loaded
    assert [m for m in loaded if within(m, (CONTROL,))] == []


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
              'swift_mass.ring_devices', 'swift_mass.device_speeds',
              'swift_mass.shared_store',
              'swift_mass.redis_cluster',
              'swift_mass.lua', 'swift_mass.breaker')
    # the generations: read by the proxies, bumped by the object servers
    shared_packages = ('swift_mass.generations',)
    stray = [name for name in modules()
             if name not in shared and not within(name, shared_packages) and
             not name.startswith(places)]
    assert stray == []


def test_the_control_loop_does_not_import_conf():
    # swift_mass.proxy.conf builds the control loop's settings from
    # classify and controller: control/ takes its options as arguments, so
    # that neither of conf and control imports the other
    known = modules()
    assert [name for name, path in sorted(known.items())
            if name.startswith(CONTROL) and
            'swift_mass.conf' in imports_of(name, path, known)] == []


def test_conf_imports_nothing_of_the_control_loop():
    # the object servers' QueueConf is in swift_mass.conf; MassConf, which
    # builds the control loop's settings, is the proxy's
    # (swift_mass.proxy.conf)
    known = modules()
    assert 'swift_mass.proxy.conf' in known
    assert sorted(m for m in imported_anywhere(known['swift_mass.conf'])
                  if within(m, (CONTROL,))) == []


def test_tags_import_nothing_of_the_project():
    # the wire contract (the names Mass puts on requests), which both
    # filters and swift-mass read: it depends on nothing of theirs
    known = modules()
    assert sorted(m for m in imported_anywhere(known['swift_mass.tags'])
                  if within(m, ('swift_mass', 'mass_bench'))) == []


def test_modules_classes_and_functions_stay_small():
    # a room a newcomer can read: no module over 600 lines, no class over
    # 300, no function over 60 (its docstring included); the benchmark's
    # too
    too_big = []
    for name, path in sorted(dict(modules(), **modules(BENCHMARK)).items()):
        with open(path) as f:
            source = f.read()
        if source.count('\n') > 600:
            too_big.append((name, source.count('\n')))
        for node in ast.walk(ast.parse(source, path)):
            lines = getattr(node, 'end_lineno', 0) - getattr(
                node, 'lineno', 0) + 1
            if isinstance(node, ast.ClassDef) and lines > 300 or \
                    isinstance(node, (ast.FunctionDef,
                                      ast.AsyncFunctionDef)) and lines > 60:
                too_big.append(('%s.%s' % (name, node.name), lines))
    assert too_big == []


def is_private(name):
    """Whether ``name`` is private: one leading underscore (``_x``; not a
    dunder, not ``_`` alone)."""
    return name.startswith('_') and not name.startswith('__') and \
        name != '_'


def defined_names(path):
    """Every name the module ``path`` defines: its functions, classes and
    methods, the variables it assigns and the attributes it sets."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and \
                isinstance(node.ctx, ast.Store):
            found.add(node.attr)
    return found


def private_reaches(path, product):
    """Where the module ``path`` reaches into a private member of the
    package, whose private names are ``product``: a private name imported
    from it (``from swift_mass.x import _y``, ``import swift_mass._x``),
    or an attribute of one of those names read, set, or named to getattr
    and its kin, on anything but the module's own ``self`` or ``cls`` (an
    agent's ``_next_tick``, a store's ``_key()``)."""
    own = {name for name in defined_names(path) if is_private(name)}
    found = []
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom) and node.module and \
                within(node.module, ('swift_mass',)):
            found += ['%d: from %s import %s' % (node.lineno, node.module,
                                                 alias.name)
                      for alias in node.names if is_private(alias.name) or
                      any(map(is_private, node.module.split('.')))]
        elif isinstance(node, ast.Import):
            found += ['%d: import %s' % (node.lineno, alias.name)
                      for alias in node.names
                      if within(alias.name, ('swift_mass',)) and
                      any(map(is_private, alias.name.split('.')))]
        elif isinstance(node, ast.Attribute) and node.attr in product:
            mine = isinstance(node.value, ast.Name) and \
                node.value.id in ('self', 'cls') and node.attr in own
            if not mine:
                found.append('%d: .%s' % (node.lineno, node.attr))
        elif named_attribute(node) in product:
            found.append('%d: %s(..., %r)' % (
                node.lineno, node.func.id, named_attribute(node)))
    return found


def named_attribute(node):
    """The attribute a call ``getattr(x, 'name')`` (or setattr, hasattr,
    delattr) names, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ('getattr', 'setattr', 'hasattr', 'delattr') \
            and len(node.args) > 1 and \
            isinstance(node.args[1], ast.Constant):
        return node.args[1].value
    return None


def test_the_benchmark_reaches_into_no_private_member_of_the_package():
    # it measures the package through what the package offers (an agent's
    # ticker, a store's documented keys), so that a change inside the
    # package does not quietly change what the benchmark measures
    product = {name for path in modules().values()
               for name in defined_names(path) if is_private(name)}
    assert '_next_tick' in product
    reaches = {name: found for name, found in (
        (name, private_reaches(path, product))
        for name, path in sorted(modules(BENCHMARK).items())) if found}
    assert reaches == {}


def test_every_benchmark_module_says_what_it_is():
    # the benchmark is split by concept: each module's docstring says
    # which, and where it runs (the benchmark's process, a child of it)
    silent = [name for name, path in sorted(modules(BENCHMARK).items())
              if not ast.get_docstring(ast.parse(open(path).read(), path))]
    assert 'mass_bench.scale' in modules(BENCHMARK)
    assert silent == []
