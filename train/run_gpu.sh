#!/usr/bin/env bash
# run_gpu.sh: the GPU run in two steps: the data packed here, the model trained there in one call.
#
#   train/run_gpu.sh --pack [DIR]   HERE (the data folders and a built continuo at hand): encode
#                                   ASAP (train, valid) and maestro-extra (train) with
#                                   `continuo encode` at the five stretches, as train.py does,
#                                   compress them with xz into DIR (default gpu-pack, git-ignored):
#                                   as much as fits the 64 MiB the device tool carries with the
#                                   repository (train/pack.py; DIR/MANIFEST.json says what is in)
#   train/run_gpu.sh                THERE (a GPU machine, the pack carried into the repository:
#                                   carry ["gpu-pack"]): unpack and check the token files, train
#                                   $CONFIG for $TRAIN_SECONDS, score the whole valid split (fp32,
#                                   window memory, the weights as the file stores them: `continuo eval`'s
#                                   number), export the model file; all inside $DEADLINE seconds
#   train/run_gpu.sh --dry-run      HERE: every step of both on a few files and a tiny model on
#                                   the CPU, then the parts joined, checked and scored by
#                                   `continuo eval` against the trainer's number (a test)
#
# Results (the small files only) go to $OUT (the device tool's folder), else out/gpu_run:
#   model.gguf.part-NN      the model file (i8: int8 rows) in parts of $PART_BYTES (15m: under the 16 MiB a
#                           file the device tool brings back)
#   model.gguf.sha256       join with: cat model.gguf.part-* > model.gguf && sha256sum -c model.gguf.sha256
#   results.tar.gz          log.txt, config.json, command.txt, result.json, loss.png, MANIFEST.json
#   run_gpu.log             this script's own log (written as it goes: it comes back even when cut)
# Everything else (token files, checkpoint) stays in $WORK_DIR (default /tmp/continuo-gpu-run).
# Knobs: CONFIG (train/configs/gpu_default.json), PACK (gpu-pack), TRAIN_SECONDS (the config's
# train.max_seconds), DEADLINE (540: seconds from the script's start by which the trainer is cut;
# it checkpoints and exports as it goes), INIT_FROM (a model file of the config's shape to
# start from, e.g. models/continuo-default.gguf: it travels with the repository), PYTHON,
# CONTINUO (pack, dry run), DATA_DIRS (pack: the data folders, default ../shared/data/asap
# and ../shared/data/maestro-extra).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
CONFIG=${CONFIG:-train/configs/gpu_default.json}
PACK=${PACK:-gpu-pack}
DEADLINE=${DEADLINE:-540}
PART_BYTES=${PART_BYTES:-15m}
MODE=run
case "${1:-}" in
    --pack) MODE=pack; [ -n "${2:-}" ] && PACK=$2 ;;
    --dry-run) MODE=dry ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "run_gpu.sh: unknown argument $1 (--pack [DIR], --dry-run, --help)" >&2; exit 2 ;;
esac
LOGFILE=/dev/null
log() { echo "[run_gpu $(( $(date +%s) - t0 ))s] $*" | tee -a "$LOGFILE"; }

# Python with torch.
find_python() {
    PY=${PYTHON:-}
    if [ -z "$PY" ]; then
        for p in python3 /usr/bin/python3 python; do
            if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
        done
    fi
    [ -n "$PY" ] || { log "no python with torch"; exit 1; }
}

# The continuo binary (to encode, and to check the dry run's model file).
find_continuo() {
    if [ -z "${CONTINUO:-}" ]; then
        for c in build*/continuo; do
            if [ -x "$c" ] && "$c" encode --help >/dev/null 2>&1; then CONTINUO=$c; break; fi
        done
    fi
    if [ -z "${CONTINUO:-}" ]; then
        log "building continuo (meson, build-gpu)"
        { [ -d build-gpu ] || meson setup build-gpu --buildtype=release >/dev/null; } && ninja -C build-gpu >/dev/null
        CONTINUO=build-gpu/continuo
    fi
}

