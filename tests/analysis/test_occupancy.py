"""The occupancy calculator against hand-computed cases and against every launch of the real Nsight Compute reports.

Real reports are read here directly (ncu_report for .ncu-rep, polars for the CSVs), independently of the importers.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import plain_report, skip_or_fail
from tracekit.analysis.occupancy import (
    carveout_bytes_from_percent,
    compact_cliffs,
    device_limits,
    nearest_cliffs,
    occupancy_cliffs,
    printed_rounding_bytes,
    tail_estimate,
    theoretical_occupancy,
    waves_per_sm,
)
from tracekit.errors import TracekitError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


# ---------------------------------------------------------------------------------------------------------------
# Hand-computed cases. Constants: 65,536 registers per SM in 4 sub-partitions of 16,384; a warp's registers are
# rounded up to 256; shared memory is allocated in 128 B units plus a 1 KB driver reserve per block on CC >= 8.0.
# ---------------------------------------------------------------------------------------------------------------


def test_cc90_256_threads_32_registers_reaches_full_occupancy():
    # 8 warps/block. Registers: 32 x 32 = 1,024 per warp; 16,384 / 1,024 = 16 warps per sub-partition, 64 per SM
    # -> 64 / 8 = 8 blocks. Warps: 64 / 8 = 8. Shared memory: only the 1 KB reserve -> 233,472 / 1,024 = 228.
    result = theoretical_occupancy("9.0", 256, 32, 0)
    assert result.limits_blocks_per_sm == {"registers": 8, "shared_memory": 228, "warps": 8, "blocks": 32}
    assert result.active_blocks_per_sm == 8
    assert result.theoretical_warps_per_sm == 64
    assert result.theoretical_pct == 100.0
    assert result.limiters == ("warps", "registers")
    assert result.limiter == "warps"
    assert result.allocated_shared_mem_per_block_bytes == 1024
    assert result.allocated_registers_per_block == 8 * 1024


def test_cc90_64_registers_halves_occupancy():
    # 64 x 32 = 2,048 registers per warp; 16,384 / 2,048 = 8 warps per sub-partition, 32 per SM -> 4 blocks of 8.
    result = theoretical_occupancy("9.0", 256, 64, 0)
    assert result.limits_blocks_per_sm["registers"] == 4
    assert (result.active_blocks_per_sm, result.theoretical_warps_per_sm, result.theoretical_pct) == (4, 32, 50.0)
    assert result.limiter == "registers" and result.limiters == ("registers",)


def test_register_rounding_to_256_per_warp():
    # CC 8.6: 48 warps/SM, 16 blocks/SM. 40 regs -> 1,280 per warp (5 x 256); 16,384 / 1,280 = 12 per
    # sub-partition = 48 warps -> 48 / 4 = 12 blocks of 128 threads. 41 regs -> 1,312 -> 1,536; 16,384 / 1,536 = 10
    # -> 40 warps -> 10 blocks -> 40 / 48 = 83.33%.
    assert theoretical_occupancy("8.6", 128, 40, 0).limits_blocks_per_sm["registers"] == 12
    result = theoretical_occupancy("8.6", 128, 41, 0)
    assert result.active_blocks_per_sm == 10
    assert result.theoretical_pct == pytest.approx(100 * 40 / 48)


def test_shared_memory_limit_uses_the_given_carveout():
    # CC 8.0, 128 threads, 16 regs (32 blocks by registers, 16 by warps). 20,000 B + 1,024 reserve = 21,024 -> 21,120
    # (165 x 128). Whole SM, 167,936 B: 7 blocks. A 64 KB carveout: 65,536 / 21,120 = 3 blocks.
    whole = theoretical_occupancy("8.0", 128, 16, 20_000)
    assert whole.allocated_shared_mem_per_block_bytes == 21_120
    assert whole.limits_blocks_per_sm["shared_memory"] == 7
    assert whole.min_shared_mem_config_bytes == 164 * 1024  # 7 x 21,120 = 147,840 > 132 KB
    carved = theoretical_occupancy("8.0", 128, 16, 20_000, shared_mem_config_bytes=64 * 1024)
    assert carved.limits_blocks_per_sm["shared_memory"] == 3
    assert carved.limiter == "shared_memory" and carved.theoretical_warps_per_sm == 12
    # A carveout too small for even one block is raised to the next that fits (cuda_occupancy.h): 32 KB -> 1 block.
    assert theoretical_occupancy("8.0", 128, 16, 20_000, 16 * 1024).limits_blocks_per_sm["shared_memory"] == 1


def test_turing_and_maxwell_constants():
    # CC 7.5: 32 warps, 16 blocks, 256 B shared units, no reserve. 1,000 B -> 1,024; 65,536 / 1,024 = 64.
    result = theoretical_occupancy("7.5", 64, 32, 1000)
    assert result.allocated_shared_mem_per_block_bytes == 1024
    assert result.limits_blocks_per_sm == {"registers": 32, "shared_memory": 64, "warps": 16, "blocks": 16}
    assert (result.active_blocks_per_sm, result.theoretical_pct, result.limiters) == (16, 100.0, ("warps", "blocks"))
    # CC 5.2: 96 KB per SM. 49,152 B blocks -> 2; 1,024 threads -> 2 by warps; 32 regs -> 2 blocks of 32 warps.
    result = theoretical_occupancy("5.2", 1024, 32, 48 * 1024)
    assert result.limits_blocks_per_sm == {"registers": 2, "shared_memory": 2, "warps": 2, "blocks": 32}
    assert result.theoretical_pct == 100.0


def test_register_file_per_block_limit_and_gp100():
    # 1,024 threads x 255 regs: 8,192 per warp x 32 warps = 262,144 > 65,536 per block: the launch cannot run.
    result = theoretical_occupancy("9.0", 1024, 255, 0)
    assert result.active_blocks_per_sm == 0 and result.limiter == "registers" and result.theoretical_pct == 0.0
    # CC 5.3 has 32 K registers per block: 256 threads x 128 regs = 8 x 4,096 = 32,768 fits; 129 regs does not.
    assert theoretical_occupancy("5.3", 256, 128, 0).active_blocks_per_sm == 2
    assert theoretical_occupancy("5.3", 256, 129, 0).active_blocks_per_sm == 0
    # GP100 (6.0) has 2 sub-partitions of 32,768 registers, GP10x 4 of 16,384. 88 regs -> 2,816 per warp:
    # 32,768 // 2,816 = 11 warps per half = 22 one-warp blocks on 6.0; 16,384 // 2,816 = 5 x 4 = 20 on 6.1.
    assert theoretical_occupancy("6.0", 32, 88, 0).limits_blocks_per_sm["registers"] == 22
    assert theoretical_occupancy("6.1", 32, 88, 0).limits_blocks_per_sm["registers"] == 20


def test_barrier_limit_from_hopper_on():
    # CC 10.0: 2 barrier slots per block slot = 64; capped at the 32-block limit. 7 barriers: 64 // 7 = 9.
    assert theoretical_occupancy("10.0", 128, 32, 0).barrier_limit_blocks_per_sm == 32
    result = theoretical_occupancy("10.0", 32, 16, 0, barriers_per_block=7)
    assert result.barrier_limit_blocks_per_sm == 9
    assert result.active_blocks_per_sm == 9 and result.limiter == "barriers"
    # CC 12.0: 1 slot per block slot = 24; before Hopper barriers do not limit.
    assert theoretical_occupancy("12.0", 128, 32, 0).barrier_limit_blocks_per_sm == 24
    assert theoretical_occupancy("8.0", 128, 32, 0).barrier_limit_blocks_per_sm is None


def test_device_limits_table():
    h100 = device_limits("9.0")
    assert (h100.max_warps_per_sm, h100.max_blocks_per_sm, h100.shared_mem_per_sm_bytes) == (64, 32, 233_472)
    assert h100.max_shared_mem_per_block_bytes == 232_448 and h100.reserved_shared_mem_per_block_bytes == 1024
    assert h100.shared_mem_carveouts_bytes[-1] == 228 * 1024 and len(h100.shared_mem_carveouts_bytes) == 10
    assert device_limits("7.0").shared_mem_carveouts_bytes == tuple(k * 1024 for k in (0, 8, 16, 32, 64, 96))
    assert device_limits("7.5").shared_mem_carveouts_bytes == (32 * 1024, 64 * 1024)
    assert device_limits("8.9").shared_mem_carveouts_bytes[-1] == 100 * 1024
    assert device_limits("6.1").shared_mem_carveouts_bytes == (96 * 1024,)
    assert device_limits("7.5").shared_mem_allocation_unit_bytes == 256
    assert device_limits("8.0").shared_mem_allocation_unit_bytes == 128
    assert device_limits("sm_90") == device_limits("90") == h100
    assert device_limits("12.0").max_warps_per_sm == 48


@pytest.mark.parametrize(
    "args, message",
    [
        (("4.0", 256, 32, 0), "unknown compute capability '4.0'"),
        (("9.0", 0, 32, 0), "block size 0"),
        (("9.0", 1025, 32, 0), "block size 1025"),
        (("9.0", 256, 256, 0), "256 registers per thread"),
        (("9.0", 256, 32, 232_449), "232449 bytes of shared memory per block"),
        (("7.5", 256, 32, 65_537), "0 to 65536 bytes"),
        (("8.0", 256, 32, 0, 300_000), "carveout of 300000 bytes"),
    ],
)
def test_invalid_input_is_one_clear_error(args, message):
    with pytest.raises(TracekitError) as caught:
        theoretical_occupancy(*args)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_waves_and_tail():
    # 1,000 blocks, 4 per SM, 132 SMs: 528 per wave -> 1 full wave + 472 blocks; tail 1 / 2 of the runtime.
    tail = tail_estimate(1000, 4, 132)
    assert tail["waves_per_sm"] == pytest.approx(1000 / 528)
    assert (tail["full_waves"], tail["partial_wave_blocks"], tail["blocks_per_wave"]) == (1, 472, 528)
    assert tail["last_wave_occupied_fraction"] == pytest.approx(472 / 528)
    assert tail["estimated_speedup_pct"] == 50.0 and tail["nsight_reports_tail_effect"]
    # Nsight's message counts the partial wave in floating point: 4,096 blocks at 852 per wave leave 688, and
    # ceil(4096 * frac(4096 / 852) / (4096 / 852)) = ceil(688.0000000000001) = 689, which is what ncu prints.
    tail = tail_estimate(4096, 6, 142)
    assert (tail["partial_wave_blocks"], tail["nsight_partial_wave_blocks"]) == (688, 689)
    # 5 full waves + a partial: 1 / 6 = 16.7% < 20%, below the rule's threshold.
    tail = tail_estimate(5 * 528 + 1, 4, 132)
    assert tail["estimated_speedup_pct"] == pytest.approx(100 / 6) and not tail["nsight_reports_tail_effect"]
    # Exactly 2 waves: no partial wave. Less than one wave: no tail (Nsight's small-grid rule applies instead).
    assert tail_estimate(1056, 4, 132)["tail_effect"] is False
    assert tail_estimate(1056, 4, 132)["last_wave_occupied_fraction"] == 1.0
    assert tail_estimate(100, 4, 132)["tail_effect"] is False
    with pytest.raises(TracekitError):
        waves_per_sm(100, 0, 132)


def test_cliffs_cc90():
    cliffs = occupancy_cliffs("9.0", 256, 32, 0)
    assert set(cliffs) == {"block_size", "registers", "shared_memory"}
    registers = compact_cliffs(cliffs["registers"])
    # Registers per warp rounded up to 256, warps per sub-partition = 16,384 // that, blocks = 4 x that // 8:
    # <=32: 1,024 -> 16 -> 8 blocks; 33-40: 1,280 -> 12 -> 6; 41-48: 1,536 -> 10 -> 5; 49-64: 1,792..2,048 -> 9..8
    # -> 4; 65-80: 2,304..2,560 -> 7..6 -> 3; 81-128: 2,816..4,096 -> 5..4 -> 2; 129-255: 4,352..8,192 -> 3..2 -> 1.
    assert registers["registers_per_thread_from"].to_list() == [1, 33, 41, 49, 65, 81, 129]
    assert registers["registers_per_thread_to"].to_list() == [32, 40, 48, 64, 80, 128, 255]
    assert registers["theoretical_warps_per_sm"].to_list() == [64, 48, 40, 32, 24, 16, 8]
    assert registers["limiter"].to_list() == ["warps"] + ["registers"] * 6
    assert cliffs["registers"].height == 255 and cliffs["block_size"].height == 32
    # Shared memory: 8 blocks need 8 x (s + 1,024) <= 233,472 -> s <= 28,160.
    shared = cliffs["shared_memory"]
    assert shared.filter(pl.col("shared_mem_per_block_bytes") == 28_160)["active_blocks_per_sm"].item() == 8
    assert shared.filter(pl.col("shared_mem_per_block_bytes") == 28_288)["active_blocks_per_sm"].item() == 7
    texts = [cliff.text for cliff in nearest_cliffs(cliffs, 256, 32, 0)]
    assert "at 33 registers per thread occupancy drops from 100% to 75%" in texts
    assert "above 28160 bytes of shared memory per block occupancy drops from 100% to 87.5%" in texts
    # 257..288 threads = 9 warps: 64 // 9 = 7 blocks = 63 warps; 193..224 = 7 warps: 9 blocks = 63 warps.
    assert "above 256 threads per block occupancy drops from 100% to 98.4375%" in texts
    assert "at 224 threads per block occupancy drops from 100% to 98.4375%" in texts
    steps = compact_cliffs(cliffs["block_size"])
    assert steps.row(0, named=True) == {
        "threads_per_block_from": 1,
        "threads_per_block_to": 32,
        "active_blocks_per_sm": 32,
        "theoretical_warps_per_sm": 32,
        "theoretical_pct": 50.0,
        "limiter": "blocks",
    }
    # 161..192 threads (6 warps, 10 blocks) is its own step: the blocks change though the warps (60) do not.
    assert steps.filter(pl.col("threads_per_block_from") == 161)["active_blocks_per_sm"].item() == 10
    shared_steps = compact_cliffs(shared)
    assert shared_steps.row(1, named=True)["shared_mem_per_block_bytes_from"] == 28_161
    assert shared_steps["shared_mem_per_block_bytes_to"][-1] == 232_448


def test_nearest_cliffs_down_from_a_register_limited_kernel():
    cliffs = occupancy_cliffs("9.0", 256, 64, 0)
    by_key = {(c.knob, c.direction): c for c in nearest_cliffs(cliffs, 256, 64, 0)}
    assert (by_key["registers", "down"].at_value, by_key["registers", "down"].to_pct) == (48, 62.5)
    assert by_key["registers", "down"].text == "at 48 registers per thread occupancy rises from 50% to 62.5%"
    assert (by_key["registers", "up"].at_value, by_key["registers", "up"].to_pct) == (65, 37.5)


# ---------------------------------------------------------------------------------------------------------------
# Real reports.
# ---------------------------------------------------------------------------------------------------------------


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _details(path: Path) -> dict[str, dict[str, str]]:
    """`--page details` CSV -> {launch ID: {metric name: value}}, plus the CC column where the file has one."""
    text = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith('"'))
    frame = pl.read_csv(io.StringIO(text), infer_schema=False, truncate_ragged_lines=True)
    launches: dict[str, dict[str, str]] = {}
    for row in frame.filter(pl.col("Metric Name").is_not_null() & (pl.col("Metric Name") != "")).iter_rows(named=True):
        launch = launches.setdefault(row["ID"], {"CC": row.get("CC")})
        launch[row["Metric Name"]] = row["Metric Value"]
    return launches


def _check_details_launch(launch: dict[str, str], cc: str, use_config: bool) -> None:
    static = int(_number(launch["Static Shared Memory Per Block"]))
    dynamic = int(_number(launch["Dynamic Shared Memory Per Block"]))
    config = int(_number(launch["Shared Memory Configuration Size"]))
    result = theoretical_occupancy(
        cc,
        int(_number(launch["Block Size"])),
        int(_number(launch["Registers Per Thread"])),
        static + dynamic,
        config if use_config else None,
    )
    assert device_limits(cc).reserved_shared_mem_per_block_bytes == int(
        _number(launch.get("Driver Shared Memory Per Block", "0"))
    )
    assert result.limits_blocks_per_sm == {
        "registers": int(_number(launch["Block Limit Registers"])),
        "shared_memory": int(_number(launch["Block Limit Shared Mem"])),
        "warps": int(_number(launch["Block Limit Warps"])),
        "blocks": int(_number(launch["Block Limit SM"])),
    }
    assert result.theoretical_warps_per_sm == int(_number(launch["Theoretical Active Warps per SM"]))
    assert result.theoretical_pct == pytest.approx(_number(launch["Theoretical Occupancy"]), abs=0.005)
    # The carveout the driver picked always holds the active blocks (so it never lowers the occupancy).
    assert result.min_shared_mem_config_bytes <= config


def test_details_csv_t4(real_export):
    launches = _details(real_export("ncu_details_T4_2025_rules_speedup_nsightful_copy_blocked.csv"))
    assert list(launches) == ["0"]
    launch = launches["0"]
    _check_details_launch(launch, launch["CC"], use_config=True)
    # 1,024 blocks of 256 threads, 4 per SM, 40 SMs: 6.40 waves; 6 full waves + 64 blocks -> 1/7 = 14%, under the
    # rule's 20% threshold, and indeed the file has no Tail Effect message.
    tail = tail_estimate(1024, 4, int(_number(launch["# SMs"])))
    assert f"{tail['waves_per_sm']:.2f}" == launch["Waves Per SM"] == "6.40"
    assert not tail["nsight_reports_tail_effect"]
    text = real_export("ncu_details_T4_2025_rules_speedup_nsightful_copy_blocked.csv").read_text()
    assert "partial wave" not in text


def test_details_csv_sm100(real_export):
    path = real_export("ncu_details_sm100_app_stdout_interleaved_superbench.log")
    launches = _details(path)
    assert len(launches) == 1
    launch = next(iter(launches.values()))
    assert launch["CC"] == "10.0"
    _check_details_launch(launch, "10.0", use_config=True)
    result = theoretical_occupancy("10.0", 384, 168, 205_696, 233_472)
    assert result.limiters == ("registers", "shared_memory")  # the rule: "limited by ... registers, and ... shared"
    # Grid (9, 32, 1) = 288 blocks, 1 per SM, 152 SMs -> 1.89 waves: "1 full waves and a partial wave of 136 thread
    # blocks ... up to 50.0%", estimated speedup 50 (the rule row in the file).
    tail = tail_estimate(288, result.active_blocks_per_sm, int(_number(launch["# SMs"])))
    assert f"{tail['waves_per_sm']:.2f}" == launch["Waves Per SM"]
    assert (tail["full_waves"], tail["partial_wave_blocks"], tail["estimated_speedup_pct"]) == (1, 136, 50.0)
    assert tail["nsight_partial_wave_blocks"] == 136 and tail["nsight_reports_tail_effect"]
    assert "1 full waves and a partial wave of 136 thread blocks" in path.read_text()


def test_details_csv_bert_a100_every_launch(real_export):
    """26 PyTorch launches on an A100 profiled by ncu 2022/2023.

    The file has no CC column: 64 warps and 32 blocks per SM say 8.0 or 9.0, and 164 blocks of 1 KB (the driver's
    reserve) say 164 KB per SM, which is 8.0. This ncu divided the SM's whole shared memory, not the configured
    carveout (launch 18: 100 KB configured, 17,920 B per block, limit 9 = 167,936 // 17,920; the carveout would give
    5), so the check passes no carveout.
    """
    path = real_export("ncu_details_sm80class_kerneltime_rules_bert_leleucas.csv")
    launches = _details(path)
    assert len(launches) == 26
    for launch_id, launch in launches.items():
        try:
            _check_details_launch(launch, "8.0", use_config=False)
        except AssertionError as failure:
            raise AssertionError(f"launch {launch_id}: {failure}") from failure
    # Launch 2: 768 blocks, 5 per SM on the A100's 108 SMs -> 540 per wave, 1.42 waves, a partial wave of 228
    # blocks, up to 50% of the runtime. The 2023 rule printed 227: int(768 * 0.42 / 1.42) from the rounded waves.
    launch = launches["2"]
    result = theoretical_occupancy("8.0", 256, 47, 0)
    tail = tail_estimate(int(_number(launch["Grid Size"])), result.active_blocks_per_sm, 108)
    assert f"{tail['waves_per_sm']:.2f}" == launch["Waves Per SM"] == "1.42"
    assert (tail["full_waves"], tail["partial_wave_blocks"], tail["estimated_speedup_pct"]) == (1, 228, 50.0)
    assert "1 full waves and a partial wave of 227 thread blocks" in path.read_text()
    for launch in launches.values():
        grid = int(_number(launch["Grid Size"]))
        occupancy = theoretical_occupancy(
            "8.0",
            int(_number(launch["Block Size"])),
            int(_number(launch["Registers Per Thread"])),
            int(_number(launch["Static Shared Memory Per Block"])),
        )
        assert f"{waves_per_sm(grid, occupancy.active_blocks_per_sm, 108):.2f}" == launch["Waves Per SM"]


def _raw(path: Path) -> pl.DataFrame:
    """`--page raw` CSV: header, a units row, one row per launch."""
    text = "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("=="))
    return pl.read_csv(io.StringIO(text), infer_schema=False).slice(1)


@pytest.mark.parametrize(
    "name, count",
    [
        ("ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv", 16),
        ("ncu_raw_B200_flashinfer_2kernels_RooflineAnalysis.csv", 16),
    ],
)
def test_raw_csv_b200_every_launch(real_export, name, count):
    frame = _raw(real_export(name))
    assert frame.height == count
    for row in frame.iter_rows(named=True):
        cc = f"{row['device__attribute_compute_capability_major']}.{row['device__attribute_compute_capability_minor']}"
        limits = device_limits(cc)
        assert limits.shared_mem_per_sm_bytes == int(row["device__attribute_max_shared_memory_per_multiprocessor"])
        assert limits.max_shared_mem_per_block_bytes == int(row["device__attribute_max_shared_memory_per_block_optin"])
        assert limits.reserved_shared_mem_per_block_bytes == int(row["launch__shared_mem_per_block_driver"])
        result = theoretical_occupancy(
            cc,
            int(row["launch__block_size"]),
            int(row["launch__registers_per_thread"]),
            int(row["launch__shared_mem_per_block_static"]) + int(row["launch__shared_mem_per_block_dynamic"]),
            int(row["launch__shared_mem_config_size"]),
            barriers_per_block=int(row["launch__barrier_count"]),
        )
        assert result.limits_blocks_per_sm == {
            "registers": int(row["launch__occupancy_limit_registers"]),
            "shared_memory": int(row["launch__occupancy_limit_shared_mem"]),
            "warps": int(row["launch__occupancy_limit_warps"]),
            "blocks": int(row["launch__occupancy_limit_blocks"]),
        }, row["ID"]
        assert result.barrier_limit_blocks_per_sm == int(row["launch__occupancy_limit_barriers"])
        assert result.allocated_shared_mem_per_block_bytes == int(row["launch__shared_mem_per_block_allocated"])
        assert result.theoretical_warps_per_sm == float(row["sm__maximum_warps_avg_per_active_cycle"])
        assert result.theoretical_pct == pytest.approx(float(row["sm__maximum_warps_per_active_cycle_pct"]))
        waves = waves_per_sm(
            int(row["launch__grid_size"]),
            result.active_blocks_per_sm,
            int(row["device__attribute_multiprocessor_count"]),
        )
        assert waves == pytest.approx(float(row["launch__waves_per_multiprocessor"]), abs=0.005)


# --- .ncu-rep reports, read with NVIDIA's ncu_report module ----------------------------------------------------


def _value(action, name: str):
    metric = action.metric_by_name(name)
    return None if metric is None else metric.value()


def _curve(action, name: str) -> dict[int, int]:
    """An instanced occupancy graph metric: {x (correlation id): theoretical warps per SM}."""
    metric = action.metric_by_name(name)
    ids = metric.correlation_ids()
    return {int(ids.as_uint64(i)): int(metric.as_uint64(i)) for i in range(metric.num_instances())}


def _check_ncu_rep_action(action) -> None:
    cc = (
        f"{int(_value(action, 'device__attribute_compute_capability_major'))}."
        f"{int(_value(action, 'device__attribute_compute_capability_minor'))}"
    )
    limits = device_limits(cc)
    assert limits.max_warps_per_sm == int(_value(action, "device__attribute_max_warps_per_multiprocessor"))
    assert limits.max_blocks_per_sm == int(_value(action, "device__attribute_max_blocks_per_multiprocessor"))
    assert limits.max_registers_per_block == int(_value(action, "device__attribute_max_registers_per_block"))
    assert limits.shared_mem_per_sm_bytes == int(
        _value(action, "device__attribute_max_shared_memory_per_multiprocessor")
    )
    assert limits.max_shared_mem_per_block_bytes == int(
        _value(action, "device__attribute_max_shared_memory_per_block_optin")
    )
    threads = int(_value(action, "launch__block_size"))
    registers = int(_value(action, "launch__registers_per_thread"))
    shared = int(_value(action, "launch__shared_mem_per_block_static")) + int(
        _value(action, "launch__shared_mem_per_block_dynamic")
    )
    barriers = _value(action, "launch__barrier_count")
    config = int(_value(action, "launch__shared_mem_config_size"))
    result = theoretical_occupancy(
        cc, threads, registers, shared, config, barriers_per_block=1 if barriers is None else int(barriers)
    )
    assert result.limits_blocks_per_sm == {
        "registers": int(_value(action, "launch__occupancy_limit_registers")),
        "shared_memory": int(_value(action, "launch__occupancy_limit_shared_mem")),
        "warps": int(_value(action, "launch__occupancy_limit_warps")),
        "blocks": int(_value(action, "launch__occupancy_limit_blocks")),
    }
    if _value(action, "launch__occupancy_limit_barriers") is not None:
        assert result.barrier_limit_blocks_per_sm == int(_value(action, "launch__occupancy_limit_barriers"))
    assert result.theoretical_warps_per_sm == _value(action, "sm__maximum_warps_avg_per_active_cycle")
    assert result.theoretical_pct == pytest.approx(_value(action, "sm__maximum_warps_per_active_cycle_pct"))
    assert result.allocated_shared_mem_per_block_bytes == int(_value(action, "launch__shared_mem_per_block_allocated"))
    waves = waves_per_sm(
        int(_value(action, "launch__grid_size")),
        result.active_blocks_per_sm,
        int(_value(action, "device__attribute_multiprocessor_count")),
    )
    assert waves == pytest.approx(_value(action, "launch__waves_per_multiprocessor"))
    # Nsight's occupancy graphs, point by point: block size, registers per thread, shared memory per block.
    cliffs = occupancy_cliffs(cc, threads, registers, shared)
    for knob, metric in (
        ("block_size", "launch__occupancy_per_block_size"),
        ("registers", "launch__occupancy_per_register_count"),
        ("shared_memory", "launch__occupancy_per_shared_mem_size"),
    ):
        if action.metric_by_name(metric) is None:
            continue
        curve = _curve(action, metric)
        if knob == "shared_memory":
            # Nsight's shared-memory graph counts the driver's per-block reserve (1 KB from CC 8.0) in its x axis;
            # the calculator takes what the kernel asks for. Seen on the H100 sample: the cliff from 64 to 56
            # warps sits at x = 29,696 in the graph, at 28,672 requested bytes here. The graph also ends at the
            # per-block maximum the kernel may use, 48 KB unless its function opted in to more (an attribute that
            # the launch does not show): compare up to 48 KB, where every kernel's graph is defined.
            reserve = limits.reserved_shared_mem_per_block_bytes
            per_block_max = limits.default_shared_mem_per_block_bytes
            curve = {x - reserve: w for x, w in curve.items() if reserve <= x <= per_block_max}
        for x, nsight_warps in curve.items():
            point = {
                "block_size": (x, registers, shared),
                "registers": (threads, x, shared),
                "shared_memory": (threads, registers, x),
            }[knob]
            if knob == "registers" and x > limits.max_registers_per_thread:
                continue  # the graph runs to 256; no kernel can have more than 255
            # Nsight draws its graphs at the launch's carveout (launch__shared_mem_config_size), raised where a
            # block does not fit it, as the calculator does.
            assert theoretical_occupancy(cc, *point, config).theoretical_warps_per_sm == nsight_warps, (knob, x)
        column = {
            "block_size": "threads_per_block",
            "registers": "registers_per_thread",
            "shared_memory": "shared_mem_per_block_bytes",
        }[knob]
        if config != limits.shared_mem_per_sm_bytes:  # the cliff tables assume the largest carveout
            continue
        frame = cliffs[knob].filter(pl.col(column).is_in(list(curve)))
        assert frame.height > 0
        assert all(curve[x] == w for x, w in frame.select(column, "theoretical_warps_per_sm").iter_rows()), knob


def _check_ncu_rep(path: Path) -> int:
    ncu_report = pytest.importorskip("ncu_report")
    context = ncu_report.load_report(str(plain_report(path)))
    checked = 0
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            try:
                _check_ncu_rep_action(action)
            except AssertionError as failure:
                raise AssertionError(f"{path.name}: {action.name()}: {failure}") from failure
            checked += 1
    return checked


def test_ncu_rep_rtx2080ti_sgemm(real_export):
    """volta_sgemm_32x128_nn on an RTX 2080 Ti (7.5): 256 threads, 57 regs, 16 KB static shared memory.

    By hand: 57 x 32 = 1,824 -> 2,048 registers per warp; 16,384 / 2,048 = 8 warps per sub-partition = 32 = 4
    blocks of 8 warps; 65,536 / 16,384 = 4 blocks by shared memory; 32 / 8 = 4 by warps: 32 warps, 100%.
    """
    assert _check_ncu_rep(real_export("ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep")) == 1
    result = theoretical_occupancy("7.5", 256, 57, 16_384, 65_536)
    assert result.limits_blocks_per_sm == {"registers": 4, "shared_memory": 4, "warps": 4, "blocks": 16}
    assert result.theoretical_pct == 100.0


def test_registers_curve_of_the_rtx2080ti_report(real_export):
    """Every register count 1..255 against Nsight's graph (the join in _check_ncu_rep_action covers all of them)."""
    ncu_report = pytest.importorskip("ncu_report")
    path = real_export("ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep")
    action = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(0)
    curve = _curve(action, "launch__occupancy_per_register_count")
    ours = dict(
        occupancy_cliffs("7.5", 256, 57, 16_384)["registers"]
        .select("registers_per_thread", "theoretical_warps_per_sm")
        .iter_rows()
    )
    assert {r: curve[r] for r in range(1, 256)} == ours
    # Nsight's graph also has 0 registers (nothing to limit): 4 blocks by shared memory and warps = 32 warps.
    assert curve[0] == theoretical_occupancy("7.5", 256, 0, 16_384, 65_536).theoretical_warps_per_sm == 32


