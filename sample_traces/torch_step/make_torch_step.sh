#!/usr/bin/env bash
# Records sample_traces/torch_step/ on the GPU machine: a Kineto trace and an Nsight Compute report of the same
# step of torch_step.py, the report's raw and details CSV pages, and the versions. Usage: make_torch_step.sh OUTDIR
set -euo pipefail
out=${1:?usage: make_torch_step.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
python3 "$here/torch_step.py" kineto "$out/torch_step.pt.trace.json" > "$out/kineto.log" 2>&1
ncu --clock-control none --profile-from-start off --nvtx \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis \
    -o "$out/torch_step" python3 "$here/torch_step.py" ncu > "$out/ncu.log" 2>&1
ncu --import "$out/torch_step.ncu-rep" --csv --page raw > "$out/torch_step.raw.csv"
ncu --import "$out/torch_step.ncu-rep" --csv --page details > "$out/torch_step.details.csv"
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    echo "python3 torch_step.py kineto torch_step.pt.trace.json"
    echo "ncu --clock-control none --profile-from-start off --nvtx --section SpeedOfLight --section Occupancy" \
        "--section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis -o torch_step" \
        "python3 torch_step.py ncu"
    python3 -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
    ncu --version | tail -1
    nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.max.sm --format=csv,noheader
} > "$out/versions.txt"
