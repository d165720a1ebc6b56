#!/usr/bin/env bash
# measure.sh OUT_DIR [RUNS]: the H100 ceilings profile (issue 20). On the GPU machine, from the repo root: runs
# `tracekit calibrate` RUNS times (default 2; separate processes), each writing its profile and raw output
# (every repeat of every sweep point), with nvidia-smi's view of the GPU before, and its progress log.
# Needs nvcc and an NVIDIA GPU; Python needs only typer and rich (no GPU package).
set -uo pipefail
OUT_DIR=${1:?usage: measure.sh OUT_DIR [RUNS]}
RUNS=${2:-2}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3}
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
    nvcc --version | tail -n 2
} >"$OUT_DIR/versions.txt" 2>&1
for run in $(seq 1 "$RUNS"); do
    echo "== run $run: tracekit calibrate -o profile_run$run.json --raw raw_run$run.json" | tee -a "$OUT_DIR/calibrate.log"
    PYTHONPATH=$PWD PYTHONUNBUFFERED=1 "$PY" -m tracekit.cli.main calibrate -o "$OUT_DIR/profile_run$run.json" \
        --raw "$OUT_DIR/raw_run$run.json" >"$OUT_DIR/summary_run$run.txt" 2>>"$OUT_DIR/calibrate.log"
    echo "exit $?" | tee -a "$OUT_DIR/calibrate.log"
    cat "$OUT_DIR/summary_run$run.txt"
done
