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
"""Mass: workload-aware storage policies for OpenStack Swift."""

# One place for the version, git's tag (pyproject.toml); /info shows it.
try:
    # written by setuptools_scm from the git tag when the package is built
    # or installed (pyproject.toml)
    from swift_mass._version import version as __version__
except ImportError:  # a tree that was never built or installed
    __version__ = '0+unknown'
