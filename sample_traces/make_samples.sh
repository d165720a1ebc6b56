#!/usr/bin/env bash
# make_samples.sh OUT_DIR: build the sample kernels (src/), run them writing one warp trace per configuration
# (OUT_DIR/*.csv.gz), profile them with Nsight Compute (OUT_DIR/samples.ncu-rep and its CSV exports) and Nsight
# Systems (OUT_DIR/samples.sqlite). Needs an NVIDIA GPU; builds for ARCH (sm_90, the H100).
#
# Environment (all optional):
#   NVCC, NCU, NSYS   the tools (default: on the PATH, nsys also under /opt/nvidia/nsight-*/)
#   ARCH              target architecture (sm_90)
#   NCU_APP_ARGS      the program's arguments under ncu (default: one untraced launch of each configuration but
#                     the two abs ones, "--launches 1 --no-trace --skip abs_positive,abs_negative": with --set full a
#                     launch takes about 1 MB of report; "--launches 2" profiles an untraced and a traced launch each)
#   GPULIBS           folder with libdw.so.1/libelf.so.1 unpacked by `dpkg -x` for nsys (default <repo>/.gpulibs)
#   STEPS             which steps to run, any of "build trace ncu nsys" (default all)
set -euo pipefail
set -x

OUT_DIR=${1:?usage: make_samples.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ARCH=${ARCH:-sm_90}
NVCC=${NVCC:-nvcc}
NCU=${NCU:-ncu}
NSYS=${NSYS:-$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2>/dev/null | head -n 1 || true)}
NCU_APP_ARGS=${NCU_APP_ARGS:---launches 1 --no-trace --skip abs_positive,abs_negative}
GPULIBS=${GPULIBS:-$REPO/.gpulibs}
STEPS=${STEPS:-build trace ncu nsys}
KERNELS='regex:^(vector_add|permute|abs_values|memcpy_[124]loads?|black_scholes(_fast_math)?|reduceNeighbored|reduceInterleaved|imbalanced_blocks)$'

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUILD=$OUT_DIR/.build
SCRATCH=$OUT_DIR/.scratch  # traces written while profiling (not kept)
mkdir -p "$BUILD" "$SCRATCH"
APP=$BUILD/samples
has_step() { [[ " $STEPS " == *" $1 "* ]]; }

set +x  # keep the trace of these commands out of versions.txt
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "command: STEPS='$STEPS' NCU_APP_ARGS='$NCU_APP_ARGS' sample_traces/make_samples.sh OUT_DIR"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv || true
    "$NVCC" --version | tail -n 2 || true
    "$NCU" --version | tail -n 1 || true
    [[ -n "$NSYS" ]] && LD_LIBRARY_PATH=$GPULIBS/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} "$NSYS" --version || true
} >"$OUT_DIR/versions.txt" 2>&1
set -x
cat "$OUT_DIR/versions.txt"

if has_step build; then
    FLAGS=(-O3 -arch="$ARCH" -lineinfo -I"$REPO/tracekit/cuda")
    "$NVCC" "${FLAGS[@]}" -c "$HERE/src/samples.cu" -o "$BUILD/samples.o"
    "$NVCC" "${FLAGS[@]}" -DBS_KERNEL=black_scholes -c "$HERE/src/black_scholes.cu" -o "$BUILD/black_scholes.o"
    "$NVCC" "${FLAGS[@]}" -use_fast_math -DBS_KERNEL=black_scholes_fast_math -c "$HERE/src/black_scholes.cu" \
        -o "$BUILD/black_scholes_fast_math.o"
    "$NVCC" -arch="$ARCH" "$BUILD/samples.o" "$BUILD/black_scholes.o" "$BUILD/black_scholes_fast_math.o" -o "$APP" -ldl
    cuobjdump -res-usage "$APP" >"$OUT_DIR/samples.res-usage.txt" 2>&1 || true
    cuobjdump -sass "$APP" 2>&1 | gzip -9 -n >"$OUT_DIR/samples.sass.txt.gz" || true
fi

# Warp traces: two untraced launches of each configuration, then the traced one.
if has_step trace; then
    rm -f "$OUT_DIR"/*.csv "$OUT_DIR"/*.csv.gz
    "$APP" "$OUT_DIR" --launches 3 | tee "$OUT_DIR/run.txt" || echo "WARNING: the sample program failed (run.txt)"
    gzip -9 -n "$OUT_DIR"/*.csv
fi

# Nsight Compute: full set, the sample kernels only, clocks left as they are.
if has_step ncu; then
    # shellcheck disable=SC2086  # NCU_APP_ARGS is a word list
    if "$NCU" --clock-control none --set full --nvtx --kernel-name "$KERNELS" -f -o "$OUT_DIR/samples" \
        "$APP" "$SCRATCH" $NCU_APP_ARGS >"$OUT_DIR/ncu.log" 2>&1; then
        "$NCU" --import "$OUT_DIR/samples.ncu-rep" --csv --page raw >"$OUT_DIR/samples.raw.csv"
        "$NCU" --import "$OUT_DIR/samples.ncu-rep" --csv --page details >"$OUT_DIR/samples.details.csv"
        "$NCU" --import "$OUT_DIR/samples.ncu-rep" --csv --print-summary per-kernel >"$OUT_DIR/samples.summary.csv"
        gzip -9 -nf "$OUT_DIR/samples.ncu-rep"  # 12x smaller; tracekit reads the report gzipped
    else
        echo "ncu failed (see ncu.log)"
    fi
    tail -n 20 "$OUT_DIR/ncu.log"
fi

# Nsight Systems: one full run (CUDA API, kernels, memory copies, NVTX ranges), exported to SQLite.
if has_step nsys; then
    if [[ -z "$NSYS" ]]; then
        echo "nsys not found: no Nsight Systems export"
    elif LD_LIBRARY_PATH=$GPULIBS/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} \
        "$NSYS" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true \
        -o "$BUILD/samples" "$APP" "$SCRATCH" --launches 3 >"$OUT_DIR/nsys.log" 2>&1 &&
        LD_LIBRARY_PATH=$GPULIBS/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} \
            "$NSYS" export --type sqlite --force-overwrite=true -o "$OUT_DIR/samples.sqlite" \
            "$BUILD/samples.nsys-rep" >>"$OUT_DIR/nsys.log" 2>&1; then
        echo "nsys ok"
    else
        echo "nsys failed (see nsys.log)"
    fi
    tail -n 20 "$OUT_DIR/nsys.log" || true
fi

rm -rf "$SCRATCH"
ls -la "$OUT_DIR"
du -sh "$OUT_DIR"
