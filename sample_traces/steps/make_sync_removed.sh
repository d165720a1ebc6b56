#!/usr/bin/env bash
# make_sync_removed.sh OUTDIR: a "sync removed" pair on the GPU-bound Llama-style forward (batch 8 x 1024 tokens):
# llama_large_nan_guard checks `torch.isfinite(h).all()` on the host after every attention and MLP block (12 syncs
# per forward); llama_large_eager is the same forward without them. Timings first (unprofiled, one process), then a
# Kineto trace of each in a fresh process (src/steps.py).
set -uo pipefail
OUT=${1:?usage: make_sync_removed.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
    "$PY" -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
} >"$OUT/versions.txt" 2>&1
timeout 240 "$PY" "$HERE/src/steps.py" time "$OUT" llama_large_eager llama_large_nan_guard >"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
timeout 240 "$PY" "$HERE/src/steps.py" trace "$OUT" llama_large_eager llama_large_nan_guard >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
tail -n 8 "$OUT/run.log"
