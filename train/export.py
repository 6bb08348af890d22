"""export.py: write a MusicTransformer to a GGUF v3 model file (models/FORMAT.md) and read one back.

No gguf package: the format is small and written here by hand.

    export_model(model, cfg, path, provenance, dtype="f32"|"f16"|"i8")   the trainer calls this
    read_model(path) -> (MusicTransformer, ModelConfig, kv dict)      golden tests, bench_torch
    write_gguf(path, kvs, tensors)                                     low level (numpy only)
    read_gguf(path) -> (kvs, {name: numpy array})                      low level (numpy only)

Run as a script to make a random-weight model:
    /usr/bin/python3 train/export.py --random OUT.gguf [--layers 6 --d-model 512 ...] [--dtype f16]
"""

import argparse
import datetime
import os
import struct
import sys
import tempfile

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 64
ARCH = "continuo-music-transformer"

# GGUF metadata value types.
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, \
    T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = range(13)
# ggml tensor types used here.
GGML_F32, GGML_F16, GGML_I8, GGML_I32 = 0, 1, 24, 26
_NP_OF_GGML = {GGML_F32: np.dtype("<f4"), GGML_F16: np.dtype("<f2"), GGML_I8: np.dtype("i1"),
               GGML_I32: np.dtype("<i4")}
# general.file_type: ggml's numbers for all-F32 and mostly-F16 files; mostly
# I8 (int8 rows with F32 scales) has none in ggml, so continuo's own.
FILE_TYPES = {"f32": 0, "f16": 1, "i8": 1024}


def dtype_of(kvs: dict) -> str:
    """The export dtype ("f32", "f16", "i8") of a file read with these key-values."""
    return {v: k for k, v in FILE_TYPES.items()}.get(int(kvs.get("general.file_type", 0)), "f32")

_GGML_OF_NP = {v: k for k, v in _NP_OF_GGML.items()}

# Vocabulary layouts (must agree with src/codec/vocab.c; the engine checks).
VOCABS = {
    "mt310": dict(size=310, has_pad_eos=1, min_pitch=21, max_pitch=108, n_time_shifts=100,
                  step_ms=10, n_velocity_bins=32, note_on_base=2, note_off_base=90,
                  time_shift_base=178, velocity_base=278),
    "prnn388": dict(size=388, has_pad_eos=0, min_pitch=0, max_pitch=127, n_time_shifts=100,
                    step_ms=10, n_velocity_bins=32, note_on_base=0, note_off_base=128,
                    time_shift_base=256, velocity_base=356),
}

HPARAMS = ("n_layers", "d_model", "n_heads", "d_ff", "max_rel", "context", "vocab_size")


# ----------------------------------------------------------------------------- writer

class _Buf:
    def __init__(self):
        self.parts = []
        self.n = 0

    def put(self, b: bytes):
        self.parts.append(b)
        self.n += len(b)

    def string(self, s: str):
        b = s.encode("utf-8")
        self.put(struct.pack("<Q", len(b)) + b)


