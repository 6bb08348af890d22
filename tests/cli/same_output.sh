#!/bin/sh
# same_output.sh: do two continuo binaries give identical outputs?  The check to run before and
# after changing the subcommands (their options, their steps): `continue --seed N` with several option
# sets, `encode` with its options, `decode` and `eval`, on the bundled motif and on the primers given.
# Files compare byte for byte, except PNGs: those compare by size and decoded pixels (png_pixels.py).
#
#   tests/cli/same_output.sh OLD_CONTINUO NEW_CONTINUO [PRIMER.mid ...]
#
# e.g. build main at the branch point into /tmp/old and compare it with the work tree's build:
#   git worktree add /tmp/old-src main && meson setup /tmp/old /tmp/old-src && ninja -C /tmp/old
#   tests/cli/same_output.sh /tmp/old/continuo build/continuo /path/to/asap/*/*/*/a.mid
# Each binary runs in its own folder with the same relative file names, so their printed lines
# compare too (timings are cut from encode's summary).  Prints one line per run and a count;
# exits 0 when everything matched, 1 when something differed (the diff is shown).
set -u
[ $# -ge 2 ] || { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
model="$src/models/continuo-default.gguf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
primers="$src/models/motif.mid"
for p in "$@"; do primers="$primers $(realpath "$p")"; done
runs=0 diffs=0

# pixels DIR: each PNG under DIR becomes NAME.png.pixels, the line png_pixels.py prints (size
# and a hash of the decoded pixels), since two encoders can write one picture in different
# bytes.  A PNG that does not decode stays, beside the error, and compares byte for byte.
pixels() {
    find "$1" -name '*.png' -type f | while IFS= read -r f; do
        python3 "$here/png_pixels.py" "$f" > "$f.pixels" 2>&1 && rm "$f"
    done
}

# one NAME SCRIPT: runs the shell SCRIPT with $C set to each binary in turn, in $work/old and
# $work/new; compares every file written (PNGs by their pixels) and the output (stdout and
# stderr, timings cut).
one() {
    for side in old new; do
        rm -rf "$work/$side" && mkdir -p "$work/$side"
        C=$old
        [ $side = new ] && C=$new
        (cd "$work/$side" && export C && sh -c "$2" > out.txt 2>&1; echo "exit $?" >> out.txt)
        sed -i -e 's/ in [0-9.]* s ([0-9.]* M events\/s)//' "$work/$side/out.txt"
        pixels "$work/$side"
    done
    runs=$((runs + 1))
    if diff -r "$work/old" "$work/new" > "$work/diff.txt"; then
        echo "same  $1"
    else
        diffs=$((diffs + 1))
        echo "DIFF  $1: $2"
        head -20 "$work/diff.txt"
    fi
}

i=0
for p in $primers; do
    i=$((i + 1))
    c="\"\$C\" continue '$p' -o c.mid --model '$model'"
    one "continue $i default" "$c --seed 1 --seconds 8"
    # the note cap in seconds before the play table (play_options.h), in ms since
    cap="\$(\"\$C\" continue --help | grep -q max-note-ms && echo --max-note-ms 2000 || echo --max-note-seconds 2)"
    one "continue $i sampling" "$c --seed 42 --seconds 6 --temperature 0.8 --top-k 20 --top-p 0.9 --min-p 0.05 \
--max-held 8 $cap"
    one "continue $i filter" "$c --seed 7 --seconds 6 --top-k 5 --filter-time-shifts --threads 1"
    one "continue $i window" "$c --seed 9 --seconds 10 --memory window --plot roll.svg"
    one "continue $i greedy" "$c --seed 3 --seconds 4 --temperature 0 --plot roll.png"
    one "continue $i attention" "$c --seed 5 --seconds 6 --candidates 1 --plot-attention att.svg"
    one "continue $i attention of a candidate" "$c --seed 6 --seconds 6 --plot-attention att.svg"
    one "continue $i knobs" "$c --seed 11 --seconds 6 --density 1.5 --register 5 --velocity 90 --key 'D minor' \
--key-lock --rhythm-temperature 0.8 --pitch-temperature 1.2 --motif 1 --release 0.5 --pitch-low 40 --pitch-high 90"
    one "continue $i step" "$c --seed 13 --seconds 6 --step --candidates 4 --candidate-score motif"
    one "encode $i" "\"\$C\" encode '$p' -o e.tok"
    one "encode $i options" "\"\$C\" encode '$p' -o e.tok --stretch 1.1 --transpose -3 --eos --vocab prnn388"
    one "encode $i stdout" "\"\$C\" encode '$p' -o - -q"
    one "decode $i" "\"\$C\" encode '$p' -o e.tok -q && \"\$C\" decode e.tok -o d.mid --max-note-seconds 4"
    one "eval $i" "\"\$C\" eval --model '$model' '$p' && \"\$C\" eval --memory stream --model '$model' '$p'"
done
one "demo" "CONTINUO_MODEL='$model' \"\$C\" demo '$src/models/motif.mid' -o demo.mid"
echo "$runs runs, $diffs differed"
[ $diffs -eq 0 ]
