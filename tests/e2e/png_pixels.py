"""Decodes a PNG screenshot with Python's standard library only (the e2e
screenshot tests: schedule-svg-screenshot.sh, report-screenshot.sh).

    w, h, histogram = read_png(path)   # histogram: {b'rgb': pixel count}
    count(histogram, (r, g, b), tol)   # pixels within tol of a colour

read_png raises PngError with the reason for anything but an 8-bit RGB or
RGBA, non-interlaced PNG with valid chunk CRCs.
"""
import os
import struct
import zlib


class PngError(Exception):
    pass


def read_png(path):
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise PngError('no screenshot was written')
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise PngError('not a PNG (signature %r)' % data[:8])
    chunks, pos = [], 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc, = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise PngError('bad CRC in chunk %r' % kind)
        chunks.append((kind, body))
        pos += 12 + length
        if kind == b'IEND':
            break
    if not chunks or chunks[0][0] != b'IHDR' or chunks[-1][0] != b'IEND':
        raise PngError('PNG without IHDR first and IEND last')
    w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', chunks[0][1])
    channels = {2: 3, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        raise PngError('PNG depth %d, colour type %d, interlace %d: expected 8-bit RGB(A), not interlaced'
                       % (depth, ctype, interlace))
    raw = zlib.decompress(b''.join(body for kind, body in chunks if kind == b'IDAT'))
    stride = w * channels
    if len(raw) != h * (stride + 1):
        raise PngError('%d bytes of image data for %dx%d' % (len(raw), w, h))

    # Undo the per-row filters (PNG spec 9.2).
    histogram, prev = {}, bytearray(stride)
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:
            for i in range(channels, stride):
                row[i] = (row[i] + row[i - channels]) & 255
        elif ftype == 2:
            for i in range(stride):
                row[i] = (row[i] + prev[i]) & 255
        elif ftype == 3:
            for i in range(stride):
                left = row[i - channels] if i >= channels else 0
                row[i] = (row[i] + ((left + prev[i]) >> 1)) & 255
        elif ftype == 4:
            for i in range(stride):
                a = row[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                row[i] = (row[i] + pred) & 255
        elif ftype != 0:
            raise PngError('unknown PNG filter %d in row %d' % (ftype, y))
        for i in range(0, stride, channels):
            px = bytes(row[i:i + 3])
            histogram[px] = histogram.get(px, 0) + 1
        prev = row
    return w, h, histogram


def count(histogram, rgb, tol=3):
    return sum(n for px, n in histogram.items() if all(abs(px[k] - rgb[k]) <= tol for k in range(3)))
