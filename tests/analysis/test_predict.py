"""predict(): hand-made launches (knobs through the calculator, the regimes, ILP, launch rate, refusals) and the
recorded H100 sweep set (sample_traces/sweeps)."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tracekit.analysis import predict as predict_module
from tracekit.analysis.predict import (
    Change,
    PredictInputs,
    Prediction,
    PredictionRefused,
    SweepSample,
    UnitUse,
    knob_of,
    unit_uses,
    with_sweep,
)
from tracekit.analysis.predict import predict as predict_data
from tracekit.analysis.predict import what_to_try as what_to_try_data
from tracekit.ceilings import ceilings_for
from tracekit.present.rules.worded import worded_prediction

SWEEPS = Path(__file__).resolve().parents[2] / "sample_traces" / "sweeps" / "h100"


def predict(inputs: PredictInputs, change: Change) -> Prediction:
    """The prediction as a view shows it: the predictor's data, worded by `tracekit.present.rules`."""
    return worded_prediction(predict_data(inputs, change))


def what_to_try(inputs: PredictInputs, top: int = 5, min_speedup: float = 1.02) -> list[Prediction]:
    return [worded_prediction(p) for p in what_to_try_data(inputs, top=top, min_speedup=min_speedup)]


def _launch(utilization_pct: float, smem: int = 115_712, **kw: object) -> PredictInputs:
    """A 256-thread launch held to 2 blocks (16 warps) per SM by dynamic shared memory, many waves."""
    base: dict[str, object] = dict(
        compute_capability="9.0",
        sm_count=132,
        duration_ns=1_000_000.0,
        threads_per_block=256,
        grid_blocks=132 * 2 * 200,
        registers_per_thread=32,
        dynamic_shared_mem_bytes=smem,
        achieved_warps_per_sm=16.0,
        units=(UnitUse("dram (stream)", utilization_pct, 90.0, "nominal"),),
        block_launch_per_s_per_sm=1e12,  # launches free unless a test says otherwise
    )
    base.update(kw)
    return PredictInputs(**base)  # type: ignore[arg-type]


def test_at_the_ceiling_a_change_buys_nothing() -> None:
    p = predict(_launch(89.9), Change(dynamic_shared_mem_bytes=0))
    assert p.new.theoretical_warps_per_sm == 64
    assert p.predicted.speedup == pytest.approx(1.0, abs=0.01)
    assert p.regime == "throughput"
    assert p.predicted.low <= 1.0 <= p.predicted.high


def test_far_below_the_ceiling_n_over_l_holds() -> None:
    p = predict(_launch(2.0), Change(dynamic_shared_mem_bytes=0))  # 16 -> 64 warps at 2% of the bound
    assert p.predicted.speedup == pytest.approx(4.0, rel=0.03)
    assert p.regime == "latency"
    assert p.basis[0] == "this launch's counters"
    assert [f.step for f in p.findings][:4] == ["occupancy", "achieved", "concurrency", "regime"]


def test_ilp_multiplies_concurrency() -> None:
    by_ilp = predict(_launch(2.0), Change(ilp=4))
    by_warps = predict(_launch(2.0), Change(dynamic_shared_mem_bytes=0))
    assert by_ilp.new.theoretical_warps_per_sm == 16
    assert by_ilp.predicted.speedup == pytest.approx(by_warps.predicted.speedup, rel=0.01)


def test_launch_rate_binds_for_tiny_blocks() -> None:
    # 52,800 blocks of 256 threads take 32 us to start; as 211,200 blocks of 64 they take 128 us > the 100 us now.
    slow_starts = _launch(
        2.0, smem=0, achieved_warps_per_sm=60.0, block_launch_per_s_per_sm=1.25e7, duration_ns=100_000.0
    )
    to_64 = predict(slow_starts, Change(threads_per_block=64))
    assert to_64.new.grid_blocks == 132 * 2 * 200 * 4
    assert to_64.regime == "launch"
    # the block scheduler binds, and the launch's fixed microsecond (nominal: no measured profile) adds
    assert to_64.predicted.duration_ns == pytest.approx(128_000 + 1_000, rel=1e-3)
    assert to_64.predicted.speedup < 0.8
    free_starts = predict(
        _launch(2.0, smem=0, achieved_warps_per_sm=60.0, duration_ns=100_000.0), Change(threads_per_block=64)
    )
    # Free starts: only residency changes (2-warp blocks end nearer their mean warp than 8-warp ones).
    assert 1.0 <= free_starts.predicted.speedup < 1.06


