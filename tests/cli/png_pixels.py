#!/usr/bin/env python3
"""png_pixels.py: what a PNG shows, as one line: its size and a hash of its decoded pixels.

    python3 tests/cli/png_pixels.py FILE.png

Prints "WIDTHxHEIGHT, DEPTH-bit RGBA, pixels sha256 HEX".  Two encoders that draw the same
picture print the same line, whatever their filters, compression or chunking: rows are
unfiltered and every pixel is widened to RGBA (grey to RGB, palette entries looked up, alpha
full where the file has none; a tRNS chunk is not applied).  Python's standard library only (zlib), so same_output.sh needs
nothing beyond python3.  Non-interlaced files with 8- or 16-bit samples, or 8-bit palettes;
anything else, or a damaged file, exits 1 with a message naming the file.
"""
import hashlib
import struct
import sys
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}   # samples per pixel, by colour type


class BadPng(Exception):
    pass


def chunks(data):
    """(type, body) of each chunk, CRCs checked."""
    if data[:8] != SIGNATURE:
        raise BadPng("not a PNG (no signature)")
    o = 8
    while o + 12 <= len(data):
        n, kind = struct.unpack(">I4s", data[o:o + 8])
        body, crc = data[o + 8:o + 8 + n], data[o + 8 + n:o + 12 + n]
        if len(crc) < 4 or zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            raise BadPng("chunk %r is cut short or fails its CRC" % kind.decode("latin-1"))
        yield kind, body
        if kind == b"IEND":
            return
        o += 12 + n
    raise BadPng("no IEND chunk")


def read_png(data):
    """The header fields, the palette (or None) and the decompressed image data."""
    header, palette, idat = None, None, []
    for kind, body in chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            idat.append(body)
    if header is None:
        raise BadPng("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if colour not in CHANNELS or interlace != 0 or depth not in (8, 16) or (colour == 3 and depth != 8):
        raise BadPng("unsupported: colour type %d, %d-bit, interlace %d" % (colour, depth, interlace))
    if colour == 3 and palette is None:
        raise BadPng("a palette picture without PLTE")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise BadPng("image data: %s" % e)
    return width, height, depth, colour, palette, raw


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def unfilter(raw, height, stride, bpp):
    """The rows with PNG's per-row filters (none, sub, up, average, Paeth) undone."""
    if len(raw) != height * (stride + 1):
        raise BadPng("image data is %d bytes, not %d" % (len(raw), height * (stride + 1)))
    prev, rows = bytearray(stride), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind > 4:
            raise BadPng("row %d: unknown filter %d" % (y, kind))
        for i in range(stride) if kind else ():
            a = line[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, prev[i], (a + prev[i]) // 2, paeth(a, prev[i], c))[kind]
            line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return rows


def to_rgba(row, colour, depth, palette):
    """One row widened to RGBA samples of DEPTH bits."""
    size = depth // 8
    full = b"\xff" * size
    samples = [row[i:i + size] for i in range(0, len(row), size)]
    n = CHANNELS[colour]
    out = []
    for px in range(0, len(samples), n):
        s = samples[px:px + n]
        if colour == 3:
            entry = palette[s[0][0] * 3:s[0][0] * 3 + 3]
            if len(entry) < 3:
                raise BadPng("palette index %d past the palette" % s[0][0])
            s = [entry[0:1], entry[1:2], entry[2:3]]
        if colour in (0, 4):
            s = [s[0], s[0], s[0]] + s[1:]
        out.append(b"".join(s) + (full if len(s) == 3 else b""))
    return b"".join(out)


def describe(path):
    with open(path, "rb") as f:
        width, height, depth, colour, palette, raw = read_png(f.read())
    bpp = max(1, CHANNELS[colour] * depth // 8)
    digest = hashlib.sha256()
    for row in unfilter(raw, height, width * bpp, bpp):
        digest.update(to_rgba(row, colour, depth, palette))
    return "%dx%d, %d-bit RGBA, pixels sha256 %s" % (width, height, depth, digest.hexdigest())


def main():
    if len(sys.argv) != 2:
        print("usage:" + __doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    try:
        print(describe(sys.argv[1]))
    except OSError as e:
        sys.exit("png_pixels: %s: %s" % (sys.argv[1], e.strerror))
    except BadPng as e:
        sys.exit("png_pixels: %s: %s" % (sys.argv[1], e))


if __name__ == "__main__":
    main()