def _sample_reports() -> list[Path]:
    return sorted([*SAMPLES.glob("**/*.ncu-rep"), *SAMPLES.glob("**/*.ncu-rep.gz")])  # gzipped, as the H100's


@pytest.mark.gpu_samples
@pytest.mark.parametrize("path", _sample_reports() or [None], ids=lambda p: p.name if p else "none")
def test_ncu_rep_samples(path):
    """Every launch of every .ncu-rep under sample_traces/ (the team's H100 samples)."""
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("required in CI: no sample_traces/**/*.ncu-rep (run sample_traces/make_samples.sh)")
        pytest.skip("no sample_traces/**/*.ncu-rep yet")
    assert _check_ncu_rep(path) > 0


# --- device limits against the GPU tables of real Nsight Systems exports --------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nsys_2021_QuadroRTX6000_Mordred_report1.sqlite",
        "nsys_2023.2.3_A40_cutlassbench_report1.sqlite",
        "nsys_2025.1.3_RTX5060_nokerneltable_minigemm_report1.sqlite",
        "nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite",
    ],
)
def test_device_limits_match_nsys_gpu_tables(real_export, name):
    path = real_export(name)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "select computeMajor, computeMinor, maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerBlock,"
            " maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlockOptin, maxShmemPerBlock, maxThreadsPerBlock"
            " from TARGET_INFO_GPU"
        ).fetchall()
    assert rows
    for major, minor, warps, blocks, regs_block, regs_sm, smem_sm, smem_optin, smem_default, threads in rows:
        limits = device_limits(f"{major}.{minor}")
        assert (limits.max_warps_per_sm, limits.max_blocks_per_sm) == (warps, blocks)
        assert (limits.max_registers_per_block, limits.registers_per_sm) == (regs_block, regs_sm)
        assert (limits.shared_mem_per_sm_bytes, limits.max_shared_mem_per_block_bytes) == (smem_sm, smem_optin)
        assert (limits.default_shared_mem_per_block_bytes, limits.max_threads_per_block) == (smem_default, threads)


