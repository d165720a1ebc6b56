"""The Nsight Compute CSV importer over real exports, the team's H100 samples and hand-written edge cases.

Expected values come from the files' own text, read here with the `csv` module (independent of the importer's
polars path), or from the samples' `run.txt` (the program's own log of each configuration).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.occupancy import printed_rounding_bytes, theoretical_occupancy
from tracekit.errors import InputError
from tracekit.importers import detect_format, read_file
from tracekit.importers.ncu_csv import reader as ncu_csv
from tracekit.importers.ncu_names import DISPLAY_TO_METRIC_ID, metric_id
from tracekit.ingest import ingest

DATA = Path(__file__).parent / "data" / "ncu_csv"
T4 = "ncu_details_T4_2025_rules_speedup_nsightful_copy_blocked.csv"
SUPERBENCH = "ncu_details_sm100_app_stdout_interleaved_superbench.log"
BERT = "ncu_details_sm80class_kerneltime_rules_bert_leleucas.csv"
DROPOUT = "ncu_metrics_kerneltime_norulecols_dropout_leleucas_first20kernels.csv"
SDPA = "ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv"
FLASHINFER = "ncu_raw_B200_flashinfer_2kernels_RooflineAnalysis.csv"
ERROR_ONLY = "ncu_raw_B200_error_only_RooflineAnalysis.csv"
PROF_ONLY = "ncu_raw_B200_prof_lines_only_RooflineAnalysis.csv"


# ---- independent readings of the files ------------------------------------------------------------------------------


def table_rows(path: Path) -> list[dict[str, str]]:
    """The CSV table of an ncu file as dicts, skipping ==PROF== lines and application output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if '"Kernel Name"' in line)
    table = [line for line in lines[start:] if line.startswith('"')]
    return list(csv.DictReader(table))


def details_cell(path: Path, section: str, metric: str, launch_id: str = "0") -> tuple[str, str]:
    (row,) = [
        r
        for r in table_rows(path)
        if r["ID"] == launch_id and r["Section Name"] == section and r["Metric Name"] == metric
    ]
    return row["Metric Unit"], row["Metric Value"]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def metric(parsed, name: str, launch_key: int = 0, section: str | None = None) -> dict:
    rows = parsed.metrics.filter((pl.col("launch_key") == launch_key) & (pl.col("name") == name))
    if section is not None:
        rows = rows.filter(pl.col("section") == section)
    assert rows.height == 1, f"{name}: {rows.height} rows"
    return rows.row(0, named=True)


def launch(parsed, launch_key: int = 0) -> dict:
    return parsed.launches.filter(pl.col("launch_key") == launch_key).row(0, named=True)


# ---- details page, real exports -------------------------------------------------------------------------------------


def test_t4_details_newer_header_with_rules(real_export):
    path = real_export(T4)
    parsed = read_file(path)
    assert detect_format(path) == "ncu-csv"
    assert parsed.format == "ncu-csv" and parsed.tool == "Nsight Compute"
    rows = table_rows(path)
    assert parsed.launches.height == 1
    row = launch(parsed)
    assert row["kernel_name"] == rows[0]["Kernel Name"]
    assert (
        row["kernel_name"].startswith("copy_blocked[v1,cw51")
        and "Array<long long, 1, C, mutable, aligned>" in row["kernel_name"]
    )
    assert (row["block_x"], row["block_y"], row["block_z"]) == (256, 1, 1)
    assert (row["grid_x"], row["grid_y"], row["grid_z"]) == (1024, 1, 1)
    assert (row["process_id"], row["context_id"], row["stream_id"], row["device_id"]) == (6153, 1, 7, 0)
    assert row["source_launch_id"] == "0"
    assert row["duration_ns"] == 21_058_944  # "Duration","ns","21,058,944"
    assert row["registers_per_thread"] == 32 and row["static_smem_bytes"] == 0 and row["dynamic_smem_bytes"] == 0
    # Display names become metric ids; values as the file prints them, separators removed.
    unit, value = details_cell(path, "GPU Speed Of Light Throughput", "DRAM Frequency")
    dram = metric(parsed, "dram__cycles_elapsed.avg.per_second")
    assert (dram["unit"], dram["value"], dram["section"]) == ("hz", number(value), "GPU Speed Of Light Throughput")
    assert unit == "hz" and dram["value"] == 4_963_609_951.19
    assert metric(parsed, "launch__occupancy_limit_registers", section="Occupancy")["value"] == 8
    assert metric(parsed, "launch__occupancy_limit_warps")["value"] == 4
    assert metric(parsed, "sm__warps_active.avg.pct_of_peak_sustained_active")["value"] == 96.26
    assert metric(parsed, "smsp__warps_eligible.avg.per_cycle_active")["value"] == 0.01
    assert metric(parsed, "launch__func_cache_config")["text_value"] == "CachePreferNone"
    assert metric(parsed, "# Pass Groups", section="PM Sampling")["value"] == 1  # no id: the label stays
    # Rule rows: one text metric each, with type, description and estimated speedup.
    rules = parsed.metrics.filter(pl.col("name").str.starts_with("rule:"))
    assert rules.height == sum(1 for r in rows if r["Rule Name"]) == 11
    uncoalesced = metric(parsed, "rule:UncoalescedGlobalAccess", section="SourceCounters")
    assert uncoalesced["value"] == 74.14 and uncoalesced["unit"] == "%" and uncoalesced["kind"] == "text"
    assert uncoalesced["text_value"].startswith(
        "[OPT] This kernel has uncoalesced global accesses resulting in a total of 25165824 excessive sectors"
    )
    assert rules.filter(pl.col("name") == "rule:CPIStall").height == 3
    assert parsed.metrics.height == len(rows)  # 72 metric rows + 11 rule rows
    assert (parsed.device.compute_capability, parsed.device.sm_count) == ("7.5", 40)
    assert parsed.device.max_warps_per_sm == 32  # 32 theoretical warps at 100% theoretical occupancy
    assert parsed.warnings == []