# do_pack DIR [pack.py options]: the token files of $DATA_DIRS, compressed into DIR.
do_pack() {
    local dir=$1; shift
    if [ -z "${DATA_DIRS:-}" ]; then
        for d in ../shared/data/asap ../shared/data/maestro-extra shared/data/asap shared/data/maestro-extra; do
            [ -f "$d/split.tsv" ] && DATA_DIRS="${DATA_DIRS:-} $d"
        done
    fi
    [ -n "${DATA_DIRS:-}" ] || { log "no data: set DATA_DIRS (folders with a split.tsv)"; exit 1; }
    local args=()
    for d in $DATA_DIRS; do args+=(--data "$d"); done
    log "pack: $DATA_DIRS -> $dir (encoder $CONTINUO)"
    "$PY" train/pack.py pack "${args[@]}" --out "$dir" --continuo "$CONTINUO" "$@"
}

# do_run RESULTS [train.py --set options]: unpack $PACK, train, score, export; the results
# into RESULTS. The trainer's token files and checkpoint go to $RUN.
do_run() {
    local results=$1; shift
    mkdir -p "$results" "$RUN"
    LOGFILE=$results/run_gpu.log
    log "python: $PY, $("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count(), "GPU(s)")')"
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | tee -a "$LOGFILE" || true
    [ -f "$PACK/MANIFEST.json" ] || { log "no pack in $PACK: run train/run_gpu.sh --pack here and carry it"; exit 1; }
    "$PY" train/pack.py unpack "$PACK" "$RUN/tokens" | tee -a "$LOGFILE"
    local lists
    lists=$("$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print(json.dumps(t["train"])); print(json.dumps(t["valid"]))' "$RUN/tokens/tokens.json")
    local args=(--config "$CONFIG" --out "$RUN/train"
                --set "data.train_tokens=$(sed -n 1p <<<"$lists")"
                --set "data.valid_tokens=$(sed -n 2p <<<"$lists")")
    [ -n "${TRAIN_SECONDS:-}" ] && args+=(--set "train.max_seconds=$TRAIN_SECONDS")
    [ -n "${INIT_FROM:-}" ] && args+=(--init-from "$INIT_FROM")
    args+=("$@")
    local launch=("$PY") ngpu
    ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
    [ "$ngpu" -gt 1 ] && launch=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$ngpu")
    # The trainer is cut (SIGINT, then KILL 20 s later) so that the script ends by
    # $DEADLINE, with time left to export its last checkpoint and cut the file.
    local limit=$(( DEADLINE - ($(date +%s) - t0) - 50 ))
    [ "$limit" -gt 30 ] || { log "no time left to train (DEADLINE $DEADLINE)"; exit 1; }
    log "training: ${launch[*]} train/train.py ${args[*]} (cut after ${limit}s)"
    set +e
    PYTHONUNBUFFERED=1 timeout --signal=INT --kill-after=20 "$limit" "${launch[@]}" train/train.py "${args[@]}" 2>&1 | tee -a "$LOGFILE"
    local rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" -ne 0 ]; then
        log "trainer exited $rc; exporting the last checkpoint"
        "$PY" train/train.py "${args[@]}" --export-only 2>&1 | tee -a "$LOGFILE" || true
    fi
    local model=$RUN/train/model.gguf
    [ -f "$model" ] || { log "no model file was written"; exit 1; }
    rm -f "$results"/model.gguf.part-*
    (cd "$RUN/train" && sha256sum model.gguf) > "$results/model.gguf.sha256"
    split -b "$PART_BYTES" -d -a 2 "$model" "$results/model.gguf.part-"
    cp "$PACK/MANIFEST.json" "$RUN/train/MANIFEST.json"
    local keep=()
    for f in log.txt config.json command.txt result.json loss.png MANIFEST.json; do
        [ -f "$RUN/train/$f" ] && keep+=("$f")
    done
    tar -czf "$results/results.tar.gz" -C "$RUN/train" "${keep[@]}"
    [ -f "$RUN/train/result.json" ] && log "result: $(tr -d '\n ' < "$RUN/train/result.json")"
    log "model: $(stat -c %s "$model") bytes in $(find "$results" -name 'model.gguf.part-*' | wc -l) part(s) under $results"
    # What the device tool brings back: at most 8 files of at most 16 MiB.
    local n big
    n=$(find "$results" -type f | wc -l)
    big=$(find "$results" -type f -size +16777215c | wc -l)
    if [ "$n" -gt 8 ] || [ "$big" -gt 0 ]; then
        log "warning: $n result files, $big over 16 MiB: the device tool brings back 8 files of 16 MiB at most"
    fi
    log "done in $(( $(date +%s) - t0 ))s; join with: cat model.gguf.part-* > model.gguf && sha256sum -c model.gguf.sha256"
}

