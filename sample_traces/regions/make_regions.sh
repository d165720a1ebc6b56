#!/usr/bin/env bash
# make_regions.sh OUT_DIR: record the region samples on the GPU machine (an H100, sm_90):
#   ws_pipeline.v2.gz       tracekit warp-trace v2 of a warp-specialized producer/consumer kernel (src/ws_pipeline.cu)
#   overhead.txt             the region markers' cost, measured there
#   proton_matmul.chrome_trace  a Triton matmul instrumented with Proton scopes (src/proton_matmul.py)
#   proton_repeat.chrome_trace  four launches of that kernel in one Proton session (src/proton_repeat.py)
#   run.txt                  versions, GPU clocks, the programs' output
set -uo pipefail
OUT_DIR=${1:?usage: make_regions.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
ARCH=${ARCH:-sm_90}
mkdir -p "$OUT_DIR/.build"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
    nvcc --version | tail -n 1
    python3 -c 'import triton, torch; import triton.profiler; print("triton", triton.__version__, "torch", torch.__version__, "proton ok")'
} > "$OUT_DIR/run.txt" 2>&1
FLAGS=(-O3 -std=c++17 -arch="$ARCH" -I"$REPO/tracekit/cuda")
nvcc "${FLAGS[@]}" -o "$OUT_DIR/.build/ws_pipeline" "$HERE/src/ws_pipeline.cu" >> "$OUT_DIR/run.txt" 2>&1
nvcc "${FLAGS[@]}" -DNO_REGIONS -o "$OUT_DIR/.build/ws_pipeline_no_regions" "$HERE/src/ws_pipeline.cu" >> "$OUT_DIR/run.txt" 2>&1
"$OUT_DIR/.build/ws_pipeline" "$OUT_DIR/ws_pipeline.csv" "$OUT_DIR/overhead.txt" >> "$OUT_DIR/run.txt" 2>&1
"$OUT_DIR/.build/ws_pipeline_no_regions" "$OUT_DIR/unused.csv" "$OUT_DIR/overhead.txt" >> "$OUT_DIR/run.txt" 2>&1
gzip -9f "$OUT_DIR/ws_pipeline.csv" && mv "$OUT_DIR/ws_pipeline.csv.gz" "$OUT_DIR/ws_pipeline.v2.gz"  # not *.csv.gz: the v1 sample globs
(cd "$HERE/src" && python3 proton_matmul.py "$OUT_DIR") >> "$OUT_DIR/run.txt" 2>&1
gzip -9f "$OUT_DIR/proton_matmul.chrome_trace"
(cd "$HERE/src" && python3 proton_repeat.py "$OUT_DIR") > "$OUT_DIR/run_repeat.txt" 2>&1
gzip -9f "$OUT_DIR/proton_repeat.chrome_trace"
nvidia-smi --query-gpu=clocks.sm --format=csv >> "$OUT_DIR/run.txt" 2>&1
rm -rf "$OUT_DIR/.build"
ls -la "$OUT_DIR" >> "$OUT_DIR/run.txt"