def _kv_type(value):
    """(type, packed bytes) of a metadata value; the type is chosen from the Python type."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int):
        t, v = value                        # explicit (type, value)
    elif isinstance(value, bool):
        t, v = T_BOOL, value
    elif isinstance(value, (int, np.integer)):
        t, v = T_UINT32 if 0 <= value < 2**32 else T_INT64, int(value)
    elif isinstance(value, (float, np.floating)):
        t, v = T_FLOAT64, float(value)
    elif isinstance(value, str):
        t, v = T_STRING, value
    else:
        raise TypeError(f"unsupported metadata value {value!r}")
    fmt = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
           T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
           T_FLOAT64: "<d"}
    if t == T_STRING:
        b = v.encode("utf-8")
        return t, struct.pack("<Q", len(b)) + b
    return t, struct.pack(fmt[t], v)


def write_gguf(path: str, kvs: dict, tensors: list) -> None:
    """Writes PATH all or nothing. KVS: ordered {key: value}; TENSORS: [(name, numpy array)]
    with arrays of dtype <f4, <f2, i1 or <i4, in torch (row-major) shape; GGUF dims are written
    innermost first (the reverse)."""
    kvs = dict(kvs)
    kvs["general.alignment"] = (T_UINT32, ALIGNMENT)
    head = _Buf()
    head.put(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kvs)))
    for key, value in kvs.items():
        t, b = _kv_type(value)
        head.string(key)
        head.put(struct.pack("<I", t) + b)
    offset = 0
    blobs = []
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        dt = arr.dtype.newbyteorder("<")
        if dt not in _GGML_OF_NP:
            raise TypeError(f"tensor {name}: dtype {arr.dtype} not storable")
        arr = arr.astype(dt, copy=False)
        head.string(name)
        head.put(struct.pack("<I", arr.ndim) + b"".join(struct.pack("<Q", d) for d in reversed(arr.shape)))
        head.put(struct.pack("<IQ", _GGML_OF_NP[dt], offset))
        data = arr.tobytes()
        blobs.append((offset, data))
        offset += len(data)
        offset += -offset % ALIGNMENT
    data_start = head.n + (-head.n % ALIGNMENT)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b"".join(head.parts))
            f.write(b"\0" * (data_start - head.n))
            pos = 0
            for off, data in blobs:
                f.write(b"\0" * (off - pos))
                f.write(data)
                pos = off + len(data)
            f.write(b"\0" * (-pos % ALIGNMENT))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# ----------------------------------------------------------------------------- reader

def read_gguf(path: str):
    """Returns (kvs, tensors): metadata {key: value} and {name: numpy array in torch shape}."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != GGUF_MAGIC:
        raise ValueError(f"{path}: byte 0: not a GGUF file")
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    if version != GGUF_VERSION:
        raise ValueError(f"{path}: byte 4: GGUF version {version}, expected {GGUF_VERSION}")
    pos = 24

    def string():
        nonlocal pos
        (n,) = struct.unpack_from("<Q", data, pos)
        s = data[pos + 8: pos + 8 + n].decode("utf-8")
        pos += 8 + n
        return s

    scalar = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
              T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
              T_FLOAT64: "<d"}

    def value(t):
        nonlocal pos
        if t == T_STRING:
            return string()
        if t == T_ARRAY:
            et, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [value(et) for _ in range(n)]
        fmt = scalar[t]
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    kvs = {}
    for _ in range(n_kv):
        key = string()
        (t,) = struct.unpack_from("<I", data, pos)
        pos += 4
        kvs[key] = value(t)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (nd,) = struct.unpack_from("<I", data, pos)
        dims = struct.unpack_from("<" + "Q" * nd, data, pos + 4)
        t, off = struct.unpack_from("<IQ", data, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append((name, tuple(reversed(dims)), t, off))
    align = kvs.get("general.alignment", 32)
    data_start = pos + (-pos % align)
    tensors = {}
    for name, shape, t, off in infos:
        dt = _NP_OF_GGML[t]
        count = int(np.prod(shape)) if shape else 1
        tensors[name] = np.frombuffer(data, dtype=dt, count=count, offset=data_start + off).reshape(shape)
    return kvs, tensors


# ----------------------------------------------------------------------------- model <-> file

def _tensor_names(n_layers: int):
    """(GGUF name, state_dict key) pairs in file order."""
    out = [("token_embd.weight", "emb.weight")]
    for i in range(n_layers):
        p = f"blocks.{i}."
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", p + "ln1.weight"), (b + "attn_norm.bias", p + "ln1.bias"),
                (b + "attn_q.weight", p + "attn.wq.weight"), (b + "attn_k.weight", p + "attn.wk.weight"),
                (b + "attn_v.weight", p + "attn.wv.weight"), (b + "attn_output.weight", p + "attn.wo.weight"),
                (b + "attn_rel.weight", p + "attn.er"),
                (b + "ffn_norm.weight", p + "ln2.weight"), (b + "ffn_norm.bias", p + "ln2.bias"),
                (b + "ffn_up.weight", p + "ff1.weight"), (b + "ffn_up.bias", p + "ff1.bias"),
                (b + "ffn_down.weight", p + "ff2.weight"), (b + "ffn_down.bias", p + "ff2.bias")]
    out += [("output_norm.weight", "ln_f.weight"), ("output_norm.bias", "ln_f.bias")]
    return out


