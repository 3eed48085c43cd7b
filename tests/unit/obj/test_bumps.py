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
"""The generation bumps of object writes (swift_mass.obj.bumps): which
requests are bumped and what a write's answer says it wrote, as plain
decisions; and BumpedWrite with a stand-in for Generations."""
import pytest

from swift.common.swob import Request

from swift_mass.obj import bumps


@pytest.mark.parametrize('method, replication, bumped', [
    ('PUT', False, True), ('POST', False, True), ('DELETE', False, True),
    # replication moves versions that were written already
    ('PUT', True, False), ('DELETE', True, False),
    ('GET', False, False), ('HEAD', False, False),
    ('REPLICATE', False, False), ('SSYNC', False, False),
])
def test_only_object_writes_not_from_replication_are_bumped(
        method, replication, bumped):
    assert bumps.is_bumped(method, replication) is bumped


@pytest.mark.parametrize('method', ['PUT', 'POST', 'DELETE'])
def test_a_moves_write_that_keeps_the_version_is_not_bumped(method):
    assert bumps.is_bumped(method, False, keeps_version=False)
    assert not bumps.is_bumped(method, False, keeps_version=True)


@pytest.mark.parametrize('method, status, what', [
    ('PUT', 201, bumps.SURELY), ('POST', 202, bumps.SURELY),
    ('DELETE', 204, bumps.SURELY),
    ('DELETE', 404, bumps.SURELY),  # a tombstone was written
    # refused: nothing written
    ('PUT', 412, bumps.NOTHING), ('POST', 404, bumps.NOTHING),
    ('PUT', 409, bumps.NOTHING), ('DELETE', 409, bumps.NOTHING),
    # may be written in part
    ('PUT', 500, bumps.MAYBE), ('DELETE', 503, bumps.MAYBE),
    ('POST', None, bumps.MAYBE),  # the object server raised
])
def test_what_a_write_wrote_by_its_answer(method, status, what):
    assert bumps.written(method, status) == what


class Generations(object):
    """Bumps everyone's writes, or none; records the bumps."""

    def __init__(self, bumps_writes=True):
        self.bumps_writes = bumps_writes
        self.bumped = []

    def bumps_writes_of(self, tenant):
        return self.bumps_writes

    def holds_unrecorded(self, tenant):
        return tenant == 'held'

    def bump(self, keys, timestamp=None, hold=True, data=True):
        self.bumped.append((keys, timestamp))
        self.held = hold
        self.data = data


def answering(status):
    def app(env, start_response):
        start_response(status, [('Content-Length', '0')])
        return [b'']
    return app


def failing(env, start_response):
    raise IOError('disk gone')


def write(app, generations, method='PUT'):
    env = Request.blank('/sdb1/1/AUTH_t/c/o', method=method, headers={
        'X-Timestamp': '1700000000.00000'}).environ
    answered = []

    def start_response(status, headers, exc_info=None):
        answered.append(list(generations.bumped))
    body = bumps.BumpedWrite(app, generations, None)(
        env, start_response, key='key', tenant='AUTH_t')
    return answered, b''.join(body)


@pytest.mark.parametrize('status, bumped', [
    ('201 Created', [(['key'], '1700000000.00000')]),
    ('412 Precondition Failed', []),
    ('503 Service Unavailable', [(['key'], None)]),
])
def test_a_write_is_answered_once_bumped(status, bumped):
    generations = Generations()
    answered, _ = write(answering(status), generations)
    assert answered == [bumped]


@pytest.mark.parametrize('tenant', ['held', 'AUTH_t'])
def test_a_write_is_held_only_as_the_generations_say(tenant):
    generations = Generations()
    env = Request.blank('/sda1/0/a/c/o', method='PUT', headers={
        'X-Timestamp': '1700000000.00000'}).environ
    b''.join(bumps.BumpedWrite(answering('201 Created'), generations, None)(
        env, lambda *args: None, key='key', tenant=tenant))
    assert generations.held is (tenant == 'held')


@pytest.mark.parametrize('method', ['PUT', 'POST', 'DELETE'])
def test_only_a_post_writes_metadata_alone(method):
    generations = Generations()
    env = Request.blank('/sda1/0/a/c/o', method=method, headers={
        'X-Timestamp': '1700000000.00000'}).environ
    b''.join(bumps.BumpedWrite(answering('202 Accepted'), generations, None)(
        env, lambda *args: None, key='key', tenant='AUTH_t'))
    assert generations.data is (method != 'POST')


def test_a_write_of_a_tenant_not_bumped_is_not():
    generations = Generations(bumps_writes=False)
    answered, _ = write(answering('201 Created'), generations)
    assert answered == [[]]


def test_a_write_the_object_server_failed_is_bumped_and_fails():
    generations = Generations()
    with pytest.raises(IOError):
        write(failing, generations, 'DELETE')
    assert generations.bumped == [(['key'], None)]
