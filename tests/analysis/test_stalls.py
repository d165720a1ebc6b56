"""Stall breakdown: real per-reason values from the RTX 2080 Ti sgemm report, and each metric family by hand."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.helpers import ncu_rep_action, ncu_rep_metrics
from tracekit.analysis.stalls import BANDWIDTH_REASONS, LATENCY_REASONS, OTHER_REASONS, stall_breakdown, stall_group

SGEMM_REPORT = "ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep"
COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]
PER_ISSUE = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")


def frame(rows: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [(1, None, name, None, float(value), None, "float") for name, value in rows.items()],
        schema=COLUMNS,
        orient="row",
    )


def test_groups_are_disjoint_and_cover_the_nsight_reasons():
    assert not (
        LATENCY_REASONS & BANDWIDTH_REASONS or LATENCY_REASONS & OTHER_REASONS or BANDWIDTH_REASONS & OTHER_REASONS
    )
    assert stall_group("long_scoreboard") == "latency"
    assert stall_group("mio_throttle") == "bandwidth"
    assert stall_group("not_selected") == "other"
    assert stall_group("some_future_reason") == "other"


def test_real_report_per_reason_values_are_the_reports_metrics(real_export):
    action = ncu_rep_action(real_export(SGEMM_REPORT))
    stalls = stall_breakdown(ncu_rep_metrics(action))
    expected = {PER_ISSUE.match(n).group(1): action[n].value() for n in action.metric_names() if PER_ISSUE.match(n)}
    assert len(expected) == 18  # the Turing Warp State Statistics reasons
    assert stalls.source == "per_issue"  # preferred over the PC-sampling counts the report also has
    assert stalls.by_reason == pytest.approx(expected)
    assert stalls.unknown_reasons == ()
    assert stalls.by_reason["selected"] == 1.0  # one issue cycle per issued instruction, by definition

    groups = stalls.latency_cycles_per_issue + stalls.bandwidth_cycles_per_issue + stalls.other_cycles_per_issue
    assert groups == pytest.approx(sum(expected.values()))
    assert stalls.total_cycles_per_issue == pytest.approx(sum(expected.values()))
    latency = [
        "long_scoreboard",
        "short_scoreboard",
        "wait",
        "barrier",
        "membar",
        "branch_resolving",
        "drain",
        "imc_miss",
        "sleeping",
    ]
    bandwidth = ["lg_throttle", "mio_throttle", "tex_throttle", "math_pipe_throttle"]
    assert stalls.latency_cycles_per_issue == pytest.approx(sum(expected[r] for r in latency))
    assert stalls.bandwidth_cycles_per_issue == pytest.approx(sum(expected[r] for r in bandwidth))
    # The reasons add up to Nsight's own "Warp Cycles Per Issued Instruction" to within 2% (6.12 vs 6.21).
    reported = action["smsp__average_warp_latency_per_inst_issued.ratio"].value()
    assert stalls.reported_cycles_per_issue == pytest.approx(reported)
    assert stalls.total_cycles_per_issue == pytest.approx(reported, rel=0.02)
    assert stalls.dominant(1)[0][0] == "long_scoreboard"


def test_real_report_pc_sampling_is_scaled_to_the_reported_total(real_export):
    """Without the per-issue ratios, the PC-sampling counts split the reported cycles per issued instruction."""
    action = ncu_rep_action(real_export(SGEMM_REPORT))
    metrics = ncu_rep_metrics(action).filter(~pl.col("name").str.contains("_per_issue_active"))
    stalls = stall_breakdown(metrics)
    assert stalls.source == "pc_sampling"
    samples = {
        n.removeprefix("smsp__pcsamp_warps_issue_stalled_"): action[n].value()
        for n in action.metric_names()
        if n.startswith("smsp__pcsamp_warps_issue_stalled_") and not n.endswith("_not_issued")
    }
    reported = action["smsp__average_warp_latency_per_inst_issued.ratio"].value()
    total_samples = sum(samples.values())
    assert stalls.by_reason["long_scoreboard"] == pytest.approx(samples["long_scoreboard"] / total_samples * reported)
    assert stalls.by_reason["no_instruction"] == pytest.approx(samples["no_instructions"] / total_samples * reported)
    assert stalls.total_cycles_per_issue == pytest.approx(reported)


def test_pc_sampling_by_hand():
    stalls = stall_breakdown(
        frame(
            {
                "smsp__average_warp_latency_per_inst_issued.ratio": 10.0,
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard": 60,
                "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": 55,  # a subset: not added again
                "smsp__pcsamp_warps_issue_stalled_mio_throttle": 20,
                "smsp__pcsamp_warps_issue_stalled_selected": 20,
            }
        )
    )
    assert stalls.by_reason == pytest.approx({"long_scoreboard": 6.0, "mio_throttle": 2.0, "selected": 2.0})
    assert (
        stalls.latency_cycles_per_issue,
        stalls.bandwidth_cycles_per_issue,
        stalls.other_cycles_per_issue,
    ) == pytest.approx((6.0, 2.0, 2.0))
    # Stalled cycles exclude the issue cycle: 8 of which 6 latency.
    assert stalls.stalled_cycles_per_issue == pytest.approx(8.0)
    assert stalls.share("latency") == pytest.approx(0.75)
    assert stalls.share("other") == pytest.approx(0.0)


def test_share_of_active_warp_cycles_times_cycles_per_issue():
    stalls = stall_breakdown(
        frame(
            {
                "smsp__average_warps_active_per_issue_active.ratio": 8.0,
                "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct": 50.0,
                "smsp__warp_issue_stalled_selected_per_warp_active.pct": 12.5,
                "smsp__warp_issue_stalled_wait_per_warp_active.pct": 37.5,
            }
        )
    )
    assert stalls.source == "per_warp_active"
    assert stalls.by_reason == pytest.approx({"long_scoreboard": 4.0, "selected": 1.0, "wait": 3.0})


def test_unknown_reason_counts_as_other_and_is_named():
    stalls = stall_breakdown(
        frame(
            {
                "smsp__average_warps_issue_stalled_tmem_wait_per_issue_active.ratio": 2.0,
                "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 3.0,
            }
        )
    )
    assert stalls.other_cycles_per_issue == 2.0
    assert stalls.unknown_reasons == ("tmem_wait",)


def test_no_stall_metrics_gives_nulls():
    stalls = stall_breakdown(frame({"dram__throughput.avg.pct_of_peak_sustained_elapsed": 50.0}))
    assert not stalls.available
    assert stalls.by_reason is None and stalls.latency_cycles_per_issue is None and stalls.source is None
    assert stall_breakdown(pl.DataFrame(schema=COLUMNS)).by_reason is None
    # Proportional families cannot become cycles without the total.
    assert stall_breakdown(frame({"smsp__pcsamp_warps_issue_stalled_wait": 5})).by_reason is None
