"""What several unit tests stand in for: the WSGI app right of a filter, a
clock the test moves."""
from swift.common.swob import Response


class RecordingApp(object):
    """The app right of the filter: remembers what reached it."""

    def __init__(self):
        self.environs = []

    def __call__(self, env, start_response):
        self.environs.append(dict(env))
        return Response(body=b'ok')(env, start_response)


class Clock(object):
    def __init__(self, now=1700000000.0):
        self.now = now

    def __call__(self):
        return self.now
