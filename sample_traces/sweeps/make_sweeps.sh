#!/usr/bin/env bash
# make_sweeps.sh OUT_DIR: build src/sweeps.cu, time every configuration (CUDA events, median of RUNS runs, L2
# flushed before each; OUT_DIR/timings.csv, then the same pass again after profiling: OUT_DIR/timings_repeat.csv),
# and profile one launch of every configuration with Nsight Compute (reduced section set, clocks left as they are;
# OUT_DIR/<kernel>.raw.csv and <kernel>.details.csv, the details page carrying the rules and their estimated speedups).
# Needs an NVIDIA GPU; builds for ARCH (sm_90, the H100).
# Environment (optional): NVCC, NCU (default: on the PATH), ARCH (sm_90), RUNS (9), STEPS ("build time ncu").
set -euo pipefail

OUT_DIR=${1:?usage: make_sweeps.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
ARCH=${ARCH:-sm_90}
NVCC=${NVCC:-nvcc}
NCU=${NCU:-ncu}
RUNS=${RUNS:-9}
STEPS=${STEPS:-build time ncu}
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUILD=$OUT_DIR/.build
mkdir -p "$BUILD"
APP=$BUILD/sweeps
has_step() { [[ " $STEPS " == *" $1 "* ]]; }

{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "command: STEPS='$STEPS' RUNS=$RUNS sample_traces/sweeps/make_sweeps.sh OUT_DIR"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.max.mem,memory.total --format=csv || true
    "$NVCC" --version | tail -n 2 || true
    "$NCU" --version | tail -n 1 || true
} >"$OUT_DIR/versions.txt" 2>&1
cat "$OUT_DIR/versions.txt"

if has_step build; then
    "$NVCC" -O3 -arch="$ARCH" -lineinfo -Xptxas -v "$HERE/src/sweeps.cu" -o "$APP" >"$OUT_DIR/ptxas.txt" 2>&1 \
        || { cat "$OUT_DIR/ptxas.txt"; exit 1; }
fi

if has_step time; then
    "$APP" --runs "$RUNS" >"$OUT_DIR/timings.csv"
    echo "timed $(($(wc -l <"$OUT_DIR/timings.csv") - 1)) configurations"
fi

if has_step ncu; then
    # Only the sections this ncu knows (names change between versions); Occupancy carries the
    # TheoreticalOccupancy/AchievedOccupancy rules and their estimated speedups.
    WANT="SpeedOfLight Occupancy LaunchStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables WarpStateStats SchedulerStats ComputeWorkloadAnalysis WorkloadDistribution"
    "$NCU" --list-sections >"$BUILD/sections.txt" 2>&1 || true
    SECTIONS=()
    for s in $WANT; do grep -qw -- "$s" "$BUILD/sections.txt" && SECTIONS+=(--section "$s"); done
    echo "ncu sections: ${SECTIONS[*]}" | tee -a "$OUT_DIR/versions.txt"
    # One report per kernel, so a run cut short keeps the kernels already profiled.
    DEADLINE=$((SECONDS + ${NCU_BUDGET_S:-420}))
    for k in sweep_copy sweep_fma sweep_gather sweep_read_ilp1 sweep_read_ilp2 sweep_read_ilp4 sweep_read_ilp8; do
        LEFT=$((DEADLINE - SECONDS))
        if ((LEFT < 20)); then echo "ncu: no time left for $k" | tee -a "$OUT_DIR/ncu.log"; continue; fi
        T0=$SECONDS
        if timeout "$LEFT" "$NCU" --clock-control none "${SECTIONS[@]}" \
            --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
            --nvtx --kernel-name regex:sweep_ -f -o "$OUT_DIR/$k" "$APP" --ncu --only "$k." \
            >"$OUT_DIR/ncu_app_$k.csv" 2>>"$OUT_DIR/ncu.log"; then
            "$NCU" --import "$OUT_DIR/$k.ncu-rep" --csv --page raw >"$OUT_DIR/$k.raw.csv"
            "$NCU" --import "$OUT_DIR/$k.ncu-rep" --csv --page details >"$OUT_DIR/$k.details.csv"
            echo "ncu $k: $((SECONDS - T0)) s" | tee -a "$OUT_DIR/ncu.log"
        else
            echo "ncu failed for $k after $((SECONDS - T0)) s (see ncu.log)" | tee -a "$OUT_DIR/ncu.log"
        fi
    done
    tail -n 5 "$OUT_DIR/ncu.log"
    # The same timings again after profiling: their spread against timings.csv is the run-to-run noise.
    "$APP" --runs "$RUNS" >"$OUT_DIR/timings_repeat.csv" || true
fi
ls -la "$OUT_DIR"
