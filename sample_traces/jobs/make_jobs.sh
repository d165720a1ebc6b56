#!/usr/bin/env bash
# make_jobs.sh OUTDIR [BACKEND] [MODEL.VARIANT ...]: issue 46's jobs, each in processes of its own under `timeout`
# (src/ddp_job.py says what each variant injects). BACKEND gloo with one GPU is the dry run.
set -uo pipefail
OUT=${1:?usage: make_jobs.sh OUTDIR [BACKEND] [MODEL.VARIANT ...]}
BACKEND=${2:-nccl}
shift 2 || shift $#
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
{
    date -u +"made %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=index,name,driver_version --format=csv
    python3 -c "import torch, torchvision, transformers; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'transformers', transformers.__version__, 'backend', '$BACKEND')"
} >"$OUT/versions.txt" 2>&1
port=29611
for job in "${@:-resnet50.baseline resnet50.slow_backward resnet50.loader_delay resnet50.item_sync}"; do
    for one in $job; do
        model=${one%%.*}; variant=${one#*.}
        started=$SECONDS
        timeout 150 python3 "$HERE/src/ddp_job.py" "$OUT" "$model" "$variant" --backend "$BACKEND" --port $port \
            >>"$OUT/run.log" 2>&1 || echo "$one failed: $?" | tee -a "$OUT/run.log"
        port=$((port + 1))
        echo "$one: $((SECONDS - started)) s" | tee -a "$OUT/run.log"
    done
done
