#!/usr/bin/env bash
# make_inductor.sh OUT_DIR: a third real-kernel tuning set (issue 26): the Triton kernels TorchInductor generates for a
# random gather, an FMA-heavy polynomial and a transpose (src/inductor_kernels.py), at the configurations Inductor's
# autotuner and its users try, recorded as make_real_kernels.sh records the tuning group (timings first, one Nsight
# Compute result per configuration, timings again); `probe` first writes what Inductor generated (generated.txt).
set -uo pipefail
OUT_DIR=${1:?usage: make_inductor.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT_DIR"
(cd "$HERE/src" && timeout 300 python3 inductor_kernels.py probe) >"$OUT_DIR/generated.txt" 2>&1
echo "probe exit $?"; grep -E "^== |matches eager" "$OUT_DIR/generated.txt"
REAL_SET=inductor PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}" bash "$HERE/make_real_kernels.sh" "$OUT_DIR"
for page in raw details; do
    [ -f "$OUT_DIR/tuning.$page.csv" ] && gzip -9f "$OUT_DIR/tuning.$page.csv"
done
rm -f "$OUT_DIR/tuning.ncu-rep" "$OUT_DIR/sections.txt"
