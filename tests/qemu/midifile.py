"""midifile.py: just enough Standard MIDI File writing and reading for the qemu tests."""
import struct


def _varlen(n):
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(out))


def encode(events, division=480, usec_per_quarter=500000) -> bytes:
    """A format 0 file; EVENTS are (seconds, bytes) sorted by time."""
    track = bytearray(b"\x00\xff\x51\x03" + struct.pack(">I", usec_per_quarter)[1:])
    ticks_per_s = division * 1e6 / usec_per_quarter
    last = 0
    for t, msg in events:
        tick = int(round(t * ticks_per_s))
        track += _varlen(tick - last) + bytes(msg)
        last = tick
    track += b"\x00\xff\x2f\x00"
    return (b"MThd" + struct.pack(">IHHH", 6, 0, 1, division)
            + b"MTrk" + struct.pack(">I", len(track)) + track)


def read(data):
    """Channel messages of every track, merged: [(seconds, status, d1, d2)].
    Handles running status, meta and SysEx events, one tempo map."""
    if data[:4] != b"MThd":
        raise ValueError("not a MIDI file")
    hlen, _fmt, ntrk, division = struct.unpack(">IHHH", data[4:14])
    pos = 8 + hlen
    raw = []            # (tick, order, status, d1, d2)
    tempos = [(0, 500000)]
    order = 0
    for _ in range(ntrk):
        if data[pos:pos + 4] != b"MTrk":
            raise ValueError("bad track header at byte %d" % pos)
        (tlen,) = struct.unpack(">I", data[pos + 4:pos + 8])
        p, end, tick, running = pos + 8, pos + 8 + tlen, 0, 0
        while p < end:
            delta = 0
            while True:
                b = data[p]
                p += 1
                delta = (delta << 7) | (b & 0x7F)
                if b < 0x80:
                    break
            tick += delta
            b = data[p]
            if b == 0xFF:
                mtype, mlen = data[p + 1], data[p + 2]
                if mtype == 0x51:
                    tempos.append((tick, int.from_bytes(data[p + 3:p + 6], "big")))
                p += 3 + mlen
                continue
            if b in (0xF0, 0xF7):
                n, q = 0, p + 1
                while True:
                    c = data[q]
                    q += 1
                    n = (n << 7) | (c & 0x7F)
                    if c < 0x80:
                        break
                p = q + n
                continue
            if b >= 0x80:
                running = b
                p += 1
            size = 1 if (running & 0xF0) in (0xC0, 0xD0) else 2
            d = data[p:p + size]
            p += size
            raw.append((tick, order, running, d[0], d[1] if size == 2 else 0))
            order += 1
        pos = end
    tempos.sort()

    def seconds(tick):
        t, last_tick, tempo = 0.0, 0, 500000
        for tt, us in tempos:
            if tt > tick:
                break
            t += (tt - last_tick) * tempo / 1e6 / division
            last_tick, tempo = tt, us
        return t + (tick - last_tick) * tempo / 1e6 / division

    return [(seconds(tk), st, d1, d2) for tk, _, st, d1, d2 in sorted(raw)]
