#!/usr/bin/env python3
"""pack.py: the training data as compressed token files, to carry to a machine without the data.

A GPU machine lent for one call reaches none of ../shared and has no C engine
to encode MIDI files with, and what travels to it is at most 64 MiB (the
repository included). So the tokens are made here, with `continuo encode`
exactly as data.py makes them for a run (same splits, same stretch
factors), compressed with xz, and written into one folder that travels:

    pack.py pack --data ../shared/data/asap --data ../shared/data/maestro-extra \\
        --out gpu-pack [--max-mib N] [--continuo build/continuo]
    pack.py unpack gpu-pack DIR        (there: token files into DIR, their list in DIR/tokens.json)

The folder holds MANIFEST.json (every token file's source, split, stretch,
events, size and SHA-256, and what was left out) and one NAME.tok.xz per
token file. When the files do not all fit in the budget, the valid split and
each source's unstretched train split go first, then the stretch factors
nearest to 1, a whole factor (all sources) at a time; the manifest says what
was left out. Unpacking checks every file's SHA-256, and needs only Python
(its lzma module; the xz program is used when it is there).
"""

import argparse
import datetime
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as data_mod    # noqa: E402
import tokfile             # noqa: E402

FORMAT = 1
MIB = 1 << 20
TRAVEL_LIMIT = 64 * MIB      # what the device tool carries, the repository included
XZ_ARGS = ["-9e", "-T1"]     # measured against zstd in docs/TRAINING.md ("The GPU path")


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


def priority(split: str, stretch: float) -> tuple:
    """Packing order: valid, then train at 1, then the stretches nearest to 1."""
    return (0 if split == "valid" else 1, round(abs(stretch - 1.0), 6), stretch)


def compress(src: str, dst: str) -> None:
    """SRC into DST.xz-style file DST, with the xz program (python's lzma if absent)."""
    tmp = dst + ".tmp"
    if shutil.which("xz"):
        with open(tmp, "wb") as out:
            subprocess.run(["xz", "-c", *XZ_ARGS, src], stdout=out, check=True)
    else:
        with open(src, "rb") as fi, lzma.open(tmp, "wb", preset=9 | lzma.PRESET_EXTREME) as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
    os.replace(tmp, dst)


