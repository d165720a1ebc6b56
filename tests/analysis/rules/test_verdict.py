"""The one place that decides mode and limiter: bound rules in order, then the stall split; findings ranked."""

from __future__ import annotations

from dataclasses import replace

from tests.analysis.rules.ctx import A100, H100_NOMINAL_DRAM, ceilings, context, frame, stall, unit
from tracekit.analysis.classification import ClassificationInputs, classify
from tracekit.analysis.launch_ceilings import without_rates
from tracekit.analysis.rules import verdict
from tracekit.analysis.rules.base import OccupancyView
from tracekit.ceilings.lookup import ceilings_for
from tracekit.present.rules.ceilings import unit_sentences
from tracekit.present.rules.sentences import sentence
from tracekit.present.rules.worded import worded_verdict

FULL = OccupancyView(achieved_warps=58.0, theoretical_warps=64.0)

QUIET = (unit("DRAM", "dram", 35.0), unit("fma pipe", "fma", 12.0))


def test_a_saturated_unit_decides_before_the_stalls() -> None:
    outcome = verdict.run(
        context(units=(unit("DRAM", "dram", 90.0),), stalls={"long_scoreboard": 9.0, "selected": 1.0})
    )
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "dram")
    assert [f.id for f in outcome.ranked] == ["verdict.limiter"] and outcome.ranked[0].sm_time_fraction == 1.0


def test_quiet_units_with_latency_stalls_are_latency_bound() -> None:
    ctx = context(units=QUIET, stalls={"long_scoreboard": 9.0, "selected": 1.0}, occupancy=OccupancyView(16.0))
    outcome = verdict.run(ctx)
    assert (outcome.mode, outcome.limiter, outcome.reason) == ("latency-bound", None, None)
    assert outcome.needed_occupancy_warps_per_sm == 16.0 * 100 / 35.0


def test_quiet_units_with_other_stalls_are_undetermined_and_say_why() -> None:
    outcome = verdict.run(context(units=QUIET, stalls={"not_selected": 9.0, "selected": 1.0}))
    assert outcome.mode == "undetermined" and outcome.reason is not None
    assert outcome.findings[0].id == "verdict.reason-bursts"


def test_no_metrics_is_undetermined() -> None:
    outcome = verdict.run(context())
    assert outcome.mode == "undetermined" and outcome.reason is not None and outcome.flags == []


# Issue 20: the verdict against the shipped H100 profile's achievable ceilings, and the ceiling it was judged by.
LATENCY_STALLS = {"long_scoreboard": 60.0, "wait": 1.0, "selected": 1.0}
SCATTERED_UNITS = (unit("DRAM", "dram", 60.3), unit("L2", "l2", 77.9), unit("fma pipe", "fma", 1.6))


def test_scattered_gather_at_its_ceiling_is_throughput_bound_by_dram_and_names_the_ceiling() -> None:
    # latency stalls dominate and DRAM reads 60.3% of nominal: the 80% rule alone would call it latency-bound
    section = ceilings(dram_bytes_per_s=0.603 * H100_NOMINAL_DRAM, bytes_per_sector=4.0)
    ctx = context(units=SCATTERED_UNITS, stalls=LATENCY_STALLS, occupancy=FULL, ceilings=section)
    outcome = verdict.run(ctx)
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "dram")
    assert outcome.judged_by is not None and outcome.judged_by.ceiling_name == "dram_random_sector_bytes_per_s"
    last, share = outcome.findings[-1], outcome.judged_by.of_achievable
    assert (
        last.id == "verdict.judged-by"
        and share >= 0.85
        and sentence(last)
        == (
            f"DRAM 2.02 TB/s: 60.3% of nominal, {100 * share:.3g}% of what scattered 32-byte sectors reach on this GPU "
            "(measured: tracekit/ceilings/profiles/nvidia-h100-80gb-hbm3.json)."
        )
    )
    # what decided it, through classify: the result's ceilings name the same ceiling, its text the last line
    counters = {
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 60.3,
        "lts__throughput.avg.pct_of_peak_sustained_elapsed": 77.9,
        "smsp__issue_active.avg.pct_of_peak_sustained_active": 1.6,
        **{stall(reason): cycles for reason, cycles in LATENCY_STALLS.items()},
    }
    inputs = ClassificationInputs(metrics=frame(counters), achieved_occupancy_warps_per_sm=58.0, ceilings=section)
    result = worded_verdict(classify(inputs))  # its sentences, as a view shows them
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    assert result.ceilings is not None and result.ceilings.judged_by is not None
    assert result.ceilings.judged_by.ceiling_name == "dram_random_sector_bytes_per_s"
    assert result.evidence[-1] == unit_sentences(result.ceilings)["dram"] + "."


