#!/usr/bin/env python3
"""pack.py: the training data as compressed token files, to carry to a machine without the data.

A GPU machine lent for one call reaches none of ../shared and has no C engine
to encode MIDI files with, and what travels to it is at most 64 MiB (the
repository included). So the tokens are made here, with `continuo encode`
exactly as data.py makes them for a run (same splits, same stretch
factors), and written compressed into one folder that travels:

    pack.py pack --data ../shared/data/asap --data ../shared/data/maestro-extra \
        --out gpu-pack [--max-mib N] [--continuo build/continuo]
    pack.py unpack gpu-pack DIR        (there: token files into DIR, their list in DIR/tokens.json)

Each source's split is one container (container_bytes: its token files at
every stretch side by side, sequence by sequence, so that xz stores each
stretched copy of a performance mostly as references to the one before it),
compressed with xz. When they do not fit the budget (64 MiB less the
repository's other files and a margin), the stretch factors farthest from 1
go first. The folder holds MANIFEST.json (every token file's source, split,
stretch, events, size and SHA-256; the containers; what was tried and left
out) and the containers. Unpacking checks every file's SHA-256 and needs only
Python and NumPy (the lzma module; the xz program is used when it is there).
"""

import argparse
import datetime
import hashlib
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as data_mod    # noqa: E402
import tokfile             # noqa: E402

FORMAT = 1
MIB = 1 << 20
TRAVEL_LIMIT = 64 * MIB      # what the device tool carries, the repository included
XZ_ARGS = ["-9", "-T1"]      # measured against zstd in docs/TRAINING.md ("The GPU path")
XZ_PRESET = 9


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def repo_travel_bytes(repo: str, skip: str) -> int:
    """Bytes of what the device tool sends besides the pack: the files git
    tracks and the untracked ones it does not ignore, under REPO, except
    those under SKIP. 0 when REPO is not a git checkout."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    skip = os.path.abspath(skip)
    total = 0
    for rel in out.decode("utf-8", "replace").split("\0"):
        p = os.path.join(repo, rel)
        if rel and not os.path.abspath(p).startswith(skip + os.sep) and os.path.isfile(p):
            total += os.path.getsize(p)
    return total


def source_name(path: str) -> str:
    """A short name for a data folder (or its split.tsv): the folder's name."""
    p = os.path.abspath(path)
    if os.path.isfile(p):
        p = os.path.dirname(p)
    return os.path.basename(p).replace("-", "_") or "data"


def compress(src: str, dst: str) -> None:
    """SRC into the xz file DST, with the xz program (python's lzma if absent)."""
    tmp = dst + ".tmp"
    if shutil.which("xz"):
        with open(tmp, "wb") as out:
            subprocess.run(["xz", "-c", *XZ_ARGS, src], stdout=out, check=True)
    else:
        with open(src, "rb") as fi, lzma.open(tmp, "wb", preset=XZ_PRESET) as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
    os.replace(tmp, dst)


def decompress(src: str) -> bytes:
    if shutil.which("xz"):
        return subprocess.run(["xz", "-dc", src], stdout=subprocess.PIPE, check=True).stdout
    with lzma.open(src, "rb") as fh:
        return fh.read()


# ---------------------------------------------------------------------------
# A container: token files (a source's split at several stretches) in one
# stream, sequence by sequence: the first sequence of every file, then the
# second of every file, ... A stretched copy of a performance is nearly the
# unstretched one (the same notes, a few time shifts and orderings changed),
# so with the copies side by side xz stores each after the first mostly as
# references to it.

CONTAINER_MAGIC = b"CTKI"


def container_bytes(paths: list) -> bytes:
    """The container of the token files PATHS (each read with tokfile)."""
    tfs = [tokfile.read(p) for p in paths]
    header = {"files": [{"name": os.path.basename(p), "vocab_name": tf.vocab_name,
                         "vocab_size": tf.vocab_size, "sources": tf.sources,
                         "lens": [len(q) for q in tf.seqs]} for p, tf in zip(paths, tfs)]}
    body = []
    for i in range(max(len(tf.seqs) for tf in tfs)):
        for tf in tfs:
            if i < len(tf.seqs):
                body.append(np.asarray(tf.seqs[i], dtype="<u2").tobytes())
    h = json.dumps(header).encode()
    return CONTAINER_MAGIC + struct.pack("<I", len(h)) + h + b"".join(body)


