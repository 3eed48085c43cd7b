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
"""The device-class library: devices' IOPS and performance classes, the
BACOS lookup table of class weights, ring weights stepped towards them,
and substores' rings over every server.

What the ``swift-mass`` command (``devices``, ``weights``, ``substores``,
``check-rings``) and the benchmark's ring variants run on; it imports
neither of them, and no server imports it."""
