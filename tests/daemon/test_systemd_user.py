#!/usr/bin/python3
"""test_systemd_user.py: the user unit, exactly as `meson install` installs it,
under a real user service manager (systemd --user) in a Debian 12 guest.

The guest (tests/qemu/debian-image.sh: mmdebstrap, systemd 252, ALSA
sequencer modules, an ordinary user "player" in the audio group with
lingering) gets `meson install --destdir` of this build under /usr/local and
runs, as that user:
  systemctl --user enable --now continuo, a motif played into the service
  with `aplaymidi -p continuo` (the client's name alone), the answer
  recorded with `arecordmidi -p continuo` and through
  `aconnect continuo 'Midi Through'` (a synth's port, by name),
  systemctl --user reload (same PID, still active), stop, and
  journalctl --user -u continuo; the session journal in the unit's state
directory, valid after `systemctl --user kill -s KILL continuo` and the
restart (mido reads it, the motif in its player track);
the FluidSynth output writes a WAV from inside the sandbox; and the sandbox
is measured from outside (/proc/PID/status, namespaces) and from inside
(nsenter into its mount and network namespaces; `continuo ctl save` to a
path it may not write); and continuo-adapt.service as installed (with a
drop-in for the test's budget) adapts on the journal of a minute played
into the service, and the service, reloaded by the unit, plays the kept
model.  Prints a SANDBOX table that docs/RELIABILITY.md
reports.  Exit 77 (skip) when the guest cannot be built or booted here.

With CONTINUO_DEB=FILE.deb (tests/debian/test_package.py) the guest gets
that Debian package instead, installs it with dpkg -i, and also runs
`continuo demo` in an empty folder, `man continuo` and `systemctl --user
cat continuo` before the same service checks, with /usr/bin/continuo.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
qemu_dir = os.path.join(here, "..", "qemu")
sys.path.insert(0, qemu_dir)
sys.path.insert(0, here)
import clockscene  # noqa: E402
import guest  # noqa: E402
import midifile  # noqa: E402
import servetest  # noqa: E402
from servetest import Daw, check, done  # noqa: E402
sys.path.insert(0, os.path.join(here, "..", "train"))
from test_adapt import arpeggio_notes, arpeggio_reference  # noqa: E402

ADAPT_PLAY_S = 66.0     # a little over the minute of playing adapt asks for
# The unit's budget in the test: a number of steps, so that the verdict does
# not hang on the machine's speed (in a CI run on a slower machine the three
# minutes this was once, PyTorch's start under TCG included, left no step:
# "not kept"), and the minutes as a cap that the step ends well before.  A
# step takes about 60 s under TCG here; the whole unit 150 s.
ADAPT_STEPS = 1
ADAPT_MINUTES = 6.0

deb = os.environ.get("CONTINUO_DEB")
build = os.environ.get("CONTINUO_BUILD")
if not deb and (not build or not os.path.exists(os.path.join(build, "build.ninja"))):
    print("skipped: CONTINUO_BUILD is not a meson build folder")
    sys.exit(77)
BIN = "/usr/bin/continuo" if deb else "/usr/local/bin/continuo"

# The motif: 8 notes, 0.2 s apart, on channel 2 (MIDI thru sends it back on 2;
# the model answers on channel 1).
motif = []
for i, key in enumerate([60, 64, 67, 72, 71, 67, 64, 62]):
    motif.append((0.1 + 0.2 * i, [0x91, key, 64 + 4 * i]))
    motif.append((0.1 + 0.2 * i + 0.15, [0x81, key, 0]))
motif.sort(key=lambda e: e[0])

config = """\
# The player's own settings (~/.config/continuo/continuo.conf).
output = fluidsynth,alsa
audio_driver = file
audio_file = /run/user/1000/continuo-out.wav
phrase_silence_ms = 400
response_seconds = 3
seed = 7
"""

run_sh = r"""#!/bin/sh
# Runs as root in the Debian guest once it has booted (continuo-guest.service).
rc=0
fail() { echo "GUEST-FAIL: $*"; rc=1; }
as_player() { runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 HOME=/home/player "$@"; }
wait_for() {  # SECONDS COMMAND...: until COMMAND succeeds
    n=$(($1 * 10)); shift
    while ! "$@" >/dev/null 2>&1; do
        n=$((n - 1)); [ $n -le 0 ] && return 1
        sleep 0.1
    done
}
# A section's heading, with the seconds the guest script has run (CI's time).
T_START=$(date +%s)
section() { echo "== $* [at $(($(date +%s) - T_START)) s]"; }
section "guest: kernel $(uname -r), $(systemctl --version | head -n 1)"
id player
BIN=@BIN@
if [ -f /guest/continuo.deb ]; then
    section "the Debian package"
    dpkg -i /guest/continuo.deb > /tmp/dpkg.out 2>&1; echo "DPKG $?"
    grep -iE "depends|error|problem" /tmp/dpkg.out | head -n 5
    dpkg -s continuo | sed -n 's/^\(Status\|Version\): /PKG \1 /p'
    install -d -o player -g player /tmp/empty
    # Half a second of continuation (the least demo takes): the whole path (the installed model and
    # motif found, continued, written) at the least cost.  Under TCG the default 12 s took 363 s with
    # the 5.7 M model; 2 s with the int8 one took 385 of this test's 490 s; under callgrind 0.5 s is
    # half of 2 s's instructions (the prompt's prefill and the first steps of 8 candidates are the rest)
    (cd /tmp/empty && as_player continuo demo --seconds 0.5 > /tmp/demo.out 2>&1); echo "DEMO $? $(ls /tmp/empty | tr '\n' ' ')"
    tail -n 4 /tmp/demo.out
    echo "DEMOMODEL $(sed -n 's/^continuing the motif with \([^ ]*\) .*/\1/p' /tmp/demo.out)"
    echo "MAN $(as_player man continuo 2>/dev/null | grep -c 'continuo.service')"
    echo "CAT $(as_player systemctl --user cat continuo 2>&1 | head -n 1)"
