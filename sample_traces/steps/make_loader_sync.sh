#!/usr/bin/env bash
# make_loader_sync.sh OUTDIR [BATCH]: the GPU-bound ResNet training step (default batch 512) with each batch prepared
# on the host thread before its copy, as a training loop without loader workers does: resnet_loader_baseline
# (pinned, non_blocking, no sync: the host prepares the next batch while the GPU runs), resnet_loader_item_sync
# (loss.item() every step: the preparation no longer overlaps the GPU), resnet_loader_pageable (pageable buffers).
# Timings first (unprofiled, one process), then a Kineto trace of each with record_shapes and one without (lean/),
# each in a fresh process (src/steps.py).
set -uo pipefail
OUT=${1:?usage: make_loader_sync.sh OUTDIR [BATCH]}
export STEPS_RESNET_BATCH=${2:-512}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT/lean"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "STEPS_RESNET_BATCH=$STEPS_RESNET_BATCH STEPS_PREP=${STEPS_PREP:-mul}"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
    nproc
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'threads', torch.get_num_threads())"
} >"$OUT/versions.txt" 2>&1
"$PY" "$HERE/src/steps.py" variants "$OUT" >>"$OUT/run.log" 2>&1
timeout 240 "$PY" "$HERE/src/steps.py" time "$OUT" loader >>"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT" loader >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
cp "$OUT/step_summary.csv" "$OUT/variants.csv" "$OUT/lean/" 2>/dev/null
STEPS_RECORD_SHAPES=0 timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT/lean" loader >>"$OUT/run.log" 2>&1 || echo "lean trace failed: $?" | tee -a "$OUT/run.log"
tail -n 12 "$OUT/run.log"