# ---------------------------------------------------------------------------------------------------------------
# Carveouts the driver would pick, the opt-in to more than 48 KB, rounded shared-memory sizes, and cliffs at the
# launch's own carveout and barrier count.
# ---------------------------------------------------------------------------------------------------------------


def test_carveout_between_offered_sizes_is_rounded_up_and_said():
    # CC 9.0 offers 0, 8, 16, 32, 64, 100, 132, 164, 196, 228 KB. 120,000 B lies between 100 KB (102,400) and
    # 132 KB (135,168): the driver takes 132 KB. 30,000 B + 1 KB reserve = 31,024 -> 31,104 B per block:
    # 135,168 // 31,104 = 4 blocks (the 100 KB carveout would give 3).
    result = theoretical_occupancy("9.0", 256, 32, 30_000, 120_000)
    assert result.shared_mem_config_bytes == 135_168 and result.requested_shared_mem_config_bytes == 120_000
    assert result.limits_blocks_per_sm["shared_memory"] == 4
    assert result.limits_blocks_per_sm == theoretical_occupancy("9.0", 256, 32, 30_000, 135_168).limits_blocks_per_sm
    assert any("next larger, 135168 bytes (132 KB)" in note for note in result.notes)
    # An offered carveout is used as given, without a note.
    exact = theoretical_occupancy("9.0", 256, 32, 30_000, 102_400)
    assert exact.shared_mem_config_bytes == 102_400 and exact.notes == ()
    assert exact.limits_blocks_per_sm["shared_memory"] == 3
    # `--page details` prints the 228 KB carveout as "233.47 Kbyte": 233,470 B is rounded up to 233,472, so a
    # launch of 115,712 B per block keeps its 2 blocks (Nsight's Block Limit Shared Mem) instead of 1.
    assert theoretical_occupancy("9.0", 256, 22, 115_712, 233_470).limits_blocks_per_sm["shared_memory"] == 2
    # Volta (0, 8, 16, 32, 64, 96 KB): 40 KB -> 64 KB. Turing offers only 32 and 64 KB: 0 -> 32 KB.
    assert theoretical_occupancy("7.0", 128, 32, 0, 40 * 1024).shared_mem_config_bytes == 64 * 1024
    assert theoretical_occupancy("7.5", 128, 32, 0, 0).shared_mem_config_bytes == 32 * 1024