@pytest.mark.parametrize(
    ("change", "limit"),
    [
        (Change(threads_per_block=2048), "1024"),
        (Change(dynamic_shared_mem_bytes=300_000), "shared memory"),
        (Change(registers_per_thread=300), "registers per thread"),
        (Change(threads_per_block=1024, registers_per_thread=128), "registers"),
        (Change(warps_per_sm=80), "64"),
    ],
)
def test_impossible_configurations_are_refused_naming_the_limit(change: Change, limit: str) -> None:
    with pytest.raises(PredictionRefused, match=limit) as raised:
        predict(_launch(50.0), change)
    assert "\n" not in str(raised.value)


def test_without_counters_or_sweep_it_says_what_is_missing() -> None:
    with pytest.raises(PredictionRefused, match="no Nsight Compute counters"):
        predict(_launch(50.0, units=()), Change(dynamic_shared_mem_bytes=0))


def test_a_sweep_is_fitted_and_named_as_the_basis() -> None:
    samples = [SweepSample(w, 1e6 * 16 / w, 1.0) for w in (8.0, 16.0, 32.0)]  # n / L all the way
    p = predict(with_sweep(_launch(50.0, units=()), samples), Change(dynamic_shared_mem_bytes=0))
    assert p.basis[0] == "a measured sweep"
    assert p.predicted.speedup == pytest.approx(4.0, rel=0.05)
    assert p.narrow is not None  # 64 warps lies beyond the measured 8-32


def test_a_sweep_at_its_bound_everywhere_needs_at_most_its_lowest_concurrency() -> None:
    # Three launches of the same work at 16, 32 and 64 warps per SM take the same time: the fit cannot place the knee
    # below 16 (its latency goes to zero), so Little's law says "at most 16", not a fitted 0.00002 warps.
    samples = [SweepSample(w, 1e6, 1.0) for w in (16.0, 32.0, 64.0)]
    p = predict(with_sweep(_launch(50.0, units=()), samples), Change(warps_per_sm=8))
    law = next(f for f in p.findings if f.template.startswith("predict.littles-law"))
    assert law.template == "predict.littles-law-at-most" and law.value == 16.0
    assert p.needed_concurrency == 16.0
    assert "at most that in flight" in law.text
    knee = [SweepSample(w, 1e6 * 24 / min(w, 24.0), 1.0) for w in (8.0, 16.0, 32.0, 64.0)]  # n / L up to 24 warps
    fitted = predict(with_sweep(_launch(50.0, units=()), knee), Change(dynamic_shared_mem_bytes=0))
    law = next(f for f in fitted.findings if f.template.startswith("predict.littles-law"))
    assert law.template == "predict.littles-law" and 8.0 < law.value < 64.0


def test_beyond_the_sweep_growth_is_held_to_what_the_counters_allow() -> None:
    # The same n / L sweep of 8-32 warps, but the launch's counters put DRAM at 44% of its ceiling at 16 warps: the
    # fit saw no saturation, the counters do, so 64 warps buy what the unit has left (1 / 0.44 = 2.25x), not 4x (a
    # 3-point sweep of a copy over-predicted 40-64 warps by 17-35%); inside the measured range the fit alone.
    samples = [SweepSample(w, 1e6 * 16 / w, 1.0) for w in (8.0, 16.0, 32.0)]
    free = predict(with_sweep(_launch(50.0, units=()), samples), Change(dynamic_shared_mem_bytes=0))
    held = predict(with_sweep(_launch(40.0), samples), Change(dynamic_shared_mem_bytes=0))
    within = predict(with_sweep(_launch(40.0), samples), Change(dynamic_shared_mem_bytes=55_000))  # 32 warps
    assert free.predicted.speedup == pytest.approx(4.0, rel=0.05)
    assert held.predicted.speedup == pytest.approx(90 / 40, rel=0.01)
    assert held.predicted.high <= 90 / 40 * 1.1 + 1e-9  # the interval reaches past by the ceilings' own spread
    assert within.predicted.speedup == pytest.approx(2.0, rel=0.01)
    assert any(f.template == "predict.sweep-held" for f in held.findings)
    assert any(f.template == "predict.capped" for f in held.findings)


def test_what_to_try_ranks_changes_best_first() -> None:
    tries = what_to_try(_launch(2.0), top=3)
    assert tries and all(a.predicted.speedup >= b.predicted.speedup for a, b in zip(tries, tries[1:], strict=False))
    assert tries[0].predicted.speedup > 3


def test_sweep_set_labels_were_recorded() -> None:
    """The labels: 112 configurations, 9 timed runs each, the run-to-run spread far below the 10% target."""
    with (SWEEPS / "timings.csv").open(newline="") as handle:
        first = {r["config"]: float(r["median_ns"]) for r in csv.DictReader(handle)}
    with (SWEEPS / "timings_repeat.csv").open(newline="") as handle:
        again = {r["config"]: float(r["median_ns"]) for r in csv.DictReader(handle)}
    assert len(first) == 112 and first.keys() == again.keys()
    assert max(abs(again[k] / first[k] - 1) for k in first) < 0.02