fi
wait_for 120 test -S /run/user/1000/systemd/private || fail "the user manager of player never started"
install -d -o player -g player -m 700 /home/player/.config /home/player/.config/continuo /home/player/Music
install -o player -g player -m 600 /guest/continuo.conf /home/player/.config/continuo/continuo.conf
# Under TCG the shipped model decodes about 0.2 s an event (a thousand times
# slower than here): the service answers with the small test model instead.
echo "ACCEL $(cat /guest/accel)"
if [ "$(cat /guest/accel)" = tcg ]; then
    echo "model = @TINY@" >> /home/player/.config/continuo/continuo.conf
    echo "MODEL the small test model (TCG)"
else
    echo "MODEL the shipped default model"
fi
echo host-tmp > /tmp/host-marker

section "systemctl --user enable --now continuo"
as_player systemctl --user daemon-reload
as_player systemctl --user cat continuo | head -n 1
as_player systemctl --user enable --now continuo || fail "systemctl --user enable --now continuo"
STATE=$(as_player systemctl --user is-active continuo)
PID=$(as_player systemctl --user show -p MainPID --value continuo)
echo "STATE $STATE"
echo "MAINPID $PID"
[ "$STATE" = active ] || { fail "not active"; as_player systemctl --user status continuo --no-pager; }
wait_for 30 sh -c "aconnect -l | grep -q \"'continuo'\"" || fail "no continuo client on the sequencer"
aconnect -l | sed -n "/'continuo'/,/^client/p"

section "continuo doctor, as the player, with the sequencer"
as_player $BIN doctor > /tmp/doctor.out 2>&1; echo "DOCTOR $?"
sed 's/^/DOC /' /tmp/doctor.out
section "sandbox, from outside"
grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters|CapBnd|CapEff|CapPrm|CapAmb):' /proc/$PID/status | sed 's/^/STATUS /'
for ns in user mnt net uts ipc cgroup; do
    if [ "$(readlink /proc/$PID/ns/$ns)" = "$(readlink /proc/1/ns/$ns)" ]; then echo "NS $ns shared"; else echo "NS $ns own"; fi
done
echo "UIDMAP $(tr -s ' ' < /proc/$PID/uid_map)"
section "sandbox, from inside its namespaces"
nsenter -t $PID -n ip -o link | awk '{ sub(":", "", $2); print "NETDEV", $2 }'
# As root, in its mount namespace: what is mounted read-only for everyone.
nsenter -t $PID -m sh -c '
    try() { if "$@" 2>/dev/null; then echo ok; else echo denied; fi; }
    echo "ROOTWRITE /usr $(try touch /usr/probe)"
    echo "ROOTWRITE /etc $(try touch /etc/probe)"
    rm -f /usr/probe /etc/probe'
# As the service's user, in its mount namespace: what the service itself may do.
nsenter -t $PID -m setpriv --reuid=1000 --regid=1000 --init-groups sh -c '
    try() { if "$@" 2>/dev/null; then echo ok; else echo denied; fi; }
    echo "WRITE /home/player $(try touch /home/player/probe)"
    echo "WRITE /home/player/Music $(try touch /home/player/Music/probe)"
    echo "WRITE /run/user/1000 $(try touch /run/user/1000/probe)"
    echo "WRITE /tmp $(try touch /tmp/probe)"
    if [ -e /tmp/host-marker ]; then echo "TMP shared"; else echo "TMP private"; fi
    n=0; for p in /proc/[0-9]*; do [ "$(stat -c %u $p 2>/dev/null)" != 1000 ] && n=$((n + 1)); done
    echo "PROCS_OTHERS $n"
    if [ -e /proc/meminfo ]; then echo "PROCSUBSET all"; else echo "PROCSUBSET pid"; fi
    rm -f /home/player/Music/probe /run/user/1000/probe /tmp/probe'
ls /proc/[0-9]* -d | wc -l | sed 's/^/PROCS_HOST /'
section "devices: the installed unit's sandbox, running a probe"
U=$(as_player systemctl --user show -p FragmentPath --value continuo)
probe() {  # NAME SED-EXPRESSION: a copy of the unit that opens /dev/fuse once
    sed -e 's|^ExecStart=.*|ExecStart=/bin/sh -c "true < /dev/fuse \&\& echo open > %t/'$1'.out \|\| echo denied > %t/'$1'.out"|' \
        -e 's/^Type=.*/Type=oneshot/' -e '/^ExecReload=/d' -e '/^WatchdogSec=/d' -e '/^NotifyAccess=/d' \
        -e '/^Restart/d' -e "$2" "$U" > /home/player/.config/systemd/user/$1.service
    as_player systemctl --user daemon-reload
    as_player systemctl --user start $1.service
    cat /run/user/1000/$1.out 2>/dev/null || echo "no-result"
}
if [ -c /dev/fuse ]; then
    echo "DEVICES without-policy $(probe probe-open '/^PrivateDevices=/d') as-installed $(probe probe-unit 's/^x//')"
else
    echo "DEVICES untested (no /dev/fuse)"
fi
section "the service itself, asked to write"
echo "SAVE home $(as_player $BIN ctl save /home/player/outside.mid 2>&1 | head -n 1)"
echo "SAVE music $(as_player $BIN ctl save /home/player/Music/session0.mid 2>&1 | head -n 1)"
[ -f /home/player/Music/session0.mid ] && echo "SAVED music exists"
[ -f /home/player/outside.mid ] && echo "SAVED home exists"

section "MIDI by name: aplaymidi -p continuo, arecordmidi -p continuo, aconnect continuo 'Midi Through'"
aconnect continuo 'Midi Through' || fail "aconnect continuo 'Midi Through'"
arecordmidi -p 14:0 /tmp/synth.mid & R1=$!
arecordmidi -p continuo /tmp/rec.mid & R2=$!
sleep 1
aplaymidi -p continuo /guest/motif.mid || fail "aplaymidi -p continuo"
wait_for 90 sh -c "runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 $BIN ctl status | grep -q 'responses=[1-9]'" \
    || fail "no answer within 90 s"
sleep 6
kill -INT $R1 $R2; wait $R1 $R2
as_player $BIN ctl status | sed 's/^/CTL /'

section "systemctl --user reload continuo"
as_player systemctl --user reload continuo || fail "reload"
sleep 2
PID2=$(as_player systemctl --user show -p MainPID --value continuo)
echo "RELOAD pid $PID -> $PID2 $(as_player systemctl --user is-active continuo)"
for ns in user mnt net uts ipc; do
    if [ "$(readlink /proc/$PID2/ns/$ns)" = "$(readlink /proc/1/ns/$ns)" ]; then echo "NS2 $ns shared"; else echo "NS2 $ns own"; fi
