#!/usr/bin/env bash
# make_real_kernels.sh OUT_DIR: the real-kernel tuning set (issue 26) on the GPU machine. Times every configuration
# first (CUDA events, OUT_DIR/timings.csv), then profiles one launch of each with Nsight Compute (the tuning group
# with the sweep set's sections, the library group with --set full), then times everything again
# (OUT_DIR/timings_repeat.csv). Needs liger-kernel importable (PYTHONPATH) and ncu on the PATH. REAL_SET=tutorials
# records Triton's tutorial kernels instead, REAL_SET=inductor TorchInductor's generated kernels (a tuning group
# only; make_tutorials.sh, make_inductor.sh).
set -uo pipefail
OUT_DIR=${1:?usage: make_real_kernels.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
NCU=${NCU:-ncu}
mkdir -p "$OUT_DIR"
PY="python3 $HERE/src/real_kernels.py"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
    python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("triton", triton.__version__)'
    [ -n "${REAL_SET:-}" ] || python3 -c 'import liger_kernel; print("liger_kernel", getattr(liger_kernel, "__version__", "0.8.5 (wheel)"))'
    "$NCU" --version | tail -n 1
} >"$OUT_DIR/versions.txt" 2>&1
cat "$OUT_DIR/versions.txt"

timeout 240 $PY time "$OUT_DIR/timings.csv" 2>"$OUT_DIR/time.log"; echo "time exit $?"
WANT="SpeedOfLight Occupancy LaunchStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables WarpStateStats SchedulerStats ComputeWorkloadAnalysis WorkloadDistribution InstructionStats"
"$NCU" --list-sections >"$OUT_DIR/sections.txt" 2>&1 || true
SECTIONS=()
for s in $WANT; do grep -qw -- "$s" "$OUT_DIR/sections.txt" && SECTIONS+=(--section "$s"); done
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum
timeout 200 "$NCU" --clock-control none --profile-from-start off --nvtx "${SECTIONS[@]}" --metrics "$METRICS" \
    -f -o "$OUT_DIR/tuning" $PY ncu tuning >"$OUT_DIR/ncu_tuning.log" 2>&1; echo "ncu tuning exit $?"
[ -n "${REAL_SET:-}" ] || timeout 200 "$NCU" --clock-control none --profile-from-start off --nvtx --set full \
    -f -o "$OUT_DIR/library" $PY ncu library >"$OUT_DIR/ncu_library.log" 2>&1; echo "ncu library exit $?"
for r in tuning library; do
    [ -f "$OUT_DIR/$r.ncu-rep" ] || continue
    "$NCU" --import "$OUT_DIR/$r.ncu-rep" --csv --page raw >"$OUT_DIR/$r.raw.csv"
    "$NCU" --import "$OUT_DIR/$r.ncu-rep" --csv --page details >"$OUT_DIR/$r.details.csv"
done
RUNS=9 timeout 120 $PY time "$OUT_DIR/timings_repeat.csv" 2>>"$OUT_DIR/time.log"; echo "repeat exit $?"
tail -n 3 "$OUT_DIR"/ncu_*.log
