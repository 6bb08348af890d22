#!/usr/bin/env bash
# quickstart.sh: the two README commands.
#   bash tools/quickstart.sh run    install what is missing, build, run the main job
#   bash tools/quickstart.sh test   install what is missing, build, run every test
#                                   (werror build, ASan+UBSan build, bounded fuzzing)
# Debian 12, as root (or with sudo available). CI runs `quickstart.sh test`.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in run|test|deps) ;; *) echo "usage: $0 run|test|deps" >&2; exit 2 ;; esac

# What building and running need; the tests need the second list too.
run_pkgs=(gcc g++ meson ninja-build pkg-config libopenblas-dev libasound2-dev libportmidi-dev
          libfluidsynth-dev libpng-dev libsystemd-dev libmicrohttpd-dev ableton-link-dev fluid-soundfont-gm python3)
test_pkgs=(clang build-essential debhelper lintian fakeroot gpg arch-test libdpkg-perl libclang-rt-14-dev python3-torch python3-numpy python3-mido python3-matplotlib
           alsa-utils qemu-system-x86 qemu-utils mmdebstrap e2fsprogs busybox-static cpio valgrind
           fluidsynth sox systemd iproute2 util-linux chromium python3-websocket)

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "quickstart: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# meson test's summary of LOG as "N N N" (passed, failed, skipped).
counts() {
    local log=$1 ok fail timeout skip
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    timeout=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    echo "${ok:-0} $(( ${fail:-0} + ${timeout:-0} )) ${skip:-0}"
}

if [ "$mode" = deps ]; then
    install_missing "${run_pkgs[@]}" "${test_pkgs[@]}"
    exit 0
fi

if [ "$mode" = run ]; then
    install_missing "${run_pkgs[@]}"
    [ -d build ] || meson setup build >/dev/null
    ninja -C build >/dev/null
    exec ./build/continuo demo -o continuo-demo.mid
fi

started=$(date +%s)
install_missing "${run_pkgs[@]}" "${test_pkgs[@]}"
status=0
# The guest tests probe their accelerator once for this run (tests/qemu/accel.sh).
export CONTINUO_QEMU_RUN="${CONTINUO_QEMU_RUN:-$started-$$}"

# 1. The strict build: every warning an error, then the whole suite.
[ -d build-ci ] || meson setup build-ci -Dwerror=true --buildtype=debugoptimized >/dev/null
ninja -C build-ci
meson test -C build-ci --print-errorlogs --num-processes 2 2>&1 | tee build-ci/test-summary.log || status=1
read -r p1 f1 s1 < <(counts build-ci/test-summary.log)
echo "werror build: $p1 passed, $f1 failed, $s1 skipped"

# 2. The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
#    built without Ableton Link (-Dlink=disabled): that build passes every
#    other test, and sync = link there is a clear error at start.
if [ -z "${CONTINUO_SKIP_ASAN:-}" ]; then
    [ -d build-asan ] || CC=clang meson setup build-asan -Dwerror=true --buildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true -Dlink=disabled >/dev/null
    ninja -C build-asan
    # (UBSAN_OPTIONS=halt_on_error=1 comes from the tests' own environment, tests/meson.build.)
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4 --no-suite qemu \
        2>&1 | tee build-asan/test-summary.log || status=1
    read -r p2 f2 s2 < <(counts build-asan/test-summary.log)
    echo "asan+ubsan build: $p2 passed, $f2 failed, $s2 skipped"

    # 3. Every libFuzzer target for a bounded time from its committed seed corpus.
    bash tests/fuzz/run-fuzzers.sh build-asan "${CONTINUO_FUZZ_SECONDS:-30}" || status=1
fi

p2=${p2:-0} f2=${f2:-0} s2=${s2:-0}
python3 tools/suite-times.py build-ci build-asan || true
elapsed=$(( $(date +%s) - started ))
echo "time: $((elapsed / 60)) min $((elapsed % 60)) s in all, installs and builds included (the goal: under 50 min)"
echo "tests: $((p1 + p2)) passed, $((f1 + f2)) failed, $((s1 + s2)) skipped"
exit $status