def test_carveout_no_configuration_holds_is_refused():
    for cc, carveout in (("9.0", 233_473), ("8.6", 100 * 1024 + 1), ("7.5", 65 * 1024), ("9.0", -1)):
        with pytest.raises(TracekitError) as caught:
            theoretical_occupancy(cc, 128, 32, 0, carveout)
        assert f"carveout of {carveout} bytes: no carveout on CC {cc} holds it" in str(caught.value)


def test_carveout_is_ignored_where_the_split_is_fixed():
    # CC 5.x and 6.x have a fixed shared memory per SM (96 KB on 6.1): the carveout does not apply.
    ignored = theoretical_occupancy("6.1", 256, 32, 20_000, 1000)
    plain = theoretical_occupancy("6.1", 256, 32, 20_000)
    assert ignored.shared_mem_config_bytes is None
    assert ignored.limits_blocks_per_sm == plain.limits_blocks_per_sm
    assert ignored.limits_blocks_per_sm["shared_memory"] == 96 * 1024 // 20_224  # 20,000 -> 79 x 256 = 20,224
    assert ignored.notes and "does not apply and is ignored" in ignored.notes[0]
    assert theoretical_occupancy("5.2", 256, 32, 0, 10**9).shared_mem_config_bytes is None


def test_more_than_48_kb_needs_the_opt_in():
    assert theoretical_occupancy("9.0", 128, 32, 48 * 1024, opt_in=False).limits_blocks_per_sm["shared_memory"] == 4
    # One byte more without the opt-in: no block can launch (the CUDA occupancy API answers 0, see below).
    refused = theoretical_occupancy("9.0", 128, 32, 48 * 1024 + 1, opt_in=False)
    assert refused.active_blocks_per_sm == 0 and refused.limiter == "shared_memory"
    assert "without the kernel's opt-in" in refused.notes[-1]
    # Opted in, up to the device's opt-in maximum (227 KB on 9.0): 100,000 + 1,024 -> 101,120 B: 2 blocks.
    opted = theoretical_occupancy("9.0", 128, 32, 100_000, opt_in=True)
    assert opted.opt_in and opted.limits_blocks_per_sm["shared_memory"] == 2
    # The shared-memory curve ends at 48 KB without the opt-in, at the opt-in maximum with it.
    assert (
        occupancy_cliffs("9.0", 128, 32, 0, opt_in=False)["shared_memory"]["shared_mem_per_block_bytes"].max()
        == 48 * 1024
    )
    assert occupancy_cliffs("9.0", 128, 32, 0)["shared_memory"]["shared_mem_per_block_bytes"].max() == 232_448


