#!/usr/bin/python3
"""make_smf_corpus.py: writes the seed corpus tests/fuzz/corpus/smf/: small good MIDI files of each kind and broken ones.

Run it again after changing it; the files are committed so every build replays them."""
import os
import sys


def vlq(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(out))


def header(fmt, ntrks, division, length=6):
    return b"MThd" + length.to_bytes(4, "big") + fmt.to_bytes(2, "big") + ntrks.to_bytes(2, "big") + \
        division.to_bytes(2, "big")


def chunk(cid, body):
    return cid + len(body).to_bytes(4, "big") + body


def track(*events, eot=True):
    body = b"".join(events)
    if eot:
        body += b"\x00\xff\x2f\x00"
    return chunk(b"MTrk", body)


def ev(delta, *data):
    return vlq(delta) + bytes(data)


def meta(delta, mtype, payload):
    return vlq(delta) + bytes([0xFF, mtype]) + vlq(len(payload)) + payload


def tempo(delta, usec):
    return meta(delta, 0x51, usec.to_bytes(3, "big"))


def notes(n, delta=60, ch=0, start=60):
    out = []
    for i in range(n):
        out.append(ev(0, 0x90 | ch, start + i, 64 + i))
        out.append(ev(delta, 0x80 | ch, start + i, 0))
    return b"".join(out)


def corpus():
    good_f0 = header(0, 1, 480) + track(meta(0, 3, b"Piano"), tempo(0, 500000), notes(6))
    files = {
        # Good files, one of each kind.
        "good_format0": good_f0,
        "good_format1_tempo_map": header(1, 3, 96) +
            track(tempo(0, 500000), tempo(192, 250000), tempo(96, 1000000)) +
            track(meta(0, 3, b"right"), notes(5, 48)) +
            track(tempo(300, 600000), notes(4, 30, 1, 40)),
        "good_running_status": header(0, 1, 96) + track(
            ev(0, 0x92, 60, 80), ev(10, 64, 81), ev(10, 60, 0), ev(0, 0xA2, 64, 30),
            ev(0, 0xB2, 64, 127), ev(5, 64, 0), ev(0, 0xC2, 5), ev(0, 6), ev(0, 0xD2, 50),
            ev(0, 0xE2, 0, 0x40), ev(1, 0x10, 0x41)),
        "good_smpte_25": header(0, 1, 0xE728) + track(notes(3, 1000)),
        "good_smpte_2997": header(0, 1, 0xE30A) + track(notes(3, 2997)),
        "good_sysex_meta_unknown_chunk": header(1, 1, 100) + chunk(b"XFIH", b"\x01\x02\x03") + track(
            ev(0, 0x90, 60, 100), ev(0, 0xF0, 4, 0x43, 0x10, 0x4C, 0xF7), ev(0, 0xF7, 2, 0xF8, 0xFA),
            meta(0, 0x01, b"text"), meta(0, 0x7F, b"\x43\x71\x00"), meta(0, 0x60, b"?"),
            meta(0, 0x58, b"\x04\x02\x18\x08"), ev(50, 61, 90)) + chunk(b"ZZZZ", b""),
        "good_merge_ties": header(1, 4, 1000) + track(tempo(0, 1000000)) +
            track(ev(0, 0x90, 1, 1), ev(0, 0x90, 2, 1), ev(20, 0x90, 3, 1), ev(20, 0x90, 4, 1)) +
            track(ev(0, 0x91, 5, 1), ev(10, 0x91, 6, 1), ev(10, 0x91, 7, 1)) +
            track(ev(5, 0x92, 8, 1), ev(15, 0x92, 9, 1), eot=True),
        "good_pedal": header(0, 1, 480) + track(ev(0, 0xB0, 64, 127), notes(4, 120), ev(0, 0xB0, 64, 0),
                                                ev(0, 0xB0, 67, 100), ev(240, 0xB0, 67, 0)),
        "good_long_delta": header(0, 1, 480) + track(ev(0x0FFFFFFF, 0x90, 60, 1), ev(0x0FFFFFFF, 0x80, 60, 0)),
        "good_header_longer": header(0, 1, 480, length=8) + b"\x00\x00" + track(notes(2)),
        # Recoverable: read with warnings.
        "warn_missing_end_of_track": header(0, 1, 480) + track(notes(3), eot=False),
        "warn_trailing_garbage": good_f0 + b"\x00\x0d\x0a",
        "warn_bytes_after_eot": header(0, 1, 480) + chunk(b"MTrk", notes(2) + b"\x00\xff\x2f\x00\x00\x90"),
        "warn_fewer_tracks": header(1, 3, 480) + track(notes(2)),
        "warn_extra_track": header(0, 1, 480) + track(notes(2)) + track(notes(1)),
        "warn_tempo_zero": header(0, 1, 480) + track(tempo(0, 0), notes(2)),
        # Broken: each gives a one-line error.
        "bad_magic": b"RIFF\x00\x00\x00\x04RMID",
        "bad_truncated_header": header(0, 1, 480)[:10],
        "bad_header_length": header(0, 1, 480, length=200),
        "bad_format2": header(2, 1, 480) + track(notes(1)),
        "bad_truncated_chunk": (header(0, 1, 480) + track(notes(3)))[:-5],
        "bad_truncated_chunk_header": header(1, 2, 480) + track(notes(1)) + b"MTrk\x00",
        "bad_vlq": header(0, 1, 480) + track(b"\xff\xff\xff\xff\x00\x90\x3c\x40"),
        "bad_running_status": header(0, 1, 480) + track(ev(0, 60, 100)),
        "bad_status_as_data": header(0, 1, 480) + track(ev(0, 0x90, 60, 0x90)),
        "bad_data_past_end": header(0, 1, 480) + chunk(b"MTrk", ev(0, 0x90, 60, 100) + ev(0, 0x90, 62)),
        "bad_meta_length": header(0, 1, 480) + track(b"\x00\xff\x51\x02\x07\xa1"),
        "bad_meta_past_end": header(0, 1, 480) + track(b"\x00\xff\x01\x40ab"),
        "bad_sysex_past_end": header(0, 1, 480) + track(b"\x00\xf0\x20\x43\xf7"),
        "bad_smpte_rate": header(0, 1, 0xE128) + track(notes(1)),
        "bad_division_zero": header(0, 1, 0) + track(notes(1)),
        "bad_system_common": header(0, 1, 480) + track(b"\x00\xf2\x00\x00"),
    }
    return files


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "smf")
    os.makedirs(out, exist_ok=True)
    total = 0
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name + ".mid"), "wb") as fp:
            fp.write(data)
        total += len(data)
    print("%d files, %d bytes in %s" % (len(corpus()), total, out))


if __name__ == "__main__":
    main()
