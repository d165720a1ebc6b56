#!/usr/bin/env bash
# make_regions.sh OUT_DIR: record the region samples on the GPU machine (an H100, sm_90):
#   ws_pipeline.v2.gz       tracekit warp-trace v2 of a warp-specialized producer/consumer kernel (src/ws_pipeline.cu)
#   overhead.txt             the region markers' cost, measured there
#   proton_matmul.chrome_trace  a Triton matmul instrumented with Proton scopes (src/proton_matmul.py)
#   proton_repeat.chrome_trace  four launches of that kernel in one Proton session (src/proton_repeat.py)
#   run.txt                  versions, GPU clocks, the programs' output
#   ws_pipeline.raw.csv.gz   Nsight Compute (--set full) of one untraced launch of ws_pipeline, raw page, gzipped
#   ws_pipeline.details.csv  its details page (plain: the *.csv.gz globs that gather traces and raw pages then see
#                            the profiled launch once)
#   run_ncu.txt              the ncu step's versions, command and log
# Environment (optional): ARCH (sm_90), NCU (ncu on the PATH), STEPS (any of "ws proton ncu"; default all). The ncu
# step profiles the first launch of the same binary as the traced one (markers compiled in, buffers null): the same
# kernel, grid, block, registers and shared memory, so the traced launch pairs with it.
set -uo pipefail
OUT_DIR=${1:?usage: make_regions.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ARCH=${ARCH:-sm_90}
NCU=${NCU:-ncu}
STEPS=${STEPS:-ws proton ncu}
has_step() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$OUT_DIR/.build"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
FLAGS=(-O3 -std=c++17 -arch="$ARCH" -I"$REPO/tracekit/cuda")
if has_step ws || has_step proton; then
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
    nvcc --version | tail -n 1
    python3 -c 'import triton, torch; import triton.profiler; print("triton", triton.__version__, "torch", torch.__version__, "proton ok")'
} > "$OUT_DIR/run.txt" 2>&1
fi
if has_step ws; then
nvcc "${FLAGS[@]}" -o "$OUT_DIR/.build/ws_pipeline" "$HERE/src/ws_pipeline.cu" >> "$OUT_DIR/run.txt" 2>&1
nvcc "${FLAGS[@]}" -DNO_REGIONS -o "$OUT_DIR/.build/ws_pipeline_no_regions" "$HERE/src/ws_pipeline.cu" >> "$OUT_DIR/run.txt" 2>&1
"$OUT_DIR/.build/ws_pipeline" "$OUT_DIR/ws_pipeline.csv" "$OUT_DIR/overhead.txt" >> "$OUT_DIR/run.txt" 2>&1
"$OUT_DIR/.build/ws_pipeline_no_regions" "$OUT_DIR/unused.csv" "$OUT_DIR/overhead.txt" >> "$OUT_DIR/run.txt" 2>&1
gzip -9f "$OUT_DIR/ws_pipeline.csv" && mv "$OUT_DIR/ws_pipeline.csv.gz" "$OUT_DIR/ws_pipeline.v2.gz"  # not *.csv.gz: the v1 sample globs
fi
if has_step proton; then
(cd "$HERE/src" && python3 proton_matmul.py "$OUT_DIR") >> "$OUT_DIR/run.txt" 2>&1
gzip -9f "$OUT_DIR/proton_matmul.chrome_trace"
(cd "$HERE/src" && python3 proton_repeat.py "$OUT_DIR") > "$OUT_DIR/run_repeat.txt" 2>&1
gzip -9f "$OUT_DIR/proton_repeat.chrome_trace"
fi
# Nsight Compute: the full set, the first (untraced) launch of ws_pipeline only, clocks left as they are.
if has_step ncu; then
    {
        date -u +"made %Y-%m-%dT%H:%M:%SZ"
        echo "command: STEPS='$STEPS' sample_traces/regions/make_regions.sh OUT_DIR"
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
        nvcc --version | tail -n 1
        "$NCU" --version | tail -n 1
    } > "$OUT_DIR/run_ncu.txt" 2>&1
    nvcc "${FLAGS[@]}" -Xptxas -v -o "$OUT_DIR/.build/ws_pipeline_ncu" "$HERE/src/ws_pipeline.cu" >> "$OUT_DIR/run_ncu.txt" 2>&1
    mkdir -p "$OUT_DIR/.scratch"  # the program's own trace and timings under ncu (not kept)
    if "$NCU" --clock-control none --set full --kernel-name ws_pipeline --launch-count 1 -f -o "$OUT_DIR/ws_pipeline" \
        "$OUT_DIR/.build/ws_pipeline_ncu" "$OUT_DIR/.scratch/ws.csv" "$OUT_DIR/.scratch/overhead.txt" >> "$OUT_DIR/run_ncu.txt" 2>&1; then
        "$NCU" --import "$OUT_DIR/ws_pipeline.ncu-rep" --csv --page raw > "$OUT_DIR/ws_pipeline.raw.csv"
        "$NCU" --import "$OUT_DIR/ws_pipeline.ncu-rep" --csv --page details > "$OUT_DIR/ws_pipeline.details.csv"
        gzip -9 -n -f "$OUT_DIR/ws_pipeline.raw.csv"
    else
        echo "ncu failed" >> "$OUT_DIR/run_ncu.txt"
    fi
    rm -rf "$OUT_DIR/.scratch"
    ls -la "$OUT_DIR" >> "$OUT_DIR/run_ncu.txt"
fi
if has_step ws || has_step proton; then
nvidia-smi --query-gpu=clocks.sm --format=csv >> "$OUT_DIR/run.txt" 2>&1
ls -la "$OUT_DIR" >> "$OUT_DIR/run.txt"
fi
rm -rf "$OUT_DIR/.build"