done

section "systemctl --user stop continuo"
as_player systemctl --user stop continuo || fail "stop"
echo "STOPPED $(as_player systemctl --user is-active continuo) $(as_player systemctl --user show -p Result --value continuo) NRestarts=$(as_player systemctl --user show -p NRestarts --value continuo)"
W=/run/user/1000/continuo-out.wav
if [ -f $W ]; then
    echo "WAV bytes $(stat -c %s $W) nonzero $(tail -c +45 $W | tr -d '\000' | wc -c)"
else
    echo "WAV missing"
fi
echo "BEGIN journal"
as_player journalctl --user -u continuo --no-pager -o cat 2>&1 | tail -n 60
echo "END journal"
if [ ! -f /guest/continuo.deb ]; then
    # The watchdog: the stall engine plays echo's first note and hangs in
    # the engine. The service stops its WATCHDOG=1 pings, the user manager
    # kills it (WatchdogSec) and starts it again (Restart=on-failure); the
    # new one sends all notes off on its output first. The output is a FIFO
    # that outlives both (a reader that holds it open read-write).
    section "watchdog: a generator that hangs in the engine"
    as_player mkfifo /run/user/1000/wd.fifo
    sh -c 'exec cat 0<> /run/user/1000/wd.fifo > /tmp/wd.raw' & WDR=$!
    install -o player -g player -m 600 /guest/stall.conf /home/player/.config/continuo/continuo.conf
    as_player systemctl --user start continuo || fail "systemctl --user start continuo (stall)"
    WPID=$(as_player systemctl --user show -p MainPID --value continuo)
    wait_for 30 sh -c "aconnect -l | grep -q \"'continuo'\"" || fail "no continuo client (stall)"
    aplaymidi -p continuo /guest/motif.mid || fail "aplaymidi -p continuo (stall)"
    T0=$(date +%s.%N)
    wait_for 90 sh -c "[ \$(runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user show -p NRestarts --value continuo) -ge 1 ]" \
        || fail "the stalled service was not restarted within 90 s"
    wait_for 30 sh -c "runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 $BIN ctl status" || fail "no answer after the restart"
    T1=$(date +%s.%N)
    WPID2=$(as_player systemctl --user show -p MainPID --value continuo)
    echo "WATCHDOG restarted $(awk -v a=$T0 -v b=$T1 'BEGIN { printf "%.1f", b - a }') pid $WPID -> $WPID2 NRestarts=$(as_player systemctl --user show -p NRestarts --value continuo) $(as_player systemctl --user is-active continuo)"
    as_player systemctl --user stop continuo
    sleep 0.3
    kill $WDR
    as_player journalctl --user -u continuo --no-pager -o cat | grep -E "no progress|[Ww]atchdog|Scheduled restart|stall engine" | sed 's/^/WDLOG /'
    echo "BEGIN wd.raw"
    od -An -tx1 -v /tmp/wd.raw
    echo "END wd.raw"
fi
if [ -x /guest/seq_daw ]; then
    # The service again, started by its unit, with the settings of
    # test_clock.py (the echo engine: the model's speed under emulation is
    # not what is measured here), and seq_daw playing a DAW into it.
    section "MIDI clock and transport over the sequencer: seq_daw <-> continuo, sync = clock"
    install -o player -g player -m 600 /guest/clock.conf /home/player/.config/continuo/continuo.conf
    as_player systemctl --user start continuo || fail "systemctl --user start continuo (clock)"
    wait_for 30 sh -c "aconnect -l | grep -q \"'continuo'\"" || fail "no continuo client for the clock"
    as_player /guest/seq_daw continuo /guest/clock.script > /tmp/daw.log 2> /tmp/daw.err; echo "DAW $?"
    cat /tmp/daw.err
    sleep 0.3
    echo "CLOCKSTATUS $(as_player $BIN ctl status 2>&1)"
    as_player journalctl --user -u continuo --no-pager -o cat | grep "phrase not answered" | sed 's/^/CLOCKLOG /'
    as_player systemctl --user stop continuo
    echo "BEGIN daw.log"
    cat /tmp/daw.log
    echo "END daw.log"
fi
if [ -x /guest/link_peer ]; then
    # sync = link under the unit: its network is private (doctor says so);
    # the shipped drop-in opens it, and a Link peer in the guest's network
    # (lo: qemu gives the guest no other) is seen and followed.
    section "sync = link under the unit, without and with the link.conf drop-in"
    install -o player -g player -m 600 /guest/link.conf.user /home/player/.config/continuo/continuo.conf
    as_player $BIN doctor 2>&1 | grep "sync" | sed 's/^/LINKDOC0 /'
    install -d -o player -g player /home/player/.config/systemd/user/continuo.service.d
    install -o player -g player -m 644 @SHARE@/link.conf /home/player/.config/systemd/user/continuo.service.d/link.conf
    as_player systemctl --user daemon-reload
    echo "LINKUNIT $(as_player systemctl --user show -p PrivateNetwork --value continuo) $(as_player systemctl --user show -p RestrictAddressFamilies --value continuo)"
    as_player $BIN doctor 2>&1 | grep "sync" | sed 's/^/LINKDOC1 /'
    { echo "tempo 133"; sleep 12; echo state; echo quit; } | /guest/link_peer 4 > /tmp/peer.out 2>&1 &
    PEER=$!
    sleep 1                     # the peer's session is the older one: continuo joins it
    as_player systemctl --user start continuo || fail "systemctl --user start continuo (link)"
    wait_for 10 sh -c "runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 $BIN ctl status | grep -q 'link_peers=1 link_tempo=133.000'" \
        || fail "continuo under the unit with the drop-in did not see the peer at 133 BPM"
    echo "LINKSTATUS $(as_player $BIN ctl status 2>&1 | grep -o 'sync=[a-z]* tempo=[0-9.]*\|link=.*link_stops=[0-9]*' | tr '\n' ' ')"
    as_player $BIN ctl tempo 97 | sed 's/^/LINKTEMPO /'
    wait $PEER
    grep "^ok peers" /tmp/peer.out | sed 's/^/LINKPEER /'
    as_player systemctl --user stop continuo
    rm -rf /home/player/.config/systemd/user/continuo.service.d
    as_player systemctl --user daemon-reload
