"""What several unit tests stand in for: the WSGI app right of a filter,
Swift's logger, a clock the test moves."""
from swift.common.swob import Response

# The machine's Redis, a database of the tests' own (conftest.redis_db15)
REDIS_URL = 'redis://127.0.0.1:6379/15'


class RecordingApp(object):
    """The app right of the filter: remembers what reached it."""

    def __init__(self):
        self.environs = []

    def __call__(self, env, start_response):
        self.environs.append(dict(env))
        return Response(body=b'ok')(env, start_response)


class Logger(object):
    """Swift's logger for a filter: keeps what it logs (level, line) and
    the names of the counters it increments."""

    def __init__(self):
        self.lines = []
        self.counters = []
        self.txn_id = None

    def _line(self, level):
        def log(msg, *args, **kwargs):
            self.lines.append((level, msg % args if args else msg))
        return log

    def __getattr__(self, name):
        if name in ('debug', 'info', 'warning', 'error', 'exception'):
            return self._line(name)
        raise AttributeError(name)

    def increment(self, name, *args, **kwargs):
        self.counters.append(name)

    def update_stats(self, name, value, *args, **kwargs):
        pass

    def timing_since(self, *args, **kwargs):
        pass


class Clock(object):
    def __init__(self, now=1700000000.0):
        self.now = now

    def __call__(self):
        return self.now