def test_rounded_shared_memory_is_determined_only_when_the_window_agrees():
    assert printed_rounding_bytes("232.45 Kbyte/block") == pytest.approx(5.0)
    assert printed_rounding_bytes("1.5 Kbyte/block") == pytest.approx(50.0)
    assert printed_rounding_bytes("3072 byte/block") == 0.0 and printed_rounding_bytes(None) == 0.0
    # "115.71 Kbyte/block" is 115,705 .. 115,715 B. Up to 115,712 a block allocates 116,736 B (2 fit in 228 KB);
    # from 115,713 it allocates 116,864 (1 fits): the print does not decide the occupancy.
    window = theoretical_occupancy("9.0", 256, 22, 115_710, 233_472, shared_mem_rounding_bytes=5)
    assert not window.determined
    assert "known only to +-5 bytes" in window.notes[-1] and "25%" in window.notes[-1] and "12.5%" in window.notes[-1]
    # "57.34 Kbyte/block" (57,335 .. 57,345 B): 57,344 is the largest that allocates 58,368 B -> 4 blocks, and
    # 57,345 allocates 58,496 -> 3 blocks: undetermined too. "232.45" cannot be above the 227 KB maximum: 1 block.
    assert not theoretical_occupancy("9.0", 256, 22, 57_340, 233_472, shared_mem_rounding_bytes=5).determined
    clamped = theoretical_occupancy("9.0", 256, 22, 232_450, 233_472, shared_mem_rounding_bytes=5)
    assert clamped.determined and clamped.active_blocks_per_sm == 1 and clamped.theoretical_pct == 12.5
    # 3.07 Kbyte (3,065 .. 3,075 B) allocates 4,096 B either way on 9.0: determined.
    assert theoretical_occupancy("9.0", 256, 32, 3070, shared_mem_rounding_bytes=5).determined


