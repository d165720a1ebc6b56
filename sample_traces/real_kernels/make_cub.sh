#!/usr/bin/env bash
# make_cub.sh OUT_DIR: a fourth real-kernel tuning set (issue 26): CUB's block-wide reduce, scan and radix sort
# (src/cub_kernels.cu, built there with nvcc) at the BLOCK_THREADS x ITEMS_PER_THREAD configurations CUB's block
# examples sweep, recorded as make_real_kernels.sh records the tuning group (timings first, one Nsight Compute
# result per configuration, timings again); `probe` first checks every configuration against PyTorch (probe.txt).
set -uo pipefail
OUT_DIR=${1:?usage: make_cub.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT_DIR"
(cd "$HERE/src" && timeout 300 python3 cub_kernels.py probe) >"$OUT_DIR/probe.txt" 2>&1
echo "probe exit $?"; cat "$OUT_DIR/probe.txt"
REAL_SET=cub PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}" bash "$HERE/make_real_kernels.sh" "$OUT_DIR"
for page in raw details; do
    [ -f "$OUT_DIR/tuning.$page.csv" ] && gzip -9f "$OUT_DIR/tuning.$page.csv"
done
rm -f "$OUT_DIR/tuning.ncu-rep" "$OUT_DIR/sections.txt"
