"""swift-mass's own parts that need no cluster."""
from swift.common.memcached import MemcacheRing

from swift_mass.cli import main as cli


def test_store_logger_serves_swifts_memcache_client():
    # swift-mass commands whose store fell back to memcache died with
    # AttributeError: the memcache client reports timings to its logger
    logger = cli.Quiet()
    ring = MemcacheRing(['127.0.0.1:1'], logger=logger)
    assert ring.get('mass-store/table') is None
    ring.set('mass-store/table', 1)
    assert any('127.0.0.1:1' in m for m in logger.messages)
