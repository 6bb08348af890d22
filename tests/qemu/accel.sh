#!/bin/sh
# accel.sh: which qemu accelerator the guest tests use on this machine.
#
# usage: accel.sh [-k CACHE_DIR] KERNEL
# Prints "kvm" or "tcg" on stdout and, on stderr, one line saying which and
# why. A writable /dev/kvm says nothing about whether KVM guests run (seen:
# a virtualized AMD host where qemu with KVM hangs after "Booting from
# ROM...", or aborts in kvm_buf_set_msrs with -cpu max), so KERNEL is booted
# with KVM and the same options as the real run (common.sh: accel_args)
# and a one-line init of ours; KVM is used only when that init's marker
# comes back within $CONTINUO_QEMU_PROBE_S seconds (default 30). Otherwise
# the same kernel is booted with TCG (4 times as long allowed); when that
# boots too the answer is "tcg", when it does not, exit 77: no guest can be
# had here.
#
# The answer is kept in CACHE_DIR/accel/, keyed by the boot, the qemu
# version, the kernel and $CONTINUO_QEMU_RUN (tools/quickstart.sh sets it
# once per test run), so a test run probes once however many guests it
# boots. CONTINUO_QEMU_ACCEL=kvm|tcg forces one and probes nothing;
# "auto" (or unset) probes.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
cache=""
while getopts k: opt; do
    case $opt in
    k) cache=$OPTARG;;
    *) echo "usage: accel.sh [-k CACHE_DIR] KERNEL" >&2; exit 2;;
    esac
done
shift $((OPTIND - 1))
kernel=${1:?usage: accel.sh [-k CACHE_DIR] KERNEL}
cache=$(qemu_cache "$cache")

say() { echo "accel.sh: $*" >&2; }
answer() {     # ACCEL REASON: prints the answer and says why; none: exit 77
    [ "$1" = none ] && { say "no guest boots here: $2"; exit 77; }
    say "$1 ($2)"
    echo "$1"
    exit 0
}

case ${CONTINUO_QEMU_ACCEL:-auto} in
kvm|tcg) answer "$CONTINUO_QEMU_ACCEL" "forced by CONTINUO_QEMU_ACCEL=$CONTINUO_QEMU_ACCEL";;
auto) ;;
*) say "CONTINUO_QEMU_ACCEL=$CONTINUO_QEMU_ACCEL: must be kvm, tcg or auto"; exit 2;;
esac
command -v qemu-system-x86_64 >/dev/null 2>&1 || { say "qemu-system-x86_64 not installed"; exit 77; }
[ -f "$kernel" ] || { say "no kernel at $kernel"; exit 77; }

qemu_version=$(qemu-system-x86_64 --version 2>/dev/null | head -n 1)
boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || hostname)
key=$( { echo "$boot_id"; echo "$qemu_version"; accel_args kvm; echo "${CONTINUO_QEMU_RUN:-}"; cksum < "$kernel"; } |
       sha256sum | cut -c1-16)
mkdir -p "$cache/accel" 2>/dev/null || { say "cannot create $cache/accel"; exit 77; }
kept="$cache/accel/$key"

# One probe at a time; whoever waited reads the first one's answer.
exec 9>"$cache/accel/lock"
flock 9
if [ -s "$kept" ]; then
    read -r acc why < "$kept"
    answer "$acc" "$why; probed once for this run, kept in $kept"
fi
find "$cache/accel" -type f ! -name lock -mtime +7 -delete 2>/dev/null || true    # old runs' answers

keep() {       # ACCEL REASON: keeps the answer for this run, then gives it
    printf '%s %s\n' "$1" "$2" > "$kept.tmp" && mv "$kept.tmp" "$kept"
    answer "$1" "$2"
}

busybox=$(static_busybox) ||
    keep tcg "not probed: no static busybox to build the probe's init with (apt-get install busybox-static)"

work=$(mktemp -d "${TMPDIR:-/tmp}/continuo-accel.XXXXXX")
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
marker="CONTINUO-PROBE-OK-$$-$(date +%s)"
mkdir -p "$work/root/bin"
cp "$busybox" "$work/root/bin/busybox"
printf '#!/bin/busybox sh\n/bin/busybox echo %s\n/bin/busybox poweroff -f\n' "$marker" > "$work/root/init"
chmod +x "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc --quiet) > "$work/probe.cpio"

# probe ACCEL SECONDS: boots the kernel; sets RESULT to "ok", "hang" or
# "exit N" and SECS to the time it took, TAIL to qemu's last line.
probe() {
    log="$work/$1.log"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    qemu-system-x86_64 $(accel_args "$1") -m 256 -nographic -no-reboot -nic none \
        -kernel "$kernel" -initrd "$work/probe.cpio" \
        -append 'console=ttyS0 quiet panic=-1' </dev/null >"$log" 2>&1 &
    pid=$!
    ticks=$(($2 * 10))
    RESULT=hang
    while [ "$ticks" -gt 0 ]; do
        if grep -q "$marker" "$log"; then RESULT=ok; break; fi
        if ! kill -0 "$pid" 2>/dev/null; then
            st=0
            wait "$pid" || st=$?
            pid=""
            RESULT="exit $st"
            grep -q "$marker" "$log" && RESULT=ok
            break
        fi
        sleep 0.1
        ticks=$((ticks - 1))
    done
    SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    TAIL=$(tr -d '\r' < "$log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1b.//g' |
           grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-160)
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; fi
}

limit=${CONTINUO_QEMU_PROBE_S:-30}
kvm_dev=${CONTINUO_QEMU_KVM_DEV:-/dev/kvm}    # another path only in test_accel.py
if [ ! -e "$kvm_dev" ]; then
    why="no $kvm_dev"
elif [ ! -w "$kvm_dev" ]; then
    why="$kvm_dev is not writable by $(id -un)"
else
    probe kvm "$limit"
    case $RESULT in
    ok) keep kvm "a KVM guest's init answered in ${SECS}s with $(accel_args kvm)";;
    hang) why="KVM probe: no answer from the guest's init in ${limit}s (last line: ${TAIL:-none})";;
    *) why="KVM probe: qemu ended ($RESULT) after ${SECS}s without the init's answer: ${TAIL:-no output}";;
    esac
fi
probe tcg $((limit * 4))
case $RESULT in
ok) keep tcg "$why; a TCG guest answered in ${SECS}s";;
hang) keep none "$why; TCG probe: no answer in $((limit * 4))s either (last line: ${TAIL:-none})";;
*) keep none "$why; TCG probe: qemu ended ($RESULT): ${TAIL:-no output}";;
esac