def _cfg_dict(cfg) -> dict:
    return cfg.to_dict() if hasattr(cfg, "to_dict") else dict(cfg)


def quantize_rows(a):
    """A 2-D float array as int8 rows and their F32 scales (models/FORMAT.md):
    scale = max |row| / 127 (1 for a row of zeros), q = round(w / scale) to
    nearest even, within -127..127; row r is q[r] * scale[r]."""
    a = np.asarray(a, dtype=np.float32)
    scale = (np.abs(a).max(axis=1) / np.float32(127)).astype(np.float32)
    scale[scale == 0] = 1
    q = np.clip(np.rint(a / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def dequantize_rows(q, scale):
    """quantize_rows's weights as the engine computes with them (float32)."""
    return q.astype(np.float32) * scale.astype(np.float32)[:, None]


def export_model(model, cfg, path: str, provenance: dict = None, dtype: str = "f32", extra=None) -> None:
    """Writes MODEL (a MusicTransformer) with config CFG (ModelConfig or dict) to PATH.
    DTYPE "f16" stores the matrices (embedding, projections, relative embeddings) as
    IEEE half; "i8" stores the embedding and the projections as int8 rows with a
    scale per row (X.weight I8, X.scale F32) and the relative embeddings as half;
    norms and biases stay f32. PROVENANCE: data, steps, valid_nll, date,
    command (missing date/command are filled in), any other key is stored too.
    EXTRA: (kvs, tensors) written as well (an adapted model's memory of its
    player: player_memory.file_parts)."""
    if dtype not in FILE_TYPES:
        raise ValueError(f"dtype {dtype!r}: expected 'f32', 'f16' or 'i8'")
    c = _cfg_dict(cfg)
    vname = c.get("vocab_name", "mt310")
    if vname not in VOCABS:
        raise ValueError(f"unknown vocabulary {vname!r}")
    voc = VOCABS[vname]
    if voc["size"] != c["vocab_size"]:
        raise ValueError(f"vocab_size {c['vocab_size']} != {voc['size']} of {vname}")
    kvs = {"general.architecture": ARCH,
           "general.name": os.path.splitext(os.path.basename(path))[0],
           "general.file_type": (T_UINT32, FILE_TYPES[dtype])}
    for k in HPARAMS:
        kvs["continuo." + k] = (T_UINT32, int(c[k]))
    kvs["continuo.layer_norm_eps"] = (T_FLOAT32, 1e-5)
    kvs["continuo.vocab.name"] = vname
    for k, v in voc.items():
        kvs["continuo.vocab." + k] = (T_UINT32, v)
    prov = dict(provenance or {})
    prov.setdefault("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    prov.setdefault("command", " ".join(sys.argv))
    for k, v in prov.items():
        if v is None:
            continue
        if k == "steps":
            v = (T_UINT64, int(v))
        elif k == "valid_nll":
            v = float(v)
        elif not isinstance(v, (bool, int, float, str)):
            v = str(v)
        kvs["continuo.provenance." + k] = v
    sd = {}
    for k, v in model.state_dict().items():
        for prefix in ("module.", "_orig_mod."):        # DDP / torch.compile wrappers
            if k.startswith(prefix):
                k = k[len(prefix):]
        sd[k] = v.detach().float().cpu().numpy()
    tensors = []
    for name, key in _tensor_names(c["n_layers"]):
        a = sd[key]
        if dtype == "i8" and a.ndim == 2:
            q, scale = quantize_rows(a)
            tensors.append((name, q))
            tensors.append((name[:-len(".weight")] + ".scale", scale.astype("<f4")))
            continue
        if dtype in ("f16", "i8") and a.ndim >= 2:
            a = a.astype("<f2")
        tensors.append((name, a.astype(a.dtype.newbyteorder("<"))))
    if extra:
        kvs.update(extra[0])
        tensors.extend(extra[1])
    write_gguf(path, kvs, tensors)


def read_model(path: str):
    """Loads PATH into a MusicTransformer (float32, eval mode). Returns (model, cfg, kvs)."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from model import ModelConfig, MusicTransformer
    kvs, tensors = read_gguf(path)
    if kvs.get("general.architecture") != ARCH:
        raise ValueError(f"{path}: general.architecture is {kvs.get('general.architecture')!r}, expected {ARCH!r}")
    cfg = ModelConfig(**{k: int(kvs["continuo." + k]) for k in HPARAMS},
                      vocab_name=kvs.get("continuo.vocab.name", "mt310"), dropout=0.0)
    model = MusicTransformer(cfg)

    def weights(name):
        t = tensors[name]
        if t.dtype == np.int8:
            return dequantize_rows(t, tensors[name[:-len(".weight")] + ".scale"])
        return t.astype(np.float32)
    sd = {key: torch.from_numpy(weights(name)) for name, key in _tensor_names(cfg.n_layers)}
    model.load_state_dict(sd)
    model.eval()
    return model, cfg, kvs


def random_model(cfg, seed: int = 0, scale: float = 0.02):
    """A MusicTransformer with random weights (normal, std SCALE; LN gains around 1)."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from model import MusicTransformer
    torch.manual_seed(seed)
    model = MusicTransformer(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * scale)
    model.eval()
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Write a random-weight continuo model file (GGUF), "
                                             "or store a model file's weights in another type.")
    ap.add_argument("--random", metavar="OUT", help="output .gguf path")
    ap.add_argument("--convert", nargs=2, metavar=("IN", "OUT"),
                    help="IN's weights (provenance kept) stored as --dtype in OUT")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--d-ff", type=int, default=2048)
    ap.add_argument("--max-rel", type=int, default=1024)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--vocab", default="mt310", choices=sorted(VOCABS))
    ap.add_argument("--dtype", default="f32", choices=tuple(FILE_TYPES))
    ap.add_argument("--valid-nll", type=float, help="--convert: OUT's validation NLL as measured "
                    "(`continuo eval`; else IN's is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=0.02, help="std of the random weights")
    a = ap.parse_args(argv)
    if bool(a.random) == bool(a.convert):
        ap.error("give one of --random OUT and --convert IN OUT")
    if a.convert:
        src, out = a.convert
        model, cfg, kvs = read_model(src)
        prefix = "continuo.provenance."
        prov = {k[len(prefix):]: v for k, v in kvs.items() if k.startswith(prefix)}
        prov["converted"] = f"from {os.path.basename(src)} (general.file_type {kvs.get('general.file_type')}) to {a.dtype}"
        if a.valid_nll is not None:
            prov["valid_nll_before_conversion"] = prov.get("valid_nll")
            prov["valid_nll"] = a.valid_nll
        export_model(model, cfg, out, prov, a.dtype)
        print(f"{out}: {model.n_params()} parameters, {a.dtype} (from {src})")
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from model import ModelConfig
    cfg = ModelConfig(vocab_size=VOCABS[a.vocab]["size"], vocab_name=a.vocab, n_layers=a.layers,
                      d_model=a.d_model, n_heads=a.heads, d_ff=a.d_ff, max_rel=a.max_rel,
                      context=a.context, dropout=0.0)
    model = random_model(cfg, a.seed, a.scale)
    export_model(model, cfg, a.random, {"data": "random weights", "steps": 0, "valid_nll": float("nan")}, a.dtype)
    print(f"{a.random}: {model.n_params()} parameters, {a.dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
