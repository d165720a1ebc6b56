#!/usr/bin/env bash
# make_steps.sh OUTDIR: record the whole-step samples of issue 28 on the GPU machine (an H100; src/steps.py):
#   1. unprofiled timings of every variant (CUDA events, 10 warm-up + 20 measured steps): step_timings.csv,
#      step_summary.csv
#   2. a Kineto trace of 5 steps of every variant: <variant>.pt.trace.json.gz
#   3. if 2 GPUs: a two-rank DDP ResNet step, plain and with a straggler (timings and one trace per rank)
#   4. Nsight Compute of the varied Triton kernel inside one step of each kernel-configuration variant:
#      ncu_<variant>.raw.csv and ncu_<variant>.details.csv (the .ncu-rep is deleted)
#   5. optional (WHOLE_STEP_NCU=1, or auto when time is left): every kernel of one llama_large_eager step
# plus versions.txt (versions and every command as run), variants.csv, run.log (all output), ncu_*.log.
# Each stage and each ncu run is a separate process under `timeout`; a failure is logged and the rest go on.
# Environment (optional): PYTHON (python3), NCU (ncu), WHOLE_STEP_NCU (auto | 1 | 0), TOTAL_S (390: no new
# stage starts once it would run past this many seconds of wall time, keeping the whole run under 7 minutes).
set -uo pipefail
OUT=${1:?usage: make_steps.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
NCU=${NCU:-ncu}
WHOLE_STEP_NCU=${WHOLE_STEP_NCU:-auto}
TOTAL_S=${TOTAL_S:-390}
STEPS_PY=$HERE/src/steps.py
# NVLink multicast stays off on the shared hosts (KINDS.md); the DDP ranks inherit these.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
    --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats)
: >"$LOG"

{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    echo "script: WHOLE_STEP_NCU=$WHOLE_STEP_NCU TOTAL_S=$TOTAL_S sample_traces/steps/make_steps.sh OUTDIR"
    echo "env: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST=$TORCH_SYMM_MEM_DISABLE_MULTICAST"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm,memory.total --format=csv
    "$PY" - <<'EOF'
import sys, torch, triton
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "nccl", torch.cuda.nccl.version())
print("triton", triton.__version__)
print("gpus", torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
print("tf32: cudnn", torch.backends.cudnn.allow_tf32, "matmul", torch.backends.cuda.matmul.allow_tf32)
EOF
    "$NCU" --version | tail -n 1
    echo "commands (OUTDIR = $OUT, STEPS_PY = $STEPS_PY), in order:"
} >"$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

# run LIMIT_S CMD...: log the command in versions.txt, run it under timeout, append its output to run.log.
run() {
    local limit=$1
    shift
    echo "$*" | sed "s#$OUT#OUTDIR#g; s#$STEPS_PY#steps.py#g" >>"$OUT/versions.txt"
    echo "=== [$SECONDS s] $*" | tee -a "$LOG"
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
    local rc=$?
    [[ $rc -ne 0 ]] && echo "FAILED rc=$rc: $*" | tee -a "$LOG"
    return $rc
}
# left NEEDED_S: seconds left before TOTAL_S if at least NEEDED_S are, else nothing (and a note in run.log).
left() {
    local l=$((TOTAL_S - SECONDS))
    if ((l >= $1)); then echo "$l"; else echo "=== [$SECONDS s] skipped: needs $1 s, $l left" >>"$LOG"; fi
}
cap() { (($1 < $2)) && echo "$1" || echo "$2"; }
# export_report REP: REP.ncu-rep's raw and details pages to REP.raw.csv and REP.details.csv.
export_report() {
    if [[ ! -f $1.ncu-rep ]]; then
        echo "  no report $(basename "$1").ncu-rep (no kernel profiled?)" | tee -a "$LOG"
        return
    fi
    "$NCU" --import "$1.ncu-rep" --csv --page raw >"$1.raw.csv" 2>>"$LOG"
    "$NCU" --import "$1.ncu-rep" --csv --page details >"$1.details.csv" 2>>"$LOG"
    echo "  $(($(wc -l <"$1.raw.csv") - 2)) kernels in $(basename "$1").raw.csv" | tee -a "$LOG"
}

# 1. Timings first (no profiler in these processes), one process per group; the first writes variants.csv.
for group in resnet llama kernels; do
    l=$(left 30) && [[ -n $l ]] && run "$(cap "$l" 150)" "$PY" "$STEPS_PY" time "$OUT" "$group"
done
# 2. Kineto traces.
for group in resnet llama kernels; do
    l=$(left 30) && [[ -n $l ]] && run "$(cap "$l" 150)" "$PY" "$STEPS_PY" trace "$OUT" "$group"
done
# 3. Two ranks (skips itself with one GPU).
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ((ngpu >= 2)); then
    l=$(left 60) && [[ -n $l ]] && run "$(cap "$l" 180)" "$PY" "$STEPS_PY" ddp "$OUT"
fi

# 4. Nsight Compute of the varied kernel in one step of each kernel variant, rms and swiglu alternating and the
# two that repeat the baseline's configuration last, so that a cut-off still leaves some changes of each.
[[ -f $OUT/variants.csv ]] || run 60 "$PY" "$STEPS_PY" variants "$OUT"
mapfile -t KVARS < <("$PY" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
base = next(r for r in rows if r["variant"] == "llama_large_eager")
key = ("rms_warps", "swiglu_block", "swiglu_warps")
rows = [r for r in rows if r["kernel_varied"]]
rows.sort(key=lambda r: all(r[k] == base[k] for k in key))  # stable: the baseline repeats last
rms = [r for r in rows if r["kernel_varied"] == "rms_norm"]
sw = [r for r in rows if r["kernel_varied"] == "swiglu"]
for i in range(max(len(rms), len(sw))):
    for part in (rms, sw):
        if i < len(part):
            print(part[i]["variant"], part[i]["kernel_varied"])
' "$OUT/variants.csv")
for line in "${KVARS[@]}"; do
    read -r variant kernel <<<"$line"
    l=$(left 25) && [[ -n $l ]] || continue
    rep=$OUT/ncu_$variant
    if run "$(cap "$l" 90)" "$NCU" --clock-control none --profile-from-start off --nvtx \
        --kernel-name "regex:$kernel" "${SECTIONS[@]}" -f -o "$rep" "$PY" "$STEPS_PY" ncu "$variant"; then
        export_report "$rep"
    fi
    rm -f "$rep.ncu-rep"
done

# 5. Every kernel of one llama_large_eager step (slow: ~130 kernels, each replayed once per pass).
if [[ $WHOLE_STEP_NCU == 1 ]] || { [[ $WHOLE_STEP_NCU == auto ]] && ((TOTAL_S - SECONDS >= 120)); }; then
    rep=$OUT/ncu_llama_large_eager_whole_step
    l=$(left 60) && [[ -n $l ]] &&
        if run "$l" "$NCU" --clock-control none --profile-from-start off --nvtx "${SECTIONS[@]}" -f -o "$rep" \
            "$PY" "$STEPS_PY" ncu llama_large_eager; then
            export_report "$rep"
        fi
    rm -f "$rep.ncu-rep"
fi

echo "=== [$SECONDS s] done" | tee -a "$LOG"
{
    echo "finished after $SECONDS s"
    nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
} >>"$OUT/versions.txt" 2>&1
grep -E '^(ok|FAILED)|FAILED|skipped|^  ' "$LOG"
ls -la "$OUT"
du -sh "$OUT"