def test_cliffs_at_the_given_carveout_and_barrier_count():
    # At a 64 KB carveout 8 blocks need 8 x (s + 1,024) <= 65,536: s <= 7,168 (28,160 at the full 228 KB).
    carved = occupancy_cliffs("9.0", 256, 32, 0, 64 * 1024)["shared_memory"]
    assert carved.filter(pl.col("shared_mem_per_block_bytes") == 7_168)["active_blocks_per_sm"].item() == 8
    assert carved.filter(pl.col("shared_mem_per_block_bytes") == 7_296)["active_blocks_per_sm"].item() == 7
    full = occupancy_cliffs("9.0", 256, 32, 0)["shared_memory"]
    assert full.filter(pl.col("shared_mem_per_block_bytes") == 7_296)["active_blocks_per_sm"].item() == 8
    texts = [c.text for c in nearest_cliffs(occupancy_cliffs("9.0", 256, 32, 0, 64 * 1024), 256, 32, 0)]
    assert "above 7168 bytes of shared memory per block occupancy drops from 100% to 87.5%" in texts
    # A carveout between offered sizes is rounded the same way for the curves: 60,000 B -> 64 KB.
    assert occupancy_cliffs("9.0", 256, 32, 0, 60_000)["shared_memory"].equals(carved)
    # CC 10.0 has 64 barrier slots: with 8 barriers per block at most 8 blocks run, so one-warp blocks give 8
    # warps, not 32 (the block-slot limit); the default of 1 barrier leaves 32.
    barred = occupancy_cliffs("10.0", 32, 16, 0, barriers_per_block=8)["block_size"]
    assert barred.row(0, named=True)["theoretical_warps_per_sm"] == 8
    assert barred.row(0, named=True)["limiter"] == "barriers"
    assert occupancy_cliffs("10.0", 32, 16, 0)["block_size"].row(0, named=True)["theoretical_warps_per_sm"] == 32


