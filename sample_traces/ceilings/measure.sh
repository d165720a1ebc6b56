#!/usr/bin/env bash
# measure.sh OUT_DIR [RUNS]: a GPU's ceilings profile (issues 20 and 26). On the GPU machine, from the repo root:
# runs `tracekit calibrate` RUNS times (default 2; separate processes, one after the other), each writing its
# profile and raw output (every repeat of every sweep point), with nvidia-smi's view of the GPU before, nvcc's
# version and calibrate's progress log. The sweeps (docs/ceilings.md): DRAM streams over 32-, 64- and 128-bit loads
# and stores, read:write 1:0, 1:1, 2:1, 0:1, ILP 1-8 x 8-64 warps per SM; L2 over footprints inside L2; random
# sectors; shared; FP32/FP64; mma.sync and cuBLASLt tensor matmuls (fp16, bf16, tf32, fp8, int8); block launch
# rate; launch overhead; DRAM loaded latency. About 1.5 minutes a run on an H100 (builds included).
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
    start=$(date +%s)
    PYTHONPATH=$PWD PYTHONUNBUFFERED=1 timeout 290 "$PY" -m tracekit.cli.main calibrate \
        -o "$OUT_DIR/profile_run$run.json" --raw "$OUT_DIR/raw_run$run.json" \
        >"$OUT_DIR/summary_run$run.txt" 2>>"$OUT_DIR/calibrate.log"
    echo "exit $? after $(($(date +%s) - start)) s" | tee -a "$OUT_DIR/calibrate.log"
    tail -n 3 "$OUT_DIR/calibrate.log"
done
