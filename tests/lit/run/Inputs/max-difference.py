"""The largest relative difference between the tensors of two safetensors files.

    max-difference.py A.safetensors B.safetensors

Both files must hold the same tensor names and shapes (f64, f32 or i32); prints
`N tensors, largest relative difference X` (X = max |a - b| / max |b| over
each tensor, the largest of them), or exits 1 naming what differs in kind.
"""
import json
import struct
import sys

FORMATS = {'F64': ('d', 8), 'F32': ('f', 4), 'I32': ('i', 4), 'I64': ('q', 8)}


def read(path):
    data = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        fmt, size = FORMATS[entry['dtype']]
        begin, end = entry['data_offsets']
        count = (end - begin) // size
        out[name] = (entry['shape'], struct.unpack('<%d%s' % (count, fmt), body[begin:end]))
    return out


a, b = read(sys.argv[1]), read(sys.argv[2])
if sorted(a) != sorted(b):
    sys.exit('different tensors: %s and %s' % (sorted(a), sorted(b)))
worst = 0.0
for name in a:
    (sa, va), (sb, vb) = a[name], b[name]
    if sa != sb:
        sys.exit('%s: shape %s and %s' % (name, sa, sb))
    scale = max((abs(x) for x in vb), default=0.0)
    diff = max((abs(x - y) for x, y in zip(va, vb)), default=0.0)
    worst = max(worst, diff / scale if scale > 0 else diff)
print('%d tensors, largest relative difference %.3g' % (len(a), worst))
