#!/usr/bin/env bash
# make_resnet_gpu_bound.sh OUTDIR [BATCH]: the ResNet variants at a batch large enough (default 512) that the step
# stays GPU-bound under the profiler (at batch 64 the profiler's host work per step is 2-3x the step's GPU time, so
# "launch-bound" is the largest idle cause of every variant). Timings first (unprofiled), then a Kineto trace with
# record_shapes (as users record) and one without (lean/), each in a fresh process (src/steps.py).
set -uo pipefail
OUT=${1:?usage: make_resnet_gpu_bound.sh OUTDIR [BATCH]}
export STEPS_RESNET_BATCH=${2:-512}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT/lean"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "STEPS_RESNET_BATCH=$STEPS_RESNET_BATCH"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} >"$OUT/versions.txt" 2>&1
timeout 240 "$PY" "$HERE/src/steps.py" time "$OUT" resnet >"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT" resnet >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
cp "$OUT/step_summary.csv" "$OUT/variants.csv" "$OUT/lean/" 2>/dev/null
STEPS_RECORD_SHAPES=0 timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT/lean" resnet >>"$OUT/run.log" 2>&1 || echo "lean trace failed: $?" | tee -a "$OUT/run.log"
tail -n 5 "$OUT/run.log"
