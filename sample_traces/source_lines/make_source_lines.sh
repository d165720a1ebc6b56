#!/usr/bin/env bash
# make_source_lines.sh OUT_DIR [heldout]: the source-lines set (issue 45) on the GPU machine; with `heldout`, the
# held-out cases of heldout_cases.csv instead (src/heldout_main.cu, same steps, same file names in OUT_DIR).
# Builds src/main.cu with -lineinfo for sm_90, times every kernel first (CUDA events, median of 51 launches after 5 warm-ups:
# OUT_DIR/timings.csv), then records one launch of each with Nsight Compute's full set and the source imported
# (OUT_DIR/source_lines.ncu-rep), then exports each kernel's Source page as CSV in both shapes
# (OUT_DIR/csv/KERNEL.sass.csv, OUT_DIR/csv/KERNEL.cuda_sass.csv), then times everything again
# (OUT_DIR/timings_repeat.csv). Packs everything into OUT_DIR/source_lines.tgz.
set -uo pipefail
OUT_DIR=${1:?usage: make_source_lines.sh OUT_DIR [heldout]}
SET=${2:-main}
case "$SET" in
    main) MAIN=main.cu; PROGRAM=source_lines ;;
    heldout) MAIN=heldout_main.cu; PROGRAM=source_lines_heldout ;;
    *) echo "make_source_lines.sh: unknown set '$SET' (main or heldout)" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
NCU=${NCU:-ncu}
RES=/tmp/${PROGRAM}_res; rm -rf "$RES"; mkdir -p "$RES/csv" "$OUT_DIR"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
    nvcc --version | tail -n 2
    "$NCU" --version | tail -n 1
} >"$RES/versions.txt" 2>&1
cat "$RES/versions.txt"
"$NCU" --help >"$RES/ncu_help.txt" 2>&1
grep -nE "import-source|print-source|page|source-folders" "$RES/ncu_help.txt" | head -n 20
BIN=/tmp/${PROGRAM}_bin; mkdir -p "$BIN"
cp "$HERE"/src/*.cu "$BIN/"
(cd "$BIN" && nvcc -lineinfo -arch=sm_90 -O3 -Xptxas -v -o "$PROGRAM" "$MAIN") >"$RES/build.log" 2>&1 || { cat "$RES/build.log"; exit 1; }
cuobjdump -sass "$BIN/$PROGRAM" >"$RES/source_lines.sass.txt" 2>&1 || true
(cd "$BIN" && timeout 120 "./$PROGRAM" time "$RES/timings.csv") >"$RES/time.log" 2>&1; echo "time exit $?"
cat "$RES/time.log"
(cd "$BIN" && timeout 220 "$NCU" --clock-control none --profile-from-start off --set full --import-source yes \
    -f -o "$RES/source_lines" "./$PROGRAM" profile) >"$RES/ncu.log" 2>&1; echo "ncu exit $?"
tail -n 30 "$RES/ncu.log"
KERNELS=$(grep '^profiled ' "$RES/ncu.log" | awk '{print $2}')
for k in $KERNELS; do
    timeout 60 "$NCU" --import "$RES/source_lines.ncu-rep" --kernel-name "$k" --page source --csv --print-source sass \
        >"$RES/csv/$k.sass.csv" 2>"$RES/csv/$k.sass.err" &
    timeout 60 "$NCU" --import "$RES/source_lines.ncu-rep" --kernel-name "$k" --page source --csv \
        --print-source cuda,sass >"$RES/csv/$k.cuda_sass.csv" 2>"$RES/csv/$k.cuda_sass.err" &
    while [ "$(jobs -r | wc -l)" -ge 12 ]; do sleep 0.5; done
done
timeout 90 "$NCU" --import "$RES/source_lines.ncu-rep" --page source --csv --print-source sass >"$RES/csv/all.sass.csv" 2>"$RES/csv/all.sass.err" &
timeout 90 "$NCU" --import "$RES/source_lines.ncu-rep" --page source --csv --print-source cuda,sass >"$RES/csv/all.cuda_sass.csv" 2>"$RES/csv/all.cuda_sass.err" &
wait
find "$RES/csv" -name '*.err' -empty -delete
wc -l "$RES"/csv/* | tail -n 50
FIRST=$(echo "$KERNELS" | head -n 1)
head -c 1500 "$RES/csv/$FIRST.sass.csv"; echo; head -c 1500 "$RES/csv/$FIRST.cuda_sass.csv"; echo
(cd "$BIN" && timeout 60 "./$PROGRAM" time "$RES/timings_repeat.csv") >"$RES/time_repeat.log" 2>&1; echo "repeat exit $?"
gzip -9 "$RES"/csv/*.csv "$RES/source_lines.sass.txt"
gzip -9 -c "$RES/source_lines.ncu-rep" >"$RES/source_lines.ncu-rep.gz" && rm -f "$RES/source_lines.ncu-rep"
cp "$RES/timings.csv" "$OUT_DIR/" 2>/dev/null
(cd "$RES" && tar czf "$OUT_DIR/source_lines.tgz" .)
ls -la "$OUT_DIR" "$RES" "$RES/csv"
