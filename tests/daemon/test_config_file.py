"""test_config_file.py: config file errors name file:line, the XDG lookup, and continuo.conf matches the option table."""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from servetest import CONTINUO, SRC, check, done  # noqa: E402

tmp = tempfile.mkdtemp(prefix="continuo-conf-")
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "home"),
           XDG_CONFIG_DIRS=os.path.join(tmp, "sys1") + ":" + os.path.join(tmp, "sys2"))


def serve(*args, e=env):
    r = subprocess.run([CONTINUO, "serve"] + list(args), capture_output=True, text=True, env=e,
                       timeout=30)
    return r.returncode, r.stdout, r.stderr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


try:
    # The shipped config file is exactly what the option table documents.
    rc, out, _ = serve("--dump-config")
    with open(os.path.join(SRC, "config", "continuo.conf")) as f:
        shipped = f.read()
    check(rc == 0 and out == shipped,
          "config/continuo.conf differs from `continuo serve --dump-config` (regenerate it)")
    keys = [l[1:].split(" = ")[0] for l in out.splitlines() if l.startswith("#") and " = " in l
            and not l.startswith("# ")]
    for k in ("model", "input", "output", "soundfont", "audio_driver", "audio_file", "recording",
              "phrase_silence_ms", "cc_handover", "response_seconds", "response_events",
              "temperature", "top_p", "top_k", "min_p", "seed", "cc_temperature", "cc_top_p",
              "cc_panic", "cc_reroll", "cc_length", "midi_thru", "max_held_notes", "max_note_ms",
              "lookahead_ms", "on_missing_soundfont"):
        check(k in keys, "key %s documented" % k)
    # The documented file parses back with no warning and gives the defaults.
    uncommented = "".join(l[1:] if l.startswith("#") and not l.startswith("# ") and l != "#\n"
                          else l for l in out.splitlines(True))
    p = write(os.path.join(tmp, "doc.conf"), uncommented)
    rc, out2, err = serve("--config", p, "--check")
    check(rc == 0 and err == "", "uncommented default config parses cleanly (its controller keys "
          "too): %r" % err)

    # Two controller keys on one controller: the file and both keys named, no start.
    p = write(os.path.join(tmp, "clash.conf"), "cc_temperature = 30\ncc_top_p = 30\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 1 and "%s: cc_top_p = 30: controller 30 is cc_temperature's already" % p in err,
          "clashing controllers refused by --check: %r" % err)
    run_env = dict(env, XDG_RUNTIME_DIR=tmp)
    rc, out, err = serve("--config", p, "--set", "model=echo", "--set", "input=null",
                         "--set", "output=none", e=run_env)
    check(rc == 1 and "%s with --set: cc_top_p = 30: controller 30 is cc_temperature's already" % p
          in err, "a start with clashing controllers refused: %r" % err)
    check(not os.path.exists(os.path.join(tmp, "continuo", "ctl")), "no socket: it did not start")
    rc, out, err = serve("--set", "cc_length=20", "--check")
    check(rc == 1 and "--set: cc_length = 20: controller 20 is cc_handover's already" in err,
          "--set clash: %r" % err)
    p = write(os.path.join(tmp, "off.conf"), "cc_panic = -1\ncc_reroll = -1\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 0, "two controllers off is no clash: %r" % err)

    # Unknown key: a warning with file:line, the service still starts (--check).
    p = write(os.path.join(tmp, "unknown.conf"), "# settings\ntemperature = 0.7\ntempreature = 3\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 0, "unknown key is not fatal")
    check("%s:3: unknown key 'tempreature'" % p in err and "warning" in err, "warning: %r" % err)

    # Bad value: an error with file:line and what was expected; exit 1.
    p = write(os.path.join(tmp, "bad.conf"), "top_k = 10\n\nmin_p = lots\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 1, "bad value is fatal")
    check("%s:3: min_p: expected a number from 0 to 1, got 'lots'" % p in err, "error: %r" % err)
    p = write(os.path.join(tmp, "enum.conf"), "on_missing_soundfont = ignore\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 1 and "%s:1: on_missing_soundfont: expected one of error|midi-only" % p in err,
          "enum error: %r" % err)
    p = write(os.path.join(tmp, "syntax.conf"), "\n\nmidi_thru\n")
    rc, out, err = serve("--config", p, "--check")
    check(rc == 1 and "%s:3: expected 'key = value'" % p in err, "syntax error: %r" % err)
    rc, out, err = serve("--config", os.path.join(tmp, "missing.conf"), "--check")
    check(rc == 1 and "missing.conf" in err, "missing file: %r" % err)
    # --set: the same checks.
    rc, out, err = serve("--set", "temperature=hot", "--check")
    check(rc == 2 and "--set temperature=hot: expected a number" in err, "--set error: %r" % err)

    # The XDG lookup: $XDG_CONFIG_HOME first, then each of $XDG_CONFIG_DIRS.
    rc, out, err = serve("--check")
    check(rc == 0 and "built-in defaults" in out, "no file: defaults: %r" % out)
    s2 = write(os.path.join(tmp, "sys2", "continuo", "continuo.conf"), "top_k = 7\n")
    rc, out, err = serve("--check")
    check(rc == 0 and s2 in out, "found in the second XDG_CONFIG_DIRS entry: %r" % out)
    s1 = write(os.path.join(tmp, "sys1", "continuo", "continuo.conf"), "top_k = 8\n")
    rc, out, err = serve("--check")
    check(s1 in out, "the first XDG_CONFIG_DIRS entry wins: %r" % out)
    h = write(os.path.join(tmp, "home", "continuo", "continuo.conf"), "top_k = x\n")
    rc, out, err = serve("--check")
    check(rc == 1 and "%s:1: top_k" % h in err, "XDG_CONFIG_HOME wins: %r" % err)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
done()