def container_files(blob: bytes) -> list:
    """[(name, TokenFile)] of a container."""
    if blob[:4] != CONTAINER_MAGIC:
        raise ValueError("not a token container (magic %r)" % blob[:4])
    (n,) = struct.unpack_from("<I", blob, 4)
    files = json.loads(blob[8:8 + n])["files"]
    seqs = [[] for _ in files]
    off = 8 + n
    for i in range(max(len(f["lens"]) for f in files)):
        for k, f in enumerate(files):
            if i < len(f["lens"]):
                seqs[k].append(np.frombuffer(blob, dtype="<u2", count=f["lens"][i], offset=off))
                off += 2 * f["lens"][i]
    if off != len(blob):
        raise ValueError(f"token container: {len(blob) - off} bytes left over")
    return [(f["name"], tokfile.TokenFile(f["vocab_name"], f["vocab_size"], q, f["sources"]))
            for f, q in zip(files, seqs)]


def subset_split(split_file: str, root: str, subset: str, out: str) -> str:
    """A split file OUT with the SUBSET ("N,M") smallest train and valid files
    of SPLIT_FILE (paths relative to ROOT): a dry run's data."""
    n = dict(zip(("train", "valid"), (int(x) for x in subset.split(","))))
    with open(split_file) as fh:
        header = fh.readline()
        cols = header.rstrip("\n").split("\t")
        rows = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
    c_split, c_file = cols.index("split"), cols.index("file")
    keep = []
    for split, count in n.items():
        mine = [r for r in rows if r[c_split] == split]
        mine.sort(key=lambda r: (os.path.getsize(os.path.join(root, r[c_file])), r[c_file]))
        keep += mine[:count]
    data_mod._write_atomic(out, header + "".join("\t".join(r) + "\n" for r in keep))
    return out


def continuo_version(continuo: str) -> str:
    try:
        r = subprocess.run([continuo, "--version"], capture_output=True, text=True, timeout=10)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def stretch_levels(stretches: list) -> list:
    """The stretch sets to try, all first, then without the farthest from 1,
    ... down to 1 alone."""
    order = sorted(stretches, key=lambda x: (round(abs(x - 1.0), 6), x))
    return [sorted(order[:k]) for k in range(len(order), 0, -1)]


