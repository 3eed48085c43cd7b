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