def test_superbench_log_with_application_output_between_prof_lines(real_export):
    path = real_export(SUPERBENCH)
    assert path.read_text().splitlines()[1].startswith("2208")  # the application's own line before the table
    parsed = read_file(path)
    assert parsed.launches.height == 1
    row = launch(parsed)
    assert row["kernel_name"] == (
        "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn"
        "_align4_1sm_bias_f16_relu_aux_scalemax"
    )
    assert (row["block_x"], row["block_y"], row["block_z"], row["grid_x"], row["grid_y"], row["grid_z"]) == (
        384,
        1,
        1,
        9,
        32,
        1,
    )
    assert row["duration_ns"] == 406_240 and row["registers_per_thread"] == 168
    assert row["dynamic_smem_bytes"] == 205_696 and row["process_id"] == 371693
    assert metric(parsed, "dram__cycles_elapsed.avg.per_second")["value"] == 3_995_313_115.40  # no separators
    assert metric(parsed, "launch__cluster_scheduling_policy")["text_value"] == "PolicySpread"
    assert metric(parsed, "launch__tpc_enabled")["text_value"] == "all"
    assert metric(parsed, "launch__occupancy_limit_barriers")["value"] == 9
    imbalance = parsed.metrics.filter(pl.col("name") == "rule:WorkloadImbalance")
    assert imbalance["value"].to_list() == [5.818, 6.24, 5.818, 14.55]
    assert parsed.device.compute_capability == "10.0" and parsed.device.sm_count == 152
    assert parsed.device.max_warps_per_sm == 64  # 12 warps at 18.75%
    assert parsed.warnings == []


def test_bert_older_header_26_kernels(real_export):
    path = real_export(BERT)
    parsed = read_file(path)
    rows = table_rows(path)
    assert parsed.launches.height == 26 == len({r["ID"] for r in rows})
    assert parsed.launches["source_launch_id"].to_list() == [str(i) for i in range(26)]
    assert set(parsed.launches["process_id"].to_list()) == {128504}
    by_id = {r["ID"]: r["Kernel Name"] for r in rows}
    assert parsed.launches["kernel_name"].to_list() == [by_id[str(i)] for i in range(26)]
    assert launch(parsed, 6)["kernel_name"] == "ampere_sgemm_32x32_sliced1x4_tn"
    assert "[lambda(curandStatePhilox4_32_10 *) (instance 2)], void at::native::" in launch(parsed, 0)["kernel_name"]
    # No Block/Grid Size columns: the Launch Statistics totals, as (n, 1, 1).
    for launch_id in ("0", "6", "18"):
        key = int(launch_id)
        row = launch(parsed, key)
        assert row["grid_x"] == number(details_cell(path, "Launch Statistics", "Grid Size", launch_id)[1])
        assert row["block_x"] == number(details_cell(path, "Launch Statistics", "Block Size", launch_id)[1])
        assert (row["grid_y"], row["grid_z"], row["block_y"], row["block_z"]) == (1, 1, 1, 1)
        assert row["registers_per_thread"] == number(
            details_cell(path, "Launch Statistics", "Registers Per Thread", launch_id)[1]
        )
        assert row["static_smem_bytes"] == number(
            details_cell(path, "Launch Statistics", "Static Shared Memory Per Block", launch_id)[1]
        )
    assert (
        launch(parsed, 6)["grid_x"],
        launch(parsed, 6)["block_x"],
        launch(parsed, 6)["registers_per_thread"],
        launch(parsed, 6)["static_smem_bytes"],
    ) == (64, 128, 86, 32768)
    assert parsed.launches["duration_ns"].null_count() == 26  # this export has no duration metric
    assert metric(parsed, "sm__cycles_elapsed.avg", section="Command line profiler metrics")["value"] == 5388.33
    assert metric(parsed, "Kernel Time")["text_value"] == "2023-May-07 19:59:29"
    rules = parsed.metrics.filter(pl.col("name").str.starts_with("rule:"))
    assert rules.height == sum(1 for r in rows if r["Rule Name"]) == 51
    assert rules["unit"].null_count() == 51  # the older layout has no Estimated Speedup
    assert parsed.device.max_warps_per_sm == 64 and parsed.device.compute_capability is None


