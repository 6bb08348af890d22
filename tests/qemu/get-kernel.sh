#!/bin/sh
# get-kernel.sh: fetches (once) and unpacks the Debian kernel and sound modules for qemu tests.
#
# usage: get-kernel.sh CACHE_DIR
# Prints the folder holding vmlinuz and modules/ (the sound modules, flat)
# on stdout. Exit status 77 when the kernel cannot be had (no apt, no
# network, no such package), 1 on other errors. The .deb is downloaded with
# `apt-get download` into CACHE_DIR once and reused; nothing is installed.
set -eu

cache=${1:?usage: get-kernel.sh CACHE_DIR}
mkdir -p "$cache" 2>/dev/null || { echo "get-kernel: cannot create $cache" >&2; exit 77; }

# The versioned package that the linux-image-amd64 metapackage points to.
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
      sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
if [ -z "$pkg" ]; then
    # No package lists: use whatever kernel was fetched before.
    pkg=$(cd "$cache" && ls -d linux-image-*-amd64 2>/dev/null | sort -V | tail -n 1 || true)
fi
if [ -z "$pkg" ]; then
    echo "get-kernel: cannot find the kernel package linux-image-amd64 depends on (apt-get update?)" >&2
    exit 77
fi

dir="$cache/$pkg"
if [ -f "$dir/vmlinuz" ] && [ -f "$dir/modules/snd-seq.ko" ]; then
    echo "$dir"
    exit 0
fi

deb=$(ls "$cache"/"$pkg"_*.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
    echo "get-kernel: downloading $pkg (once, into $cache)" >&2
    if ! (cd "$cache" && apt-get download "$pkg" >&2); then
        echo "get-kernel: apt-get download $pkg failed" >&2
        exit 77
    fi
    deb=$(ls "$cache"/"$pkg"_*.deb 2>/dev/null | head -n 1 || true)
    [ -n "$deb" ] || { echo "get-kernel: no .deb after download" >&2; exit 77; }
fi

tmp="$dir.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp/x" "$tmp/modules"
# Only the kernel image and the sound modules.
dpkg-deb --fsys-tarfile "$deb" |
    tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './lib/modules/*/kernel/sound/*' 2>/dev/null ||
    dpkg-deb --fsys-tarfile "$deb" |
    tar -x -C "$tmp/x" --wildcards 'boot/vmlinuz-*' 'lib/modules/*/kernel/sound/*'
mv "$tmp"/x/boot/vmlinuz-* "$tmp/vmlinuz"
find "$tmp/x/lib/modules" -name '*.ko*' -exec mv {} "$tmp/modules/" \;
for m in "$tmp"/modules/*.ko.xz; do
    [ -e "$m" ] && xz -d "$m"
done
rm -rf "$tmp/x"
[ -f "$tmp/modules/snd-seq.ko" ] || { echo "get-kernel: no snd-seq.ko in $deb" >&2; rm -rf "$tmp"; exit 1; }
rm -rf "$dir"
rm -f "$deb"      # the unpacked folder is the cache from now on
mv "$tmp" "$dir"
echo "$dir"