def decompress(src: str, dst: str) -> None:
    tmp = dst + ".tmp"
    if shutil.which("xz"):
        with open(tmp, "wb") as out:
            subprocess.run(["xz", "-dc", src], stdout=out, check=True)
    else:
        with lzma.open(src, "rb") as fi, open(tmp, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
    os.replace(tmp, dst)


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


def pack(args) -> int:
    t0 = time.time()
    stretches = [float(s) for s in args.stretches.split(",")]
    cache = args.cache or os.path.join(args.out + "-cache")
    os.makedirs(cache, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    continuo = data_mod.find_continuo(args.continuo)
    dcfg = {"sources": args.data, "valid_fraction": 0.1}
    srcs = data_mod.data_sources(dcfg, cache)
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
            srcs[k] = (path, root, split_file)
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

    def one(job):
        name, src, split, s, split_file, root = job
        tok = os.path.join(cache, name)
        data_mod.encode(continuo, root, split_file, split, s, args.vocab, tok, skip_bad=True)
        xz = os.path.join(cache, name + ".xz")
        digest = sha256(tok)
        stamp = xz + ".sha256"
        fresh = os.path.exists(xz) and os.path.exists(stamp) and open(stamp).read() == digest
        if not fresh:
            t = time.time()
            compress(tok, xz)
            with open(stamp, "w") as fh:
                fh.write(digest)
            print(f"pack: {name}: {os.path.getsize(tok)} -> {os.path.getsize(xz)} bytes "
                  f"({time.time() - t:.1f} s)", flush=True)
        tf = tokfile.read(tok)
        return {"name": name, "source": src, "split": split, "stretch": s,
                "seqs": len(tf.seqs), "events": int(sum(len(q) for q in tf.seqs)),
                "bytes": os.path.getsize(tok), "sha256": digest,
                "xz": name + ".xz", "xz_bytes": os.path.getsize(xz)}

    with ThreadPoolExecutor(max(1, args.jobs)) as ex:
        files = list(ex.map(one, jobs))

    # What fits: the budget is the travel limit less the rest of the repository.
    if args.max_mib:
        budget = int(args.max_mib * MIB)
        why = f"--max-mib {args.max_mib}"
    else:
        rest = repo_travel_bytes(args.repo, args.out)
        budget = TRAVEL_LIMIT - rest - int(args.margin_mib * MIB)
        why = (f"64 MiB less {rest / MIB:.1f} MiB of repository files and a margin of "
               f"{args.margin_mib} MiB")
    chosen, left = [], []
    used = 0
    groups = {}
    for f in files:
        groups.setdefault(priority(f["split"], f["stretch"]), []).append(f)
    for key in sorted(groups):
        g = groups[key]
        size = sum(f["xz_bytes"] for f in g)
        required = key[0] == 0 or key[1] == 0.0     # valid, and train at 1
        if used + size <= budget or required:
            chosen += g
            used += size
        else:
            left += g
    if used > budget:
        raise SystemExit(f"pack: the valid split and the unstretched train split alone take "
                         f"{used / MIB:.1f} MiB, over the budget of {budget / MIB:.1f} MiB ({why})")
    for f in os.listdir(args.out):          # a pack is the folder's only content
        if f.endswith(".xz") or f == "MANIFEST.json":
            os.unlink(os.path.join(args.out, f))
    for f in chosen:
        dst = os.path.join(args.out, f["xz"])
        try:
            os.link(os.path.join(cache, f["xz"]), dst)
        except OSError:
            shutil.copyfile(os.path.join(cache, f["xz"]), dst)
    manifest = {
        "format": FORMAT,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "continuo": continuo_version(continuo),
        "vocab": args.vocab,
        "sources": {n: os.path.abspath(p) for n, (p, _, _) in zip(names, srcs)},
        "stretches": stretches,
        "compression": "xz " + " ".join(XZ_ARGS),
        "budget_bytes": budget,
        "budget": why,
        "files": chosen,
        "left_out": [{k: f[k] for k in ("name", "events", "xz_bytes")} for f in left],
    }
    data_mod._write_atomic(os.path.join(args.out, "MANIFEST.json"), json.dumps(manifest, indent=1))
    ev = sum(f["events"] for f in chosen if f["split"] == "train")
    raw = sum(f["bytes"] for f in chosen)
    print(f"pack: {args.out}: {len(chosen)} token files, {used / MIB:.2f} MiB compressed "
          f"({raw / MIB:.1f} MiB of token files; budget {budget / MIB:.1f} MiB: {why}); "
          f"{ev} train events", flush=True)
    if left:
        print("pack: left out (over the budget): " +
              ", ".join(f"{f['name']} ({f['xz_bytes'] / MIB:.1f} MiB)" for f in left), flush=True)
    print(f"pack: done in {time.time() - t0:.1f} s", flush=True)
    return 0


def unpack(args) -> int:
    t0 = time.time()
    with open(os.path.join(args.pack, "MANIFEST.json")) as fh:
        manifest = json.load(fh)
    if manifest.get("format") != FORMAT:
        raise SystemExit(f"{args.pack}: pack format {manifest.get('format')}, expected {FORMAT}")
    os.makedirs(args.dir, exist_ok=True)

    def one(f):
        dst = os.path.join(args.dir, f["name"])
        if not (os.path.exists(dst) and os.path.getsize(dst) == f["bytes"] and sha256(dst) == f["sha256"]):
            decompress(os.path.join(args.pack, f["xz"]), dst)
            got = sha256(dst)
            if got != f["sha256"]:
                raise SystemExit(f"{dst}: SHA-256 {got}, the manifest says {f['sha256']}")
        return dst

    with ThreadPoolExecutor(max(1, min(args.jobs, len(manifest["files"])))) as ex:
        paths = list(ex.map(one, manifest["files"]))
    out = {"train": [p for p, f in zip(paths, manifest["files"]) if f["split"] == "train"],
           "valid": [p for p, f in zip(paths, manifest["files"]) if f["split"] == "valid"],
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