def test_dropout_metrics_only_units_to_base(real_export):
    path = real_export(DROPOUT)
    parsed = read_file(path)
    rows = table_rows(path)
    assert parsed.launches.height == 20
    for key in (0, 7, 19):
        unit, value = details_cell(path, "Command line profiler metrics", "gpu__time_duration.sum", str(key))
        assert unit == "nsecond"
        assert launch(parsed, key)["duration_ns"] == number(value)
    assert launch(parsed, 0)["duration_ns"] == 11_744  # "nsecond","11,744"
    dram = metric(parsed, "dram__bytes.sum")
    assert (dram["value"], dram["unit"], dram["kind"]) == (4_194_688, "byte", "int")
    cycles = metric(parsed, "sm__cycles_elapsed.avg.per_second")
    assert (cycles["unit"], cycles["value"]) == ("cycle/s", 1_046_387_753.56)
    assert parsed.metrics.filter(pl.col("name") != "Kernel Time").height == len(rows) == 420
    assert "(anonymous namespace)::fused_dropout_kernel_vec<double, double," in launch(parsed, 0)["kernel_name"]
    assert parsed.device is None  # nothing about the device in this layout


# ---- raw page, real exports -----------------------------------------------------------------------------------------


def raw_table(path: Path) -> tuple[list[str], list[str], list[list[str]]]:
    lines = [line for line in path.read_text().splitlines() if line.startswith('"')]
    header, units, *rows = list(csv.reader(lines))
    return header, units, rows


def test_sdpa_raw_16_launches_of_one_kernel(real_export):
    path = real_export(SDPA)
    parsed = read_file(path)
    header, units, rows = raw_table(path)
    assert parsed.launches.height == 16 == len(rows)
    assert parsed.launches["kernel_name"].n_unique() == 1
    assert parsed.launches["kernel_name"][0] == rows[0][header.index("Kernel Name")]
    assert parsed.launches["kernel_name"][0].startswith("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64")
    duration = header.index("gpu__time_duration.sum")
    assert units[duration] == "ns"
    assert parsed.launches["duration_ns"].to_list() == [float(r[duration]) for r in rows]
    assert parsed.launches["duration_ns"][0] == 685_280
    row = launch(parsed, 3)
    assert (row["grid_x"], row["grid_y"], row["grid_z"], row["block_x"], row["block_y"], row["block_z"]) == (
        1,
        16,
        32,
        128,
        1,
        1,
    )
    assert (row["registers_per_thread"], row["dynamic_smem_bytes"], row["static_smem_bytes"]) == (255, 65536, 0)
    assert metric(parsed, "launch__occupancy_limit_registers", 5)["value"] == 2
    assert metric(parsed, "launch__waves_per_multiprocessor", 5)["kind"] == "float"
    # Every non-empty metric cell is a metric row.
    metric_columns = [i for i, name in enumerate(header) if "__" in name]
    assert parsed.metrics.height == sum(1 for r in rows for i in metric_columns if r[i] != "")
    device = parsed.device
    assert (device.name, device.compute_capability, device.sm_count) == ("NVIDIA B200", "10.0", 148)
    assert device.sm_clock_hz == 1_965_000_000  # device__attribute_clock_rate 1965000 kHz
    assert device.max_warps_per_sm == 64
    assert device.extra["max_registers_per_sm"] == 65536
    assert device.extra["max_shared_memory_per_sm_bytes"] == 233472
    assert device.extra["max_blocks_per_sm"] == 32 and device.extra["schedulers_per_sm"] == 4


def test_flashinfer_raw_two_kernels_interleaved(real_export):
    parsed = read_file(real_export(FLASHINFER))
    names = parsed.launches["kernel_name"].to_list()
    assert len(names) == 16 and len(set(names)) == 2
    merge = [n for n in names if n.startswith("void PersistentVariableLengthMergeStatesKernel<8, 16, 8, 4, ")]
    decode = [n for n in names if n.startswith("void BatchDecodeWithPagedKVCacheKernel<0, 2, 1, 8, 16, 4, 2,")]
    assert len(merge) == 8 and len(decode) == 8 and names[0] == merge[0] and names[1] == decode[0]
    even, odd = launch(parsed, 0), launch(parsed, 1)
    assert (even["grid_x"], even["grid_y"], even["block_x"], even["block_y"], even["block_z"]) == (148, 1, 16, 8, 1)
    assert (odd["grid_x"], odd["grid_y"], odd["block_x"], odd["block_y"], odd["block_z"]) == (32, 8, 16, 4, 2)
    assert parsed.launches["duration_ns"].to_list()[:4] == [9920, 23872, 9504, 23264]


# ---- hand-written edge cases ----------------------------------------------------------------------------------------


def test_ids_repeat_across_processes():
    parsed = read_file(DATA / "details_two_processes.csv")
    launches = parsed.launches
    assert list(zip(launches["process_id"], launches["source_launch_id"], strict=True)) == [
        (4001, "0"),
        (4001, "1"),
        (4002, "0"),
        (4002, "1"),
    ]
    template = 'void scale<float, 2>(const float *, float *, Pair<int, int>, "tag")'
    assert launches["kernel_name"].to_list() == [template, "reduce_kernel(int, int)"] * 2
    assert launches["duration_ns"].to_list() == [1500, 2250, 750, 3000]  # usecond -> ns
    assert launches["grid_x"].to_list() == [64, 1024, 32, 512]
    assert (launch(parsed, 0)["block_x"], launch(parsed, 0)["block_y"]) == (128, 2)
    assert launches["static_smem_bytes"].to_list() == [2050] * 4  # "2.05" Kbyte/block
    assert metric(parsed, "dram__bytes.sum.per_second", 2)["value"] == 1.2345e12  # "1,234.5" Gbyte/second
    not_available = metric(parsed, "sm__warps_active.avg.pct_of_peak_sustained_active", 1)
    assert (not_available["value"], not_available["text_value"], not_available["kind"]) == (None, "n/a", "text")
    rule = metric(parsed, "rule:Occupancy", 0)
    assert (rule["section"], rule["value"], rule["text_value"]) == (
        "Occupancy",
        25,
        "[OPT] Theoretical occupancy is limited by registers.",
    )
    assert parsed.metrics.filter(pl.col("name") == "rule:Occupancy").height == 1
    assert parsed.warnings == ["==WARNING== Found outstanding GPU clock reset, trying to revert..."]
    assert parsed.device.max_warps_per_sm == 64  # 48 warps at 75%


