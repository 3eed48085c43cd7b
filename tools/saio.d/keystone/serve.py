#!/usr/bin/python3
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
"""The SAIO's Keystone: Debian's keystone (python3-keystone) served on
127.0.0.1:PORT by the standard library's WSGI server, one request at a
time (its SQLite database refuses concurrent writers: "database is
locked")::

    OS_KEYSTONE_CONFIG_DIR=/etc/swift-mass-keystone serve.py PORT

Debian's ``keystone`` package serves it with uWSGI under systemd, which a
test machine may lack; the application is the same
(``keystone.server.wsgi.initialize_public_application``).  Run by
tools/saio (lib/keystone.sh) with Debian's own Python, where the package
lives.
"""
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server

from keystone.server.wsgi import initialize_public_application


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass  # keystone logs every request itself


def main(argv):
    port = int(argv[1])
    # keystone parses the command line as its own options (oslo.config)
    del sys.argv[1:]
    app = initialize_public_application()
    server = make_server('127.0.0.1', port, app, handler_class=QuietHandler)
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv)