# ---- ceilings: the device's measured profile, or nominal peaks said so -------------------------------------

H100 = ceilings_for("NVIDIA H100 80GB HBM3", "9.0", 132)  # the shipped profile, measured by tracekit calibrate
PROFILE = "measured: tracekit/ceilings/profiles/nvidia-h100-80gb-hbm3.json"


def _frame(rows: dict[str, float]) -> pl.DataFrame:
    """A launch's counters as Store.metrics rows."""
    data: list[tuple[Any, ...]] = [(1, None, name, None, float(v), None, "float") for name, v in rows.items()]
    return pl.DataFrame(
        data, schema=["launch_id", "section", "name", "unit", "value", "text_value", "kind"], orient="row"
    )


def _stream_counters(reads: float, writes: float, bytes_per_sector: float = 32.0, **extra: float) -> pl.DataFrame:
    """100 us moving `reads` + `writes` DRAM bytes, loads using `bytes_per_sector` of each 32-byte sector."""
    rows = {
        "gpu__time_duration.sum": 100_000.0,
        "dram__bytes.sum": reads + writes,
        "dram__bytes_read.sum": reads,
        "dram__bytes_write.sum": writes,
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio": bytes_per_sector,
        "smsp__issue_active.avg.pct_of_peak_sustained_active": 20.0,
    }
    rows.update(extra)
    return _frame(rows)


def test_no_constant_learned_from_the_sweep_set_remains() -> None:
    for name in ("ACHIEVABLE_DRAM_SCATTERED", "ACHIEVABLE_DRAM_STREAM", "DEFAULT_BLOCK_LAUNCH_PER_S_PER_SM"):
        assert not hasattr(predict_module, name)


def test_dram_is_judged_by_the_measured_ceiling_of_its_pattern_and_direction() -> None:
    read_only, curve = unit_uses(_stream_counters(1.5e8, 0.0), H100)
    copy, _ = unit_uses(_stream_counters(1.5e8, 1.5e8), H100)
    gather, _ = unit_uses(_stream_counters(1.5e8, 0.0, bytes_per_sector=4.0), H100)
    dram = {u.unit: u for u in (*read_only, *copy, *gather) if u.unit.startswith("dram")}
    mixes = H100.dram_stream_by_mix
    assert "1:0" in mixes and "1:1" in mixes and H100.dram_random_sector_bytes_per_s
    # A read-only stream against the read-only stream of its mix (1:0), a copy against the 1:1 stream, a gather
    # against scattered sectors: the ceilings the verdict names (achievable.dram_ceiling), one home for both.
    reads = next(u for u in read_only if u.unit == "dram (stream)")
    copies = next(u for u in copy if u.unit == "dram (stream)")
    assert reads.ceiling == pytest.approx(mixes["1:0"].value)
    assert copies.ceiling == pytest.approx(mixes["1:1"].value)
    assert reads.ceiling > copies.ceiling  # bus turnarounds: a copy plateaus below a read-only stream
    assert dram["dram (scattered)"].ceiling == pytest.approx(H100.dram_random_sector_bytes_per_s.value)
    assert reads.achieved == pytest.approx(1.5e12) and reads.rate_unit == "B/s" and reads.source == PROFILE
    # The loaded-latency curve comes along for Little's law (no stall counters: the warp waits on memory always).
    unloaded = min(H100.dram_latency_curve, key=lambda point: point.throughput_bytes_per_s).latency_ns
    assert curve is not None and curve.memory_share == 1.0 and curve.latency_at(0.0) == pytest.approx(unloaded)


def test_the_tensor_pipe_is_judged_by_the_roof_of_its_own_input_type() -> None:
    """An int8 GEMM's tensor pipe against the int8 roof's share of peak, a bf16 one's against bf16's: the types reach
    different shares of their nominal peaks (the best of them would flatter the one that reaches less)."""
    roofs = H100.tensor_flop_per_s
    int8, bf16 = roofs["int8"].fraction_of_nominal, roofs["bf16"].fraction_of_nominal
    assert int8 and bf16 and abs(int8 - bf16) > 0.01
    for kind, counter, share in (
        ("int8", "sm__ops_path_tensor_src_int8.sum", int8),
        ("bf16", "sm__ops_path_tensor_src_bf16_dst_fp32.sum", bf16),
    ):
        counters = _stream_counters(
            1e8, 1e8, **{counter: 5e13, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 80.0}
        )
        units, _ = unit_uses(counters, H100)
        pipe = next(u for u in units if u.unit == "tensor pipe")
        assert pipe.ceiling == pytest.approx(100.0 * min(share, 1.0)), kind
        assert pipe.utilization == pytest.approx(0.8 / min(share, 1.0)), kind