def test_dot_grouped_numbers():
    parsed = read_file(DATA / "locale_dot_grouping.csv")
    assert metric(parsed, "dram__bytes.sum")["value"] == 27_595_520  # "27.595.520"
    assert metric(parsed, "sm__throughput.avg.pct_of_peak_sustained_elapsed")["value"] == 12.75  # "12,75"
    assert launch(parsed)["duration_ns"] == 1_234_500  # "1.234,5" usecond
    assert launch(parsed)["grid_x"] == 1024  # "1.024"


def test_raw_with_nvtx_columns_instance_values_and_units():
    parsed = read_file(DATA / "raw_nvtx_instances.csv")
    assert parsed.launches["nvtx_path"].to_list() == ["forward > layer.0:attn", "forward"]
    assert parsed.launches["duration_ns"].to_list() == [12_500, 4_000]  # msecond
    assert parsed.launches["dynamic_smem_bytes"].to_list() == [64_000, 0]  # Kbyte/block
    assert parsed.launches["kernel_name"].to_list() == ["gemm<128, 64>(Params)", "softmax(float *, int)"]
    instances = metric(parsed, "sm__cycles_active.sum", 0)
    assert (instances["value"], instances["text_value"], instances["kind"]) == (250, "100;200;300;400", "float")
    assert metric(parsed, "sm__cycles_active.sum", 1)["value"] == 55  # "50 60"
    assert metric(parsed, "dram__bytes.sum", 0)["value"] == 4_194_688  # "4,194.688" Kbyte
    assert metric(parsed, "dram__bytes.sum", 1)["text_value"] == "n/a"
    assert metric(parsed, "launch__func_cache_config", 1)["text_value"] == "CachePreferShared"
    device = parsed.device
    assert (device.name, device.sm_count, device.max_warps_per_sm, device.sm_clock_hz) == (
        "NVIDIA H100 80GB HBM3",
        132,
        64,
        1.98e9,
    )


def test_summary_per_kernel_min_max_average():
    parsed = read_file(DATA / "summary_per_kernel.csv")
    launches = parsed.launches
    assert launches.height == 3  # saxpy at two grid sizes, gemm_kernel
    assert launches["grid_x"].to_list() == [4096, 8192, 128]
    assert launches["source_launch_id"].null_count() == 3
    assert parsed.metrics.filter(pl.col("name") == "invocations")["value"].to_list() == [14, 3, 1200]
    assert [metric(parsed, f"gpu__time_duration.sum{s}", 0)["value"] for s in ("", ".min", ".max")] == [
        11_520,
        10_240,
        12_800,
    ]
    assert launches["duration_ns"].to_list() == [11_520, 21_000, 2_000_000]  # the averages
    assert launch(parsed, 0)["registers_per_thread"] == 16


# ---- refused input --------------------------------------------------------------------------------------------------


def test_error_only_log_quotes_the_error(real_export):
    path = real_export(ERROR_ONLY)
    assert detect_format(path) == "ncu-csv"
    with pytest.raises(InputError) as caught:
        read_file(path)
    assert str(caught.value) == (
        f"{path}:3: no Nsight Compute table; the profiler reported: "
        "==ERROR== The application returned an error code (1)."
    )


def test_prof_lines_only_log(real_export):
    path = real_export(PROF_ONLY)
    with pytest.raises(InputError) as caught:
        read_file(path)
    # 27 ==PROF== lines: 14 "Connected to process" (nvidia-smi children), no "Profiling" line
    assert str(caught.value) == (
        f"{path}: no Nsight Compute table: ncu connected to 14 processes and profiled no kernel (a --kernel-name or "
        "--launch-skip filter that matched nothing, or processes that launch none)"
    )


def test_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="the file is empty"):
        read_file(path)
    with pytest.raises(InputError, match="the file is empty"):
        read_file(path, fmt="ncu-csv")


def test_binary_garbage(tmp_path):
    path = tmp_path / "garbage.csv"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputError, match="not a format tracekit reads"):
        read_file(path)
    with pytest.raises(InputError) as caught:
        read_file(path, fmt="ncu-csv")
    assert str(caught.value) == f"{path}:1: binary data (NUL byte at offset 0), not an Nsight Compute CSV"


def test_truncated_mid_row(real_export, tmp_path):
    text = real_export(T4).read_text()
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.csv"
    cut.write_text("".join(lines[:10]) + lines[10][:200])  # inside the kernel name of line 11
    with pytest.raises(InputError) as caught:
        read_file(cut)
    assert str(caught.value) == f"{cut}:11: truncated row: the file ends inside a quoted field"
    fields = lines[10].split('","')
    cut.write_text("".join(lines[:10]) + '","'.join(fields[:6]) + '"')  # after a field: 6 of them
    with pytest.raises(InputError, match=r":11: truncated row: 6 fields, expected at least 15"):
        read_file(cut)


