#!/usr/bin/env bash
# make_pairing.sh OUT_DIR: one pass of src/pairing.py recorded by the PyTorch profiler (OUT_DIR/pairing.pt.trace.json)
# and by Nsight Compute (OUT_DIR/pairing.ncu-rep and its raw and details pages), on the GPU machine.
set -uo pipefail
OUT_DIR=${1:?usage: make_pairing.sh OUT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT_DIR"
timeout 120 python3 "$HERE/src/pairing.py" kineto "$OUT_DIR/pairing.pt.trace.json" >"$OUT_DIR/kineto.log" 2>&1
echo "kineto exit $?"
timeout 200 ncu --clock-control none --profile-from-start off --nvtx --section LaunchStats --section Occupancy \
    --section SpeedOfLight -f -o "$OUT_DIR/pairing" python3 "$HERE/src/pairing.py" ncu >"$OUT_DIR/ncu.log" 2>&1
echo "ncu exit $?"
ncu --import "$OUT_DIR/pairing.ncu-rep" --csv --page raw >"$OUT_DIR/pairing.raw.csv"
ncu --import "$OUT_DIR/pairing.ncu-rep" --csv --page details >"$OUT_DIR/pairing.details.csv"
tail -n 3 "$OUT_DIR/ncu.log"