def test_measured_profile_is_named_in_the_basis_and_nominal_says_so() -> None:
    units, curve = unit_uses(_stream_counters(1e8, 1e8), H100)
    measured = _launch(0.0, units=units, dram_curve=curve, ceilings_source=PROFILE, block_launch_per_s_per_sm=None)
    measured = replace(measured, block_launch_rates=((256, 12.2e6), (1024, 10.3e6)), launch_rate_source=PROFILE)
    p = predict(measured, Change(dynamic_shared_mem_bytes=0))
    assert f"the device's ceilings ({PROFILE})" in p.basis
    nominal_units, no_curve = unit_uses(
        _stream_counters(1e8, 1e8, **{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 6.0})
    )
    assert no_curve is None and all(u.source == "nominal" and u.ceiling == 100.0 for u in nominal_units)
    nominal = _launch(0.0, units=nominal_units, block_launch_per_s_per_sm=None)
    q = predict(nominal, Change(dynamic_shared_mem_bytes=0))
    assert "the device's ceilings (nominal)" in q.basis
    assert any("no measured block launch rate" in f.text for f in q.findings)
    assert q.narrow is None or "tracekit calibrate" in q.narrow


def test_block_launch_rate_is_the_measured_one_for_the_block_size() -> None:
    rates = ((64, 12.2e6), (256, 12.2e6), (1024, 10.3e6))
    launch = replace(_launch(2.0, smem=0), block_launch_per_s_per_sm=None, block_launch_rates=rates)
    big = predict(launch, Change(threads_per_block=1024))
    small = predict(launch, Change(threads_per_block=96))  # judged by the next measured size up, 256
    assert "10.3 Mblocks/s per SM for 1,024-thread blocks" in next(
        f.text for f in big.findings if f.step == "launch_rate"
    )
    assert "12.2 Mblocks/s per SM for 96-thread blocks" in next(
        f.text for f in small.findings if f.step == "launch_rate"
    )


def test_a_block_frees_its_slot_only_when_its_last_warp_ends() -> None:
    # 256-thread blocks keep 78.6% of 64 warps resident over many waves; 1024-thread blocks wait for the slowest of
    # 32 warps instead of 8, so they keep fewer (order statistics), and 64-thread blocks more.
    launch = _launch(2.0, smem=0, achieved_warps_per_sm=50.3)
    bigger = predict(launch, Change(threads_per_block=1024))
    smaller = predict(launch, Change(threads_per_block=64))
    same = predict(launch, Change(dynamic_shared_mem_bytes=0))
    assert bigger.new.achieved_warps_per_sm < 50.3 < smaller.new.achieved_warps_per_sm
    assert same.new.achieved_warps_per_sm == pytest.approx(50.3)
    assert 0.85 < bigger.predicted.speedup < 1.0


def test_few_waves_keep_fewer_warps_resident_than_many() -> None:
    # The same 16 -> 64 warp change, latency-bound (n / L holds), at the same theoretical occupancy: a grid that
    # runs 1.5 waves after it holds its slots 75% of the time (the partial last wave idles half of them for a block
    # time), one of 10 waves nearly all of it; the prediction is the time average, not the theoretical 64. The
    # launches hold all their blocks' warps (achieved = theoretical x their own waves' residency).
    change = Change(dynamic_shared_mem_bytes=0)
    few = predict(_launch(2.0, grid_blocks=1584, achieved_warps_per_sm=None), change)
    many = predict(_launch(2.0, grid_blocks=10_560, achieved_warps_per_sm=None), change)
    assert few.new.theoretical_warps_per_sm == many.new.theoretical_warps_per_sm == 64
    assert (few.new.waves, many.new.waves) == (1.5, 10.0)
    assert few.new.achieved_warps_per_sm == pytest.approx(64 * 0.75)
    assert many.new.achieved_warps_per_sm == pytest.approx(64 * 10 / 10.25)
    assert few.predicted.speedup < 0.85 * many.predicted.speedup
    # 1.75 waves: lockstep equal blocks hold 87.5% of the slots, a tail spread over a block time 78%. On a measured
    # sweep (n / L from 8 to 64 warps, so the curve itself is sure) the interval is that step's uncertainty: wider
    # for 1.75 waves than for 10.
    sweep = [SweepSample(w, 1e6 * 16 / w, 1.0) for w in (8.0, 16.0, 32.0, 64.0)]
    mid = predict(with_sweep(_launch(2.0, grid_blocks=1848, achieved_warps_per_sm=None), sweep), change)
    wide = predict(with_sweep(_launch(2.0, grid_blocks=10_560, achieved_warps_per_sm=None), sweep), change)
    assert mid.new.achieved_warps_per_sm == pytest.approx(64 * 1.75 / 2.125)
    assert mid.predicted.high / mid.predicted.low > 1.06
    assert wide.predicted.high / wide.predicted.low < mid.predicted.high / mid.predicted.low
    # The launch now (7 waves, its measured warps) reads the same smear: lockstep keeps 96% of each block's warps
    # (15.36 of 16 at full residency), a spread tail 15.36 / (16 x 7 / 7.5); each end lies inside the interval.
    now = mid.current.achieved_warps_per_sm
    lockstep = 64 * (now / 16) * 0.875 / now
    spread = 64 * (now / (16 * 7 / 7.5)) * (1.75 / 2.25) / now
    assert mid.predicted.low < spread < mid.predicted.speedup < lockstep < mid.predicted.high