fi
# The session journal under the unit: written in its state directory
# (StateDirectory=continuo), and valid after systemctl --user kill -s KILL.
section "the journal: systemctl --user kill -s KILL continuo, then the restart"
install -o player -g player -m 600 /guest/continuo.conf /home/player/.config/continuo/continuo.conf
[ "$(cat /guest/accel)" = tcg ] && echo "model = @TINY@" >> /home/player/.config/continuo/continuo.conf
as_player systemctl --user start continuo || fail "systemctl --user start continuo (journal)"
wait_for 30 sh -c "aconnect -l | grep -q \"'continuo'\"" || fail "no continuo client (journal)"
# StateDirectory= of a user unit: ~/.local/state/continuo, or ~/.config/continuo
# under systemd 252's user manager (Debian 12's); the service says which.
JD=$(for d in /home/player/.local/state/continuo/journal /home/player/.config/continuo/journal; do
        [ -d $d ] && echo $d; done | head -n 1)
KPID=$(as_player systemctl --user show -p MainPID --value continuo)
R0=$(as_player systemctl --user show -p NRestarts --value continuo)
aplaymidi -p continuo /guest/motif.mid || fail "aplaymidi -p continuo (journal)"
sleep 2.5                                   # the motif ended more than a second ago
J=$(ls $JD/session-*.mid 2>/dev/null | sort | tail -n 1)
echo "JOURNALDIR $(ls $JD 2>&1 | tr '\n' ' ')"
as_player systemctl --user kill -s KILL continuo || fail "systemctl --user kill -s KILL continuo"
wait_for 30 sh -c "[ \$(runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 systemctl --user show -p NRestarts --value continuo) -gt $R0 ]" \
    || fail "the killed service was not restarted within 30 s"