def test_truncated_raw_row(real_export, tmp_path):
    lines = real_export(SDPA).read_text().splitlines(keepends=True)
    cut = tmp_path / "cut_raw.csv"
    partial = lines[6][:3000]
    partial = partial[: partial.rindex('","') + 1]  # ends after a complete field of file line 7
    cut.write_text("".join(lines[:6]) + partial)
    count = len(next(csv.reader([partial])))
    with pytest.raises(InputError, match=rf":7: truncated row: {count} fields, expected 475"):
        read_file(cut)


def test_wrong_columns():
    path = DATA / "not_ncu.csv"
    assert not ncu_csv.sniff(path.read_bytes())
    with pytest.raises(InputError, match="not a format tracekit reads"):
        read_file(path)
    with pytest.raises(InputError) as caught:
        read_file(path, fmt="ncu-csv")
    assert str(caught.value) == (
        f'{path}:1: no Nsight Compute table: no CSV header row naming "Kernel Name" (expected ncu --csv output)'
    )


def test_unparsable_grid_size():
    path = DATA / "bad_grid_size.csv"
    with pytest.raises(InputError) as caught:
        read_file(path)
    assert str(caught.value) == f"{path}:3 (column 'Grid Size'): Grid Size 'abc' is not an (x, y, z) size"
    assert (caught.value.line, caught.value.column) == (3, "Grid Size")


def test_text_where_registers_are_required():
    path = DATA / "bad_registers.csv"
    with pytest.raises(InputError) as caught:
        read_file(path)
    assert str(caught.value) == (
        f"{path}:3 (column 'Metric Value'): launch__registers_per_thread 'lots' is not a number"
    )


def test_utf16_capture_reads_like_utf8(real_export, tmp_path):
    """PowerShell redirection writes UTF-16 with a byte-order mark."""
    path = real_export(SUPERBENCH)
    utf16 = tmp_path / "ncu_utf16.log"
    utf16.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    assert detect_format(utf16) == "ncu-csv"
    assert read_file(utf16).metrics.equals(read_file(path).metrics)


def test_sniff():
    assert ncu_csv.sniff(b'"ID","Process ID","Process Name","Host Name","Kernel Name","Context"')
    assert ncu_csv.sniff(b"==PROF== Connected to process 1 (/bin/app)\n")
    assert not ncu_csv.sniff(b"name,value\n1,2\n")
    assert not ncu_csv.sniff(b"SQLite format 3\x00")


# ---- display names ---------------------------------------------------------------------------------------------------


def test_display_names_match_an_ncu_rep_report(real_export):
    """Every label the RTX 2080 Ti report pairs with a metric id maps to that id (or to its newer variant)."""
    ncu_report = pytest.importorskip("ncu_report")
    report = ncu_report.load_report(str(real_export("ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep")))
    action = report.range_by_idx(0).action_by_idx(0)
    newer = {("Compute Workload Analysis", "SM Busy"), ("Compute Workload Analysis", "Issue Slots Busy")}
    checked = 0
    for section in action.sections():
        for item in [*section.header_metrics(), *section.body_metrics()]:
            key = (section.name(), item.label())
            if key not in DISPLAY_TO_METRIC_ID:
                continue
            expected = item.name()
            if key in newer:  # 2023 reports: ..._active; 2025 section files: ..._elapsed
                expected = expected.replace("pct_of_peak_sustained_active", "pct_of_peak_sustained_elapsed")
            assert metric_id(*key) == expected, key
            checked += 1
    assert checked >= 60
    assert metric_id("Occupancy", "Block Limit Registers") == "launch__occupancy_limit_registers"
    assert action.metric_by_name("launch__occupancy_limit_registers").value() == 4


# ---- the team's H100 samples -----------------------------------------------------------------------------------------


def run_log(path: Path) -> dict[str, dict[str, int]]:
    """run.txt: configuration -> grid, block, smem, regs as the sample program printed them."""
    configurations = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) > 10 and words[2] == "grid":
            configurations[words[0]] = {
                "grid": int(words[3]),
                "block": int(words[5]),
                "smem": int(words[7]),
                "regs": int(words[9]),
            }
    return configurations


@pytest.mark.gpu_samples
@pytest.mark.parametrize("page", ["raw", "details"])
def test_h100_samples_raw_and_details(sample_trace, page):
    parsed = read_file(sample_trace(f"h100/samples.{page}.csv"))
    expected = run_log(sample_trace("h100/run.txt"))
    launches = parsed.launches
    assert launches.height == 14  # every configuration but abs_*
    configurations = [path.split(" > ")[1] for path in launches["nvtx_path"].to_list()]
    assert configurations[0] == "vector_add_08warps" and "abs_positive" not in configurations
    for row, name in zip(launches.iter_rows(named=True), configurations, strict=True):
        want = expected[name]
        assert (row["grid_x"], row["block_x"], row["registers_per_thread"]) == (
            want["grid"],
            want["block"],
            want["regs"],
        ), name
        # The details page prints "232.45 Kbyte/block": 232450, where the raw page has the exact 232448.
        assert row["dynamic_smem_bytes"] == pytest.approx(want["smem"], abs=5 if page == "details" else 0), name
        assert row["duration_ns"] > 0
    assert parsed.device.compute_capability == "9.0" and parsed.device.sm_count == 132
    assert parsed.device.max_warps_per_sm == 64
    if page == "raw":
        assert parsed.device.name == "NVIDIA H100 80GB HBM3" and parsed.device.sm_clock_hz == 1.98e9


