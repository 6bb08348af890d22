#!/bin/sh
# debian-image.sh: builds (once) a bootable Debian 12 guest for the systemd tests.
#
# usage: debian-image.sh CACHE_DIR
# Prints the folder holding rootfs.img (ext4, raw), vmlinuz and initrd.img,
# and nothing else, on stdout. What a build's tools print goes to
# CACHE_DIR/debian12-build.log; stderr gets a line at its start and end,
# and on a failure the log's path and its last lines.
# The root filesystem is made by mmdebstrap from Debian's packages
# (debian12.packages beside this script), with:
#   - an ordinary user "player" (uid 1000, groups audio) who lingers, so that
#     his service manager (systemd --user) starts at boot;
#   - the ALSA sequencer modules loaded at boot (modules-load.d);
#   - continuo-guest.service: at boot, unpacks the tar archive on the second
#     disk (/dev/vdb) into / and runs /guest/run.sh as root, its output on
#     the serial console, then prints CONTINUO-QEMU-EXIT=STATUS and powers off.
# The image is kept in CACHE_DIR/debian12-HASH/, HASH over the package list
# and this script, so a change to either builds it anew; older ones are
# removed. Exit status 77 when it cannot be built here (no mmdebstrap,
# mke2fs, or packages that cannot be fetched), 1 on other errors.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:?usage: debian-image.sh CACHE_DIR}
skip() { echo "debian-image: $*" >&2; exit 77; }
command -v mmdebstrap >/dev/null 2>&1 || skip "mmdebstrap not installed (apt-get install mmdebstrap)"
command -v mke2fs >/dev/null 2>&1 || skip "mke2fs not installed (apt-get install e2fsprogs)"
[ "$(id -u)" = 0 ] || skip "building the guest image needs root (mmdebstrap --mode=root)"
mkdir -p "$cache" 2>/dev/null || skip "cannot create $cache"

pkgs=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/debian12.packages" | tr -s ' \n' ',' | sed 's/,$//')
hash=$(cat "$here/debian12.packages" "$0" | sha256sum | cut -c1-16)
dir="$cache/debian12-$hash"
if [ -f "$dir/rootfs.img" ] && [ -f "$dir/vmlinuz" ] && [ -f "$dir/initrd.img" ]; then
    echo "$dir"
    exit 0
fi

# Only one build at a time; a second caller waits for the first.
exec 9>"$cache/debian12.lock"
flock 9
if [ -f "$dir/rootfs.img" ]; then echo "$dir"; exit 0; fi
for old in "$cache"/debian12-*; do
    [ -d "$old" ] && [ "$old" != "$dir" ] && rm -rf "$old"
done

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/root
log=$cache/debian12-build.log
started=$(date +%s)
echo "debian-image: building the Debian 12 guest (once; about 5 minutes) into $dir; log: $log" >&2
# From here on stdout is the log; the answer goes to fd 3.
exec 3>&1 >"$log"
# Any failure from here on (77 is "cannot be built here", said by skip)
# names the log and shows its last lines.
failed() { echo "debian-image: $*" >&2; exit 1; }
on_exit() {
    rc=$?
    rm -rf "$work"
    [ $rc = 0 ] || [ $rc = 77 ] || {
        echo "debian-image: the build failed (exit $rc); its log: $log" >&2
        tail -n 20 "$log" | sed 's/^/debian-image: | /' >&2
    }
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# The guest's own files, written by the customize hook below.
mkdir -p "$work/files"
cat > "$work/files/continuo-guest.service" <<'UNIT'
[Unit]
Description=continuo test: run /guest/run.sh from the second disk
After=multi-user.target user@1000.service
Wants=user@1000.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/continuo-guest
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
cat > "$work/files/continuo-guest" <<'RUN'
#!/bin/sh
# Unpacks the test's payload and runs it; the host reads the marker line.
cd /
rc=125
if tar -xf /dev/vdb -C / 2>&1 && [ -f /guest/run.sh ]; then
    chmod -R a+rX /guest
    cd /guest && sh /guest/run.sh
    rc=$?
else
    echo "continuo-guest: no payload on /dev/vdb"
fi
sync
echo "CONTINUO-QEMU-EXIT=$rc"
systemctl poweroff --no-block
RUN

# Sources: the host's own apt sources (deb822 or one-line), so the guest's
# packages come from the same place as the host's.
srcs=$work/sources
cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v '^#' > "$srcs" || true
[ -s "$srcs" ] || skip "no apt sources on this machine"

if ! mmdebstrap --mode=root --variant=minbase --format=directory \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$pkgs" \
        --customize-hook='echo continuo-guest > "$1/etc/hostname"' \
        --customize-hook='echo "/dev/vda / ext4 rw,relatime 0 1" > "$1/etc/fstab"' \
        --customize-hook="printf 'snd-seq\nsnd-seq-dummy\nsnd-seq-midi\nsnd-virmidi\n' > \"\$1/etc/modules-load.d/continuo-test.conf\"" \
        --customize-hook='chroot "$1" useradd -m -u 1000 -G audio -s /bin/sh player' \
        --customize-hook='mkdir -p "$1/var/lib/systemd/linger" && touch "$1/var/lib/systemd/linger/player"' \
        --customize-hook='mkdir -p "$1/var/log/journal"' \
        --customize-hook="cp '$work/files/continuo-guest.service' \"\$1/etc/systemd/system/\"" \
        --customize-hook="install -m 755 '$work/files/continuo-guest' \"\$1/usr/local/sbin/\"" \
        --customize-hook='chroot "$1" systemctl enable continuo-guest.service' \
        --customize-hook='chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service' \
        --customize-hook='passwd -R "$1" -d root' \
        bookworm "$root" - < "$srcs" 2>&1; then
    if grep -q "Failed to fetch\|Unable to fetch\|Temporary failure\|Could not resolve" "$log"; then
        skip "Debian's packages cannot be fetched here (log: $log)"
    fi
    failed "mmdebstrap failed"
fi

mkdir -p "$work/out"
cp -L "$root/vmlinuz" "$work/out/vmlinuz" 2>/dev/null || cp "$root"/boot/vmlinuz-* "$work/out/vmlinuz"
cp -L "$root/initrd.img" "$work/out/initrd.img" 2>/dev/null || cp "$root"/boot/initrd.img-* "$work/out/initrd.img"
# Documentation, man pages and locales are not needed to boot and test.
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" "$root/var/cache/apt" \
       "$root/var/lib/apt/lists"
size=$(du -sm "$root" | cut -f1)
# (mke2fs -q still prints "Creating regular file ..." on stdout: the log's.)
mke2fs -q -t ext4 -L continuo-guest -d "$root" "$work/out/rootfs.img" "$((size + size / 2 + 256))M" 2>&1 ||
    failed "mke2fs failed"
rm -rf "$dir"
mv "$work/out" "$dir"
echo "debian-image: ready, $(du -sh "$dir" | cut -f1) in $dir, built in $(($(date +%s) - started))s" >&2
echo "$dir" >&3
