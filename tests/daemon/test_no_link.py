#!/usr/bin/python3
"""test_no_link.py: a continuo built without Ableton Link (-Dlink=disabled) refuses sync = link.

At start (`--set sync=link`) it exits with an error that says why and what
to do; running with another sync, `ctl set sync link` is refused with the
same reason and the service goes on; `ctl tempo 100` is an error.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from servetest import CONTINUO, Service, check, done  # noqa: E402

with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, XDG_RUNTIME_DIR=d, XDG_CONFIG_HOME=d, XDG_CONFIG_DIRS=d, XDG_STATE_HOME=d)
    r = subprocess.run([CONTINUO, "serve", "--set", "model=echo", "--set", "input=null", "--set", "output=none",
                        "--set", "sync=link"], capture_output=True, text=True, env=env, timeout=30)
    print("serve --set sync=link: exit %d: %s" % (r.returncode, r.stderr.strip()[-400:]))
    check(r.returncode != 0, "sync = link in a build without Link stops the start")
    check("built without Ableton Link" in r.stderr and "sync = clock" in r.stderr,
          "the error says the build has no Link and what to use instead")
sv = Service("sync=free")
try:
    reply = sv.request("set sync link")
    print("set sync link:", reply)
    check(reply.startswith("error") and "built without Ableton Link" in reply, "ctl set sync link is refused: " + reply)
    check("sync=free" in sv.request("status"), "the service goes on with sync = free")
    reply = sv.request("tempo 100")
    check(reply.startswith("error") and "sync = link" in reply, "ctl tempo without Link: " + reply)
    rc, _ = sv.stop()
    check(rc == 0, "clean exit")
finally:
    sv.cleanup()
done()