@pytest.mark.gpu_samples
def test_h100_samples_summary(sample_trace):
    parsed = read_file(sample_trace("h100/samples.summary.csv"))
    invocations = dict(
        zip(
            parsed.launches["kernel_name"].str.split("(").list.first(),
            parsed.metrics.filter(pl.col("name") == "invocations")["value"],
            strict=True,
        )
    )
    assert len(invocations) == 10
    assert invocations["vector_add"] == 4 and invocations["permute"] == 2 and invocations["black_scholes"] == 1


def test_warp_trace_samples_are_not_ncu(sample_trace):
    with gzip.open(sample_trace("h100/vector_add_08warps.csv.gz"), "rb") as handle:
        assert not ncu_csv.sniff(handle.read(4096))


# ---- store round trip ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [T4, SDPA])
def test_store_round_trip(store, real_export, name):
    path = real_export(name)
    parsed = read_file(path).conformed()
    result, warnings = ingest(store, path)
    assert result.created and result.launch_count == parsed.launches.height and warnings == []
    stored = store.launches(result.import_id)
    for column in (
        "kernel_name",
        "grid_x",
        "grid_y",
        "grid_z",
        "block_x",
        "block_y",
        "block_z",
        "registers_per_thread",
        "dynamic_smem_bytes",
        "process_id",
        "source_launch_id",
        "duration_ns",
    ):
        assert stored[column].to_list() == parsed.launches[column].to_list(), column
    assert stored["compute_capability"][0] == parsed.device.compute_capability
    assert stored["sm_count"][0] == parsed.device.sm_count
    metrics = store.metrics(stored["id"].to_list())
    assert metrics.height == parsed.metrics.height
    key_to_id = dict(zip(range(stored.height), stored["id"], strict=True))
    expected = parsed.metrics.with_columns(pl.col("launch_key").replace_strict(key_to_id).alias("launch_id")).sort(
        "launch_id", maintain_order=True
    )  # kept launch by launch, each launch's rows in the file's order
    for column in ("launch_id", "section", "name", "unit", "value", "text_value", "kind"):
        assert metrics[column].to_list() == expected[column].to_list(), column


def test_raw_page_with_only_numeric_metrics(tmp_path):
    """`ncu --csv --page raw --metrics gpu__time_duration.sum,...`: no text metric column at all (this once crashed)."""
    path = tmp_path / "raw_numeric_only.csv"
    path.write_text(
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","gpu__time_duration.sum","dram__bytes_read.sum"\n'
        '"","","","","","","","","","","","usecond","Mbyte"\n'
        '"0","41","app","host","axpy(float, float *)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","2.50","1.5"\n'
        '"1","41","app","host","axpy(float, float *)","1","7","(256, 1, 1)","(128, 1, 1)","0","9.0","4.75","3"\n'
    )
    parsed = read_file(path)
    assert parsed.format == "ncu-csv"
    assert parsed.launches["kernel_name"].to_list() == ["axpy(float, float *)"] * 2
    assert parsed.launches["grid_x"].to_list() == [64, 128]
    assert parsed.launches["duration_ns"].to_list() == [2500.0, 4750.0]  # usecond -> ns
    dram = parsed.metrics.filter(pl.col("name") == "dram__bytes_read.sum").sort("launch_key")
    assert dram["value"].to_list() == [1.5e6, 3e6] and dram["unit"].to_list() == ["byte", "byte"]
    assert parsed.metrics["text_value"].is_null().all()


# ---- 2019-2020 details pages (section "GPU Speed Of Light", 12-column header with "Kernel Time") ---------------------

OLD_COMMITTED = ["ncu2020_details_V100_hotspot_64.log", "ncu2020_details_V100_hotspot_8192.log"]
OLD_SHARED = [
    "ncu_details_2020_V100_hotspot_noext_optimalum",
    "ncu_details_2020_V100_sol_fb_nosep_cfd193K_optimalum.log",
    "ncu_details_2020_V100_sol_fb_separators_cfd_optimalum.log",
]
# Old label in "GPU Speed Of Light" -> the metric id the analysis reads.
OLD_SOL = {
    "SOL FB": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL L2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "SOL TEX": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "SM [%]": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory [%]": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "Memory Frequency": "dram__cycles_elapsed.avg.per_second",
}


def old_file(request, name: str) -> Path:
    if name in OLD_COMMITTED:
        return DATA / name
    return request.getfixturevalue("real_export")(name)