# --- against the CUDA occupancy API on the H100 -----------------------------------------------------------------

OCCUPANCY_API = SAMPLES / "verdict_cases" / "occupancy_api_h100.json"


def _api_rows() -> list[dict]:
    if not OCCUPANCY_API.exists():
        skip_or_fail(f"{OCCUPANCY_API} is missing: run sample_traces/verdict_cases/make_verdict_cases.sh on the H100")
    data = json.loads(OCCUPANCY_API.read_text())
    assert data["device"]["cc"] == "9.0" and data["device"]["shared_mem_per_sm_bytes"] == 233_472
    return data["rows"]


def test_calculator_matches_the_cuda_occupancy_api_h100():
    """cudaOccupancyMaxActiveBlocksPerMultiprocessor on the H100 for 4 kernels (10 to 116 registers, 0 or 16 KB of
    static shared memory), 5 block sizes, 10 dynamic sizes (0 to 227 KB), 9 preferred carveouts (default, 0% ..
    100%), without and with the opt-in: 3,420 answers. The calculator gives every one, from the percentage turned
    into bytes and rounded up to an offered carveout; where the API says 0 because a block would exceed the
    device's 227 KB (16 KB static + 227 KB dynamic) the calculator refuses the configuration instead."""
    rows = _api_rows()
    assert len(rows) == 1710
    checked = refused = rounding_mattered = opt_in_mattered = 0
    for row in rows:
        assert row["blocks_per_sm_error"] == row["blocks_per_sm_optin_error"] == "cudaSuccess"
        percent = row["carveout_pct"]
        carveout = None if percent < 0 else carveout_bytes_from_percent("9.0", percent)
        shared = row["static_smem_bytes"] + row["dynamic_smem_bytes"]
        args = ("9.0", row["block_threads"], row["registers_per_thread"], shared, carveout)
        if shared > device_limits("9.0").max_shared_mem_per_block_bytes:
            assert row["blocks_per_sm"] == row["blocks_per_sm_optin"] == 0
            with pytest.raises(TracekitError):
                theoretical_occupancy(*args)
            refused += 2
            continue
        for opt_in, key in ((False, "blocks_per_sm"), (True, "blocks_per_sm_optin")):
            result = theoretical_occupancy(*args, opt_in=opt_in)
            assert result.active_blocks_per_sm == row[key], (row, opt_in)
            checked += 1
        plain = theoretical_occupancy(*args, opt_in=False).active_blocks_per_sm
        opted = theoretical_occupancy(*args, opt_in=True).active_blocks_per_sm
        opt_in_mattered += plain != opted
        if carveout is not None and carveout not in device_limits("9.0").shared_mem_carveouts_bytes:
            # The carveout as given, unrounded, would have disagreed with the API here.
            unrounded = _occupancy_at_raw_carveout(*args[1:4], carveout)
            rounding_mattered += unrounded != row["blocks_per_sm_optin"]
    assert checked + refused == 2 * len(rows) and refused == 90
    assert rounding_mattered > 50 and opt_in_mattered > 100  # both behaviours are exercised, not vacuous


