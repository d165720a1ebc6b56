#!/usr/bin/env bash
# make_unprofiled.sh OUTDIR [WORKLOAD ...]: issue 41's set. Workloads written by others (torchvision, timm, Hugging
# Face transformers; torch.compile, a DataLoader, generate, a CUDA graph), each timed without the profiler first,
# then traced, then timed again, at each torch.profiler setting in a process of its own (src/workloads.py); and, with
# `cost` among the
# names, the profiler's host cost per recorded event. Each in its own process under `timeout`; a failure is logged
# (run.log) and the others go on.
set -uo pipefail
OUT=${1:?usage: make_unprofiled.sh OUTDIR [cost] [WORKLOAD ...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
PIN=()  # PIN_CPUS=2-9: each process and its DataLoader workers kept on those cores (no migrations)
[ -n "${PIN_CPUS:-}" ] && PIN=(taskset -c "$PIN_CPUS")
mkdir -p "$OUT"
if [ ! -f "$OUT/versions.txt" ]; then
    {
        date -u +"made %Y-%m-%dT%H:%M:%SZ"
        echo "ACTIVE_STEPS=${ACTIVE_STEPS:-3} PIN_CPUS=${PIN_CPUS:-} TEARDOWN_CUPTI=${TEARDOWN_CUPTI:-} COST_IN_PROCESS=${COST_IN_PROCESS:-}"
        nvidia-smi --query-gpu=index,name,driver_version,compute_cap,clocks.sm,clocks.max.sm --format=csv
        lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|CPU max MHz)" || true
        "$PY" -c "import sys, torch, torchvision, timm, transformers; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__, 'timm', timm.__version__, 'transformers', transformers.__version__)"
        "$PY" -c "import lightning; print('lightning', lightning.__version__)" 2>&1 | tail -n 1
    } >"$OUT/versions.txt" 2>&1
fi
TOTAL_S=${TOTAL_S:-470}  # no workload starts past this many seconds (the GPU machine's calls last 10 minutes)
for name in "$@"; do
    started=$SECONDS
    if [ "$SECONDS" -gt "$TOTAL_S" ]; then
        echo "$name: skipped (past ${TOTAL_S} s)" | tee -a "$OUT/run.log"
        continue
    fi
    if [ "$name" = cost ]; then
        for setting in shapes cpu_cuda cuda_only stack memory; do
            timeout 100 "$PY" "$HERE/src/workloads.py" cost "$OUT" "$setting" >>"$OUT/run.log" 2>&1 || echo "cost $setting failed: $?" | tee -a "$OUT/run.log"
        done
    else
        settings=${SETTINGS:-shapes cpu_cuda cuda_only}
        case " ${FULL_SETTINGS:-tv_resnet50_train hf_gpt2_train} " in *" $name "*) settings="$settings stack memory" ;; esac
        for setting in $settings; do
            timeout 120 "${PIN[@]}" "$PY" "$HERE/src/workloads.py" time-and-trace "$OUT" "$name" "$setting" >>"$OUT/run.log" 2>&1 || echo "$name $setting failed: $?" | tee -a "$OUT/run.log"
        done
    fi
    echo "$name: $((SECONDS - started)) s" | tee -a "$OUT/run.log"
done
rm -f "$OUT"/*.json  # a trace a timeout cut off before its gzip
