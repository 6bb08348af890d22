#!/bin/sh
# run-fuzzers.sh: runs every libFuzzer target fuzz_* under BUILD_DIR/tests for SECONDS each, seeded from a copy of tests/fuzz/corpus/<X>; exits non-zero on a crash.
#
# usage: tests/fuzz/run-fuzzers.sh BUILD_DIR SECONDS
#   BUILD_DIR  configured with: CC=clang meson setup BUILD_DIR -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
# A target fuzz_X starts from the seeds in tests/fuzz/corpus/X (or tests/*/corpus/X) when that folder exists, else from nothing.
# New inputs go to a temporary folder, never into the repository; a crashing input is kept and its path printed.
# CONTINUO_FUZZ_JOBS=N: N targets at a time (default: one per core), each with a core to itself.
set -u

if [ $# -ne 2 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
fi
build=$1
seconds=$2
case $seconds in
    ''|*[!0-9]*) echo "$0: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;;
esac
src=$(cd "$(dirname "$0")/../.." && pwd)

targets=$(find "$build/tests" -type f -name 'fuzz_*' -perm -u+x 2>/dev/null | sort)
if [ -z "$targets" ]; then
    echo "$0: no fuzz_* executables under $build/tests (configure with -Dfuzz=true and build)" >&2
    exit 2
fi

# Undefined behaviour is a crash too (UBSan's default is to print and go on).
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

work=$(mktemp -d "${TMPDIR:-/tmp}/continuo-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT INT TERM
status=0
# Targets run side by side, one per core (CONTINUO_FUZZ_JOBS, default all
# cores): each still gets SECONDS of a core to itself.
jobs=${CONTINUO_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) jobs=1 ;; esac

# Fuzzes TARGET for SECONDS; leaves its summary line and exit status in
# $work/NAME/summary and $work/NAME/rc.
fuzz_one() {
    target=$1
    name=$(basename "$target")
    # Seeds: tests/fuzz/corpus/X, else the corpus/X of another test folder
    # (tests/daemon/corpus/config for fuzz_config).
    seeds="$src/tests/fuzz/corpus/${name#fuzz_}"
    if [ ! -d "$seeds" ]; then
        for d in "$src"/tests/*/corpus/"${name#fuzz_}"; do
            [ -d "$d" ] && seeds=$d && break
        done
    fi
    corpus="$work/$name/corpus"
    artifacts="$work/$name/artifacts"
    mkdir -p "$corpus" "$artifacts"
    n_seeds=0
    if [ -d "$seeds" ]; then
        cp "$seeds"/* "$corpus"/ 2>/dev/null
        n_seeds=$(find "$corpus" -type f | wc -l)
    fi
    log="$work/$name/log"
    start=$(date +%s.%N)
    "$target" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts/" \
        "$corpus" >"$log" 2>&1
    echo $? > "$work/$name/rc"
    end=$(date +%s.%N)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    grown=$(find "$corpus" -type f | wc -l)
    echo "$name: ${execs:-?} execs in $wall s ($n_seeds seeds, corpus grew to $grown inputs)" > "$work/$name/summary"
}

running=0
for target in $targets; do
    fuzz_one "$target" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait

for target in $targets; do
    name=$(basename "$target")
    cat "$work/$name/summary"
    rc=$(cat "$work/$name/rc" 2>/dev/null || echo 1)
    if [ "$rc" -ne 0 ]; then
        status=1
        keep=$(mktemp -d "${TMPDIR:-/tmp}/continuo-fuzz-$name.XXXXXX")
        cp "$work/$name/log" "$keep/log"
        cp "$work/$name/artifacts"/* "$keep"/ 2>/dev/null
        echo "$name: FAILED (exit status $rc); log and crashing inputs kept in $keep:" >&2
        tail -n 40 "$work/$name/log" >&2
    fi
done
exit $status
