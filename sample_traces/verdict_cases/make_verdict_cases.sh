#!/usr/bin/env bash
# make_verdict_cases.sh OUT_DIR: build the labelled verdict cases (src/verdict_cases.cu), run each with warp
# tracing (OUT_DIR/<case>.csv.gz), profile one untraced launch of each with Nsight Compute (OUT_DIR/cases.ncu-rep,
# its raw and details CSV exports), and record the CUDA occupancy API's answers (OUT_DIR/occupancy_api_h100.json).
# Needs an NVIDIA GPU; builds for ARCH (sm_90, the H100). The expected verdicts are in labels.toml.
#
# Environment (all optional): NVCC, NCU (default: on the PATH), ARCH (sm_90), CASES (comma-separated case names;
# default all), STEPS (any of "build trace ncu occupancy"; default all).
set -euo pipefail
set -x

OUT_DIR=${1:?usage: make_verdict_cases.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ARCH=${ARCH:-sm_90}
NVCC=${NVCC:-nvcc}
NCU=${NCU:-ncu}
STEPS=${STEPS:-build trace ncu occupancy}
CASE_ARGS=()
[[ -n "${CASES:-}" ]] && CASE_ARGS=(--case "$CASES")

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUILD=$OUT_DIR/.build
SCRATCH=$OUT_DIR/.scratch  # traces written while profiling (not kept)
mkdir -p "$BUILD" "$SCRATCH"
APP=$BUILD/verdict_cases
has_step() { [[ " $STEPS " == *" $1 "* ]]; }

set +x
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "command: STEPS='$STEPS' CASES='${CASES:-}' sample_traces/verdict_cases/make_verdict_cases.sh OUT_DIR"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv || true
    "$NVCC" --version | tail -n 2 || true
    "$NCU" --version | tail -n 1 || true
} >"$OUT_DIR/versions.txt" 2>&1
set -x
cat "$OUT_DIR/versions.txt"

if has_step build; then
    "$NVCC" -O3 -arch="$ARCH" -lineinfo -I"$REPO/tracekit/cuda" -Xptxas -v "$HERE/src/verdict_cases.cu" -o "$APP" \
        >"$OUT_DIR/ptxas.txt" 2>&1 || { cat "$OUT_DIR/ptxas.txt"; exit 1; }
    "$NVCC" -O3 -arch="$ARCH" "$HERE/src/occupancy_api.cu" -o "$BUILD/occupancy_api"
    cuobjdump -sass "$APP" 2>&1 | gzip -9 -n >"$OUT_DIR/cases.sass.txt.gz" || true
fi

# Warp traces: two untraced launches of each case, then the traced one.
if has_step trace; then
    rm -f "$OUT_DIR"/*.csv.gz
    "$APP" "$OUT_DIR" --launches 3 "${CASE_ARGS[@]}" | tee "$OUT_DIR/run.txt"
    for f in "$OUT_DIR"/*.csv; do gzip -9 -n "$f"; done
fi

# Nsight Compute: the full set, one untraced launch of each case, clocks left as they are.
if has_step ncu; then
    if "$NCU" --clock-control none --set full --nvtx -f -o "$OUT_DIR/cases" \
        "$APP" "$SCRATCH" --launches 1 --no-trace "${CASE_ARGS[@]}" >"$OUT_DIR/ncu.log" 2>&1; then
        "$NCU" --import "$OUT_DIR/cases.ncu-rep" --csv --page raw >"$OUT_DIR/cases.raw.csv"
        "$NCU" --import "$OUT_DIR/cases.ncu-rep" --csv --page details >"$OUT_DIR/cases.details.csv"
    else
        echo "ncu failed (see ncu.log)"
    fi
    tail -n 30 "$OUT_DIR/ncu.log"
fi

# The CUDA occupancy API's answers, for the occupancy calculator's tests.
if has_step occupancy; then
    "$BUILD/occupancy_api" >"$OUT_DIR/occupancy_api_h100.json"
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['rows']), 'occupancy rows')" \
        "$OUT_DIR/occupancy_api_h100.json" || true
fi

rm -rf "$SCRATCH"
ls -la "$OUT_DIR"
du -sh --exclude=.build "$OUT_DIR"
