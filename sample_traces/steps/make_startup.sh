#!/usr/bin/env bash
# make_startup.sh OUTDIR: a benchmark traced without ProfilerStep, start-up included (src/startup.py). Timings
# first (unprofiled, a fresh process), then the trace (a fresh process), so both pay the same one-time costs.
set -uo pipefail
OUT=${1:?usage: make_startup.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-(unset: lazy, CUDA's default)}"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv
    "$PY" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} >"$OUT/versions.txt" 2>&1
timeout 240 "$PY" "$HERE/src/startup.py" time "$OUT" >"$OUT/run.log" 2>&1 || echo "time failed: $?" | tee -a "$OUT/run.log"
timeout 240 "$PY" "$HERE/src/startup.py" trace "$OUT" >>"$OUT/run.log" 2>&1 || echo "trace failed: $?" | tee -a "$OUT/run.log"
# the same trace with another process's matmuls on the GPU for its whole run (started 15 s ahead to be warm)
"$PY" "$HERE/src/startup.py" hog 60 >>"$OUT/run.log" 2>&1 &
HOG=$!
sleep 15
timeout 240 "$PY" "$HERE/src/startup.py" trace "$OUT" benchmark_shared_gpu >>"$OUT/run.log" 2>&1 || echo "shared trace failed: $?" | tee -a "$OUT/run.log"
kill "$HOG" 2>/dev/null; wait "$HOG" 2>/dev/null
gzip -9 "$OUT"/*.pt.trace.json
tail -n 4 "$OUT/run.log"