def test_queueing_for_issue_shows_the_issue_rate_the_code_reaches() -> None:
    # Warps stalled 3.6 of 9.6 cycles per instruction waiting to be selected or dispatched at 59.5% issue: an
    # M/M/1 server of capacity ~0.8 instruction per cycle, not 1 (a dependent FMA chain with dispatch stalls).
    stalls = {
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 4.07,
        "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio": 1.77,
        "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio": 1.79,
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 0.5,
        "smsp__issue_active.avg.pct_of_peak_sustained_active": 59.5,
    }
    units, _ = unit_uses(_frame({"gpu__time_duration.sum": 137_000.0, **stalls}), H100)
    issue = next(u for u in units if u.unit == "issue")
    assert issue.ceiling == pytest.approx(80.0, abs=2.0) and "queueing" in issue.source
    light = {**stalls, "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio": 0.1}
    light["smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"] = 0.05
    units, _ = unit_uses(_frame({"gpu__time_duration.sum": 137_000.0, **light}), H100)
    assert next(u for u in units if u.unit == "issue").ceiling == 100.0  # little queueing says nothing


def test_what_to_try_considers_every_knob_once() -> None:
    launch = _launch(2.0, smem=115_712, registers_per_thread=64, grid_blocks=132 * 2 * 3)
    tries = what_to_try(launch, top=10, min_speedup=0.0)
    knobs = [knob_of(t.change) for t in tries]
    assert sorted(knobs) == sorted(set(knobs))  # the best of each knob, once
    assert {"block", "smem", "ilp", "grid"} <= set(knobs)
    regs = next((t for t in tries if knob_of(t.change) == "regs"), None)
    assert regs is None or any("spill" in f.text for f in regs.findings)
    grid = next(t for t in tries if knob_of(t.change) == "grid")
    assert any("grid-stride" in f.text for f in grid.findings)


def test_nsight_estimate_rides_beside_an_occupancy_change() -> None:
    from tracekit.analysis.predict import NsightEstimate

    launch = _launch(2.0, nsight=(NsightEstimate("TheoreticalOccupancy", 50.0, 2.0, "theoretical occupancy"),))
    p = predict(launch, Change(dynamic_shared_mem_bytes=0))
    assert p.nsight is not None and p.nsight.speedup == 2.0


# ---- issue 26: concurrency to spare, spills, what the model cannot see, the ceiling, the tile shape ----------------


def _queued_launch(wait_share: float) -> PredictInputs:
    """One warp per block, 128 elements per thread, DRAM at 97% of its ceiling on the shipped profile's curve; its
    warps live 20 us and wait on memory `wait_share` of it."""
    from tracekit.analysis.predict import DramCurve

    curve = tuple(sorted((p.throughput_bytes_per_s / 3e12, p.latency_ns) for p in H100.dram_latency_curve))
    dram = DramCurve(2.91e12, 3.0e12, curve, wait_share, PROFILE)
    # 16,384 one-warp blocks, 16 resident per SM over 100 us: a warp lives 16 x 132 x 100 us / 16,384 = 12.9 us.
    return _launch(
        0.0,
        smem=0,
        threads_per_block=32,
        grid_blocks=16_384,
        registers_per_thread=128,
        achieved_warps_per_sm=16.0,
        duration_ns=100_000.0,
        units=(UnitUse("dram (stream)", 2.91e12, 3.0e12, PROFILE, "B/s"), UnitUse("l2", 30.0, 100.0, "nominal")),
        dram_curve=dram,
    )