def pack(args) -> int:
    t0 = time.time()
    stretches = [float(s) for s in args.stretches.split(",")]
    if 1.0 not in stretches:
        raise SystemExit("pack: the stretches must include 1")
    cache = args.cache or args.out + "-cache"
    os.makedirs(cache, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    continuo = data_mod.find_continuo(args.continuo)
    srcs = data_mod.data_sources({"sources": args.data, "valid_fraction": 0.1}, cache)
    jobs = []        # (name, source, split, stretch, split_file, root)
    names = []
    for k, (path, root, split_file) in enumerate(srcs):
        src = source_name(path)
        if src in names:
            src = f"{src}{len(names)}"
        names.append(src)
        if args.subset:
            split_file = subset_split(split_file, root, args.subset,
                                      os.path.join(cache, f"{src}_subset.tsv"))
        rows = data_mod.split_rows(split_file)
        print(f"pack: source {src}: {path}: {rows.get('train', 0)} train, "
              f"{rows.get('valid', 0)} valid files", flush=True)
        if rows.get("valid"):
            jobs.append((f"{src}_valid_s1.000.tok", src, "valid", 1.0, split_file, root))
        if rows.get("train"):
            jobs += [(f"{src}_train_s{s:.3f}.tok", src, "train", s, split_file, root)
                     for s in stretches]
    if not any(j[2] == "valid" for j in jobs) or not any(j[2] == "train" for j in jobs):
        raise SystemExit("pack: the sources need a valid split and a train split between them")

    def encode(job):
        name, src, split, s, split_file, root = job
        tok = os.path.join(cache, name)
        data_mod.encode(continuo, root, split_file, split, s, args.vocab, tok, skip_bad=True)
        tf = tokfile.read(tok)
        return {"name": name, "source": src, "split": split, "stretch": s,
                "seqs": len(tf.seqs), "events": int(sum(len(q) for q in tf.seqs)),
                "bytes": os.path.getsize(tok), "sha256": sha256(tok)}

    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        files = list(ex.map(encode, jobs))
    print(f"pack: {len(files)} token files encoded ({time.time() - t0:.1f} s)", flush=True)

    def container(group):
        """The xz container of GROUP (file records), cached by their digests."""
        key = hashlib.sha256(json.dumps([(f["name"], f["sha256"]) for f in group]).encode()).hexdigest()
        xz = os.path.join(cache, f"{group[0]['source']}_{group[0]['split']}_{key[:12]}.ctok.xz")
        if not os.path.exists(xz):
            t = time.time()
            raw = xz[:-3]
            with open(raw + ".tmp", "wb") as fh:
                fh.write(container_bytes([os.path.join(cache, f["name"]) for f in group]))
            os.replace(raw + ".tmp", raw)
            compress(raw, xz)
            print(f"pack: {os.path.basename(xz)}: {len(group)} token file(s), "
                  f"{os.path.getsize(raw)} -> {os.path.getsize(xz)} bytes ({time.time() - t:.1f} s)",
                  flush=True)
            os.unlink(raw)
        return {"xz": os.path.basename(xz), "xz_bytes": os.path.getsize(xz),
                "files": [f["name"] for f in group]}

    # The budget: the travel limit less the rest of the repository and a margin.
    if args.max_mib:
        budget = int(args.max_mib * MIB)
        why = f"--max-mib {args.max_mib}"
    else:
        rest = repo_travel_bytes(args.repo, args.out)
        budget = TRAVEL_LIMIT - rest - int(args.margin_mib * MIB)
        why = (f"64 MiB less {rest / MIB:.1f} MiB of repository files and a margin of "
               f"{args.margin_mib} MiB")
    # All stretches if they fit, else fewer: one container per source and split.
    tried = []
    for level in stretch_levels(stretches):
        chosen = [f for f in files if f["split"] == "valid" or f["stretch"] in level]
        groups = {}
        for f in chosen:
            groups.setdefault((f["source"], f["split"]), []).append(f)
        with ThreadPoolExecutor(max(1, args.jobs)) as ex:
            conts = list(ex.map(container, groups.values()))
        used = sum(c["xz_bytes"] for c in conts)
        tried.append({"stretches": level, "xz_bytes": used})
        print(f"pack: stretches {level}: {used / MIB:.2f} MiB (budget {budget / MIB:.2f} MiB)",
              flush=True)
        if used <= budget:
            break
    else:
        raise SystemExit(f"pack: even the unstretched files take {used / MIB:.1f} MiB, over the "
                         f"budget of {budget / MIB:.1f} MiB ({why})")
    for f in os.listdir(args.out):          # a pack is the folder's only content
        if f.endswith(".xz") or f == "MANIFEST.json":
            os.unlink(os.path.join(args.out, f))
    for c in conts:
        dst = os.path.join(args.out, c["xz"])
        try:
            os.link(os.path.join(cache, c["xz"]), dst)
        except OSError:
            shutil.copyfile(os.path.join(cache, c["xz"]), dst)
    left = [f for f in files if f not in chosen]
    manifest = {
        "format": FORMAT,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "continuo": continuo_version(continuo),
        "vocab": args.vocab,
        "sources": {n: os.path.abspath(p) for n, (p, _, _) in zip(names, srcs)},
        "stretches": stretches,
        "compression": "xz " + " ".join(XZ_ARGS) + ", the token files of a source's split "
                       "side by side, sequence by sequence (train/pack.py container_bytes)",
        "budget_bytes": budget,
        "budget": why,
        "tried": tried,
        "containers": conts,
        "files": chosen,
        "left_out": [{k: f[k] for k in ("name", "events")} for f in left],
    }
    data_mod._write_atomic(os.path.join(args.out, "MANIFEST.json"), json.dumps(manifest, indent=1))
    ev = sum(f["events"] for f in chosen if f["split"] == "train")
    raw = sum(f["bytes"] for f in chosen)
    print(f"pack: {args.out}: {len(chosen)} token files in {len(conts)} containers, "
          f"{used / MIB:.2f} MiB ({raw / MIB:.1f} MiB of token files; budget {budget / MIB:.1f} MiB: "
          f"{why}); {ev} train events", flush=True)
    if left:
        print("pack: left out (over the budget): " + ", ".join(f["name"] for f in left), flush=True)
    print(f"pack: done in {time.time() - t0:.1f} s", flush=True)
    return 0


def unpack(args) -> int:
    t0 = time.time()
    with open(os.path.join(args.pack, "MANIFEST.json")) as fh:
        manifest = json.load(fh)
    if manifest.get("format") != FORMAT:
        raise SystemExit(f"{args.pack}: pack format {manifest.get('format')}, expected {FORMAT}")
    os.makedirs(args.dir, exist_ok=True)
    want = {f["name"]: f for f in manifest["files"]}

    def one(c):
        for name, tf in container_files(decompress(os.path.join(args.pack, c["xz"]))):
            dst = os.path.join(args.dir, name)
            tokfile.write(dst, tf)
            got = sha256(dst)
            if got != want[name]["sha256"]:
                raise SystemExit(f"{dst}: SHA-256 {got}, the manifest says {want[name]['sha256']}")

    with ThreadPoolExecutor(max(1, min(args.jobs, len(manifest["containers"])))) as ex:
        list(ex.map(one, manifest["containers"]))
    paths = {f["name"]: os.path.join(args.dir, f["name"]) for f in manifest["files"]}
    out = {"train": [paths[f["name"]] for f in manifest["files"] if f["split"] == "train"],
           "valid": [paths[f["name"]] for f in manifest["files"] if f["split"] == "valid"],
           "vocab": manifest["vocab"]}
    data_mod._write_atomic(os.path.join(args.dir, "tokens.json"), json.dumps(out, indent=1))
    ev = sum(f["events"] for f in manifest["files"] if f["split"] == "train")
    vev = sum(f["events"] for f in manifest["files"] if f["split"] == "valid")
    print(f"unpack: {len(paths)} token files into {args.dir} ({ev} train events, {vev} valid "
          f"events; {time.time() - t0:.1f} s); list in {os.path.join(args.dir, 'tokens.json')}",
          flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Pack token files to carry to a GPU machine, or unpack them there.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="encode the data folders and compress the token files into OUT")
    p.add_argument("--data", action="append", required=True, metavar="PATH",
                   help="a data folder with a split.tsv (repeat for several), as train.py --data")
    p.add_argument("--out", required=True, help="the pack folder (git-ignored, carried)")
    p.add_argument("--cache", help="where the token files are encoded (default OUT-cache)")
    p.add_argument("--continuo", help="the continuo binary (default: $CONTINUO, build/continuo)")
    p.add_argument("--vocab", default="mt310")
    p.add_argument("--stretches", default=",".join(str(s) for s in data_mod.STRETCHES))
    p.add_argument("--jobs", type=int, default=2, help="encodes and compressions at once")
    p.add_argument("--max-mib", type=float, default=0,
                   help="budget for the pack (default: 64 MiB less the repository's files and the margin)")
    p.add_argument("--margin-mib", type=float, default=2.0)
    p.add_argument("--subset", metavar="N,M",
                   help="only the N smallest train and M smallest valid files of each source (a dry run)")
    p.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="the checkout that travels with the pack (its files count against the 64 MiB)")
    u = sub.add_parser("unpack", help="decompress and check a pack's token files into DIR")
    u.add_argument("pack")
    u.add_argument("dir")
    u.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    return pack(a) if a.cmd == "pack" else unpack(a)


if __name__ == "__main__":
    sys.exit(main())