@pytest.mark.parametrize("name", OLD_COMMITTED + OLD_SHARED)
def test_2020_details_map_old_labels_and_fill_duration(request, name):
    path = old_file(request, name)
    parsed = read_file(path)
    rows = table_rows(path)
    ids = sorted({r["ID"] for r in rows}, key=int)
    assert parsed.launches.height == len(ids)
    assert "Kernel Time" in rows[0] and "CC" not in rows[0]  # the old 12-column layout
    names = set(parsed.metrics["name"].to_list())
    assert not names & set(OLD_SOL), "an old Speed Of Light label was left unmapped"
    for key, launch_id in enumerate(ids):
        cells = {(r["Section Name"], r["Metric Name"]): r for r in rows if r["ID"] == launch_id}
        duration = cells["GPU Speed Of Light", "Duration"]
        assert duration["Metric Unit"] == "nsecond"
        row = launch(parsed, key)
        assert row["duration_ns"] == number(duration["Metric Value"])
        # The old layout prints the launch shape only as totals: (n, 1, 1).
        assert (row["grid_x"], row["grid_y"], row["grid_z"]) == (
            int(number(cells["Launch Statistics", "Grid Size"]["Metric Value"])),
            1,
            1,
        )
        assert row["block_x"] == int(number(cells["Launch Statistics", "Block Size"]["Metric Value"]))
        for label, metric_name in OLD_SOL.items():
            value = number(cells["GPU Speed Of Light", label]["Metric Value"])
            got = metric(parsed, metric_name, key)
            assert got["value"] == pytest.approx(value), label
            assert got["section"] == "GPU Speed Of Light"
        assert (
            metric(parsed, "Kernel Time", key)["text_value"] == cells["GPU Speed Of Light", "Duration"]["Kernel Time"]
        )


@pytest.mark.parametrize("name", OLD_COMMITTED + OLD_SHARED)
def test_2020_details_occupancy_equals_nsight(request, name):
    """Tesla V100 (CC 7.0, the repository's notes): the calculator from the launch fields gives Nsight's own
    block limits and theoretical occupancy, which the importer keeps value for value. Nsight 2020 divided the SM's
    whole 96 KB, not the configured carveout (hotspot: 3,072 B static, 32 KB configured, Block Limit Shared Mem 32),
    so no carveout is passed."""
    path = old_file(request, name)
    parsed = read_file(path)
    assert parsed.device.max_warps_per_sm == 64  # Theoretical Active Warps per SM / Theoretical Occupancy
    for row in parsed.launches.iter_rows(named=True):
        key = row["launch_key"]
        result = theoretical_occupancy(
            "7.0", row["block_x"], row["registers_per_thread"], row["static_smem_bytes"] + row["dynamic_smem_bytes"]
        )
        assert result.limits_blocks_per_sm == {
            name: int(metric(parsed, f"launch__occupancy_limit_{suffix}", key)["value"])
            for name, suffix in (
                ("registers", "registers"),
                ("shared_memory", "shared_mem"),
                ("warps", "warps"),
                ("blocks", "blocks"),
            )
        }
        nsight_pct = metric(parsed, "sm__maximum_warps_per_active_cycle_pct", key)["value"]
        assert result.theoretical_pct == pytest.approx(nsight_pct, abs=0.0051)  # printed to 0.01%: 46.88
        assert result.theoretical_warps_per_sm == metric(parsed, "sm__maximum_warps_avg_per_active_cycle", key)["value"]


def test_2020_details_analyze_gives_duration_and_a_verdict(tmp_path):
    """`tracekit analyze --json` on a 2020 file: a duration, and a verdict where the counters support one.

    Rodinia hotspot on a 64x64 grid runs 36 blocks on the V100's 80 SMs: no unit reaches a throughput limit and
    most SMs get no block, which the analysis can say from the Speed Of Light and launch rows alone."""
    import json
    import os
    import subprocess
    import sys

    path = DATA / "ncu2020_details_V100_hotspot_64.log"
    completed = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRACEKIT_DB": str(tmp_path / "store.sqlite")},
    )
    assert completed.returncode == 0, completed.stderr
    [result] = json.loads(completed.stdout)
    assert result["duration_ns"] == 6624.0
    assert result["kernel"]["grid"] == [36, 1, 1] and result["kernel"]["block"] == [256, 1, 1]
    assert result["classification"]["mode"] != "undetermined", result["classification"]


# ---- details-page occupancy: Nsight's rows kept exactly, rounded sizes made exact or marked -------------------------


def test_details_sizes_exact_or_marked_against_the_raw_page(sample_trace):
    """The H100 samples printed twice: `--page details` rounds sizes to 0.01 Kbyte, `--page raw` prints them to
    the byte. The carveout and the driver's reserve come out exact from the details page; a dynamic size that
    cannot keeps its printed cell in text_value and lies within its rounding of the raw page's exact value."""
    details = read_file(sample_trace("h100/samples.details.csv")).metrics
    raw = read_file(sample_trace("h100/samples.raw.csv")).metrics
    sizes = [
        "launch__shared_mem_config_size",
        "launch__shared_mem_per_block_driver",
        "launch__shared_mem_per_block_dynamic",
        "launch__shared_mem_per_block_static",
    ]
    joined = details.filter(pl.col("name").is_in(sizes)).join(
        raw.filter(pl.col("name").is_in(sizes)).select("launch_key", "name", pl.col("value").alias("exact")),
        on=["launch_key", "name"],
    )
    assert joined.height == 14 * 4
    exact_kinds = joined.filter(pl.col("name").is_in(sizes[:2]))
    assert (exact_kinds["value"] == exact_kinds["exact"]).all() and exact_kinds["text_value"].is_null().all()
    assert set(exact_kinds.filter(pl.col("name") == sizes[0])["value"].to_list()) == {233_472.0, 32_768.0, 16_384.0}
    marked = joined.filter(pl.col("text_value").is_not_null())
    assert set(marked["name"].to_list()) == {"launch__shared_mem_per_block_dynamic"}
    assert sorted(marked["text_value"].to_list()) == ["115.71 Kbyte/block", "232.45 Kbyte/block", "57.34 Kbyte/block"]
    for value, exact, text in marked.select("value", "exact", "text_value").iter_rows():
        assert abs(value - exact) <= printed_rounding_bytes(text) == 5.0
    unmarked = joined.filter(pl.col("text_value").is_null())
    assert (unmarked["value"] == unmarked["exact"]).all()


