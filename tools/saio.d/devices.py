#!/usr/bin/env python3
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
"""What the hetero profile's devices have served, for ``tools/saio
devices``::

    devices.py [--json] NODE:DEVICE:CLASS:IMAGE:MODEL_DIR...

MODEL_DIR is empty for a device without a model (SSD-class: the loop
device is on IMAGE) and, for an HDD-class device, the FUSE directory of
its model (tools/saio.d/hdd-model.c): the loop device is on
MODEL_DIR/<IMAGE's name>, and MODEL_DIR/.hdd-model, the model's control
file, gives its budget and counters.

For each device: its loop device, its model ('fuse-fifo': one FIFO budget
of ``iops_budget`` I/Os a second that reads, writes and flushes share;
'none') and the block layer's own statistics of the loop device
(/sys/block/loopN/stat: reads, writes and flushes completed, milliseconds
busy: what every submitter, the kernel's writeback included, had served),
so a reader of a benchmark sees where the time went.

JSON keys kept from the blkio throttle before the model, for the
benchmark (mass_bench/resources.py): ``read_iops_limit`` and
``write_iops_limit`` are both the one shared budget (0 without a model),
not a budget each; ``throttle_passed_reads`` and
``throttle_passed_writes`` the reads and writes the device served.
Standard library only: tools/saio runs it before anything is installed.
"""
import json
import os
import subprocess
import sys

SYS_BLOCK = '/sys/block'
MODEL_CTL = '.hdd-model'
# the control file's integer figures (the rest: 'model', 'iops', 'bps',
# 'wait_s')
MODEL_COUNTERS = ('pid', 'reads', 'read_bytes', 'writes', 'write_bytes',
                  'syncs', 'fallocs', 'errors', 'sync_error')


def loop_of(backing, sys_block=SYS_BLOCK):
    """The loop device attached to ``backing``, or None.  From sysfs, not
    ``losetup -j``: once a model's daemon died the kernel calls the file
    its loop device is on "(deleted)", and losetup no longer finds it."""
    try:
        names = sorted(os.listdir(sys_block))
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(sys_block, name, 'loop',
                                   'backing_file')) as fp:
                found = fp.read().rstrip('\n')
        except OSError:
            continue
        if found in (backing, backing + ' (deleted)'):
            return '/dev/' + name
    return None


def read_model(model_dir, timeout=5):
    """The model's control file as a dict, or None when its daemon does
    not answer (a dead FUSE mount fails at once; a stopped daemon would
    hang a read: ``cat`` under a timeout, which kills it)."""
    try:
        proc = subprocess.run(['cat', os.path.join(model_dir, MODEL_CTL)],
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    return parse_model(proc.stdout)


def parse_model(text):
    """``key value`` lines: the counters as ints, iops, bps and wait_s as
    numbers, model as text; None unless model is there."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2:
            continue
        key, value = parts[0], parts[1].strip()
        try:
            if key in MODEL_COUNTERS:
                out[key] = int(value)
            elif key in ('iops', 'bps', 'wait_s'):
                number = float(value)
                out[key] = int(number) if number.is_integer() else number
            else:
                out[key] = value
        except ValueError:
            continue
    return out if out.get('model') else None


def block_stat(loop, sys_block=SYS_BLOCK):
    """reads, writes, flushes completed and busy ms of a block device."""
    name = os.path.basename(loop)
    with open(os.path.join(sys_block, name, 'stat')) as fp:
        stat = [int(v) for v in fp.read().split()]
    # fields 1, 5, 10 and (kernels since 5.5) 16 of Documentation/block/stat
    return {'reads': stat[0], 'writes': stat[4], 'busy_ms': stat[9],
            'flushes': stat[15] if len(stat) > 15 else None}


def device_row(spec, find_loop=None, model_reader=read_model,
               sys_block=SYS_BLOCK):
    node, device, cls, image, model_dir = (spec.split(':', 4) + [''])[:5]
    backing = os.path.join(model_dir, os.path.basename(image)) \
        if model_dir else image
    loop = find_loop(backing) if find_loop else loop_of(backing, sys_block)
    row = {'server': int(node), 'device': device, 'class': cls,
           'loop': loop, 'model': 'fuse-fifo' if model_dir else 'none'}
    model = model_reader(model_dir) if model_dir else None
    if model_dir:
        row.update(model_alive=model is not None,
                   iops_budget=model.get('iops') if model else None,
                   bps_budget=model.get('bps') if model else None,
                   model_pid=model.get('pid') if model else None)
        for key in ('reads', 'writes', 'syncs', 'errors', 'sync_error',
                    'wait_s'):
            row['model_' + key] = model.get(key) if model else None
    else:
        row['iops_budget'] = None
    if loop:
        stat = block_stat(loop, sys_block)
        budget = row.get('iops_budget') or 0
        row.update(stat)
        row.update(read_iops_limit=budget, write_iops_limit=budget,
                   throttle_passed_reads=stat['reads'],
                   throttle_passed_writes=stat['writes'])
    return row


def device_rows(specs, **kwargs):
    return [device_row(spec, **kwargs) for spec in specs]


def _budget(row):
    if row['model'] == 'none':
        return '-'
    if not row.get('model_alive'):
        return 'DEAD'
    return '%g IOPS' % row['iops_budget']


def table(rows):
    lines = ['%-6s %-4s %-11s %-9s %-10s %9s %9s %8s %8s' % (
        'device', 'cls', 'loop', 'model', 'budget', 'reads', 'writes',
        'flushes', 'busy s')]
    for r in rows:
        if not r['loop']:
            lines.append('%-6s %-4s %-11s %-9s %-10s' % (
                r['device'], r['class'], 'DETACHED', r['model'],
                _budget(r)))
            continue
        flushes = '-' if r['flushes'] is None else str(r['flushes'])
        lines.append('%-6s %-4s %-11s %-9s %-10s %9d %9d %8s %8.1f' % (
            r['device'], r['class'], r['loop'], r['model'], _budget(r),
            r['reads'], r['writes'], flushes, r['busy_ms'] / 1000.0))
    models = [r for r in rows if r['model'] != 'none']
    if models:
        bps = {r.get('bps_budget') for r in models if r.get('model_alive')}
        extra = ' + size at %s' % ', '.join(
            '%g MiB/s' % (b / 1048576.0) for b in sorted(bps) if b) \
            if any(bps) else ''
        lines.append('fuse-fifo: one FIFO budget a device that its reads, '
                     'writes and flushes share (1/IOPS s an I/O%s); '
                     'tools/saio.d/hdd-model.c' % extra)
    return '\n'.join(lines)


def main(argv):
    as_json = '--json' in argv
    rows = device_rows([a for a in argv if a != '--json'])
    print(json.dumps(rows, indent=1) if as_json else table(rows))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
