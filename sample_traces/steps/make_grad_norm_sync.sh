#!/usr/bin/env bash
# make_grad_norm_sync.sh OUTDIR [BATCH]: a "sync removed" pair on the GPU-bound ResNet training step (default batch
# 512): resnet_grad_norm_items reads every parameter's gradient norm on the host after backward (one .item(), so one
# sync, per parameter: 110 per step), resnet_baseline is the same step without them. Timings first (unprofiled, one
# process), then a Kineto trace of each in a fresh process (src/steps.py).
set -uo pipefail
OUT=${1:?usage: make_grad_norm_sync.sh OUTDIR [BATCH]}
export STEPS_RESNET_BATCH=${2:-512}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "STEPS_RESNET_BATCH=$STEPS_RESNET_BATCH"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} >"$OUT/versions.txt" 2>&1
timeout 240 "$PY" "$HERE/src/steps.py" time "$OUT" resnet_baseline resnet_grad_norm_items >"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT" resnet_baseline resnet_grad_norm_items >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
tail -n 8 "$OUT/run.log"
