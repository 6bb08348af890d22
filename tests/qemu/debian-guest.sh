#!/bin/sh
# debian-guest.sh: boots the Debian 12 guest (debian-image.sh) with systemd
# and runs a script in it as root, after the user manager of "player" is up.
#
# usage: debian-guest.sh [-t SECONDS] [-T SECONDS] [-m MIB] [-k CACHE_DIR] PAYLOAD_DIR
#   PAYLOAD_DIR  a folder laid out as the guest's / (for example usr/local/...
#                from `meson install --destdir`); it must hold guest/run.sh,
#                the script to run (as root, with sh, in /guest)
#   -t  give up after SECONDS under KVM (default 600)
#   -T  give up after SECONDS under TCG, software emulation (default 1200);
#       neither counts building the image, the first time
#   -m  guest memory in MiB (default 1536)
#   -k  where the image is kept (default $CONTINUO_QEMU_CACHE, else
#       /var/cache/continuo-qemu, else $TMPDIR/continuo-qemu)
# The image itself is never written: the guest writes to a copy-on-write
# overlay that is thrown away. The payload reaches the guest as a tar archive
# on a second disk, with guest/accel added: "kvm" or "tcg", the accelerator
# it runs under (accel.sh). The console goes to stdout (\r stripped). Exit status:
# the script's, 77 when the guest cannot be had here, 124 when it did not
# finish in time, 125 when it stopped without the exit marker.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
kvm_limit=600
tcg_limit=1200
mem=1536
cache=""
while getopts t:T:m:k: opt; do
    case $opt in
    t) kvm_limit=$OPTARG;;
    T) tcg_limit=$OPTARG;;
    m) mem=$OPTARG;;
    k) cache=$OPTARG;;
    *) echo "usage: debian-guest.sh [-t S] [-T S] [-m MB] [-k DIR] PAYLOAD_DIR" >&2; exit 2;;
    esac
done
shift $((OPTIND - 1))
payload=${1:?usage: debian-guest.sh [options] PAYLOAD_DIR}
[ -f "$payload/guest/run.sh" ] || { echo "debian-guest: $payload/guest/run.sh missing" >&2; exit 2; }

skip() { echo "debian-guest: SKIP: $*"; exit 77; }
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
command -v qemu-img >/dev/null 2>&1 || skip "qemu-img not installed (apt-get install qemu-utils)"
cache=$(qemu_cache "$cache")
rc=0
img=$("$here/debian-image.sh" "$cache") || rc=$?
[ $rc = 77 ] && skip "no Debian 12 guest image (the lines above say why)"
[ $rc = 0 ] || { echo "debian-guest: the image could not be built (exit $rc); its log: $cache/debian12-build.log"; exit $rc; }
[ -f "$img/rootfs.img" ] || { echo "debian-guest: debian-image.sh gave '$img', which holds no rootfs.img"; exit 1; }
qemu_accel debian-guest "$cache" "$img/vmlinuz"
qemu_limit debian-guest "$kvm_limit" "$tcg_limit"

work=$(mktemp -d "${TMPDIR:-/tmp}/continuo-debian.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
qemu-img create -q -f qcow2 -F raw -b "$img/rootfs.img" "$work/overlay.qcow2"
# The archive's top entries are the payload's own folders (no "." entry,
# which would give the guest's / the staging folder's mode), readable by all.
(cd "$payload" && tar --owner=0 --group=0 --mode='u+rwX,go+rX,go-w' -cf "$work/payload.tar" -- *)
# The guest's script may want to know how fast its machine is: /guest/accel.
echo "$ACCEL" > "$work/accel"
tar --owner=0 --group=0 --mode=a+r --transform 's,^,guest/,' -rf "$work/payload.tar" -C "$work" accel

status=0
# shellcheck disable=SC2086
timeout "$LIMIT" qemu-system-x86_64 $ACCEL_ARGS -m "$mem" -nographic -no-reboot -nic none \
    -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
    -drive file="$work/overlay.qcow2",if=virtio,format=qcow2 \
    -drive file="$work/payload.tar",if=virtio,format=raw,readonly=on \
    -append 'root=/dev/vda rw console=ttyS0 quiet panic=-1 systemd.show_status=0' \
    </dev/null >"$work/raw.log" 2>&1 || status=$?
guest_exit debian-guest "$work/raw.log" "$status" "$LIMIT"
