#!/bin/sh
# prepare-image.sh: builds the Debian 12 guest image (debian-image.sh) into
# the guest cache ahead of the guest tests that boot it.
#
# meson test 'guest image' runs it as a parallel test among the first, so
# that building the image (about 100 s with an empty cache: mmdebstrap
# fetching and unpacking Debian's packages) overlaps the other parallel
# tests instead of holding the machine inside systemd_user, which runs
# alone. With the image cached it takes a moment. Exit 77 (skip) when the
# image cannot be built here (debian-image.sh says why).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
cache=$(qemu_cache "")
dir=$("$here/debian-image.sh" "$cache")
echo "prepare-image: the guest image is in $dir"
