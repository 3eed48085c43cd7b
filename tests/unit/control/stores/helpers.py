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
"""What the stores' tests share: addresses where nothing answers, tenant
names that need quoting, buckets, and a logger that keeps its lines."""

DOWN_REDIS_URL = 'redis://127.0.0.1:1/0'  # connection refused
DOWN_CLUSTER_URL = 'redis+cluster://127.0.0.1:1,127.0.0.1:2'
# constructed, never asked
SENTINEL_URL = 'redis+sentinel://127.0.0.1:26390/mass'
DOWN_MEMCACHE_SERVER = '127.0.0.1:1'

ODD_TENANTS = ('AUTH_test', 'AUTH_a:b', 'AUTH_\xc3\xa9', 'AUTH_x/y z%')
B0, B1, B2 = 1700000000, 1700000005, 1700000010


class Logger(object):
    """Captures log lines; also serves MemcacheRing, which times calls."""

    def __init__(self):
        self.lines = {'error': [], 'warning': [], 'info': []}

    def _log(self, level, msg, *args):
        if len(args) == 1 and isinstance(args[0], dict):
            args = args[0]  # as logging does: MemcacheRing logs so
        self.lines[level].append(msg % args if args else msg)

    def error(self, msg, *args):
        self._log('error', msg, *args)

    exception = error

    def warning(self, msg, *args):
        self._log('warning', msg, *args)

    def info(self, msg, *args):
        self._log('info', msg, *args)

    def timing_since(self, *args, **kwargs):
        pass
