"""Latency- vs throughput-bound verdicts: hand-built frames whose verdict follows from Volkov's rule by hand, and
the real RTX 2080 Ti sgemm report and T4 copy CSV."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ncu_rep_action, ncu_rep_metrics, plain_report
from tracekit import format as fmt
from tracekit.analysis.classification import SATURATION_PCT, Classification, ClassificationInputs
from tracekit.analysis.classification import classify as classify_data
from tracekit.analysis.sweep import fit_occupancy_sweep
from tracekit.present.rules.worded import worded_verdict

SGEMM_REPORT = "ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep"
T4_COPY_CSV = "ncu_details_T4_2025_rules_speedup_nsightful_copy_blocked.csv"
COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]

DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
L2 = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
FMA = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
CPI = "smsp__average_warp_latency_per_inst_issued.ratio"


def classify(inputs: ClassificationInputs) -> Classification:
    """The verdict as a view shows it: the analysis's data, worded by `tracekit.present.rules`."""
    return worded_verdict(classify_data(inputs))


def stall(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def frame(rows: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [(1, None, name, None, float(value), None, "float") for name, value in rows.items()],
        schema=COLUMNS,
        orient="row",
    )


# A launch that is quiet everywhere: every unit under 40% of peak.
QUIET_UNITS = {DRAM: 35.0, L2: 20.0, L1: 25.0, SM: 30.0, ISSUE: 22.0, FMA: 12.0}


def test_dram_at_93_percent_is_throughput_bound_on_dram():
    result = classify(ClassificationInputs(metrics=frame({**QUIET_UNITS, DRAM: 93.0})))
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    assert result.evidence[0] == (
        f"DRAM throughput is 93% of peak ({DRAM}), above the 80% at which a unit counts as saturated."
    )
    assert SATURATION_PCT == 80.0
    assert any(a.startswith("More occupancy will not help: DRAM is saturated") for a in result.advice)


def test_older_reports_dram_alias_counts_the_same():
    result = classify(
        ClassificationInputs(metrics=frame({"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 91.0, SM: 20.0}))
    )
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    assert "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" in result.evidence[0]


def test_a_saturated_pipe_is_named_rather_than_the_sm_total():
    # sm__throughput is the max over its pipes, so it reads 88% too; the verdict names the pipe behind it.
    result = classify(ClassificationInputs(metrics=frame({**QUIET_UNITS, SM: 88.0, FMA: 88.0})))
    assert (result.mode, result.limiter) == ("throughput-bound", "fma")
    assert any(FMA in sentence for sentence in result.evidence)


def test_quiet_units_with_long_scoreboard_dominating_is_latency_bound():
    metrics = frame(
        {
            **QUIET_UNITS,
            CPI: 20.0,
            stall("long_scoreboard"): 14.0,
            stall("wait"): 2.0,
            stall("mio_throttle"): 1.0,
            stall("not_selected"): 2.0,
            stall("selected"): 1.0,
            "sm__warps_active.avg.per_cycle_active": 16.0,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 25.0,
            "sm__maximum_warps_avg_per_active_cycle": 64.0,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics))
    assert (result.mode, result.limiter) == ("latency-bound", None)
    # Stalled cycles: 20 - 1 (selected) = 19, of which long_scoreboard + wait = 16 latency: 84%.
    assert result.stalls.share("latency") == pytest.approx(16 / 19)
    assert any(stall("long_scoreboard") in sentence and "at 14 cycles" in sentence for sentence in result.evidence)
    # Little's law: 16 warps keep the busiest unit (DRAM, 35%) busy; 16 * 100 / 35 warps would saturate it.
    assert result.needed_occupancy_warps_per_sm == pytest.approx(16 * 100 / 35)
    assert "low-occupancy" in result.flags
    assert any(a.startswith("A faster unit will not help") for a in result.advice)


def test_needed_occupancy_beyond_the_theoretical_asks_for_ilp():
    # 30 of 32 warps (near the theoretical) keep DRAM at 60%: 50 warps would be needed, more than can run.
    metrics = frame(
        {
            **QUIET_UNITS,
            DRAM: 60.0,
            "sm__warps_active.avg.per_cycle_active": 30.0,
            "sm__maximum_warps_avg_per_active_cycle": 32.0,
            "launch__occupancy_limit_warps": 4,
            "launch__occupancy_limit_registers": 8,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics))
    assert result.mode == "latency-bound"
    assert result.needed_occupancy_warps_per_sm == pytest.approx(50.0)
    assert "needs-ilp" in result.flags and "low-occupancy" not in result.flags
    assert any("limited by warps" in sentence for sentence in result.evidence)


def test_no_metrics_is_undetermined_with_a_reason():
    result = classify(ClassificationInputs())
    assert result.mode == "undetermined" and result.limiter is None
    assert result.reason == "no metrics for this launch."
    assert result.evidence == ["Undetermined: no metrics for this launch."]
    assert result.needed_occupancy_warps_per_sm is None


def test_throttle_stalls_without_a_saturated_unit_are_undetermined():
    metrics = frame({**QUIET_UNITS, stall("mio_throttle"): 6.0, stall("long_scoreboard"): 2.0, stall("selected"): 1.0})
    result = classify(ClassificationInputs(metrics=metrics))
    assert result.mode == "undetermined"
    assert "only 25% of stalled cycles are latency stalls" in result.reason  # 2 of 8 stalled cycles


def test_one_unit_alone_cannot_rule_out_a_saturated_other():
    result = classify(ClassificationInputs(metrics=frame({DRAM: 30.0})))
    assert result.mode == "undetermined"
    assert result.reason.startswith("only DRAM measured")


def test_counters_without_any_utilization_are_undetermined():
    result = classify(ClassificationInputs(metrics=frame({"launch__grid_size": 50})))
    assert result.mode == "undetermined" and "no utilization" in result.reason


def test_quiet_units_and_no_stall_breakdown_follow_volkovs_rule():
    result = classify(ClassificationInputs(metrics=frame(QUIET_UNITS)))
    assert result.mode == "latency-bound"
    assert any("no stall breakdown" in sentence for sentence in result.evidence)


def test_wastes_are_flagged_with_their_numbers():
    metrics = frame(
        {
            **QUIET_UNITS,
            # 32 sectors per request: every thread of the warp in its own sector (ideal 4 for 32-bit loads).
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 3200,
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": 300,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": 1000,
            "smsp__sass_inst_executed_op_local_ld.sum": 12,
            "smsp__sass_inst_executed_op_local_st.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 16.0,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics))
    assert {"uncoalesced-access", "shared-bank-conflicts", "register-spills", "branch-divergence"} <= set(result.flags)
    text = "\n".join(result.evidence)
    assert "32 sectors per request" in text and "against 4 for coalesced 32-bit loads" in text
    assert "300 of 1,000 wavefronts (30%" in text
    assert "smsp__sass_inst_executed_op_local_ld.sum = 12" in text
    assert "Only 16 of 32 threads" in text


def test_ideal_sectors_per_request_follows_the_access_width_mix():
    # 8 sectors per request: uncoalesced for 32-bit loads (ideal 4), ideal for 64-bit ones (32 x 8 B / 32 B).
    loads = {
        **QUIET_UNITS,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 800,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100,
    }
    assert "uncoalesced-access" in classify(ClassificationInputs(metrics=frame(loads))).flags
    wide = classify(ClassificationInputs(metrics=frame({**loads, "smsp__sass_inst_executed_op_memory_64b.sum": 50})))
    assert "uncoalesced-access" not in wide.flags


def test_clean_access_raises_no_waste_flags():
    metrics = frame(
        {
            **QUIET_UNITS,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 400,
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": 0,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": 1000,
            "smsp__sass_inst_executed_op_local_ld.sum": 0,
            "smsp__thread_inst_executed_per_inst_executed.ratio": 32.0,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics))
    assert not {"uncoalesced-access", "shared-bank-conflicts", "register-spills", "branch-divergence"} & set(
        result.flags
    )


def test_partial_last_wave_is_a_tail_effect():
    # 1.25 waves: the second wave is a quarter full, so (2 - 1.25) / 2 = 37.5% of two waves' SM time idles.
    result = classify(ClassificationInputs(metrics=frame({**QUIET_UNITS, "launch__waves_per_multiprocessor": 1.25})))
    assert "tail-effect" in result.flags
    assert any("1.25 waves" in sentence and "37.5%" in sentence for sentence in result.evidence)
    # 6.9 waves lose (7 - 6.9) / 7 = 1.4%: no flag.
    result = classify(ClassificationInputs(metrics=frame({**QUIET_UNITS, "launch__waves_per_multiprocessor": 6.9})))
    assert "tail-effect" not in result.flags


def test_trace_numbers_explain_an_occupancy_gap():
    result = classify(
        ClassificationInputs(
            metrics=frame(QUIET_UNITS),
            theoretical_occupancy_warps_per_sm=64,
            max_warps_per_sm=64,
            achieved_occupancy_warps_per_sm=30,
            tail_fraction=0.3,
            block_imbalance_spread=0.8,
            trace_sm_idle_fraction=0.35,
        )
    )
    assert {"tail-effect", "block-imbalance"} <= set(result.flags)
    text = "\n".join(result.evidence)
    assert "Achieved occupancy is 30 warps per SM (46.9%, given), below the theoretical 64 (100%" in text
    assert "the last 30% runs on fewer SMs" in text
    assert "SMs were idle 35% of the elapsed SM time (warp trace" in text
    assert result.findings[0].kind == "limiter" and result.findings[1].kind == "tail"  # 65% busy vs 35% idle


def test_spread_block_durations_without_idle_sms_are_no_imbalance():
    """Issue 11: identical blocks on a saturated GPU spread in duration (warp scheduling), but no SM idles before the
    end: the spread costs no time, so neither imbalance nor a tail is flagged."""
    result = classify(
        ClassificationInputs(
            metrics=frame({**QUIET_UNITS, FMA: 95.0, "sm__cycles_active.avg": 990, "sm__cycles_elapsed.avg": 1000}),
            tail_fraction=0.25,
            block_imbalance_spread=0.9,
        )
    )
    assert (result.mode, result.limiter) == ("throughput-bound", "fma")
    assert not {"tail-effect", "block-imbalance"} & set(result.flags)
    assert any("the spread costs no time" in s for s in result.evidence)


def test_trace_occupancy_losses_name_imbalance_within_blocks_and_launch_gaps():
    # Theoretical 64 warps per SM: 8 lost to warps waiting in their block (12.5% >= 10%) flags imbalance,
    # 2 lost to replacement gaps (3%) is cited, as part of the gap, but not flagged.
    result = classify(
        ClassificationInputs(
            metrics=frame(QUIET_UNITS),
            theoretical_occupancy_warps_per_sm=64,
            max_warps_per_sm=64,
            achieved_occupancy_warps_per_sm=40,
            lost_to_end_spread_warps_per_sm=8.0,
            lost_to_block_gaps_warps_per_sm=2.0,
        )
    )
    assert "block-imbalance" in result.flags and "block-launch-gaps" not in result.flags
    text = "\n".join(result.evidence)
    assert "loses 8 warps per SM of occupancy to finished warps holding their slot" in text
    assert "loses 2 warps per SM of occupancy to empty slots between one block's end" in text


def test_sweep_alone_decides_by_the_knee():
    warps = [4, 8, 16, 32, 64]
    fit = fit_occupancy_sweep(
        pl.DataFrame({"occupancy_warps_per_sm": warps, "throughput": [min(n / 400.0, 0.05) for n in warps]})
    )
    below = classify(ClassificationInputs(sweep=fit, achieved_occupancy_warps_per_sm=8))
    assert below.mode == "latency-bound"
    assert below.needed_occupancy_warps_per_sm == pytest.approx(20.0)
    assert "low-occupancy" in below.flags
    above = classify(ClassificationInputs(sweep=fit, achieved_occupancy_warps_per_sm=48))
    assert (above.mode, above.limiter) == ("throughput-bound", None)


def test_trace_without_counters_or_sweep_is_undetermined_and_says_what_is_missing():
    result = classify(
        ClassificationInputs(
            mean_warp_latency_ns=2000.0, throughput_warps_per_ns_per_sm=0.01, trace_mean_occupancy_warps_per_sm=20.0
        )
    )
    assert result.mode == "undetermined"
    assert "not the bound" in result.reason
    assert any("2 µs x throughput 10 warps/µs per SM = 20 warps" in s for s in result.evidence)


def test_real_sgemm_launch_is_latency_bound_for_too_few_blocks(real_export):
    """volta_sgemm_32x128_nn on an RTX 2080 Ti: 50 blocks of 8 warps on 68 SMs (0.18 waves), 10.7 us.

    Independently of the code: no throughput counter in the report reaches 80% (the busiest is L1 at 45%),
    so by Volkov's rule latency is not hidden; each busy SM holds one 8-warp block against a theoretical 32 warps.
    """
    action = ncu_rep_action(real_export(SGEMM_REPORT))
    result = classify(ClassificationInputs(metrics=ncu_rep_metrics(action)))

    throughputs = {
        n: action[n].value()
        for n in action.metric_names()  # issue_inst0: idle issue slots
        if n.split("__")[0] in ("dram", "gpu", "lts", "l1tex", "sm", "smsp")
        and ".avg.pct_of_peak_sustained_" in n
        and "issue_inst0" not in n
    }
    assert max(throughputs.values()) < SATURATION_PCT
    assert result.mode == "latency-bound" and result.limiter is None
    assert result.utilization[0].metric == "l1tex__throughput.avg.pct_of_peak_sustained_active"
    assert {"too-few-blocks", "low-occupancy"} <= set(result.flags)
    assert not {"uncoalesced-access", "register-spills", "branch-divergence"} & set(result.flags)

    text = "\n".join(result.evidence)
    assert "the busiest is L1/shared at 45.1% (l1tex__throughput.avg.pct_of_peak_sustained_active)" in text
    assert stall("long_scoreboard") in text
    assert f"{fmt.number(action[stall('long_scoreboard')].value())} cycles per issued instruction" in text
    assert "50 blocks fill only 0.1838 of one wave" in text
    warps = action["sm__warps_active.avg.per_cycle_active"].value()
    l1_pct = action["l1tex__throughput.avg.pct_of_peak_sustained_active"].value()
    assert result.needed_occupancy_warps_per_sm == pytest.approx(warps * 100 / l1_pct)
    assert any(a.startswith("Launch more blocks") for a in result.advice)


def test_real_t4_copy_csv_needs_more_parallelism_than_occupancy_gives(real_export):
    """copy_blocked on a T4 (details CSV): DRAM 61.84% with 30.80 of 32 warps per SM achieved: no unit is
    saturated though occupancy is nearly full, so only more bytes in flight per warp (ILP) can help."""
    from tracekit.importers import read_file

    parsed = read_file(real_export(T4_COPY_CSV))
    result = classify(ClassificationInputs(metrics=parsed.metrics))
    assert result.mode == "latency-bound"
    assert result.utilization[0].pct == 61.84  # DRAM Throughput in the file
    assert result.needed_occupancy_warps_per_sm == pytest.approx(30.80 * 100 / 61.84)
    assert "needs-ilp" in result.flags and "low-occupancy" not in result.flags


# ---- The team's H100 samples (sample_traces/h100, see its README): verdicts the literature predicts ----------

H100_REPORT = "h100/samples.ncu-rep.gz"
H100_SMS = 132
_H100_LAUNCHES: dict[str, list] = {}


def h100_launches(sample_trace) -> list:
    """(action, metrics frame) per launch of the H100 report, in launch order, read once per session."""
    path = str(sample_trace(H100_REPORT))
    if path not in _H100_LAUNCHES:
        ncu_report = pytest.importorskip("ncu_report")
        launches = ncu_report.load_report(str(plain_report(Path(path)))).range_by_idx(0)
        actions = [launches.action_by_idx(i) for i in range(launches.num_actions())]
        _H100_LAUNCHES[path] = [(action, ncu_rep_metrics(action)) for action in actions]
    return _H100_LAUNCHES[path]


def h100_launch(sample_trace, kernel: str, **launch_values: float):
    """The one launch of `kernel` whose launch__* metrics have the given values (e.g. its dynamic shared memory)."""
    found = [
        (a, m)
        for a, m in h100_launches(sample_trace)
        if a.name() == kernel and all(a[f"launch__{k}"].value() == v for k, v in launch_values.items())
    ]
    assert len(found) == 1, f"{kernel} {launch_values}: {len(found)} launches"
    return found[0]


def vector_add(sample_trace, warps_per_sm: int):
    """vector_add padded with dynamic shared memory to exactly 8/16/32/64 resident warps per SM (README)."""
    smem = {8: 232448, 16: 115712, 32: 57344, 64: 0}[warps_per_sm]
    return h100_launch(sample_trace, "vector_add", shared_mem_per_block_dynamic=smem)


@pytest.mark.gpu_samples
def test_h100_vector_add_at_8_warps_is_latency_bound(sample_trace):
    action, metrics = vector_add(sample_trace, 8)
    result = classify(ClassificationInputs(metrics=metrics))
    dram = action["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"].value()
    assert dram < 30  # 22% in the README's table: far from any bound
    assert result.mode == "latency-bound"
    assert result.stalls.dominant(1)[0][0] == "long_scoreboard"  # waiting on DRAM loads
    assert result.stalls.share("latency") > 0.9
    # 8 warps per SM is the most that fit (shared-memory padding); ~36 would reach DRAM's peak at this latency, which
    # the device allows (64): the launch's low occupancy is the cause, no ILP is required.
    assert "low-occupancy" in result.flags and "needs-ilp" not in result.flags
    assert any("limited by shared memory" in sentence for sentence in result.evidence)


@pytest.mark.gpu_samples
def test_h100_vector_add_sweep_puts_full_occupancy_at_the_dram_bound(sample_trace):
    """Counters alone leave 64 warps per SM just under the 80% line (DRAM 79.7%) with long-scoreboard stalls at full
    occupancy: gradual saturation, DRAM-bound (issue 11). The occupancy sweep over the four launches agrees."""
    points = []
    for warps in (8, 16, 32, 64):
        action, _ = vector_add(sample_trace, warps)
        warps_launched = action["launch__grid_size"].value() * action["launch__block_size"].value() / 32
        points.append((warps, warps_launched / (action["gpu__time_duration.sum"].value() * H100_SMS)))
    # Throughput nearly doubles from 8 to 16 warps (x1.8) but gains only x1.27 from 32 to 64: the knee is between.
    assert points[1][1] / points[0][1] > 1.7 and points[3][1] / points[2][1] < 1.3
    fit = fit_occupancy_sweep(pl.DataFrame(points, schema=["occupancy_warps_per_sm", "throughput"], orient="row"))
    assert 16 < fit.needed_occupancy_warps_per_sm < 64
    assert fit.throughput_bound == pytest.approx(points[3][1])  # the 64-warp point alone forms the plateau

    action, metrics = vector_add(sample_trace, 64)
    dram = action["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"].value()
    assert 75 < dram < SATURATION_PCT
    alone = classify(ClassificationInputs(metrics=metrics))
    assert (alone.mode, alone.limiter) == ("throughput-bound", "dram")
    assert any("gradual saturation" in s and "gpu__dram_throughput" in s for s in alone.evidence)
    result = classify(ClassificationInputs(metrics=metrics, sweep=fit))
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    # The measured points still rise x1.27 from 32 to 64 warps: no plateau, and the verdict says so.
    assert fit.plateau_reached is False
    assert any("the plateau is not reached" in s for s in result.evidence)
    assert not any(a.startswith("More occupancy will not help") for a in result.advice)
    # The 8-warp launch sits below the knee: latency-bound with the sweep too.
    assert classify(ClassificationInputs(metrics=vector_add(sample_trace, 8)[1], sweep=fit)).mode == "latency-bound"


@pytest.mark.gpu_samples
def test_h100_random_permutation_is_bound_by_the_memory_system(sample_trace):
    permutes = [(a, m) for a, m in h100_launches(sample_trace) if a.name() == "permute"]
    # The random permutation reads 838 MB from DRAM, the identity 134 MB (README): tell them apart by bytes.
    (identity, identity_metrics), (random_, random_metrics) = sorted(
        permutes, key=lambda am: am[0]["dram__bytes_read.sum"].value()
    )
    result = classify(ClassificationInputs(metrics=random_metrics))
    # L2 is busy (lts__throughput near saturation) but misses most of its reads (17% hit rate in this report):
    # the misses and their fills are DRAM traffic, so DRAM is the limiter
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    assert random_["lts__t_sector_op_read_hit_rate.pct"].value() < 50
    l2 = random_["lts__throughput.avg.pct_of_peak_sustained_elapsed"].value()
    assert l2 >= SATURATION_PCT
    assert any(s.startswith(f"L2 throughput is {l2:.3g}% of peak (lts__throughput") for s in result.evidence)
    assert "uncoalesced-access" in result.flags
    assert "uncoalesced-access" not in classify(ClassificationInputs(metrics=identity_metrics)).flags


@pytest.mark.gpu_samples
def test_h100_memcpy_more_loads_per_thread_need_fewer_warps(sample_trace):
    """Volkov: independent loads per warp (ILP) substitute for occupancy, so the warps needed fall with them."""
    needed, dram = [], []
    for kernel in ("memcpy_1load", "memcpy_2loads", "memcpy_4loads"):
        action, metrics = h100_launch(sample_trace, kernel)
        result = classify(ClassificationInputs(metrics=metrics))
        # DRAM 66, 75, 77%: below the 80% line, but long-scoreboard stalls at full occupancy: gradual saturation.
        assert (result.mode, result.limiter) == ("throughput-bound", "dram")
        needed.append(result.needed_occupancy_warps_per_sm)
        dram.append(action["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"].value())
    assert dram == sorted(dram) and needed == sorted(needed, reverse=True)


@pytest.mark.gpu_samples
def test_h100_neighbored_reduction_diverges_and_interleaved_does_not(sample_trace):
    neighbored = classify(ClassificationInputs(metrics=h100_launch(sample_trace, "reduceNeighbored")[1]))
    interleaved = classify(ClassificationInputs(metrics=h100_launch(sample_trace, "reduceInterleaved")[1]))
    assert "branch-divergence" in neighbored.flags  # 28.2 threads per instruction (README)
    assert "branch-divergence" not in interleaved.flags  # 31.3
    assert any("Only 28.19 of 32 threads" in sentence for sentence in neighbored.evidence)


@pytest.mark.gpu_samples
def test_h100_imbalanced_blocks_show_a_tail(sample_trace):
    """8 heavy blocks of 2048 run on alone for most of the launch (README): the SMs sit idle most of the time."""
    action, metrics = h100_launch(sample_trace, "imbalanced_blocks")
    result = classify(ClassificationInputs(metrics=metrics))
    idle = 1 - action["sm__cycles_active.avg"].value() / action["sm__cycles_elapsed.avg"].value()
    assert idle > 0.5
    assert "tail-effect" in result.flags
    assert result.findings[0].kind == "tail" and result.headline == result.findings[0].text
    assert result.findings[0].kind == "tail" and result.headline == result.findings[0].text
    assert any(
        s.startswith(f"SMs were idle {fmt.fraction(idle)} of the elapsed SM time (sm__cycles_active.avg")
        for s in result.evidence
    )


# ---- Issue 11: rules added for expert-grade verdicts (hand frames whose answer follows from the rule) ----------


def test_low_l2_read_hit_rate_with_dram_near_peak_is_dram_not_l2():
    """L2 carries misses and fills, so it reads higher than DRAM on a stream; the hit rate decides the level."""
    stream = {**QUIET_UNITS, L2: 86.0, DRAM: 72.0, "lts__t_sector_op_read_hit_rate.pct": 3.0, "dram__bytes.sum": 134e6}
    result = classify(ClassificationInputs(metrics=frame(stream)))
    assert (result.mode, result.limiter) == ("throughput-bound", "dram")
    assert any("read hit rate is only 3%" in s and "DRAM moved 134 MB (dram__bytes.sum)" in s for s in result.evidence)
    resident = classify(ClassificationInputs(metrics=frame({**stream, "lts__t_sector_op_read_hit_rate.pct": 97.0})))
    assert resident.limiter == "l2"


def test_full_issue_slots_name_the_pipe_that_fills_them_and_ties_are_named():
    result = classify(ClassificationInputs(metrics=frame({**QUIET_UNITS, ISSUE: 99.0, FMA: 94.0, SM: 99.0})))
    assert (result.mode, result.limiter) == ("throughput-bound", "fma")
    assert result.tied_limiters == ["issue"]  # 99 vs 94: within 5 points, named beside the limiter
    assert any("Within 5 points of the limiter, fma pipe at 94%, also: issue slots 99%" in s for s in result.evidence)


def test_blocks_arriving_at_the_block_launch_rate_bound_the_launch():
    # 16384 blocks on 132 SMs in 12,450 ns: one block per SM every 100 ns, 80% of the 1-per-80-ns launch rate.
    rate = {
        **QUIET_UNITS,
        "launch__grid_size": 16384,
        "launch__sm_count": 132,
        "gpu__time_duration.sum": 12450.0,
        "sm__cycles_active.avg": 690,
        "sm__cycles_elapsed.avg": 1000,
    }
    result = classify(ClassificationInputs(metrics=frame(rate)))
    assert (result.mode, result.limiter) == ("throughput-bound", "block-launch")
    assert "block-launch-rate" in result.flags and "tail-effect" not in result.flags  # idle SMs wait for blocks
    assert any(
        "one block per SM every 100.3 ns" in s and "79.8% of the SMs' block launch rate" in s for s in result.evidence
    )
    slow = classify(ClassificationInputs(metrics=frame({**rate, "gpu__time_duration.sum": 124500.0})))
    assert slow.limiter is None and "block-launch-rate" not in slow.flags


def test_atomics_on_one_hot_l2_slice_are_atomic_contention():
    atomics = {
        **QUIET_UNITS,
        L2: 2.5,
        "lts__throughput.max.pct_of_peak_sustained_elapsed": 76.6,
        "smsp__inst_executed_op_global_red.sum": 33792,
    }
    result = classify(ClassificationInputs(metrics=frame(atomics)))
    assert (result.mode, result.limiter) == ("throughput-bound", "l2")
    assert "atomic-contention" in result.flags
    even = classify(ClassificationInputs(metrics=frame({**atomics, L2: 70.0})))  # every slice busy: not one hot slice
    assert "atomic-contention" not in even.flags


def test_zero_branch_efficiency_without_branches_is_no_divergence():
    no_branches = {
        **QUIET_UNITS,
        "smsp__sass_average_branch_targets_threads_uniform.pct": 0.0,
        "smsp__inst_executed_op_branch.sum": 0,
    }
    result = classify(ClassificationInputs(metrics=frame(no_branches)))
    assert "branch-divergence" not in result.flags
    assert any("executed no branches" in s for s in result.evidence)
    diverging = {**no_branches, "smsp__sass_average_branch_targets_threads_uniform.pct": 60.0}
    assert (
        "branch-divergence"
        in classify(ClassificationInputs(metrics=frame({**diverging, "smsp__inst_executed_op_branch.sum": 900}))).flags
    )


def test_needed_occupancy_beyond_the_device_says_no_occupancy_reaches_it():
    # 60 of 64 warps keep DRAM at 16%: 375 warps per SM would be needed, beyond any occupancy.
    metrics = frame(
        {
            **QUIET_UNITS,
            DRAM: 16.0,
            L2: 15.0,
            L1: 10.0,
            "sm__warps_active.avg.per_cycle_active": 60.0,
            "sm__maximum_warps_avg_per_active_cycle": 64.0,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics, max_warps_per_sm=64))
    assert result.mode == "latency-bound" and "needs-ilp" in result.flags
    assert any("No occupancy can reach that: the device holds at most 64 warps per SM" in s for s in result.evidence)


def test_tied_occupancy_limits_are_all_named():
    metrics = frame(
        {
            **QUIET_UNITS,
            DRAM: 60.0,
            "sm__warps_active.avg.per_cycle_active": 15.0,
            "sm__maximum_warps_avg_per_active_cycle": 16.0,
            "launch__occupancy_limit_shared_mem": 2,
            "launch__occupancy_limit_registers": 2,
            "launch__occupancy_limit_warps": 8,
        }
    )
    result = classify(ClassificationInputs(metrics=metrics, max_warps_per_sm=64))
    assert any("limited by registers and shared memory" in s for s in result.evidence)
    assert "low-occupancy" in result.flags  # 16 of 64 warps: the launch could run more


@pytest.mark.gpu_samples
def test_nsight_rule_results_are_evidence_and_cross_checked(sample_trace):
    """The verdict set's details page (rule rows) merged with its raw page, as the store holds both for a launch."""
    from tracekit.importers import read_file

    raw = read_file(sample_trace("verdict_cases/h100/cases.raw.csv"))
    details = read_file(sample_trace("verdict_cases/h100/cases.details.csv"))

    def merged(case: str) -> pl.DataFrame:
        parts = []
        for parsed in (raw, details):
            key = parsed.launches.filter(pl.col("nvtx_path") == case)["launch_key"][0]
            parts.append(parsed.metrics.filter(pl.col("launch_key") == key))
        return pl.concat(parts, how="diagonal_relaxed")

    gather = classify(ClassificationInputs(metrics=merged("random_gather")))
    rule = next(r for r in gather.nsight_rules if r.name == "UncoalescedGlobalAccess")
    assert rule.rule_type == "OPT" and rule.flag == "uncoalesced-access" and rule.agrees is True
    assert rule.estimated_speedup_pct is not None and rule.estimated_speedup_pct > 0
    assert any(s.startswith("Nsight Compute rule UncoalescedGlobalAccess (OPT") for s in gather.evidence)
    # A saturated one-wave launch: Nsight suggests occupancy, the verdict says why it does not flag it.
    wave = classify(ClassificationInputs(metrics=merged("one_wave_saturated")))
    occupancy = next(r for r in wave.nsight_rules if r.name == "AchievedOccupancy")
    assert occupancy.agrees is False and "low-occupancy" not in wave.flags
    assert any("AchievedOccupancy" in s and "more warps would only queue" in s for s in wave.evidence)