def test_a_launch_in_drams_queue_keeps_its_throughput_with_less_ilp() -> None:
    # Little's law at the launch's own memory wait: 0.7 x 12.9 us per round, far past the curve's end, so four warps
    # per row with a quarter of the elements each (ILP 1/4) keep the throughput; with a short wait (10% of the warp's
    # life, under the curve's end) the same change loses concurrency.
    change = Change(threads_per_block=128, grid_blocks=16_384, ilp=0.25)
    queued = predict(_queued_launch(0.7), change)
    short = predict(_queued_launch(0.02), change)
    assert queued.predicted.speedup == pytest.approx(1.0, abs=0.05)
    assert short.predicted.speedup < 0.8
    # Bytes in flight per SM, by Little's law: 2.91 TB/s x 9.02 us / 132 SMs, against 3 TB/s x the unloaded latency.
    spare = next(f for f in queued.findings if f.template == "predict.spare")
    held = {v.name: v.value for v in spare.values}
    assert held["in_flight_bytes"] == pytest.approx(2.91e12 * 0.7 * 16 * 132 * 100_000 / 16_384 * 1e-9 / 132)
    assert held["spare"] == pytest.approx(held["in_flight_bytes"] / held["needed_bytes"])
    assert not any(f.template == "predict.spare" for f in short.findings)


def test_a_tensor_core_kernel_refuses_a_tile_shape_change_in_one_line() -> None:
    gemm = _launch(50.0, units=(UnitUse("tensor pipe", 76.0, 91.0, PROFILE),))
    with pytest.raises(PredictionRefused, match="tile shape") as refused:
        predict(gemm, Change(ilp=4))
    assert "\n" not in str(refused.value) and "76%" in str(refused.value)
    with pytest.raises(PredictionRefused, match="tile shape"):
        what_to_try(gemm)
    light = _launch(
        2.0, units=(UnitUse("dram (stream)", 2.0, 90.0, "nominal"), UnitUse("tensor pipe", 2.0, 91.0, PROFILE))
    )
    assert predict(light, Change(ilp=2)).predicted.speedup > 1.5  # a tensor pipe at 2% is no tile shape


def test_a_block_collective_launch_bound_on_the_sm_refuses_a_block_shape_change_in_one_line() -> None:
    """Shared memory busy, memory idle, block barriers: its blocks' collective work sets its time, and that work per
    item changes with the block's shape: a change of block size or items per thread is refused; registers or a grid
    change (the same blocks) are not, nor the same launch bound by DRAM or without barriers."""
    units = (UnitUse("shared", 68.0, 100.0, PROFILE), UnitUse("dram (stream)", 0.09, 3.0, PROFILE))
    sort = replace(_launch(50.0, units=units), uses_barriers=True, threads_per_block=1024)
    for change in (Change(threads_per_block=256), Change(ilp=4)):
        with pytest.raises(PredictionRefused, match="collective work") as refused:
            predict(sort, change)
        assert "\n" not in str(refused.value) and "shared (68% of its ceiling, memory at 3%)" in str(refused.value)
    assert predict(sort, Change(registers_per_thread=32)).predicted.speedup > 0
    streaming = replace(
        sort, units=(UnitUse("shared", 20.0, 100.0, PROFILE), UnitUse("dram (stream)", 2.4, 3.0, PROFILE))
    )
    assert predict(streaming, Change(threads_per_block=256)).predicted.speedup > 0
    assert predict(replace(sort, uses_barriers=False), Change(threads_per_block=256)).predicted.speedup > 0


def test_a_pipe_counted_only_over_elapsed_cycles_is_judged_per_active_cycle() -> None:
    """An export with only the elapsed forms (Nsight's full set on a launch whose SMs sit idle 60% of the time): the
    tensor pipe's 12% of elapsed cycles is 30% of the active ones, as the other units are judged, and the tile-shape
    refusal holds as it would with the active form."""
    active_share = 0.4
    counters = _stream_counters(
        1e8,
        1e8,
        **{
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed": 12.0,
            "sm__cycles_active.avg": active_share * 1e5,
            "sm__cycles_elapsed.avg": 1e5,
        },
    )
    uses, _ = unit_uses(counters, H100)
    tensor = next(u for u in uses if u.unit == "tensor pipe")
    best = max(t.fraction_of_nominal or 0.0 for t in H100.tensor_flop_per_s.values())  # no per-type counters
    assert tensor.achieved == pytest.approx(12.0 / active_share)
    assert tensor.ceiling == pytest.approx(100.0 * min(best, 1.0))
    without, _ = unit_uses(_stream_counters(1e8, 1e8), H100)
    assert all(u.unit != "tensor pipe" for u in without)


def test_no_prediction_runs_a_unit_above_its_ceiling() -> None:
    # DRAM at 60% of its ceiling, judged by the verdict at 70% of its own: 16 -> 64 warps far below the knee would be
    # 4x by n / L, but the same bytes in a quarter of the time need DRAM at 240%: the point stops at 1 / 0.7.
    launch = replace(_launch(54.0), judged=(("dram", 0.7),))
    p = predict(launch, Change(dynamic_shared_mem_bytes=0))
    assert p.predicted.speedup == pytest.approx(1 / 0.7)
    assert p.predicted.high <= 1 / 0.7 * 1.1 + 1e-9
    assert any(f.template == "predict.capped" for f in p.findings)