@pytest.mark.gpu_samples
@pytest.mark.parametrize(
    "name, undetermined_ids",
    [
        ("h100/samples.details.csv", [("1", 25.0), ("2", 50.0)]),
        ("verdict_cases/h100/cases.details.csv", [("1", 25.0), ("2", 50.0)]),
    ],
)
def test_details_page_occupancy_equals_nsight_h100(sample_trace, name, undetermined_ids):
    """Every launch of the H100 details pages: where the printed sizes decide the occupancy the calculator gives
    Nsight's Theoretical Occupancy and block limits; where they do not (115.71 and 57.34 Kbyte straddle a 128-byte
    allocation step), it says undetermined, and Nsight's own rows, kept exactly, give the answer (25%, 50%)."""
    path = sample_trace(name)
    parsed = read_file(path)
    rows = table_rows(path)
    undetermined = []
    for row in parsed.launches.iter_rows(named=True):
        key = row["launch_key"]
        cells = {r["Metric Name"]: r["Metric Value"] for r in rows if r["ID"] == row["source_launch_id"]}
        nsight_pct = metric(parsed, "sm__maximum_warps_per_active_cycle_pct", key)["value"]
        assert nsight_pct == number(cells["Theoretical Occupancy"])  # kept as printed
        rounding = sum(
            printed_rounding_bytes(metric(parsed, name, key)["text_value"])
            for name in ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
        )
        result = theoretical_occupancy(
            "9.0",
            row["block_x"],
            row["registers_per_thread"],
            row["static_smem_bytes"] + row["dynamic_smem_bytes"],
            int(metric(parsed, "launch__shared_mem_config_size", key)["value"]),
            shared_mem_rounding_bytes=rounding,
        )
        if not result.determined:
            undetermined.append((row["source_launch_id"], nsight_pct))
            continue
        assert result.theoretical_pct == nsight_pct, row["source_launch_id"]
        assert result.limits_blocks_per_sm["shared_memory"] == number(cells["Block Limit Shared Mem"])
        assert result.limits_blocks_per_sm["registers"] == number(cells["Block Limit Registers"])
    assert undetermined == undetermined_ids


@pytest.mark.parametrize("name, cc", [(T4, "7.5"), (SUPERBENCH, "10.0")])
def test_details_page_occupancy_equals_nsight_real_exports(real_export, name, cc):
    """Details pages printed in base units (bytes): every size is exact, and the calculator at the launch's
    carveout gives Nsight's theoretical occupancy for every launch."""
    parsed = read_file(real_export(name))
    for row in parsed.launches.iter_rows(named=True):
        key = row["launch_key"]
        for size in ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"):
            assert metric(parsed, size, key)["text_value"] is None
        result = theoretical_occupancy(
            cc,
            row["block_x"] * row["block_y"] * row["block_z"],
            row["registers_per_thread"],
            row["static_smem_bytes"] + row["dynamic_smem_bytes"],
            int(metric(parsed, "launch__shared_mem_config_size", key)["value"]),
        )
        assert result.determined and result.notes == ()
        assert result.theoretical_pct == pytest.approx(
            metric(parsed, "sm__maximum_warps_per_active_cycle_pct", key)["value"], abs=0.005
        )


# ---- 2025 "Body Item Label" column ----------------------------------------------------------------------------------


def test_body_item_label_is_kept_in_the_section(tmp_path):
    """A `--print-details all` page (hand-made, 2025 layout): header rows have no body item; chart rows name theirs.
    The body item stays in `section`, and a label is still mapped by its section ("Stall Long Scoreboard")."""
    header = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Body Item Label","Metric Name","Metric Unit","Metric Value"'
    )
    prefix = '"0","1","app","127.0.0.1","k","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0"'
    lines = [
        header,
        f'{prefix},"GPU Speed Of Light Throughput","","Duration","us","2.50"',
        f'{prefix},"GPU Speed Of Light Throughput","","Memory Throughput","%","41.00"',
        f'{prefix},"Warp State Statistics","","Warp Cycles Per Issued Instruction","cycle","9.10"',
        f'{prefix},"Warp State Statistics","Warp State (All Cycles)","Stall Long Scoreboard","cycle","6.20"',
        f'{prefix},"GPU Speed Of Light Roofline Chart","Single Precision Roofline","SM Frequency","Ghz","1.98"',
    ]
    path = tmp_path / "body.csv"
    path.write_text("\n".join(lines) + "\n")
    parsed = read_file(path)
    assert launch(parsed)["duration_ns"] == 2500.0
    memory = metric(parsed, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    assert (memory["section"], memory["value"]) == ("GPU Speed Of Light Throughput", 41.0)
    stall = metric(parsed, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio")
    assert (stall["section"], stall["value"]) == ("Warp State Statistics: Warp State (All Cycles)", 6.2)
    roofline = metric(parsed, "SM Frequency")  # a body row of another section: not the Speed Of Light's clock
    assert roofline["section"] == "GPU Speed Of Light Roofline Chart: Single Precision Roofline"
    assert parsed.metrics.height == 5
