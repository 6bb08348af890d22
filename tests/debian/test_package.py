#!/usr/bin/python3
"""test_package.py: the Debian package, built as a user builds it, checked
with lintian, and installed and run in the Debian 12 guest.

1. The source tree (what git tracks, and untracked files it does not ignore)
   is copied to a scratch folder and built with `dpkg-buildpackage -b -us
   -uc`: continuo_<version>_amd64.deb.
2. lintian: no error and no warning.
3. Its contents: the binary, the default model and its card under
   /usr/share/continuo, the user unit under /usr/lib/systemd/user, the man
   page, /etc/xdg/continuo/continuo.conf as a conffile, and a copyright file
   that states the model's license (CC BY-NC-SA 4.0).
4. tests/daemon/test_systemd_user.py with CONTINUO_DEB: dpkg -i in the guest,
   `continuo demo` in an empty folder, `man continuo`, `systemctl --user cat
   continuo`, and the service checks on the packaged unit.

`test_package.py --build` does 1 to 3 and keeps the package in the build
folder (debian-package/, with the SHA-256 of the tree it was built from):
meson test runs it as a parallel test among the first ('debian package
build'), so that dpkg-buildpackage and lintian (about 80 s) overlap the
other parallel tests. Without --build it does 4, with the package kept
there when it was built from the tree as it is now, else after building
it (1 to 3) itself.
Exit 77 (skip) when dpkg-buildpackage or debhelper is missing, or when the
guest cannot be had.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
src = os.environ.get("CONTINUO_SRC", os.path.join(here, "..", ".."))
kept = os.path.join(os.environ.get("CONTINUO_BUILD", tempfile.gettempdir()), "debian-package")
sys.path.insert(0, os.path.join(here, "..", "daemon"))
from servetest import check, done  # noqa: E402

for tool in ("dpkg-buildpackage", "dh", "dpkg-deb"):
    if not shutil.which(tool):
        print("skipped: %s not installed (apt-get install debhelper dpkg-dev)" % tool)
        sys.exit(77)


def tree_files():
    """The tree a user builds: what git tracks, and untracked files it does not ignore."""
    out = subprocess.run(["git", "-C", src, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         capture_output=True, check=True).stdout.split(b"\0")
    return sorted(f.decode() for f in out if f and os.path.isfile(os.path.join(src, f.decode())))


def tree_sha(files):
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0")
        with open(os.path.join(src, f), "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def build(tmp, files):
    """Steps 1 to 3 in TMP: the path of the package, or None when it failed (checked)."""
    tree = os.path.join(tmp, "continuo")
    for f in files:
        os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
        shutil.copy2(os.path.join(src, f), os.path.join(tree, f))
    print("building the package (dpkg-buildpackage -b -us -uc) ...", flush=True)
    r = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout[-4000:])
        check(False, "dpkg-buildpackage failed (exit %d)" % r.returncode)
        return None
    debs = [d for d in glob.glob(os.path.join(tmp, "continuo_*_amd64.deb"))]
    check(len(debs) == 1, "one continuo_<version>_amd64.deb: %r" % debs)
    deb = debs[0]
    print("built", os.path.basename(deb), os.path.getsize(deb), "bytes")
    if shutil.which("lintian"):
        lr = subprocess.run(["lintian", "--allow-root", deb], capture_output=True, text=True)
        tags = [line for line in lr.stdout.splitlines() if re.match(r"[EW]: ", line)]
        print("lintian:", "clean" if not tags else "\n".join(tags))
        check(not tags, "lintian reports no error and no warning")
    else:
        print("lintian not installed: not checked")

    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    paths = {line.split()[-1].lstrip(".") for line in listing.splitlines() if line.split()}
    for want in ("/usr/bin/continuo", "/usr/share/continuo/continuo-default.gguf",
                 "/usr/share/continuo/MODEL_CARD.md", "/usr/lib/systemd/user/continuo.service",
                 "/usr/share/man/man1/continuo.1.gz", "/etc/xdg/continuo/continuo.conf",
                 "/usr/share/doc/continuo/copyright", "/usr/share/continuo/train/adapt.py",
                 "/usr/share/continuo/train/train.py", "/usr/share/continuo/adapt-reference.tok",
                 "/usr/share/continuo/adapt-replay.tok", "/usr/share/continuo/view/index.html",
                 "/usr/share/continuo/view/view.js", "/usr/lib/systemd/user/continuo-view.service"):
        check(want in paths, "the package holds %s" % want)
    ctl = os.path.join(tmp, "control")
    subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
    with open(os.path.join(ctl, "conffiles")) as fh:
        check("/etc/xdg/continuo/continuo.conf" in fh.read().split(), "continuo.conf is a conffile")
    with open(os.path.join(src, "debian", "copyright")) as fh:
        cp = fh.read()
    check(re.search(r"^Files: models/continuo-default.gguf.*\n(.*\n)*?License: CC-BY-NC-SA-4.0", cp, re.M)
          is not None, "debian/copyright gives the model CC BY-NC-SA 4.0")

    return deb


def kept_package(sha):
    """The package --build kept, if it was built from the tree as it is now."""
    try:
        with open(os.path.join(kept, "tree.sha256")) as fh:
            if fh.read().strip() != sha:
                return None
    except OSError:
        return None
    debs = glob.glob(os.path.join(kept, "continuo_*_amd64.deb"))
    return debs[0] if len(debs) == 1 else None


files = tree_files()
sha = tree_sha(files)
tmp = tempfile.mkdtemp(prefix="continuo-deb-")
try:
    if "--build" in sys.argv[1:]:
        deb = build(tmp, files)
        if deb:
            shutil.rmtree(kept, ignore_errors=True)
            os.makedirs(kept)
            shutil.copy2(deb, kept)
            with open(os.path.join(kept, "tree.sha256"), "w") as fh:
                fh.write(sha + "\n")
            print("kept in", kept)
        done()
    deb = kept_package(sha)
    if deb:
        print("the package built from this tree by 'debian package build':", deb)
    else:
        deb = build(tmp, files)
        if not deb:
            done()
    env = dict(os.environ, CONTINUO_DEB=deb)
    g = subprocess.run(["/usr/bin/python3", os.path.join(here, "..", "daemon", "test_systemd_user.py")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(g.stdout[-8000:])
    if g.returncode == 77:
        sys.exit(77)
    check(g.returncode == 0, "the packaged service in the Debian guest (exit %d)" % g.returncode)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()