def test_a_spilling_launch_loses_its_spill_traffic_with_fewer_elements_per_thread() -> None:
    # Its global accesses need half its DRAM bytes (the rest is local-memory traffic): two warps per row with half the
    # elements each (same occupancy) spill no more, so the same throughput moves half the bytes: ~2x; the interval
    # reaches down to the spills staying.
    spills = _launch(50.0, spill_free_share=0.5)
    p = predict(spills, Change(ilp=0.5))
    assert p.predicted.speedup == pytest.approx(2.0, rel=0.05)
    assert p.predicted.low < 1.0
    assert any(f.template == "predict.spills" for f in p.findings)
    same = predict(spills, Change(ilp=2.0))  # more elements per thread: no relief
    assert not any(f.template == "predict.spills" for f in same.findings)


def test_what_the_model_cannot_see_widens_the_interval_and_says_why() -> None:
    # One warp per block to eight (block barriers wait for the slowest warp), L1 serving 40% of the loads: the
    # interval spans both effects, each with its finding, and `narrow` asks to measure the configuration itself.
    row = _launch(50.0, threads_per_block=32, grid_blocks=132 * 32 * 50, l1_hit_rate=0.4)
    p = predict(row, Change(threads_per_block=256, grid_blocks=132 * 32 * 50, ilp=0.125))
    assert set(p.unseen) == {"per-row-parallelism", "cache-footprint"}
    assert p.predicted.high / p.predicted.speedup >= 1.4 - 1e-9  # 1 + the hit rate faster
    assert p.predicted.speedup / p.predicted.low >= 1 + 0.28 * 1.42  # E[max of 8] at cv 0.28 slower
    assert [f.step for f in p.findings].count("uncertainty") == 2
    assert p.narrow is not None and p.narrow.startswith("measure the changed configuration itself")


def test_a_cutlass_gemm_with_elapsed_counters_only_is_refused_as_a_tile_shape(real_export, tmp_path) -> None:
    """A CUTLASS int8 wmma GEMM on a B200 (Nsight's full set: its pipes only over elapsed cycles; 64 blocks leave the
    SMs idle 63% of the time): its tensor pipe is busy 34% of the active cycles, so a grid or ILP change is its tile
    shape, refused, where it was offered 'grid 592: 4x' and 'ILP 4: 3.9x' before."""
    import tracekit

    session = tracekit.open(str(tmp_path / "b200.sqlite"))
    results = session.analyze(
        import_id=session.import_file(str(real_export("ncu_raw_2026_B200_cutlass_int8_accelsim.csv")))
    )
    with pytest.raises(PredictionRefused, match="tensor pipe runs at 34% of peak"):
        results.predict(grid=592)


def test_a_split_finer_than_a_threads_fixed_instructions_is_refused_and_a_coarse_one_widened() -> None:
    """A one-block launch of 16 warps, 219 instructions each (a raytracer's mesh build on a GTX 1660 SUPER): the same
    work over 88 blocks would leave each warp 2.5 instructions, fewer than any thread runs to start and exit (6):
    refused, where it was predicted 36x. Over 22 blocks each keeps ~10: the 6 fixed ones do not split, so the
    duration may be up to (6 + 213 / 22) / (219 / 22) = 1.58x the model's, on the slow side of the interval."""
    one_block = _launch(
        1.0,
        smem=0,
        threads_per_block=512,
        grid_blocks=1,
        sm_count=22,
        compute_capability="7.5",
        achieved_warps_per_sm=1.434,
        registers_per_thread=64,
        instructions_per_warp=219.0,
    )
    with pytest.raises(PredictionRefused, match="would leave each warp 2.5, fewer than any thread runs") as refused:
        predict(one_block, Change(grid_blocks=88))
    assert "\n" not in str(refused.value)
    split = predict(one_block, Change(grid_blocks=22))
    assert "fixed-per-thread" in split.unseen
    unwidened = predict(replace(one_block, instructions_per_warp=None), Change(grid_blocks=22))
    assert "fixed-per-thread" not in unwidened.unseen
    assert split.predicted.speedup == pytest.approx(unwidened.predicted.speedup)
    assert split.predicted.low <= unwidened.predicted.low
    assert split.predicted.low <= split.predicted.speedup / ((6 + 213 / 22) / (219 / 22)) * 1.0001
    # a launch whose warps loop over thousands of instructions splits as the model says: nothing to add
    long_loop = predict(replace(one_block, instructions_per_warp=20_000.0), Change(grid_blocks=22))
    assert "fixed-per-thread" not in long_loop.unseen


