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
"""The SAIO's Keystone users, as a Swift operator sets them up (Swift's
doc/source/overview_auth.rst), idempotent::

    accounts.py KEYSTONE_URL ADMIN_PASSWORD SWIFT_URL OUT.json

* the ``object-store`` service and its endpoint, ``SWIFT_URL/v1/AUTH_%(
  project_id)s``, as keystoneauth's ``reseller_prefix`` (AUTH_) expects;
* the ``swift`` user (admin of project ``service``), whose credentials the
  proxy's ``authtoken`` uses to validate tokens;
* the ``ResellerAdmin`` role and ``operator`` (ResellerAdmin on
  ``service``): what ``swift-mass migrate``, ``urgent`` and ``opt-out``
  act as; and ``operator-admin`` (ResellerAdmin and admin on
  ``service``), who may also list projects (Keystone's default
  ``identity:list_projects``), as ``--project NAME`` needs;
* two tenants, projects ``mass-ks-1`` and ``mass-ks-2``, each with a user
  of the same name and the ``member`` role (keystoneauth's
  ``operator_roles``: it owns its account), and an EC2 credential, the
  access key and secret an S3 client signs with (s3api's ``s3token``
  asks Keystone to check its signatures).

Writes to OUT.json every user's name, password and project id (the
account is ``AUTH_`` + the id), and the tenants' EC2 access keys and
secrets.  With Debian's Python (python3-keystone
brings python3-keystoneclient).
"""
import json
import sys

from keystoneauth1 import session
from keystoneauth1.identity import v3
from keystoneclient.v3 import client

DOMAIN = 'default'
# name: (password, project, roles on it)
USERS = {
    'swift': ('swift-saio', 'service', ('admin',)),
    'operator': ('operator-saio', 'service', ('ResellerAdmin',)),
    'operator-admin': ('operator-admin-saio', 'service',
                       ('ResellerAdmin', 'admin')),
    'mass-ks-1': ('mass-ks-1-saio', 'mass-ks-1', ('member',)),
    'mass-ks-2': ('mass-ks-2-saio', 'mass-ks-2', ('member',)),
}


def one(found):
    return found[0] if found else None


def main(argv):
    keystone_url, admin_password, swift_url, out = argv[1:5]
    auth = v3.Password(auth_url=keystone_url, username='admin',
                       password=admin_password, project_name='admin',
                       user_domain_id=DOMAIN, project_domain_id=DOMAIN)
    ks = client.Client(session=session.Session(auth=auth))
    service = one(ks.services.list(type='object-store')) or \
        ks.services.create('swift', 'object-store',
                           description='Swift with Mass (SAIO)')
    url = swift_url + '/v1/AUTH_%(project_id)s'
    for interface in ('public', 'internal', 'admin'):
        endpoint = one(ks.endpoints.list(service=service,
                                         interface=interface))
        if endpoint is None:
            ks.endpoints.create(service, url, interface=interface,
                                region='RegionOne')
        elif endpoint.url != url:
            ks.endpoints.update(endpoint, url=url)
    roles = {}
    for name in ('admin', 'member', 'ResellerAdmin'):
        roles[name] = one(ks.roles.list(name=name)) or ks.roles.create(name)
    found = {}
    for name, (password, project_name, granted) in sorted(USERS.items()):
        project = one(ks.projects.list(name=project_name)) or \
            ks.projects.create(project_name, DOMAIN)
        user = one(ks.users.list(name=name))
        if user is None:
            user = ks.users.create(name, domain=DOMAIN, password=password,
                                   default_project=project)
        else:
            ks.users.update(user, password=password)
        for role in granted:
            ks.roles.grant(roles[role], user=user, project=project)
        found[name] = {'password': password, 'project': project_name,
                       'project_id': project.id, 'role': granted[0],
                       'roles': list(granted),
                       'account': 'AUTH_' + project.id}
        if 'member' in granted:
            ec2 = [c for c in ks.ec2.list(user.id)
                   if c.tenant_id == project.id]
            ec2 = ec2[0] if ec2 else ks.ec2.create(user.id, project.id)
            found[name].update(ec2_access=ec2.access, ec2_secret=ec2.secret)
    with open(out, 'w') as f:
        json.dump(found, f, indent=2, sort_keys=True)


if __name__ == '__main__':
    main(sys.argv)
