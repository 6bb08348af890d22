"""tokfile.py: read and write token files (the format `continuo encode` writes; docs/TOKENS.md)."""

import struct

import numpy as np

MAGIC = b"CTOK"
VERSION = 1


class TokenFile:
    """vocab_name, vocab_size, sources (list of str) and seqs (list of uint16 arrays)."""

    def __init__(self, vocab_name: str, vocab_size: int, seqs: list, sources: list):
        self.vocab_name = vocab_name
        self.vocab_size = vocab_size
        self.seqs = seqs
        self.sources = sources


def read(path: str) -> TokenFile:
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 40 or data[:4] != MAGIC:
        raise ValueError(f"{path}: byte 0: not a continuo token file (magic {data[:4]!r})")
    version, vocab_size, n_seqs, n_tokens = struct.unpack_from("<IIIQ", data, 4)
    if version != VERSION:
        raise ValueError(f"{path}: byte 4: token file version {version}, expected {VERSION}")
    vocab_name = data[24:40].rstrip(b"\0").decode()
    off = 40
    starts = np.frombuffer(data, dtype="<u8", count=n_seqs + 1, offset=off)
    off += 8 * (n_seqs + 1)
    tokens = np.frombuffer(data, dtype="<u2", count=n_tokens, offset=off)
    off += 2 * n_tokens
    sources = []
    for _ in range(n_seqs):
        (n,) = struct.unpack_from("<H", data, off)
        sources.append(data[off + 2: off + 2 + n].decode("utf-8", "replace"))
        off += 2 + n
    seqs = [tokens[starts[i]:starts[i + 1]] for i in range(n_seqs)]
    return TokenFile(vocab_name, vocab_size, seqs, sources)


def write(path: str, tf: TokenFile) -> None:
    starts = np.zeros(len(tf.seqs) + 1, dtype="<u8")
    starts[1:] = np.cumsum([len(s) for s in tf.seqs])
    parts = [MAGIC, struct.pack("<IIIQ", VERSION, tf.vocab_size, len(tf.seqs), int(starts[-1])),
             tf.vocab_name.encode().ljust(16, b"\0")[:16], starts.tobytes()]
    parts += [np.asarray(s, dtype="<u2").tobytes() for s in tf.seqs]
    for src in tf.sources:
        b = src.encode()[:65535]
        parts.append(struct.pack("<H", len(b)) + b)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"".join(parts))
    import os
    os.replace(tmp, path)
