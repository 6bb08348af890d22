#!/usr/bin/python3
"""test_accel.py: accel.sh, the accelerator probe of the guest tests, against
a stand-in qemu-system-x86_64 early on PATH (runs anywhere, no qemu needed).

The stand-in behaves as the hosts seen here do: with KVM it hangs after
"Booting from ROM..." (a virtualized Intel Xeon and an AMD EPYC), or aborts
at once in kvm_buf_set_msrs (the AMD EPYC with -cpu max), or boots; with
TCG it boots, printing the marker that the probe's own init echoes (read
from the initramfs the probe hands it), or hangs.  The probe must send a
hanging or aborting KVM to TCG, keep KVM where it boots, probe once per
run, obey CONTINUO_QEMU_ACCEL, and exit 77 (skip) when nothing boots.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "daemon"))
from servetest import check, done  # noqa: E402

ACCEL = os.path.join(here, "accel.sh")

FAKE = r"""#!/bin/sh
# A stand-in qemu-system-x86_64: $FAKE_KVM and $FAKE_TCG say what each does.
[ "$1" = --version ] && { echo "QEMU emulator version 0.0.0 (stand-in)"; exit 0; }
echo "$*" >> "$FAKE_LOG"
accel=tcg
case " $* " in *" -accel kvm "*|*" -enable-kvm "*) accel=kvm;; esac
initrd=""
prev=""
for a in "$@"; do [ "$prev" = -initrd ] && initrd=$a; prev=$a; done
marker=$(cpio -i --quiet --to-stdout init < "$initrd" | sed -n 's/.*echo \(CONTINUO-PROBE-[^ ]*\).*/\1/p')
if [ "$accel" = kvm ]; then mode=$FAKE_KVM; else mode=$FAKE_TCG; fi
printf '\033c\033[?7lSeaBIOS (version stand-in)\r\nBooting from ROM...'
case $mode in
hang) exec sleep 600;;
abort) echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69" >&2
       echo "qemu-system-x86_64: ../../accel/kvm/kvm.c:2871: kvm_buf_set_msrs: Assertion failed." >&2
       kill -ABRT $$;;
boot) printf '\033c\033[?7l\033[2J%s\r\n[    3.7] reboot: Power down\r\n' "$marker"; exit 0;;
esac
"""

def common(call):
    """The output of a function of common.sh (the harness's shared shell code)."""
    return subprocess.run(["sh", "-c", ". %s/common.sh; %s" % (here, call)], capture_output=True, text=True)


if common("static_busybox").returncode != 0:
    print("skipped: no static busybox (apt-get install busybox-static): the probe builds its init with it")
    sys.exit(77)
if not shutil.which("cpio"):
    print("skipped: cpio not installed")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="continuo-accel-test.")
bindir = os.path.join(tmp, "bin")
os.makedirs(bindir)
with open(os.path.join(bindir, "qemu-system-x86_64"), "w") as fh:
    fh.write(FAKE)
os.chmod(os.path.join(bindir, "qemu-system-x86_64"), 0o755)
kernel = os.path.join(tmp, "vmlinuz")
with open(kernel, "wb") as fh:
    fh.write(b"not a kernel: the stand-in never reads it\n")
kvm_dev = os.path.join(tmp, "dev-kvm")          # a writable "/dev/kvm", whatever this machine has
open(kvm_dev, "w").close()
fake_log = os.path.join(tmp, "qemu-calls.log")
accel_args = common("accel_args kvm").stdout.strip()


