#!/usr/bin/python3
"""make_corpora.py: writes the seed corpora tests/fuzz/corpus/{model,tokfile,decoder}/: small valid inputs and broken ones.

Run it again after changing it (needs numpy, for train/export.py); the files are committed so every build replays them.
Inputs that once crashed a target are kept beside the seeds as regress_<what> (copied from run-fuzzers.sh's output)
and are left alone here.
Each model seed is a random-weight model of a few KB made by train/export.py --random with tiny shapes (its date
fixed, so a rerun in the same checkout gives the same bytes)."""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(HERE, "corpus")
MAX_SEED = 20 * 1024

# ---- model files ---------------------------------------------------------------------------

GGUF_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Gguf:
    """Where things are in a GGUF v3 file, for targeted damage."""

    def __init__(self, b):
        self.b = b
        self.kv = {}        # key -> (entry offset, type offset, value offset)
        self.tensors = []   # (name, info offset, n_dims offset, type offset, data-offset offset)
        pos = 24
        n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
        for _ in range(n_kv):
            start = pos
            key, pos = self.string(pos)
            tpos = pos
            t, = struct.unpack_from("<I", b, pos)
            pos += 4
            self.kv[key] = (start, tpos, pos)
            pos = self.skip(t, pos)
        for _ in range(n_tensors):
            start = pos
            name, pos = self.string(pos)
            n_dims, = struct.unpack_from("<I", b, pos)
            dpos = pos
            pos += 4 + 8 * n_dims
            self.tensors.append((name, start, dpos, pos, pos + 4))
            pos += 12
        self.info_end = pos

    def string(self, pos):
        n, = struct.unpack_from("<Q", self.b, pos)
        return self.b[pos + 8:pos + 8 + n].decode(), pos + 8 + n

    def skip(self, t, pos):
        if t == 8:
            return self.string(pos)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", self.b, pos)
            pos += 12
            for _ in range(n):
                pos = self.skip(et, pos)
            return pos
        return pos + GGUF_SCALAR[t]


def patch(b, pos, fmt, *values):
    b = bytearray(b)
    struct.pack_into(fmt, b, pos, *values)
    return bytes(b)


def export(path, *args):
    """A random model written by export.py into the folder of PATH; run from there with a relative name and with
    its date string overwritten, so that the same arguments give the same bytes."""
    folder, name = os.path.split(path)
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "train", "export.py"), "--random", name, *args],
                   check=True, stdout=subprocess.DEVNULL, cwd=folder)
    with open(path, "rb") as f:
        b = f.read()
    pos = Gguf(b).kv["continuo.provenance.date"][2]
    n, = struct.unpack_from("<Q", b, pos)
    return b[:pos + 8] + b"2000-01-01T00:00:00Z"[:n].ljust(n, b"0") + b[pos + 8 + n:]


