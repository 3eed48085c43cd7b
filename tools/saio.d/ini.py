#!/usr/bin/env python3
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
"""How tools/saio edits the SAIO's INI files (/etc/swift), in place::

    ini.py set FILE SECTION OPTION=VALUE...
        each option set in SECTION (an option it lacks goes right after the
        section's header line)
    ini.py show FILE SECTION
        SECTION's own options, one "option = value" line each
    ini.py pipeline with|without FILTER APP FILE...
        with: FILTER right before APP in [pipeline:main]; without: FILTER
        taken out of it

Files are read by Swift's rules (``readconf``: configparser, option names
as written).  configparser's own writer would drop the comments these files
explain themselves with, so an edit rewrites only the lines of the options
it sets; the result is read back with configparser to check that Swift will
read what was set.  Standard library only: tools/saio runs it before
anything is installed.
"""
import configparser
import re
import sys

COMMENT = ('#', ';')  # configparser's full-line comment prefixes
SECTION = re.compile(r'\[(?P<name>.+)\]')  # configparser's SECTCRE


class IniError(Exception):
    pass


def read(text):
    """``text`` as Swift's readconf reads it."""
    parser = configparser.RawConfigParser()
    parser.optionxform = str
    parser.read_string(text)
    return parser


class IniFile(object):
    """The lines of an INI file, and where each section and option is."""

    def __init__(self, text):
        self.lines = text.splitlines(True)

    @property
    def text(self):
        return ''.join(self.lines)

    def _options(self):
        """``(section, option, first line, end line)`` for every option,
        its continuation lines included, in file order."""
        found, section, current = [], None, None
        for i, line in enumerate(self.lines):
            stripped = line.strip()
            if not stripped or stripped.startswith(COMMENT):
                continue
            if current is not None and line[:1].isspace():
                current[3] = i + 1  # a continuation of the value
                continue
            match = SECTION.match(stripped)
            if match:
                section, current = match.group('name'), None
                continue
            name = re.split(r'[=:]', stripped, 1)[0].strip()
            current = [section, name, i, i + 1]
            found.append(current)
        return found

    def header(self, section):
        """The line index of ``[section]``."""
        for i, line in enumerate(self.lines):
            match = SECTION.match(line.strip())
            if match and match.group('name') == section and \
                    not line[:1].isspace():
                return i
        raise IniError('no [%s] section' % section)

    def get(self, section, option):
        """The value as written, continuation lines joined by spaces;
        None when the section does not set it."""
        for sect, name, start, end in self._options():
            if (sect, name) == (section, option):
                first = re.split(r'[=:]', self.lines[start], 1)[1]
                return ' '.join(line.strip() for line in
                                [first] + self.lines[start + 1:end]
                                if line.strip() and
                                not line.strip().startswith(COMMENT))
        return None

    def set(self, section, option, value):
        line = '%s = %s\n' % (option, value)
        for sect, name, start, end in self._options():
            if (sect, name) == (section, option):
                self.lines[start:end] = [line]
                return
        at = self.header(section)
        if not self.lines[at].endswith('\n'):
            self.lines[at] += '\n'
        self.lines.insert(at + 1, line)


def set_options(path, section, pairs):
    with open(path) as fp:
        ini = IniFile(fp.read())
    for option, value in pairs:
        ini.set(section, option, value)
    parsed = read(ini.text)
    for option, value in pairs:
        if parsed.get(section, option) != value:
            raise IniError('[%s] %s reads as %r, not %r' % (
                section, option, parsed.get(section, option), value))
    with open(path, 'w') as fp:
        fp.write(ini.text)


def show(path, section):
    """SECTION's own options (not [DEFAULT]'s), as ``option = value``."""
    with open(path) as fp:
        text = fp.read()
    parsed = read(text)
    if not parsed.has_section(section):
        raise IniError('no [%s] section' % section)
    return ['%s = %s' % (name, parsed.get(section, name))
            for sect, name, _, _ in IniFile(text)._options()
            if sect == section]


def pipeline(words, mode, name, app):
    """The pipeline ``words`` with ``name`` right before ``app`` (mode
    with) or without it (mode without)."""
    words = [word for word in words if word != name]
    if mode == 'without':
        return words
    if app not in words:
        raise IniError('%s is not in the pipeline' % app)
    at = words.index(app)
    return words[:at] + [name] + words[at:]


def set_pipeline(path, mode, name, app):
    with open(path) as fp:
        value = IniFile(fp.read()).get('pipeline:main', 'pipeline')
    if value is None:
        raise IniError('no pipeline in [pipeline:main]')
    set_options(path, 'pipeline:main', [('pipeline', ' '.join(
        pipeline(value.split(), mode, name, app)))])


def pairs(args):
    found = []
    for arg in args:
        option, sep, value = arg.partition('=')
        if not sep or not option:
            raise IniError('expected OPTION=VALUE, got %r' % arg)
        found.append((option, value))
    return found


def main(argv):
    command, args = (argv[0], argv[1:]) if argv else (None, [])
    if command == 'set' and len(args) >= 2:
        files, run = args[:1], lambda path: set_options(
            path, args[1], pairs(args[2:]))
    elif command == 'show' and len(args) == 2:
        files, run = args[:1], lambda path: print('\n'.join(
            show(path, args[1])))
    elif command == 'pipeline' and len(args) >= 4 and \
            args[0] in ('with', 'without'):
        files, run = args[3:], lambda path: set_pipeline(
            path, args[0], args[1], args[2])
    else:
        print(__doc__.split('\n\n')[0], file=sys.stderr)
        return 2
    for path in files:
        try:
            run(path)
        except (IniError, OSError, configparser.Error) as err:
            print('ini.py: %s: %s' % (path, err), file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