def probe(kvm, tcg="boot", cache="c1", run="run-1", accel=None):
    """Runs accel.sh with the stand-in; returns (exit, stdout, stderr, the
    qemu calls it made, seconds)."""
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], FAKE_KVM=kvm, FAKE_TCG=tcg,
               FAKE_LOG=fake_log, CONTINUO_QEMU_PROBE_S="3", CONTINUO_QEMU_KVM_DEV=kvm_dev,
               CONTINUO_QEMU_RUN=run, CONTINUO_QEMU_CACHE=os.path.join(tmp, cache))
    env.pop("CONTINUO_QEMU_ACCEL", None)
    if accel:
        env["CONTINUO_QEMU_ACCEL"] = accel
    open(fake_log, "w").close()
    t0 = time.monotonic()
    p = subprocess.run([ACCEL, kernel], env=env, capture_output=True, text=True, timeout=120)
    secs = time.monotonic() - t0
    with open(fake_log) as fh:
        calls = fh.read().splitlines()
    print("KVM %-5s TCG %-4s %-4s -> exit %d, %r in %.1f s, %d qemu call(s); %s"
          % (kvm, tcg, accel or "auto", p.returncode, p.stdout.strip(), secs, len(calls), p.stderr.strip()))
    return p.returncode, p.stdout.strip(), p.stderr, calls, secs


check(accel_args.startswith("-accel kvm"), "common.sh gives the KVM options: %r" % accel_args)

# A KVM that hangs after "Booting from ROM...": TCG, within the probe's limit.
rc, out, err, calls, secs = probe("hang", cache="hang")
check(rc == 0 and out == "tcg", "a hanging KVM is sent to TCG (exit %d, %r)" % (rc, out))
check("no answer" in err and "Booting from ROM" in err, "the reason names the hang and the last line: %r" % err)
check(len(calls) == 2 and accel_args in calls[0] and "-accel tcg" in calls[1],
      "KVM probed with the real run's options (%r), then TCG: %r" % (accel_args, calls))
check(secs < 3 + 30, "the hang is given up after the probe's limit (3 s here): %.1f s" % secs)

# A KVM that aborts at once (the AMD EPYC's kvm_buf_set_msrs): TCG, and why.
rc, out, err, calls, _ = probe("abort", cache="abort")
check(rc == 0 and out == "tcg", "an aborting KVM is sent to TCG (exit %d, %r)" % (rc, out))
check("exit 134" in err and "kvm_buf_set_msrs" in err, "the reason gives qemu's status and message: %r" % err)

# A KVM that boots is kept.
rc, out, err, calls, _ = probe("boot", cache="boots")
check(rc == 0 and out == "kvm", "a booting KVM guest is used (exit %d, %r)" % (rc, out))
check(len(calls) == 1, "TCG is not probed when KVM boots: %d calls" % len(calls))

# Once per run: the same run asks again and gets the answer kept, with no boot;
# a new run (CONTINUO_QEMU_RUN, set by quickstart.sh) probes anew.
rc, out, err, calls, _ = probe("boot", cache="hang")
check(out == "tcg" and not calls and "kept in" in err,
      "the same run reuses its answer without booting: %r, %d calls" % (out, len(calls)))
rc, out, err, calls, _ = probe("boot", cache="hang", run="run-2")
check(out == "kvm" and len(calls) == 1, "a new run probes again: %r, %d calls" % (out, len(calls)))

# Forced either way, nothing is probed.
rc, out, err, calls, _ = probe("hang", cache="f1", accel="kvm")
check(rc == 0 and out == "kvm" and not calls and "forced" in err, "CONTINUO_QEMU_ACCEL=kvm: %r, %d calls" % (out, len(calls)))
rc, out, err, calls, _ = probe("boot", cache="f2", accel="tcg")
check(rc == 0 and out == "tcg" and not calls, "CONTINUO_QEMU_ACCEL=tcg: %r, %d calls" % (out, len(calls)))
rc, out, err, calls, _ = probe("boot", cache="f3", accel="xen")
check(rc == 2 and "kvm, tcg or auto" in err, "CONTINUO_QEMU_ACCEL=xen is refused (exit %d): %r" % (rc, err))

# Nothing boots: skip (77) with the reason, and the next guest skips at once.
rc, out, err, calls, _ = probe("abort", tcg="hang", cache="none")
check(rc == 77 and out == "" and "no guest boots here" in err, "nothing boots: exit 77 (%d): %r" % (rc, err))
rc, out, err, calls, secs = probe("abort", tcg="hang", cache="none")
check(rc == 77 and not calls, "the next guest of the run skips without booting: exit %d, %d calls" % (rc, len(calls)))

shutil.rmtree(tmp, ignore_errors=True)
done()