def model_corpus(tmp):
    tiny = ["--layers", "1", "--d-model", "4", "--heads", "2", "--d-ff", "8", "--max-rel", "4",
            "--context", "8", "--seed", "1"]
    good = export(os.path.join(tmp, "a.gguf"), *tiny, "--dtype", "f16")
    files = {
        "good_mt310_f16": good,
        "good_mt310_f32_2layers": export(os.path.join(tmp, "b.gguf"), "--layers", "2", "--d-model", "4",
                                         "--heads", "1", "--d-ff", "4", "--max-rel", "4", "--context", "8",
                                         "--dtype", "f32", "--seed", "2"),
        "good_prnn388_f16": export(os.path.join(tmp, "c.gguf"), "--layers", "1", "--d-model", "4",
                                   "--heads", "2", "--d-ff", "8", "--max-rel", "32", "--context", "4",
                                   "--vocab", "prnn388", "--dtype", "f16", "--seed", "3"),
    }
    g = Gguf(good)

    def kv_value(key):
        return g.kv[key][2]

    first = g.tensors[0]
    last = g.tensors[-1]
    align = struct.unpack_from("<I", good, kv_value("general.alignment"))[0]
    data_start = -(-g.info_end // align) * align
    files.update({
        "bad_magic": b"GGUG" + good[4:],
        "bad_version2": patch(good, 4, "<I", 2),
        "bad_version4": patch(good, 4, "<I", 4),
        "bad_n_tensors_huge": patch(good, 8, "<Q", 1 << 60),
        "bad_n_kv_huge": patch(good, 16, "<Q", (1 << 64) - 1),
        "bad_truncated_header": good[:20],
        "bad_truncated_in_kvs": good[:g.kv["continuo.context"][0] + 5],
        "bad_truncated_in_tensor_info": good[:first[1] + 11],
        "bad_truncated_data": good[:data_start + struct.unpack_from("<Q", good, last[4])[0] + 8],
        "bad_key_length_huge": patch(good, 24, "<Q", 1 << 62),
        "bad_kv_type": patch(good, g.kv["continuo.d_model"][1], "<I", 99),
        "bad_kv_wrong_type": patch(good, g.kv["continuo.d_model"][1], "<I", 6),
        "bad_d_model_mismatch": patch(good, kv_value("continuo.d_model"), "<I", 16),
        "bad_context_zero": patch(good, kv_value("continuo.context"), "<I", 0),
        "bad_context_huge": patch(good, kv_value("continuo.context"), "<I", 1 << 20),
        "bad_heads_not_divisor": patch(good, kv_value("continuo.n_heads"), "<I", 3),
        "bad_layers_more": patch(good, kv_value("continuo.n_layers"), "<I", 2),
        "bad_alignment_3": patch(good, kv_value("general.alignment"), "<I", 3),
        "bad_alignment_zero": patch(good, kv_value("general.alignment"), "<I", 0),
        "bad_tensor_type": patch(good, first[3], "<I", 7),
        "bad_tensor_n_dims": patch(good, first[2], "<I", 5),
        "bad_tensor_dim_overflow": patch(good, first[2] + 4, "<Q", 1 << 62),
        "bad_tensor_offset_past_end": patch(good, last[4], "<Q", len(good)),
        "bad_tensor_offset_misaligned": patch(good, last[4], "<Q", struct.unpack_from("<Q", good, last[4])[0] + 2),
        "bad_empty": b"",
    })
    # Two tensors with names of one length: the second renamed as the first.
    same = [(a, b) for a in g.tensors for b in g.tensors if a[1] < b[1] and len(a[0]) == len(b[0])]
    if same:
        a, b = same[0]
        files["bad_tensor_duplicate_name"] = good[:b[1] + 8] + a[0].encode() + good[b[1] + 8 + len(a[0]):]
    if "continuo.vocab.size" in g.kv:
        files["bad_vocab_size"] = patch(good, kv_value("continuo.vocab.size"), "<I", 388)
    return {k: v for k, v in files.items() if v or k == "bad_empty"}


# ---- token files ---------------------------------------------------------------------------

def tokfile(seqs, vocab="mt310", size=310, version=1, n_seqs=None, n_tokens=None, starts=None, tail=b""):
    ids = [i for s, _ in seqs for i in s]
    if starts is None:
        starts = [0]
        for s, _ in seqs:
            starts.append(starts[-1] + len(s))
    b = b"CTOK" + struct.pack("<IIIQ", version, size, len(seqs) if n_seqs is None else n_seqs,
                              len(ids) if n_tokens is None else n_tokens)
    b += vocab.encode().ljust(16, b"\0")
    b += b"".join(struct.pack("<Q", s) for s in starts)
    b += b"".join(struct.pack("<H", i) for i in ids)
    for _, src in seqs:
        b += struct.pack("<H", len(src)) + src
    return b + tail


def tokfile_corpus():
    phrase = [278 + 20, 2 + 39, 178 + 49, 90 + 39, 2 + 43, 178 + 24, 90 + 43, 1]
    two = [(phrase, b"a.mid"), (phrase[:3], b"dir/b.mid")]
    return {
        "good_one": tokfile([(phrase, b"motif.mid")]),
        "good_two": tokfile(two),
        "good_empty_sequence": tokfile([([], b"empty.mid"), (phrase, b"x")]),
        "good_no_sequences": tokfile([]),
        "good_prnn388": tokfile([([356 + 5, 60, 256 + 9, 128 + 60], b"p.mid")], "prnn388", 388),
        "bad_magic": b"CTOX" + tokfile(two)[4:],
        "bad_version": tokfile(two, version=2),
        "bad_vocab_zero": tokfile(two, size=0),
        "bad_vocab_huge": tokfile(two, size=65537),
        "bad_id_out_of_range": tokfile([([5, 310, 7], b"s")]),
        "bad_n_seqs_huge": tokfile(two, n_seqs=0xFFFFFFFF),
        "bad_n_tokens_huge": tokfile(two, n_tokens=1 << 63),
        "bad_starts_not_zero": tokfile(two, starts=[1, 8, 11]),
        "bad_starts_decreasing": tokfile(two, starts=[0, 9, 8]),
        "bad_starts_past_end": tokfile(two, starts=[0, 8, 12]),
        "bad_source_past_end": tokfile([(phrase, b"abc")])[:-2],
        "bad_source_length_missing": tokfile([(phrase, b"")])[:-1],
        "bad_trailing_bytes": tokfile(two, tail=b"\x00\x01"),
        "bad_truncated_header": tokfile(two)[:39],
    }


# ---- decoder id streams --------------------------------------------------------------------

def ids(layout_byte, seq):
    return bytes([layout_byte]) + b"".join(struct.pack("<h", i) for i in seq)


def decoder_corpus():
    # mt310 (bit 0 = 0): NOTE_ON 2.., NOTE_OFF 90.., TIME_SHIFT 178.., VELOCITY 278..
    # prnn388 (bit 0 = 1): NOTE_ON 0.., NOTE_OFF 128.., TIME_SHIFT 256.., VELOCITY 356..
    mt = dict(on=2 - 21, off=90 - 21, ts=177, vel=278)
    pr = dict(on=0, off=128, ts=255, vel=356)

    def phrase(L, n):
        out = []
        for k in range(n):
            p = 60 + (k * 5) % 24
            out += [L["vel"] + (k * 7) % 32, L["on"] + p, L["ts"] + 1 + (k * 13) % 100, L["off"] + p]
        return out

    return {
        "mt310_phrase": ids(0, phrase(mt, 12)),
        "prnn388_phrase": ids(1, phrase(pr, 12)),
        "mt310_hanging_notes": ids(0, [mt["on"] + 60, mt["on"] + 64, mt["ts"] + 50]),
        "mt310_capped_long_note": ids(2 * 4, [mt["on"] + 60] + [mt["ts"] + 100] * 5 + [mt["off"] + 60]),
        "mt310_default_cap": ids(0, [mt["on"] + 72] + [mt["ts"] + 100] * 40),
        "mt310_eos_then_more": ids(0, [mt["on"] + 60, mt["ts"] + 10, 1, mt["on"] + 62, mt["ts"] + 3]),
        "mt310_restruck_same_step": ids(0, [mt["on"] + 60, mt["on"] + 60, mt["ts"] + 5, mt["on"] + 60]),
        "mt310_off_silent_pad": ids(0, [0, mt["off"] + 60, 0, mt["ts"] + 1]),
        "prnn388_out_of_range": ids(1, [-1, 388, 32767, -32768, 60, 256, 188]),
        "prnn388_extremes": ids(1, [0, 127, 256 + 99, 128, 255, 387, 356]),
        "odd_length": ids(0, [mt["on"] + 60])[:-1],
    }


def write(name, files):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    # Inputs the fuzzers found (regress_*) stay; every other file is remade.
    for old in os.listdir(folder):
        if not old.startswith("regress_"):
            os.unlink(os.path.join(folder, old))
    for fname, data in sorted(files.items()):
        if len(data) > MAX_SEED:
            sys.exit(f"{name}/{fname}: {len(data)} bytes, over the {MAX_SEED} byte limit for a seed")
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(data)
    print(f"{folder}: {len(files)} files, {sum(len(d) for d in files.values())} bytes")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        write("model", model_corpus(tmp))
    write("tokfile", tokfile_corpus())
    write("decoder", decoder_corpus())


if __name__ == "__main__":
    main()