def _occupancy_at_raw_carveout(threads: int, registers: int, shared: int, carveout: int) -> int:
    """Active blocks if the shared-memory limit divided the requested carveout as given (no rounding)."""
    result = theoretical_occupancy("9.0", threads, registers, shared)
    allocated = result.allocated_shared_mem_per_block_bytes
    by_shared = (
        carveout // allocated if allocated and carveout >= allocated else result.limits_blocks_per_sm["shared_memory"]
    )
    return min(by_shared, *(v for k, v in result.limits_blocks_per_sm.items() if k != "shared_memory"))


def test_cuda_api_available_dynamic_shared_memory_matches_the_cliff():
    """cudaOccupancyAvailableDynamicSMemPerBlock(1 block): the most dynamic shared memory one block can have. With
    the opt-in that is the device's 227 KB less the static size, which is where the calculator's shared-memory
    curve ends; without it, 48 KB less the static size."""
    for row in _api_rows():
        if row["carveout_pct"] != -1 or row["dynamic_smem_bytes"] != 0:
            continue
        static = row["static_smem_bytes"]
        for opt_in, key in ((True, "available_dynamic_smem_bytes_optin"), (False, "available_dynamic_smem_bytes")):
            curve = occupancy_cliffs("9.0", row["block_threads"], row["registers_per_thread"], static, opt_in=opt_in)
            assert curve["shared_memory"]["shared_mem_per_block_bytes"].max() - static == row[key], (row, opt_in)