def test_stream_at_76_percent_of_nominal_is_dram_bound_with_a_profile_and_not_without() -> None:
    units = (unit("DRAM", "dram", 76.4), unit("L2", "l2", 70.0), unit("fma pipe", "fma", 11.0))
    # a copy (half its DRAM bytes written) at 76.4% of nominal: at the H100's copy stream ceiling (2.85-2.98 TB/s)
    measured = ceilings(dram_bytes_per_s=0.764 * H100_NOMINAL_DRAM, write_fraction=0.5)
    outcome = verdict.run(context(units=units, stalls={"not_selected": 9.0, "selected": 1.0}, ceilings=measured))
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "dram")
    # the same launch on a GPU without a profile: the previous verdict (no unit at 80%, no latency majority)
    nominal = ceilings(device=A100, cc="8.0", sm_count=108, dram_bytes_per_s=0.764 * 2.039e12)
    ctx = context(units=units, stalls={"not_selected": 9.0, "selected": 1.0}, ceilings=nominal)
    before = verdict.run(context(units=units, stalls={"not_selected": 9.0, "selected": 1.0}))
    after = verdict.run(ctx)
    assert (after.mode, after.limiter) == (before.mode, before.limiter) == ("undetermined", None)
    no_unit = next(f for f in after.findings if f.id == "verdict.no-unit-saturated")
    assert sentence(no_unit) == (
        "No unit reaches 80% of peak: the busiest is DRAM at 76.4% (dram__throughput.avg.pct_of_peak) "
        "(against nominal peaks: no measured profile for NVIDIA A100-SXM4-80GB)."
    )
    assert after.judged_by is not None and after.judged_by.ceiling_source == "nominal"
    assert sentence(after.findings[-1]) == (
        "DRAM 1.558 TB/s: 76.4% of nominal (against nominal peaks: no measured profile for NVIDIA A100-SXM4-80GB)."
    )


def test_a_pipe_without_a_ceiling_is_judged_by_none() -> None:
    section = ceilings(dram_bytes_per_s=1e11)
    outcome = verdict.run(context(units=(unit("xu pipe", "xu", 99.0),), ceilings=section))
    assert (outcome.mode, outcome.limiter, outcome.judged_by) == ("throughput-bound", "xu", None)


def test_counters_without_a_duration_still_say_their_peaks_are_nominal() -> None:
    """No rate can be judged without a duration, but the device's lack of a profile is still known."""
    for device, cc, named in ((A100, "8.0", A100), (None, None, "this device (the report does not name it)")):
        ctx = context(units=QUIET, stalls={"long_scoreboard": 9.0, "selected": 1.0}, occupancy=OccupancyView(16.0))
        outcome = verdict.run(replace(ctx, ceilings=without_rates(ceilings_for(device, cc))))
        assert outcome.mode == "latency-bound" and outcome.judged_by is None
        no_unit = next(f for f in outcome.findings if f.id == "verdict.no-unit-saturated")
        assert (sentence(no_unit) or "").endswith(f"(against nominal peaks: no measured profile for {named}).")
