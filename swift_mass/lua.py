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
"""Mass's Lua scripts for Redis, each in a file a linter or ``redis-cli
--eval`` reads as it is: a package that runs scripts keeps them in its
``lua/`` folder, shipped as package data (setup.cfg), and reads each once,
at import (a script's text is what names it to Redis)."""

import importlib.resources


def read_script(package, name):
    """The text of ``lua/<name>.lua`` of ``package``."""
    return importlib.resources.files(package).joinpath(
        'lua', name + '.lua').read_text(encoding='utf-8')
