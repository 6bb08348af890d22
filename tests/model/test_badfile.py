"""test_badfile.py: broken model files get one clear error (file, byte, what, how to regenerate), never a crash."""

import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.environ["CONTINUO_SRC"]
sys.path.insert(0, os.path.join(SRC, "train"))
import export  # noqa: E402
from model import ModelConfig  # noqa: E402


def tensor_info_positions(data: bytes):
    """{name: byte offset of its data-offset field} by walking the header."""
    pos = 24
    _, n_t, n_kv = struct.unpack_from("<IQQ", data, 4)

    def skip_string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return p + 8 + n
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    for _ in range(n_kv):
        pos = skip_string(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        pos += 4
        pos = skip_string(pos) if t == 8 else pos + sizes[t]
    out = {}
    for _ in range(n_t):
        (n,) = struct.unpack_from("<Q", data, pos)
        name = data[pos + 8: pos + 8 + n].decode()
        pos += 8 + n
        (nd,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * nd
        out[name] = pos + 4          # after the type
        pos += 12
    return out


def main() -> int:
    load = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        cfg = ModelConfig(vocab_size=310, n_layers=2, d_model=32, n_heads=2, d_ff=64, max_rel=8,
                          context=16, dropout=0.0)
        good = os.path.join(d, "good.gguf")
        export.export_model(export.random_model(cfg, 1), cfg, good, {"data": "test"}, "f32")
        data = open(good, "rb").read()
        kvs, tensors = export.read_gguf(good)
        tlist = list(tensors.items())

        def variant(name, blob=None, kv=None, tl=None):
            p = os.path.join(d, name + ".gguf")
            if blob is not None:
                open(p, "wb").write(blob)
            else:
                k = dict(kv if kv is not None else kvs)
                k.pop("general.alignment", None)
                export.write_gguf(p, k, tl if tl is not None else tlist)
            return p

        offs = tensor_info_positions(data)
        last = list(offs)[-1]
        past = bytearray(data)
        struct.pack_into("<Q", past, offs[last], 1 << 40)
        misaligned = bytearray(data)
        (o,) = struct.unpack_from("<Q", data, offs[last])
        struct.pack_into("<Q", misaligned, offs[last], o + 4)
        bf16 = bytearray(data)
        struct.pack_into("<I", bf16, offs[last] - 4, 30)
        wrong_shape = [(n, np.zeros((32, 33), "<f4") if n == "blk.0.attn_q.weight" else a) for n, a in tlist]
        missing_t = [(n, a) for n, a in tlist if n != "blk.1.ffn_up.bias"]
        kv_no_heads = {k: v for k, v in kvs.items() if k != "continuo.n_heads"}
        kv_str = dict(kvs, **{"continuo.d_model": "thirty-two"})
        kv_d64 = dict(kvs, **{"continuo.d_model": 64})
        kv_arch = dict(kvs, **{"general.architecture": "llama"})
        # int8 rows (models/FORMAT.md): each I8 matrix needs its rows' scales
        good_i8 = os.path.join(d, "good_i8.gguf")
        export.export_model(export.random_model(cfg, 1), cfg, good_i8, {"data": "test"}, "i8")
        kvs8, tensors8 = export.read_gguf(good_i8)
        tl8 = list(tensors8.items())
        i8_no_scale = [(n, a) for n, a in tl8 if n != "blk.1.ffn_down.scale"]
        i8_short_scale = [(n, a[:-1] if n == "blk.0.attn_k.scale" else a) for n, a in tl8]
        i8_rel = [(n, np.zeros(a.shape, "i1") if n == "blk.0.attn_rel.weight" else a) for n, a in tl8]
        # an adapted model's memory of its player (player.pitches, continuo.memory.*)
        kv_mem = dict(kvs, **{"continuo.memory.kmin": 4, "continuo.memory.kmax": 12,
                              "continuo.memory.lambda": 0.8, "continuo.memory.decay": 0.85})
        pitches = np.array([3, 5, 7, 9, 11, -1, 3, 5], "<i4")
        mem_good = variant("mem_good", kv=kv_mem, tl=tlist + [("player.pitches", pitches)])
        mem_f32 = variant("mem_f32", kv=kv_mem, tl=tlist + [("player.pitches", pitches.astype("<f4"))])
        mem_pitch = variant("mem_pitch", kv=kv_mem, tl=tlist + [("player.pitches", np.array([3, 5, 88, 2], "<i4"))])
        mem_nokey = variant("mem_nokey", kv={k: v for k, v in kv_mem.items() if k != "continuo.memory.lambda"},
                            tl=tlist + [("player.pitches", pitches)])
        cases = [
            ("memory of another type", mem_f32, ["player.pitches", "F32", "I32", "regenerate"]),
            ("memory with a pitch outside the layout", mem_pitch, ["player.pitches[2]", "88", "0..87", "byte"]),
            ("memory without its weight", mem_nokey, ["continuo.memory.lambda", "missing"]),
            ("empty", variant("empty", b""), ["too short"]),
            ("truncated header", variant("trunc_head", data[:300]), ["truncated"]),
            ("truncated data", variant("trunc_data", data[:len(data) - 3000]), ["past the end", "regenerate"]),
            ("bad magic", variant("magic", b"GGUG" + data[4:]), ["byte 0", "magic", "regenerate"]),
            ("wrong version", variant("version", data[:4] + struct.pack("<I", 2) + data[8:]), ["byte 4", "version 2", "regenerate"]),
            ("offset past end", variant("past", bytes(past)), ["past the end", last]),
            ("misaligned offset", variant("misaligned", bytes(misaligned)), ["alignment", last]),
            ("unsupported tensor type", variant("bf16", bytes(bf16)), ["BF16", last]),
            ("wrong shape", variant("shape", tl=wrong_shape), ["blk.0.attn_q.weight", "dims", "regenerate"]),
            ("missing tensor", variant("missing_t", tl=missing_t), ["blk.1.ffn_up.bias", "missing", "regenerate"]),
            ("missing key", variant("missing_k", kv=kv_no_heads), ["continuo.n_heads", "missing", "regenerate"]),
            ("key of wrong type", variant("kv_type", kv=kv_str), ["continuo.d_model", "STRING", "regenerate"]),
            ("shape vs hyperparameters", variant("d64", kv=kv_d64), ["token_embd.weight", "dims", "regenerate"]),
            ("other architecture", variant("arch", kv=kv_arch), ["general.architecture", "llama"]),
            ("I8 matrix without its scales", variant("i8_noscale", kv=kvs8, tl=i8_no_scale),
             ["blk.1.ffn_down.scale", "missing", "regenerate"]),
            ("I8 scales of the wrong length", variant("i8_short", kv=kvs8, tl=i8_short_scale),
             ["blk.0.attn_k.scale", "dims", "regenerate"]),
            ("I8 relative table", variant("i8_rel", kv=kvs8, tl=i8_rel), ["blk.0.attn_rel.weight", "I8", "F32 or F16"]),
            ("no such file", os.path.join(d, "nothing.gguf"), ["cannot open", "nothing.gguf"]),
        ]
        for what, path, needles in cases:
            r = subprocess.run([load, path], capture_output=True, text=True)
            err = r.stderr
            ok = r.returncode == 1 and all(n in err for n in needles) and "nothing.gguf" in err if what == "no such file" \
                else r.returncode == 1 and all(n in err for n in needles) and os.path.basename(path) in err
            lines = [l for l in err.splitlines() if l.strip()]
            ok = ok and len(lines) == 1        # one error, logged once
            print(f"{what}: exit {r.returncode}: {err.strip()}")
            if not ok:
                print(f"  FAILED: expected exit 1, one line containing {needles}")
                failures += 1

        # Readers ignore unknown keys and tensors.
        extra = variant("extra", kv=dict(kvs, **{"continuo.future_key": 7, "vendor.note": "x"}),
                        tl=tlist + [("vendor.extra", np.ones(4, "<f4"))])
        for p in (good, extra, good_i8, mem_good):
            r = subprocess.run([load, p], capture_output=True, text=True)
            print(f"{os.path.basename(p)}: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
            if r.returncode != 0 or "d_model 32" not in r.stdout:
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
