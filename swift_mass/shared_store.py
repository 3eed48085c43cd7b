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
"""The proxies' shared store, for a process outside the proxy: the
``swift-mass`` command and the benchmark (both read what the proxies
share, neither is a proxy)."""
from swift.common.memcached import load_memcache
from swift.common.utils import readconf

from swift_mass.conf import SECTION, ConfigError
from swift_mass.control.stores import store_from_conf
from swift_mass.control.stores.resilient import ResilientStore
from swift_mass.proxy.conf import MassConf


def shared_store(conf_path, logger):
    """``(mass_conf, store)`` for a command outside the proxy: the
    ``[filter:mass]`` of the proxy config ``conf_path``, parsed as the
    filter parses it, and the shared store it names (the first of the
    chain: the fallbacks are a proxy worker's own).  ConfigError when the
    proxies share none (``store = local``)."""
    raw = readconf(conf_path, SECTION)
    conf = MassConf(raw)
    store = store_from_conf(conf, logger,
                            memcache=load_memcache(raw, logger))
    if not isinstance(store, ResilientStore):
        raise ConfigError('[%s] store = local: each proxy worker keeps its '
                          'own state; there is no shared store to read'
                          % SECTION)
    while isinstance(store.primary, ResilientStore):
        store = store.primary
    return conf, store.primary
