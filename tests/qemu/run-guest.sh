#!/bin/sh
# run-guest.sh: runs a shell script as root in a qemu guest with real ALSA sequencer modules.
#
# usage: run-guest.sh [-b BINARY]... [-f HOSTFILE:GUESTPATH]... [-t SECONDS]
#                     [-T SECONDS] [-m MIB] [-k CACHE_DIR] GUEST_SCRIPT
#   -b  a program to put in the guest's /bin, with the libraries ldd lists
#       (repeat; aplaymidi, arecordmidi, aconnect and aseqdump are always in)
#   -f  a file to copy into the guest (repeat)
#   -t  give up after SECONDS under KVM (default 120)
#   -T  give up after SECONDS under TCG, software emulation (default 400)
#   -m  guest memory in MiB (default 512; the initramfs lives in it)
#   -k  where the Debian kernel is kept (default $CONTINUO_QEMU_CACHE, else
#       /var/cache/continuo-qemu, else $TMPDIR/continuo-qemu)
# The guest boots a stock Debian kernel with the accelerator accel.sh chose
# (KVM where a KVM guest really boots here, else TCG), loads the sound
# modules (so /dev/snd/seq exists and "Midi Through" is client 14), mounts a tmpfs on /tmp, runs GUEST_SCRIPT with sh in /tmp,
# prints "CONTINUO-QEMU-EXIT=STATUS" and powers off. The console goes to
# stdout (\r stripped). Exit status: the guest script's, 77 when qemu or the
# kernel cannot be had, 124 when the guest did not finish in time, 125 when
# it died without the marker.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
bins="/usr/bin/aplaymidi /usr/bin/arecordmidi /usr/bin/aconnect /usr/bin/aseqdump"
files=""
kvm_limit=120
tcg_limit=400
mem=512
cache=""
while getopts b:f:t:T:k:m: opt; do
    case $opt in
    b) bins="$bins $OPTARG";;
    f) files="$files
$OPTARG";;
    t) kvm_limit=$OPTARG;;
    T) tcg_limit=$OPTARG;;
    m) mem=$OPTARG;;
    k) cache=$OPTARG;;
    *) echo "usage: run-guest.sh [-b BIN]... [-f HOST:GUEST]... [-t S] [-T S] [-m MB] [-k DIR] SCRIPT" >&2; exit 2;;
    esac
done
shift $((OPTIND - 1))
script=${1:?usage: run-guest.sh [options] GUEST_SCRIPT}

skip() { echo "run-guest: SKIP: $*"; exit 77; }
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
command -v cpio >/dev/null 2>&1 || skip "cpio not installed"
busybox=$(static_busybox) || skip "no static busybox (apt-get install busybox-static)"
for b in $bins; do
    [ -x "$b" ] || skip "$b not found (apt-get install alsa-utils?)"
done
[ -f /usr/share/alsa/alsa.conf ] || skip "/usr/share/alsa/alsa.conf not found (apt-get install libasound2-data)"

cache=$(qemu_cache "$cache")
kdir=$("$here/get-kernel.sh" "$cache") || { rc=$?; [ $rc = 77 ] && skip "no kernel"; exit $rc; }
qemu_accel run-guest "$cache" "$kdir/vmlinuz"
qemu_limit run-guest "$kvm_limit" "$tcg_limit"

work=$(mktemp -d "${TMPDIR:-/tmp}/continuo-qemu-run.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/modules" \
         "$root/usr/share/alsa" "$root/etc"
cp "$busybox" "$root/bin/busybox"
cp /usr/share/alsa/alsa.conf "$root/usr/share/alsa/"

# Programs and the shared libraries they load, at the paths ldd gives.
for b in $bins; do
    cp "$b" "$root/bin/"
    ldd "$b" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
    while read -r lib; do
        [ -f "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
done
# Extra files.
echo "$files" | while IFS= read -r spec; do
    [ -n "$spec" ] || continue
    src=${spec%%:*}
    dst=${spec#*:}
    mkdir -p "$root$(dirname "$dst")"
    cp "$src" "$root$dst"
done
cp "$script" "$root/test.sh"

modules="soundcore snd snd-timer snd-seq-device snd-seq snd-seq-midi-event snd-rawmidi snd-seq-dummy snd-seq-virmidi snd-virmidi"
for m in $modules; do
    cp "$kdir/modules/$m.ko" "$root/modules/" || skip "module $m.ko missing from $kdir"
done

cat > "$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
for m in $modules; do
    insmod /modules/\$m.ko || echo "init: insmod \$m failed"
done
cd /tmp
sh /test.sh
echo "CONTINUO-QEMU-EXIT=\$?"
sync
poweroff -f
INIT
chmod +x "$root/init"

(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initrd.cpio"

status=0
# shellcheck disable=SC2086
timeout "$LIMIT" qemu-system-x86_64 $ACCEL_ARGS -m "$mem" -nographic -no-reboot -nic none \
    -kernel "$kdir/vmlinuz" -initrd "$work/initrd.cpio" \
    -append 'console=ttyS0 quiet panic=-1' </dev/null >"$work/raw.log" 2>&1 || status=$?
guest_exit run-guest "$work/raw.log" "$status" "$LIMIT"
