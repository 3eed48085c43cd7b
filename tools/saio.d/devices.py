#!/usr/bin/env python3
"""What the hetero profile's devices have served, for ``tools/saio
devices``::

    devices.py BLKIO [--json] NODE:DEVICE:CLASS:IMAGE...

For each device: its loop device, the root blkio group's throttle (read
and write IOPS limits, and the I/Os that passed it: what the kernel counts
per device for every submitter, writeback included) and the block layer's
own statistics (/sys/block/loopN/stat: reads and writes completed,
milliseconds busy), so a reader of a benchmark sees where the time went.
Standard library only: tools/saio runs it before anything is installed.
"""
import json
import os
import subprocess
import sys


def throttle_rules(blkio, name):
    """``{"MAJ:MIN": value}`` of one blkio throttle file."""
    rules = {}
    with open(os.path.join(blkio, name)) as fp:
        for line in fp:
            parts = line.split()
            if len(parts) == 2:
                rules[parts[0]] = int(parts[1])
    return rules


def throttle_served(blkio):
    """``{"MAJ:MIN": {"Read": n, "Write": n, ...}}``: I/Os that passed
    the root group's throttle."""
    served = {}
    with open(os.path.join(blkio, 'blkio.throttle.io_serviced')) as fp:
        for line in fp:
            parts = line.split()
            if len(parts) == 3:
                served.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return served


def loop_of(image):
    return subprocess.run(['losetup', '-n', '-O', 'NAME', '-j', image],
                          capture_output=True, text=True).stdout.strip() \
        or None


def device_rows(blkio, specs):
    read_limits = throttle_rules(blkio, 'blkio.throttle.read_iops_device')
    write_limits = throttle_rules(blkio, 'blkio.throttle.write_iops_device')
    served = throttle_served(blkio)
    rows = []
    for spec in specs:
        node, device, cls, image = spec.split(':', 3)
        loop = loop_of(image)
        row = {'server': int(node), 'device': device, 'class': cls,
               'loop': loop}
        if loop:
            name = os.path.basename(loop.split()[0])
            with open('/sys/block/%s/dev' % name) as fp:
                majmin = fp.read().strip()
            with open('/sys/block/%s/stat' % name) as fp:
                stat = [int(v) for v in fp.read().split()]
            row.update(
                read_iops_limit=read_limits.get(majmin, 0),
                write_iops_limit=write_limits.get(majmin, 0),
                reads=stat[0], writes=stat[4], busy_ms=stat[9],
                throttle_passed_reads=served.get(majmin, {}).get('Read', 0),
                throttle_passed_writes=served.get(majmin, {}).get('Write',
                                                                  0))
        rows.append(row)
    return rows


def table(rows):
    lines = ['%-6s %-4s %-11s %-10s %9s %9s %9s' % (
        'device', 'cls', 'loop', 'IOPS r/w', 'reads', 'writes', 'busy s')]
    for r in rows:
        if not r['loop']:
            lines.append('%-6s %-4s DETACHED' % (r['device'], r['class']))
            continue
        limit = '%s/%s' % (r['read_iops_limit'] or '-',
                           r['write_iops_limit'] or '-')
        lines.append('%-6s %-4s %-11s %-10s %9d %9d %9.1f' % (
            r['device'], r['class'], r['loop'], limit, r['reads'],
            r['writes'], r['busy_ms'] / 1000.0))
    return '\n'.join(lines)


def main(argv):
    blkio, args = argv[0], argv[1:]
    as_json = '--json' in args
    rows = device_rows(blkio, [a for a in args if a != '--json'])
    print(json.dumps(rows, indent=1) if as_json else table(rows))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
