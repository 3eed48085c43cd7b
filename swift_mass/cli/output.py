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
"""How a ``swift-mass`` subcommand's result reaches the operator: JSON with
``--json``, else the subcommand's text, and the exit status."""
import json
import sys


def failed(err):
    """Say why a subcommand failed, on stderr; its exit status, 1."""
    print('swift-mass: %s: %s' % (type(err).__name__, err), file=sys.stderr)
    return 1


def show(args, result, text):
    """Print ``result`` as JSON (``args.json``) or ``text(result)``."""
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        print(text(result))


def emit(args, compute, text, failing=lambda result: False):
    """Run ``compute()`` and :func:`show` its result.  Exit status 1 when it
    raises (saying why) or when ``failing(result)``, else 0."""
    try:
        result = compute()
    except Exception as err:
        return failed(err)
    show(args, result, text)
    return 1 if failing(result) else 0
