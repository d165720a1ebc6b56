#!/usr/bin/env bash
# device_run.sh OUT: what was run on the GPU machine for issue 20 (one call): calibrate twice (measure.sh), the
# ceilings verdict cases (make_verdict_cases.sh --case ...), and calibrate's device test. Results packed in OUT.
set -u
RES=/tmp/res
mkdir -p "$RES/ceilings" "$RES/vc"
nvidia-smi -L
timeout 200 bash sample_traces/ceilings/measure.sh "$RES/ceilings" 1
CASES=scattered_gather,stream_near_ceiling,tiny_blocks_launch STEPS="build trace ncu" \
    timeout 220 bash sample_traces/verdict_cases/make_verdict_cases.sh /tmp/vc >"$RES/vc/make.log" 2>&1
echo "verdict cases exit $?"
cp /tmp/vc/*.csv.gz /tmp/vc/*.csv /tmp/vc/*.txt /tmp/vc/ncu.log "$RES/vc/" 2>/dev/null
cat /tmp/vc/run.txt; tail -n 5 "$RES/vc/make.log"
mv "$RES/ceilings/calibrate.log" "$RES/ceilings/calibrate_run1.log"
# second calibrate run: a separate process after the verdict cases
PYTHONPATH=$PWD PYTHONUNBUFFERED=1 timeout 200 python3 -m tracekit.cli.main calibrate \
    -o "$RES/ceilings/profile_run2.json" --raw "$RES/ceilings/raw_run2.json" \
    >"$RES/ceilings/summary_run2.txt" 2>"$RES/ceilings/calibrate_run2.log"
echo "calibrate run 2 exit $?"
cat "$RES/ceilings/summary_run2.txt"
timeout 150 python3 -m pytest --noconftest -q -p no:cacheprovider tests/ceilings/test_calibrate_device.py \
    >"$RES/pytest.txt" 2>&1
echo "pytest exit $?"; tail -n 15 "$RES/pytest.txt"
cat "$RES/ceilings/calibrate_run1.log" | tail -n 30
tar czf "$1/res.tgz" -C "$RES" .
ls -la "$RES" "$RES/ceilings" "$RES/vc"