def test_a_launch_that_is_mostly_its_fixed_time_is_refused_in_one_line() -> None:
    """A GTX 1650's one-thread kernel of 1.89 µs (real exports) was offered "ILP 4: 3.93x". Without a measured profile
    a launch's fixed GPU time is taken as 1 µs (below the shortest launch Nsight Compute timed on any device of the
    real exports); a launch under twice it is mostly launching: predict and what to try refuse it in one line. With
    the device's measured 0.78 µs (H100) the same launch is predicted."""
    short = _launch(2.0, duration_ns=1_890.0, grid_blocks=1, threads_per_block=32, launch_id=7)
    with pytest.raises(PredictionRefused, match=r"launch 7: it lasts 1.89 µs, .* \(1 µs, assumed: no measured"):
        predict(short, Change(ilp=4.0))
    with pytest.raises(PredictionRefused, match="cannot be told apart from launching it"):
        what_to_try(short)
    assert predict(short, Change()).predicted.speedup == pytest.approx(1.0)  # no change is no claim
    measured = replace(short, launch_overhead_ns=780.0)
    assert predict(measured, Change(ilp=2.0)).predicted.duration_ns >= 780.0


def test_the_fixed_time_of_a_launch_does_not_shrink_with_its_work() -> None:
    """A 3 µs latency-bound launch given 4x the loads in flight: its work (2 µs after the nominal 1 µs) shrinks up to
    4x, the fixed microsecond does not."""
    p = predict(_launch(2.0, duration_ns=3_000.0), Change(ilp=4.0))
    assert 1_000.0 + 2_000.0 / 4 - 1.0 <= p.predicted.duration_ns < 3_000.0
    assert p.predicted.duration_low_ns >= 1_000.0


def _rows_read_three_times(**kw: object) -> PredictInputs:
    """A layer norm's shape on the H100: 4,096 blocks of 256 threads, each reading its own 32 KiB row three times
    (L1 serves 72% of the loads, 1.89 bytes per DRAM byte), two blocks per SM, DRAM at 97% of its ceiling."""
    shape: dict[str, object] = dict(
        threads_per_block=256,
        grid_blocks=4096,
        registers_per_thread=128,
        achieved_warps_per_sm=15.0,
        l1_hit_rate=0.72,
        l1_served_per_dram_byte=1.89,
        dram_read_bytes=4096 * 32 * 1024.0,
        l2_bytes=50 * 1024 * 1024.0,
        shared_carveout_bytes=8 * 1024.0,
    )
    return _launch(87.0, smem=32, **(shape | kw))


def test_a_footprint_that_outgrows_l1_and_l2_adds_the_re_reads_to_dram() -> None:
    """16 rows of 32 KiB per SM (512 KiB) outgrow the L1 (256 KiB less the carveout) and, over 132 SMs (68 MB), the
    50 MiB L2: the re-reads come from DRAM, up to 1 + 1.89 = 2.89x the bytes; the point is the geometric middle
    (sqrt 2.89 = 1.70x slower), measured 1.86x slower (0.539x). Four rows per SM (128 KiB) fit: no footprint step."""
    launch = _rows_read_three_times()
    p = predict(launch, Change(threads_per_block=128, registers_per_thread=32, grid_blocks=4096, ilp=0.125))
    grown = next(f for f in p.findings if f.template == "predict.footprint")
    assert grown.value == pytest.approx(2.89, rel=1e-6)
    assert dict((v.name, v.value) for v in grown.values)["l2_kept"] == 0.0
    change = Change(threads_per_block=128, registers_per_thread=32, grid_blocks=4096, ilp=0.125)
    blind = predict(_rows_read_three_times(dram_read_bytes=None), change)
    assert blind.predicted.speedup / p.predicted.speedup == pytest.approx(math.sqrt(2.89), rel=1e-3)
    assert p.predicted.low <= 0.539 <= p.predicted.high
    fits = predict(launch, Change(registers_per_thread=58))
    assert fits.new.blocks_per_sm == 4
    assert not any(f.template == "predict.footprint" for f in fits.findings)


def test_l2_keeps_the_share_of_re_reads_its_capacity_holds() -> None:
    """Eight rows per SM (256 KiB) outgrow L1; over 132 SMs 34.6 MB of rows leave L2 (52.4 MB) holding 34% of the
    re-reads: DRAM bytes grow 1 + 1.89 x 0.66, and without the counters (no L2 size) nothing moves."""
    launch = _rows_read_three_times()
    p = predict(launch, Change(registers_per_thread=32))
    assert p.new.blocks_per_sm == 8
    grown = next(f for f in p.findings if f.template == "predict.footprint")
    kept = 1 - 132 * 8 * 32 * 1024 / (50 * 1024 * 1024)
    assert grown.value == pytest.approx(1 + 1.89 * (1 - kept), rel=1e-6)
    blind = predict(_rows_read_three_times(l2_bytes=None), Change(registers_per_thread=32))
    assert not any(f.template == "predict.footprint" for f in blind.findings)
    assert blind.predicted.speedup > p.predicted.speedup