# --dry-run: both steps on a few files and a tiny model on the CPU, then the
# parts joined and scored by continuo eval, which must give the trainer's number.
do_dry() {
    local dir=${DRY_DIR:-}
    if [ -z "$dir" ]; then dir=$(mktemp -d); DRY_TMP=$dir; trap 'rm -rf "$DRY_TMP"' EXIT; fi
    mkdir -p "$dir"
    find_continuo
    LOGFILE=$dir/dry.log
    PACK=$dir/pack
    do_pack "$PACK" --subset 3,2 --cache "$dir/cache" --jobs 1
    RUN=$dir/work
    PART_BYTES=64k      # the tiny model file in several parts, to join
    # The real config, with a tiny model and a few steps on one CPU thread.
    do_run "$dir/results" --set train.device=cpu --set train.threads=1 --set train.amp=off \
        --set model.n_layers=2 --set model.d_model=64 --set model.n_heads=4 --set model.d_ff=128 \
        --set model.max_rel=32 --set model.context=64 --set train.batch_size=8 \
        --set train.max_steps=24 --set train.warmup_steps=4 --set train.log_every=4 \
        --set train.eval_every=12 --set train.eval_max_seqs=1 --set train.ckpt_every=12 \
        --set train.eval_batch=16
    LOGFILE=$dir/dry.log
    local parts
    parts=$(find "$dir/results" -name 'model.gguf.part-*' | wc -l)
    (cd "$dir/results" && cat model.gguf.part-* > model.gguf && sha256sum -c model.gguf.sha256 >/dev/null)
    log "dry run: $parts part(s) joined, SHA-256 checked"
    tar -xzf "$dir/results/results.tar.gz" -C "$dir/results" result.json
    local valid
    valid=$("$PY" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["valid"]))' "$RUN/tokens/tokens.json")
    local line
    # shellcheck disable=SC2086  # one argument per valid token file
    line=$("$CONTINUO" eval --memory window --threads 1 --model "$dir/results/model.gguf" $valid | tail -1)
    "$PY" - "$dir/results/result.json" "$line" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))
parts = sys.argv[2].split()
if len(parts) < 4 or parts[0] != "nll":
    sys.exit(f"dry run: continuo eval printed {sys.argv[2]!r}")
nll, events = float(parts[1]), int(parts[3])
print(f"dry run: trainer valid_nll {res['valid_nll']:.6f} events {res['valid_events']}; "
      f"continuo eval nll {nll:.6f} events {events}")
if events != res["valid_events"] or abs(nll - res["valid_nll"]) > 1e-4:
    sys.exit("dry run: FAIL: continuo eval and the trainer disagree")
EOF
    log "dry run: OK in $(( $(date +%s) - t0 ))s"
}

find_python
case $MODE in
    pack)
        find_continuo
        do_pack "$PACK" --cache out/gpu-pack-cache
        ;;
    dry)
        do_dry
        ;;
    run)
        if [ -n "${OUT:-}" ]; then RESULTS=$OUT; else RESULTS=out/gpu_run; fi
        RUN=${WORK_DIR:-/tmp/continuo-gpu-run}
        do_run "$RESULTS"
        ;;
esac
