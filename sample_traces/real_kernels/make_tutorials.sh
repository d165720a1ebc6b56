#!/usr/bin/env bash
# make_tutorials.sh OUT_DIR: a second real-kernel tuning set (issue 26): Triton's own tutorial kernels (vector add,
# fused softmax, layer norm forward) at the configurations their readers try. As make_real_kernels.sh: every
# configuration timed first (CUDA events, OUT_DIR/timings.csv), then one launch of each profiled by Nsight Compute
# with the same sections, then timed again (OUT_DIR/timings_repeat.csv).
set -uo pipefail
OUT_DIR=${1:?usage: make_tutorials.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
NCU=${NCU:-ncu}
export REAL_SET=tutorials PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT_DIR"
PY="python3 $HERE/src/real_kernels.py"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
    python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("triton", triton.__version__)'
    "$NCU" --version | tail -n 1
} >"$OUT_DIR/versions.txt" 2>&1
cat "$OUT_DIR/versions.txt"
timeout 180 $PY time "$OUT_DIR/timings.csv" 2>"$OUT_DIR/time.log"; echo "time exit $?"
WANT="SpeedOfLight Occupancy LaunchStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables WarpStateStats SchedulerStats ComputeWorkloadAnalysis WorkloadDistribution InstructionStats"
"$NCU" --list-sections >"$OUT_DIR/sections.txt" 2>&1 || true
SECTIONS=()
for s in $WANT; do grep -qw -- "$s" "$OUT_DIR/sections.txt" && SECTIONS+=(--section "$s"); done
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum
timeout 200 "$NCU" --clock-control none --profile-from-start off --nvtx "${SECTIONS[@]}" --metrics "$METRICS" \
    -f -o "$OUT_DIR/tuning" $PY ncu tuning >"$OUT_DIR/ncu_tuning.log" 2>&1; echo "ncu tuning exit $?"
if [ -f "$OUT_DIR/tuning.ncu-rep" ]; then
    "$NCU" --import "$OUT_DIR/tuning.ncu-rep" --csv --page raw | gzip -9 >"$OUT_DIR/tuning.raw.csv.gz"
    "$NCU" --import "$OUT_DIR/tuning.ncu-rep" --csv --page details | gzip -9 >"$OUT_DIR/tuning.details.csv.gz"
    rm -f "$OUT_DIR/tuning.ncu-rep"
fi
RUNS=9 timeout 120 $PY time "$OUT_DIR/timings_repeat.csv" 2>>"$OUT_DIR/time.log"; echo "repeat exit $?"
rm -f "$OUT_DIR/sections.txt"
tail -n 3 "$OUT_DIR"/ncu_*.log
