#!/usr/bin/env bash
# device_run.sh OUT: the one GPU call that recorded sample_traces/real_kernels/ and sample_traces/pairing/ (issues 26
# and 29). Liger-Kernel 0.8.5 travels as its PyPI wheel in .ext/ (not committed); results are packed in OUT.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .ext/liger_kernel-0.8.5-py3-none-any.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi -L
RES=/tmp/res; mkdir -p "$RES/rk" "$RES/pairing"
bash sample_traces/pairing/make_pairing.sh "$RES/pairing"
bash sample_traces/real_kernels/make_real_kernels.sh "$RES/rk"
head -c 3000 "$RES/rk/timings.csv"; cut -d, -f1,2,10,14 "$RES/rk/timings.csv" | tail -n 30
tail -n 5 "$RES/rk/time.log"
cd "$RES" && tar czf /tmp/all.tgz rk pairing && split -b 15M /tmp/all.tgz "$1/all.tgz."
ls -la "$RES/rk" "$RES/pairing" "$1"
