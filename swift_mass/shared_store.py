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
