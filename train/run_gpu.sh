#!/usr/bin/env bash
# run_gpu.sh: trains, evaluates and exports the default model on a GPU machine in bounded time.
#
#   train/run_gpu.sh                 (from anywhere; runs in the repository root)
#
# One script, one config (train/configs/gpu_default.json, or $CONFIG), a bounded
# time (the config's max_seconds of training, about 7 minutes, plus data and
# evaluation; $TRAIN_SECONDS overrides it), all outputs under one folder:
#   $OUT if set (the small results only: model file in parts under 16 MB,
#        loss curve, log, config, result; the token cache and checkpoint go to
#        $WORK_DIR, default /tmp/continuo-gpu-run), else out/gpu_default.
# Data: $DATA, a folder with split.tsv (ASAP or MAESTRO laid out the same way),
# default the first of ../shared/data/asap, shared/data/asap, data/asap; or
# $TOKENS, a folder of token files already encoded (train_s*.tok, valid_s1.000.tok).
# The continuo binary (for encoding): $CONTINUO, an existing build*/continuo, or
# built here with meson into build-gpu. Several GPUs: one process per GPU (torchrun).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
CONFIG=${CONFIG:-train/configs/gpu_default.json}
if [ -n "${OUT:-}" ]; then
    RESULTS=$OUT
    RUN=${WORK_DIR:-/tmp/continuo-gpu-run}
else
    RESULTS=out/gpu_default
    RUN=$RESULTS
fi
mkdir -p "$RESULTS" "$RUN"
log() { echo "[run_gpu $(( $(date +%s) - t0 ))s] $*" | tee -a "$RESULTS/run_gpu.log"; }

# Python with torch.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    for p in python3 /usr/bin/python3 python; do
        if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
    done
fi
[ -n "$PY" ] || { log "no python with torch"; exit 1; }
log "python: $PY, $("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count(), "GPU(s)")')"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | tee -a "$RESULTS/run_gpu.log" || true

ARGS=(--config "$CONFIG" --out "$RUN")
[ -n "${TRAIN_SECONDS:-}" ] && ARGS+=(--set "train.max_seconds=$TRAIN_SECONDS")
if [ -n "${TOKENS:-}" ]; then
    train_list=$(ls "$TOKENS"/train_s*.tok | "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))')
    ARGS+=(--set "data.train_tokens=$train_list" --set "data.valid_tokens=\"$TOKENS/valid_s1.000.tok\"")
    log "data: token files in $TOKENS"
else
    if [ -z "${DATA:-}" ]; then
        for d in ../shared/data/asap shared/data/asap data/asap; do
            [ -f "$d/split.tsv" ] && { DATA=$d; break; }
        done
    fi
    [ -n "${DATA:-}" ] && [ -f "$DATA/split.tsv" ] || { log "no data: set DATA (a folder with split.tsv) or TOKENS"; exit 1; }
    # The continuo binary, to encode the MIDI files (the C codec is the one source of truth).
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
    ARGS+=(--split-file "$DATA/split.tsv" --root "$DATA" --continuo "$CONTINUO")
    log "data: $DATA; encoder: $CONTINUO"
fi

NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
if [ "$NGPU" -gt 1 ]; then
    LAUNCH=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$NGPU")
else
    LAUNCH=("$PY")
fi
# Hard bound: the config's budget plus room for data, evaluation and export; the
# trainer checkpoints and exports as it goes, so a cut run still leaves a model.
LIMIT=${HARD_LIMIT:-$(( ${TRAIN_SECONDS:-420} + 240 ))}
log "training: ${LAUNCH[*]} train/train.py ${ARGS[*]} (hard limit ${LIMIT}s)"
set +e
timeout --signal=INT --kill-after=30 "$LIMIT" "${LAUNCH[@]}" train/train.py "${ARGS[@]}"
rc=$?
set -e
if [ $rc -ne 0 ]; then
    log "trainer exited $rc; exporting the last checkpoint"
    "$PY" train/train.py "${ARGS[@]}" --export-only || true
fi

# Results: the model file in parts under 16 MB (cat model.gguf.part-* > model.gguf).
if [ -f "$RUN/model.gguf" ]; then
    if [ "$RESULTS" != "$RUN" ]; then
        for f in loss.png log.txt config.json result.json command.txt; do
            [ -f "$RUN/$f" ] && cp "$RUN/$f" "$RESULTS/"
        done
    fi
    (cd "$RUN" && sha256sum model.gguf) > "$RESULTS/model.gguf.sha256"
    split -b 15m -d -a 2 "$RUN/model.gguf" "$RESULTS/model.gguf.part-"
    log "model: $(ls -l "$RUN/model.gguf" | awk '{print $5}') bytes in $(ls "$RESULTS"/model.gguf.part-* | wc -l) part(s) under $RESULTS"
    log "join with: cat model.gguf.part-* > model.gguf && sha256sum -c model.gguf.sha256"
else
    log "no model file was written"
    exit 1
fi
log "done in $(( $(date +%s) - t0 ))s"