wait_for 30 sh -c "runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 $BIN ctl status" || fail "no answer after the restart (journal)"
echo "KILLED pid $KPID -> $(as_player systemctl --user show -p MainPID --value continuo) $(as_player systemctl --user is-active continuo) file ${J:-none}"
as_player $BIN inspect "$J" > /tmp/inspect.out 2>&1; echo "JINSPECT $?"
head -n 3 /tmp/inspect.out | sed 's/^/JI /'
as_player $BIN journal list 2>&1 | sed 's/^/JLIST /'
as_player systemctl --user stop continuo
if [ ! -f /guest/continuo.deb ]; then
    # continuo-adapt.service as installed (its sandbox, ExecStartPost's ctl
    # reload), with a drop-in that sets the test's budget: the small test
    # model to start from, one step, a reference of the same kind of
    # music.  The service writes the journal of a minute of playing with
    # that model, then plays model = auto, which takes the kept model on the
    # unit's reload.
    section "continuo-adapt: a minute of playing, systemctl --user start continuo-adapt, the service's reload"
    install -o player -g player -m 600 /guest/adapt.conf /home/player/.config/continuo/continuo.conf
    install -d -o player -g player /home/player/.config/systemd/user/continuo-adapt.service.d
    install -o player -g player -m 644 /guest/adapt-budget.conf \
        /home/player/.config/systemd/user/continuo-adapt.service.d/budget.conf
    as_player systemctl --user daemon-reload
    as_player systemctl --user start continuo || fail "systemctl --user start continuo (adapt)"
    wait_for 30 sh -c "aconnect -l | grep -q \"'continuo'\"" || fail "no continuo client (adapt)"
    echo "ADAPTMODEL0 $(as_player $BIN ctl status 2>&1 | grep -o ' model=[^ ]*')"
    N0=$(ls $JD/session-*.mid 2>/dev/null | wc -l)
    aplaymidi -p continuo /guest/minute.mid || fail "aplaymidi -p continuo (a minute)"
    # The part being played is appended to a log beside the session's file
    # and folded into the file's two tracks in the next pause (3 s); adapt
    # reads the files.
    wait_for 60 sh -c "F=\$(ls $JD/session-*.mid | sort | tail -n 1); [ \$(ls $JD/session-*.mid | wc -l) -gt $N0 ] \
        && $BIN inspect \$F | grep -q 'notes: [1-9][0-9][0-9]'" \
        || fail "the minute played was not folded into a session file of the journal"
    as_player $BIN journal list 2>&1 | sed 's/^/ADAPTJLIST /'
    sed -i 's|^model = .*|model = auto|' /home/player/.config/continuo/continuo.conf
    T0=$(date +%s)
    as_player systemctl --user start continuo-adapt; A=$?
    echo "ADAPTUNIT $A $(($(date +%s) - T0)) $(as_player systemctl --user show -p Result --value continuo-adapt)"
    as_player journalctl --user -u continuo-adapt --no-pager -o cat 2>&1 | grep -v "^adapt \[" | tail -n 30 | sed 's/^/ADAPTLOG /'
    AD=$(dirname $JD)/adapted
    echo "ADAPTED $(ls $AD 2>&1 | tr '\n' ' ')"
    cat $AD/*.card 2>/dev/null | sed 's/^/ADAPTCARD /'
    wait_for 60 sh -c "runuser -u player -- env XDG_RUNTIME_DIR=/run/user/1000 $BIN ctl status | grep -q ' model=[^ ]*adapted-'" \
        || fail "the service did not take the adapted model within 60 s of the unit's reload"
    echo "ADAPTMODEL1 $(as_player $BIN ctl status 2>&1 | grep -o ' model=[^ ]*')"
    as_player $BIN doctor 2>&1 | grep -i "adapt" | sed 's/^/ADAPTDOC /'
    as_player systemctl --user stop continuo
    rm -rf /home/player/.config/systemd/user/continuo-adapt.service.d
    as_player systemctl --user daemon-reload
fi
echo "BEGIN killed.mid"
od -An -tx1 -v "$J"
echo "END killed.mid"
for f in rec.mid synth.mid; do
    echo "BEGIN $f"
    od -An -tx1 -v /tmp/$f
    echo "END $f"
done
exit $rc
"""

# The watchdog's: the stall engine, its notes longer than the test (the
# service would end them itself), a FIFO output that outlives the service.
stall_config = """\
model = stall
output = fifo:/run/user/1000/wd.fifo
phrase_silence_ms = 300
max_note_ms = 60000
midi_thru = no
"""

# The settings for seq_daw's session (test_clock.py's).
clock_config = """\
output = alsa
model = echo
sync = clock
response_start = beat
phrase_silence_ms = 300
lookahead_ms = 10
midi_thru = no
"""

# continuo-adapt's section: the service plays the small test model while a
# minute of arpeggios is played into it, then model = auto.
adapt_config = """\
model = @TINY@
output = none
phrase_silence_ms = 400
response_seconds = 2
"""

# The test's budget for the installed adapt unit (a drop-in, as a user would
# write one): start from the small test model, one step at a learning rate
# for a model of random weights (at 1e-3 it moved the held-back NLL 0.6 % in
# a guest here: the held-back tenth's chords are none the memory holds, so
# the weights alone move it), and a reference of the same kind of music as
# the playing (the shipped reference is the shipped model's music).
adapt_budget = """\
[Service]
Environment=CONTINUO_MODEL=@TINY@
ExecStart=
ExecStart=@BIN@ adapt --if-new --minutes @MIN@ --max-steps @STEPS@ --lr 1e-2 --reference /guest/reference.tok
"""

TINY = "/usr/local/share/continuo-test/tiny.gguf"
SHARE = "/usr/share/continuo" if deb else "/usr/local/share/continuo"
run_sh = run_sh.replace("@BIN@", BIN).replace("@TINY@", TINY).replace("@SHARE@", SHARE)

# sync = link under the unit (with the drop-in): the echo engine, no sound.
link_config = """\
model = echo
output = none
sync = link
tempo = 90
"""
# The DAW session of test_clock.py, over real sequencer ports (not with a
# package: that guest run checks the package, this one the service's clock).
clock_daw = None if deb else Daw()
clock = clockscene.build(clock_daw) if clock_daw else None
with tempfile.TemporaryDirectory() as stage:
    if deb:
        os.makedirs(os.path.join(stage, "guest"))
        shutil.copy(deb, os.path.join(stage, "guest", "continuo.deb"))
    else:
        r = subprocess.run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:])
            check(False, "meson install --destdir failed")
            done()
        units = [os.path.join(d, f) for d, _, fs in os.walk(stage) for f in fs if f == "continuo.service"]
        check(len(units) == 1, "meson install puts one continuo.service in place: %r" % units)
        print("installed unit:", units and os.path.relpath(units[0], stage))
        os.makedirs(os.path.join(stage, "guest"))
        link_peer = os.path.join(build, "tests", "link", "link_peer")
        if os.path.exists(link_peer):     # built with -Dlink
            shutil.copy(link_peer, os.path.join(stage, "guest", "link_peer"))
        seq_daw = os.path.join(build, "tests", "daemon", "seq_daw")
        if check(os.path.exists(seq_daw), "the DAW client is built: %s" % seq_daw):
            shutil.copy(seq_daw, os.path.join(stage, "guest", "seq_daw"))
            with open(os.path.join(stage, "guest", "clock.script"), "w") as fh:
                fh.write(clock_daw.script(clock.n_ticks, BIN))
    os.makedirs(os.path.join(stage, os.path.dirname(TINY[1:])), exist_ok=True)
    shutil.copy(servetest.tiny_model(), os.path.join(stage, TINY[1:]))
    if not deb:
        # A minute of arpeggios (what the player plays), the adapt unit's
        # drop-in (a budget the emulated guest can afford: PyTorch under TCG
        # is some twenty times slower than here) and its reference.
        minute = []
        for on, key, vel, length in arpeggio_notes(ADAPT_PLAY_S, 5, t0=0.1):
            minute.append((on, [0x91, key, vel]))
            minute.append((on + length, [0x81, key, 0]))
        minute.sort(key=lambda e: e[0])
        with open(os.path.join(stage, "guest", "minute.mid"), "wb") as fh:
            fh.write(midifile.encode(minute))
        arpeggio_reference(os.path.join(stage, "guest"), os.path.join(build, "continuo"))
        budget = adapt_budget.replace("@TINY@", TINY).replace("@BIN@", BIN).replace("@MIN@", "%g" % ADAPT_MINUTES) \
            .replace("@STEPS@", str(ADAPT_STEPS))
        for name, data in (("adapt.conf", adapt_config.replace("@TINY@", TINY)), ("adapt-budget.conf", budget)):
            with open(os.path.join(stage, "guest", name), "w") as fh:
                fh.write(data)
    for name, data in (("run.sh", run_sh.encode()), ("continuo.conf", config.encode()),
                       ("clock.conf", clock_config.encode()), ("stall.conf", stall_config.encode()),
                       ("link.conf.user", link_config.encode()),
                       ("motif.mid", midifile.encode(motif))):
        with open(os.path.join(stage, "guest", name), "wb") as fh:
            fh.write(data)
    p = subprocess.run([os.path.join(qemu_dir, "debian-guest.sh"), "-t", "600", "-T", "1500", stage],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
out, status = p.stdout, p.returncode
# The whole guest log goes to a file; the test's own output stays short
# (meson shows only the last 100 lines of a long one, and the failures must
# be among them): the guest's lines without the dumped blocks (recordings,
# the DAW's thousands of stamps, the journal, shown on a failure).
log_dir = os.path.join(build, "meson-logs") if build and os.path.isdir(os.path.join(build, "meson-logs")) else None
if log_dir:
    with open(os.path.join(log_dir, "systemd_user-guest.log" if not deb else "debian_package-guest.log"), "w") as fh:
        fh.write(out)
brief = re.sub(r"^BEGIN (\S+)\n.*?^END \1\n", r"[\1: in the guest log]\n", out, flags=re.S | re.M)
brief = [ln for ln in brief.splitlines() if not re.match(r"\[ *\d+\.\d+\] ", ln)]   # kernel messages
print("\n".join(brief[-70:]))
if log_dir:
    print("(the whole guest log: %s)" % os.path.join(log_dir, "systemd_user-guest.log" if not deb else "debian_package-guest.log"))
if status == 77:
    sys.exit(77)
check(status == 0, "guest script exit status %d" % status)
for line in re.findall(r"^GUEST-FAIL: .*$", out, re.M):
    check(False, line)


def field(prefix):
    m = re.search(r"^%s (.*)$" % re.escape(prefix), out, re.M)
    return m.group(1).strip() if m else None


if deb:
    check(field("DPKG") == "0", "dpkg -i continuo.deb: exit %r" % field("DPKG"))
    check(field("PKG Status") == "install ok installed", "package installed: %r" % field("PKG Status"))
    demo = (field("DEMO") or "").split()
    check(demo[:1] == ["0"] and any(f.endswith(".mid") for f in demo[1:]),
          "continuo demo in an empty folder: exit 0 and a MIDI file written: %r" % field("DEMO"))
    check(field("DEMOMODEL") == os.path.join(SHARE, "continuo-default.gguf")
          and re.search(r"continuation \d+ notes", out) is not None,
          "continuo demo continued the motif with the packaged model: %r" % field("DEMOMODEL"))
    check((field("MAN") or "0") != "0", "man continuo shows the page (%r lines naming continuo.service)"
          % field("MAN"))
    check((field("CAT") or "").startswith("# /usr/lib/systemd/user/continuo.service"),
          "systemctl --user cat continuo: the packaged unit: %r" % field("CAT"))

# continuo doctor in the guest: the sequencer is there and the ports are named.
doc = "\n".join(re.findall(r"^DOC (.*)$", out, re.M))
check(re.search(r"^ok +sequencer", doc, re.M) is not None, "doctor: the ALSA sequencer is ok:\n" + doc)
check(re.search(r"midi ports.*Midi Through", doc) is not None, "doctor names the MIDI ports it sees")
print("doctor exit status:", field("DOCTOR"))

# It started, as the installed unit, under the user manager.
check(field("STATE") == "active", "the service is active after enable --now")
pid = field("MAINPID")
check(pid and pid != "0", "a main PID")

# The sandbox as enforced.
status_lines = dict(re.findall(r"^STATUS (\w+):\s*(\S+)", out, re.M))
check(status_lines.get("NoNewPrivs") == "1", "NoNewPrivs: %r" % status_lines.get("NoNewPrivs"))
check(status_lines.get("Seccomp") == "2", "seccomp filter mode: %r" % status_lines.get("Seccomp"))
check(status_lines.get("CapBnd") == "0000000000000000", "empty capability bounding set: %r" % status_lines.get("CapBnd"))
check(status_lines.get("CapEff") == "0000000000000000", "no effective capability: %r" % status_lines.get("CapEff"))
ns = dict(re.findall(r"^NS (\w+) (\w+)$", out, re.M))
for n in ("user", "mnt", "net", "uts"):
    check(ns.get(n) == "own", "own %s namespace: %r" % (n, ns.get(n)))
netdevs = re.findall(r"^NETDEV (\S+)$", out, re.M)
check(netdevs == ["lo"], "only a loopback device in its network namespace: %r" % netdevs)
writes = dict(re.findall(r"^WRITE (\S+) (\w+)$", out, re.M))
expect = {"/home/player": "denied", "/home/player/Music": "ok", "/run/user/1000": "ok", "/tmp": "ok"}
for path, want in expect.items():
    check(writes.get(path) == want, "the service's user writing to %s inside the sandbox: %r, expected %s"
          % (path, writes.get(path), want))
rwrites = dict(re.findall(r"^ROOTWRITE (\S+) (\w+)$", out, re.M))
for path in ("/usr", "/etc"):
    check(rwrites.get(path) == "denied", "%s read-only even for root in its mount namespace: %r"
          % (path, rwrites.get(path)))
check(field("TMP") == "private", "/tmp is private: %r" % field("TMP"))
# Measured, not required: a user manager makes no PID namespace, so no /proc
# of its own (ProtectProc=, ProcSubset=); docs/RELIABILITY.md says so.
print("ProtectProc=invisible: %s processes of other users visible; ProcSubset=pid: %s in force"
      % (field("PROCS_OTHERS"), "is" if field("PROCSUBSET") == "pid" else "not"))
check((field("SAVE home") or "").startswith("error"), "ctl save to the read-only home fails: %r"
      % field("SAVE home"))
check(re.search(r"^SAVED home exists$", out, re.M) is None, "nothing written in the home")
check(re.search(r"^SAVED music exists$", out, re.M) is not None, "ctl save to ~/Music works: %r"
      % field("SAVE music"))

devices = field("DEVICES") or ""
print("device policy:", devices)
# The probe without PrivateDevices= must open /dev/fuse (else it measures
# nothing); the unit as installed must not.
check(devices.startswith("untested") or devices == "without-policy open as-installed denied",
      "/dev/fuse: opened without PrivateDevices=, not with the unit as installed: %r" % devices)

# The answer, by the client's name alone, and through aconnect to a synth's port.
for name in ("rec.mid", "synth.mid"):
    try:
        rec = guest.recording(out, name)
    except ValueError as e:
        check(False, str(e))
        continue
    model_notes = [e for e in rec if e[1] & 0xF0 == 0x90 and e[3] > 0 and e[1] & 0x0F == 0]
    thru_notes = [e for e in rec if e[1] & 0xF0 == 0x90 and e[3] > 0 and e[1] & 0x0F == 1]
    print("%s: %d motif notes back (MIDI thru), %d notes of the answer" % (name, len(thru_notes), len(model_notes)))
    check(len(thru_notes) == 8, "%s: the motif came back through MIDI thru (%d notes)" % (name, len(thru_notes)))
    check(len(model_notes) >= 3, "%s: the model answered (%d notes)" % (name, len(model_notes)))
    if thru_notes and model_notes:
        check(model_notes[0][0] > thru_notes[-1][0], "%s: the answer comes after the motif" % name)

# sync = link under the unit: doctor names the private network; the drop-in
# opens it; a real Link peer in the guest is seen and followed, and moved.
if "== sync = link under the unit" in out:
    doc0 = [ln for ln in out.splitlines() if ln.startswith("LINKDOC0 ")]
    check(any("PrivateNetwork=yes" in ln for ln in doc0), "doctor, sync = link under the default unit: %s" % doc0)
    unit = (field("LINKUNIT") or "").split()
    check(unit[:1] == ["no"] and "AF_INET" in unit and "AF_NETLINK" in unit and "AF_INET6" not in unit,
          "the drop-in: PrivateNetwork=no, AF_INET and AF_NETLINK besides AF_UNIX, no AF_INET6: %r" % unit)
    doc1 = [ln for ln in out.splitlines() if ln.startswith("LINKDOC1 ")]
    check(doc1 and not any("PrivateNetwork=yes" in ln for ln in doc1), "doctor with the drop-in: %s" % doc1)
    ls = field("LINKSTATUS") or ""
    check("link_peers=1" in ls and "link_tempo=133.000" in ls, "continuo under the unit follows the peer: %r" % ls)
    check((field("LINKTEMPO") or "").startswith("ok tempo = 97"), "ctl tempo 97: %r" % field("LINKTEMPO"))
    check("tempo=97" in (field("LINKPEER") or ""), "the peer moved to continuo's 97 BPM: %r" % field("LINKPEER"))
elif not deb:
    print("note: no sync = link section (built without Link)")

# The journal after kill -9 under the unit: a valid MIDI file in the state
# directory, three tracks once the restart folded the log the kill left,
# the motif played before the kill in its player track.
check(field("JINSPECT") == "0", "continuo inspect opens the journal file left by the kill: %r" % field("JINSPECT"))
kl = (field("KILLED pid") or "").split()
check(len(kl) >= 6 and kl[0] != kl[2] and kl[3] == "active"
      and re.match(r"/home/player/(\.local/state|\.config)/continuo/journal/session-", kl[5]),
      "systemctl --user kill -s KILL: restarted, and the journal is in the unit's state directory: %r" % field("KILLED pid"))
jl = [ln[6:] for ln in out.splitlines() if ln.startswith("JLIST ")]
check(len(jl) >= 2 and not any("cannot" in ln or "error" in ln for ln in jl),
      "`continuo journal list`, run by the player, finds the unit's sessions: %s" % jl[:6])
jm = re.search(r"^BEGIN killed.mid\n(.*?)^END killed.mid$", out, re.S | re.M)
if check(jm is not None, "the journal file came back from the guest"):
    import io
    import mido
    data = bytes(int(x, 16) for x in jm.group(1).split())
    try:
        mf = mido.MidiFile(file=io.BytesIO(data))
        names = [next((m.name for m in t if m.type == "track_name"), "") for t in mf.tracks]
        ons = []                # the player's parts (a track each), on the session's time line
        for name, t in zip(names, mf.tracks):
            tick = 0
            for m in t:
                tick += m.time
                if name == "player" and m.type == "note_on" and m.velocity > 0:
                    ons.append((tick, m.note))
        played = [n for _, n in sorted(ons)]
        print("journal after the kill: %d bytes, tracks %s, player notes %s" % (len(data), names, played))
        check(names == ["", "player", "continuo"],
              "the journal file after the kill and the restart has three tracks, tempo, player, continuo: %s" % names)
        check(played[-8:] == [60, 64, 67, 72, 71, 67, 64, 62],
              "the motif played before the kill is in the journal's player track: %s" % played)
    except Exception as e:  # noqa: BLE001
        check(False, "mido reads the journal file left by the kill: %s" % e)

# continuo-adapt.service as installed (the test's budget in a drop-in): it
# adapts on the journal the service wrote in this run, keeps the result in
# the unit's state directory, and its ExecStartPost's reload has the running
# service (model = auto) take it.
if not deb:
    unit = (field("ADAPTUNIT") or "").split()
    adapt_log = "\n".join(re.findall(r"^ADAPTLOG (.*)$", out, re.M))
    print("continuo-adapt: exit, seconds, result: %s\n%s" % (field("ADAPTUNIT"), adapt_log))
    check(unit[:1] == ["0"] and unit[2:3] == ["success"],
          "systemctl --user start continuo-adapt: exit 0, result success: %r" % field("ADAPTUNIT"))
    check(re.search(r"on [\d.]+ min of playing in \d+ sessions?", adapt_log) is not None,
          "adapt read the journal the service wrote")
    check(re.search(r"^kept: ", adapt_log, re.M) is not None, "adapt kept the adapted model (not 'not kept: ')")
    print("\n".join(re.findall(r"^ADAPTCARD (.*)$", out, re.M)))
    check(re.search(r"adapted-\d{8}-\d{6}\.gguf", field("ADAPTED") or "") is not None,
          "the adapted model is in the unit's state directory: %r" % field("ADAPTED"))
    check(TINY in (field("ADAPTMODEL0") or ""), "before: the service plays the test model: %r" % field("ADAPTMODEL0"))
    check(re.search(r"model=/home/player/(\.local/state|\.config)/continuo/adapted/adapted-",
                    field("ADAPTMODEL1") or "") is not None,
          "after the unit's reload the service (model = auto) plays the adapted model: %r" % field("ADAPTMODEL1"))
    print("\n".join(re.findall(r"^ADAPTDOC (.*)$", out, re.M)))

# Reload keeps the process; stop is clean.
rl = (field("RELOAD pid") or "").split()
check(len(rl) == 4 and rl[0] == rl[2] == pid and rl[3] == "active",
      "reload: same PID and still active: %r" % field("RELOAD pid"))
st = (field("STOPPED") or "").split()
check(len(st) >= 3 and st[0] == "inactive" and st[1] == "success" and st[2] == "NRestarts=0",
      "stop: inactive, result success, never restarted: %r" % field("STOPPED"))

# The FluidSynth output wrote a WAV with sound, from inside the sandbox.
wav = field("WAV bytes")
m = re.match(r"(\d+) nonzero (\d+)", wav or "")
check(m is not None, "the WAV was written: %r" % wav)
if m:
    check(int(m.group(2)) > 44100, "the WAV has sound: %s of %s bytes non-zero" % (m.group(2), m.group(1)))

# The journal tells the story.
j = re.search(r"^BEGIN journal\n(.*?)^END journal$", out, re.S | re.M)
journal = j.group(1) if j else ""
for bad in ("Failed", "status=218", "Main process exited"):
    check(bad not in journal, "nothing %r in the journal" % bad)
# systemd 252 cannot put ExecReload's kill into the unit's network and IPC
# namespaces and says so, from the forked kill: in the journal usually
# between Reloading and Reloaded, sometimes just before Reloading (seen in
# CI: the two writers race).  Nothing may be ignored while the service
# starts, nothing but that one kind of line at all, and the service itself
# keeps its namespaces (checked after reload).
start = re.search(r"^Starting continuo.*?^Started continuo", journal, re.S | re.M)
check(start is not None and "ignoring" not in start.group(0),
      "no sandbox setting ignored when the service starts: %r" % (start and start.group(0)))
ignored = [ln for ln in journal.splitlines() if "ignoring" in ln]
check(all(re.search(r"Private(Network|IPC)=yes is configured, but .*namespace setup failed, ignoring", ln)
          for ln in ignored),
      "only ExecReload's namespace lines say ignoring: %r" % ignored)
check(len(ignored) <= 2, "at most one such line per namespace: %r" % ignored)
ns2 = dict(re.findall(r"^NS2 (\w+) (\w+)$", out, re.M))
for n in ("user", "mnt", "net", "uts"):
    check(ns2.get(n) == "own", "after reload, still its own %s namespace: %r" % (n, ns2.get(n)))
for what in ("Started continuo", "Reloading continuo", "Stopped continuo",
             "ALSA: input time-stamped by queue"):
    check(what in journal, "journal has %r" % what)
if servetest.failures:
    print("the service's journal, last lines:\n" + "\n".join(journal.splitlines()[-25:]))

# The watchdog: a generator stuck in the engine gets the service restarted by
# its user manager within the stall threshold (5 s) + WatchdogSec (10 s) +
# RestartSec (2 s), plus a margin for the emulated guest (8 s), counted
# from the end of the motif; the new instance's all notes off leaves
# nothing sounding.
if not deb:
    w = (field("WATCHDOG") or "").split()
    wdlog = "\n".join(re.findall(r"^WDLOG (.*)$", out, re.M))
    print("watchdog:", field("WATCHDOG"))
    print(wdlog)
    check(len(w) == 8 and w[3] != w[5] and w[6] == "NRestarts=1" and w[7] == "active",
          "the stalled service was restarted once, a new PID, active: %r" % field("WATCHDOG"))
    secs = float(w[1]) if len(w) > 1 else 99.0
    check(secs <= 5 + 10 + 2 + 8, "restarted %.1f s after the motif (bound 25 s)" % secs)
    check("the generator has made no progress" in wdlog, "the service said why it stopped its pings")
    check(re.search(r"[Ww]atchdog timeout", wdlog) is not None, "the user manager saw the watchdog time out")
    try:
        raw = bytes(int(x, 16) for x in re.search(r"^BEGIN wd.raw\n(.*?)^END wd.raw$", out, re.S | re.M)
                    .group(1).split())
    except AttributeError:
        raw = b""
    wmsgs = servetest.parse_midi_bytes(raw)
    ons = [i for i, m in enumerate(wmsgs) if m[0] & 0xF0 == 0x90 and m[2] > 0]
    check(bool(ons), "the stall engine's note went out before it hung: %r" % wmsgs[:8])
    before = wmsgs[:ons[-1] + 1] if ons else wmsgs
    check(servetest.unended_notes(before) != [], "a note was sounding when the stall began: %r" % before)
    later = wmsgs[len(before):]
    resets = sorted(m[0] & 0x0F for m in later[:16] if m[0] & 0xF0 == 0xB0 and m[1] == 123)
    check(resets == list(range(16)), "the restarted service's first messages: all notes off on 16 channels: %r"
          % later[:16])
    check(servetest.unended_notes(wmsgs) == [], "nothing left sounding: %r" % servetest.unended_notes(wmsgs))

# MIDI clock and transport over real sequencer ports: seq_daw played the
# session of test_clock.py into `continuo` and recorded what came back,
# ticks and answers stamped by the sequencer on one clock.
if clock:
    check(field("DAW") == "0", "seq_daw ran: exit %r" % field("DAW"))
    d = re.search(r"^BEGIN daw.log\n(.*?)^END daw.log$", out, re.S | re.M)
    daw_log = d.group(1) if d else ""
    print("seq_daw:", (re.findall(r"^E .*$", daw_log, re.M) or ["no summary"])[0])
    pos_of = clock_daw.positions(clock.n_ticks)
    sent = [(int(k), int(t) / 1e6, pos_of[int(k)]) for k, t in re.findall(r"^S (\d+) (\d+)$", daw_log, re.M)
            if int(k) < clock.n_ticks]
    msgs = []
    for t, hexes in re.findall(r"^R (\d+) (.*)$", daw_log, re.M):
        b = [int(x, 16) for x in hexes.split()]
        if len(b) == 3:
            msgs.append((int(t) / 1e6, b[0], b[1], b[2]))
    replies = dict(re.findall(r"^C (\S+) (.*)$", daw_log, re.M))
    transport = {int(k): int(t) / 1e6 for k, t in re.findall(r"^T (\d+) (\d+)$", daw_log, re.M)}
    with open(os.path.join(build, "meson-logs", "systemd_user-seq_daw.log"), "w") as fh:
        fh.write(daw_log)       # ticks and answers, for a look after a failure
    clock_log = "\n".join(re.findall(r"^CLOCKLOG (.*)$", out, re.M))
    print("status after the session:", field("CLOCKSTATUS"))
    # The bounds of test_clock.py (3 ms onset, 20 ms Stop, 1 BPM) are judged
    # there, on the host.  Here the sequencer, the DAW and the service run in
    # an emulated guest, whose own clocks jitter by several
    # ms and stall under load (seen: ticks 9 ms late, a stall long enough
    # for `ctl status` to say clock=none): what this run proves is that
    # ALSA's CLOCK/START/STOP/CONTINUE/SONGPOS reach the service and drive
    # it, within one clock (20.8 ms at 120 BPM) of each beat, silent within
    # 50 ms of Stop and no note after it, the tempo followed within 5 BPM.
    # Under TCG (no working KVM) the whole guest stalls now and then, the
    # client's ticks with it (seen: 85 ms of jitter around one answer, whose
    # note came 113 ms after its line): there the bound is two clocks.
    onset_ms = 20.8 if field("ACCEL") == "kvm" else 41.6
    print("accelerator %s: first notes within %.1f ms of their beat line (+ the client's jitter)"
          % (field("ACCEL"), onset_ms))
    clockscene.judge(clock, sent, msgs, replies, field("CLOCKSTATUS") or "", clock_log, 0.300, onset_ms, 50.0,
                     transport, tempo_bpm=5.0, line_slack=1)

done()
