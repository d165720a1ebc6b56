#!/usr/bin/env bash
# make_cuda_only.sh OUTDIR: the batch-64 ResNet variants traced with the PyTorch profiler's CUDA activity only
# (kernels, copies and CUDA runtime calls; no per-operator CPU events). With CPU events the profiler's own host
# work makes the batch-64 step host-bound (20-30 ms a step against 9.6 ms unprofiled), hiding a sync's cost.
# Timings first (unprofiled), then the traces, each in a fresh process (src/steps.py).
set -uo pipefail
OUT=${1:?usage: make_cuda_only.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
VARIANTS=(resnet_baseline resnet_item_sync resnet_pageable resnet_host_pause)
mkdir -p "$OUT"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "STEPS_ACTIVITIES=cuda STEPS_RECORD_SHAPES=0 variants: ${VARIANTS[*]}"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} >"$OUT/versions.txt" 2>&1
timeout 240 "$PY" "$HERE/src/steps.py" time "$OUT" "${VARIANTS[@]}" >"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
STEPS_ACTIVITIES=cuda STEPS_RECORD_SHAPES=0 timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT" "${VARIANTS[@]}" >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
tail -n 8 "$OUT/run.log"
