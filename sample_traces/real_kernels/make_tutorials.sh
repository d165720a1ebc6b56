#!/usr/bin/env bash
# make_tutorials.sh OUT_DIR: a second real-kernel tuning set (issue 26): Triton's own tutorial kernels (vector add,
# fused softmax, layer norm forward) at the configurations their readers try, recorded as make_real_kernels.sh
# records Liger's tuning group (timings first, one Nsight Compute result per configuration, timings again); the
# Nsight pages gzipped, the report itself deleted.
set -uo pipefail
OUT_DIR=${1:?usage: make_tutorials.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
REAL_SET=tutorials bash "$HERE/make_real_kernels.sh" "$OUT_DIR"
for page in raw details; do
    [ -f "$OUT_DIR/tuning.$page.csv" ] && gzip -9f "$OUT_DIR/tuning.$page.csv"
done
rm -f "$OUT_DIR/tuning.ncu-rep" "$OUT_DIR/sections.txt"
