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
"""What an S3 client gets from an answer, to compare two answers (with and
without Mass): the unit tests' (swob) and the SAIO's (requests) alike."""
import re

# parts of an answer that belong to the response, not to the object
PER_RESPONSE = ('date', 'x-amz-request-id', 'x-amz-id-2', 'x-trans-id',
                'x-openstack-request-id', 'connection', 'keep-alive',
                'x-mass-cache')
S3_ERROR = re.compile(
    rb'<Error><Code>[^<]*</Code>(<Message>[^<]*</Message>)?')


def same_for_a_client(status, headers, body):
    """``(status, sorted headers, body)`` less what differs between any
    two answers: the request's ids and date, a multipart boundary's
    random name, and an S3 error's elements that name the request."""
    kept = sorted((k.lower(), v) for k, v in headers.items()
                  if k.lower() not in PER_RESPONSE)
    match = re.search(r'boundary=(\w+)', headers.get('Content-Type', ''))
    if match:
        kept = [(k, v.replace(match.group(1), 'B')) for k, v in kept]
        body = body.replace(match.group(1).encode('ascii'), b'B')
    error = S3_ERROR.search(body)
    if error:
        # its request id, and a signature's string to sign (the time
        # signed, the proxy's port)
        body = error.group(0)
        kept = [(k, v) for k, v in kept if k != 'content-length']
    return status, kept, body
