"""The .ncu-rep importer on the real RTX 2080 Ti report, on damaged copies of it, and against its CSV export.

Expected values come from the task's reading of the report (716 metrics, 57 registers, 10720 ns, ...), from the
report's own bytes (the tool version string), and from NVIDIA's ncu_report API called directly in the test.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import plain_report
from tracekit.errors import InputError
from tracekit.importers import ncu_rep
from tracekit.store import Store

ncu_report = pytest.importorskip("ncu_report")

SGEMM = "ncu_rep_RTX2080Ti_sgemm_tanvisharma.ncu-rep"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sgemm_path(real_export) -> Path:
    return real_export(SGEMM)


@functools.cache
def read_once(path: Path):
    """Each read starts a child process; the tests share one parse per file (none of them modifies it)."""
    return ncu_rep.read(plain_report(path))


@pytest.fixture
def sgemm(sgemm_path: Path):
    return read_once(sgemm_path)


def metric(parsed, name: str) -> dict:
    [row] = parsed.metrics.filter(pl.col("name") == name).rows(named=True)
    return row


def test_one_launch_with_its_launch_fields(sgemm) -> None:
    assert (sgemm.format, sgemm.tool) == ("ncu-rep", "Nsight Compute")
    [launch] = sgemm.launches.rows(named=True)
    assert launch["kernel_name"] == "volta_sgemm_32x128_nn"
    assert launch["mangled_name"] == "volta_sgemm_32x128_nn"  # cuBLAS kernels are extern "C": not mangled
    assert launch["registers_per_thread"] == 57
    assert launch["duration_ns"] == 10720.0
    # 3136x64x64 sgemm (the file name) in 32x128 tiles: grid (2, 25, 1) of 256-thread blocks, 16 KiB static smem
    assert (launch["grid_x"], launch["grid_y"], launch["grid_z"]) == (2, 25, 1)
    assert (launch["block_x"], launch["block_y"], launch["block_z"]) == (256, 1, 1)
    assert (launch["static_smem_bytes"], launch["dynamic_smem_bytes"]) == (16384, 0)
    assert (launch["stream_id"], launch["context_id"], launch["device_id"]) == (7, 1, 0)
    assert launch["source_launch_id"] == "0"
    assert launch["start_ns"] is None and launch["nvtx_path"] is None
    assert sgemm.warnings == []


def counters(parsed) -> pl.DataFrame:
    """The metric rows that are the report's metrics (rule results are rows `rule:<Rule>` beside them)."""
    return parsed.metrics.filter(~pl.col("name").str.starts_with("rule:"))


def test_every_metric_with_its_kind(sgemm) -> None:
    metrics = counters(sgemm)
    assert metrics.height == 716
    assert metrics["name"].n_unique() == 716
    assert metric(sgemm, "launch__occupancy_limit_registers")["value"] == 4.0
    assert metric(sgemm, "launch__registers_per_thread")["value"] == 57.0
    duration = metric(sgemm, "gpu__time_duration.sum")
    assert (duration["value"], duration["unit"], duration["kind"]) == (10720.0, "ns", "float")
    assert (duration["section"], duration["text_value"]) == ("GPU Speed Of Light Throughput", None)
    cache = metric(sgemm, "launch__func_cache_config")
    assert (cache["kind"], cache["text_value"], cache["value"]) == ("text", "CachePreferNone", None)
    assert cache["section"] == "Launch Statistics"
    sms = metric(sgemm, "device__attribute_multiprocessor_count")
    assert (sms["kind"], sms["value"]) == ("int", 68.0)


def test_kinds_follow_the_report_value_kinds(sgemm_path: Path, sgemm) -> None:
    """Counted independently with the ncu_report API: UINT32/64 -> int, FLOAT/DOUBLE -> float, else text."""
    action = ncu_report.load_report(str(sgemm_path)).range_by_idx(0).action_by_idx(0)
    expected = {"int": 0, "float": 0, "text": 0}
    for name in action.metric_names():
        kind = action.metric_by_name(name).kind()
        m = ncu_report.IMetric
        key = (
            "int"
            if kind in (m.ValueKind_UINT32, m.ValueKind_UINT64)
            else "float"
            if kind in (m.ValueKind_FLOAT, m.ValueKind_DOUBLE)
            else "text"
        )
        expected[key] += 1
    assert dict(counters(sgemm)["kind"].value_counts().rows()) == expected
    assert expected["text"] > 0 and expected["int"] > 0


def test_instance_valued_metrics_keep_the_aggregate(sgemm_path: Path, sgemm) -> None:
    """inst_executed has one instance per source line; the aggregate is their sum, as ncu's pages show."""
    m = ncu_report.load_report(str(sgemm_path)).range_by_idx(0).action_by_idx(0).metric_by_name("inst_executed")
    instances = [m.as_uint64(i) for i in range(m.num_instances())]
    assert len(instances) > 1
    row = metric(sgemm, "inst_executed")
    assert row["value"] == float(sum(instances)) == 732000.0
    assert row["kind"] == "int" and row["unit"] == "inst"


def test_metrics_without_a_value_keep_a_null_row(sgemm) -> None:
    row = metric(sgemm, "numa__cpu_affinity")  # listed by the report, no value recorded
    assert (row["value"], row["text_value"]) == (None, None)


def test_units_normalized_and_values_scaled(sgemm) -> None:
    units = set(sgemm.metrics["unit"].drop_nulls().to_list())
    assert not units & {"nsecond", "usecond", "msecond", "Kbyte", "Mbyte", "Gbyte", "Mhz", "Ghz"}
    bandwidth = metric(sgemm, "dram__bytes_read.sum.per_second")
    read_bytes = metric(sgemm, "dram__bytes_read.sum")
    assert bandwidth["unit"] == "byte/s" and read_bytes["unit"] == "byte"
    # bytes read over the kernel's duration is the reported read bandwidth (same report, base units)
    assert bandwidth["value"] == pytest.approx(read_bytes["value"] / 10720e-9, rel=1e-3)


def test_device_from_device_attributes(sgemm) -> None:
    device = sgemm.device
    assert device.name == "NVIDIA GeForce RTX 2080 Ti"
    assert device.compute_capability == "7.5"
    assert device.sm_count == 68
    assert device.max_warps_per_sm == 32
    assert device.sm_clock_hz == 1545e6  # device__attribute_clock_rate is in kHz
    assert device.extra["max_registers_per_sm"] == 65536
    assert device.extra["max_shared_memory_per_sm_bytes"] == 65536
    assert device.extra["max_blocks_per_sm"] == 16
    assert device.extra["max_threads_per_sm"] == 1024


def test_tool_version_from_the_report(sgemm_path: Path, sgemm) -> None:
    data = sgemm_path.read_bytes()
    assert b"Nsight Compute Target\x12,2023.1.0.0 (build 32376155) (public-release)" in data
    assert sgemm.tool_version == "2023.1.0.0"


def test_sniff(sgemm_path: Path) -> None:
    assert ncu_rep.sniff(sgemm_path.read_bytes()[:64])
    assert not ncu_rep.sniff(b"SQLite format 3\x00")
    assert not ncu_rep.sniff(b"NVR")


# ---- damaged reports ---------------------------------------------------------------------------------------


@pytest.fixture
def damaged(sgemm_path: Path, tmp_path: Path):
    data = sgemm_path.read_bytes()

    def make(kind: str) -> Path:
        path = tmp_path / f"{kind}.ncu-rep"
        if kind == "half":
            path.write_bytes(data[: len(data) // 2])
        elif kind == "garbage":
            path.write_bytes(b"NVR\x00" + bytes(range(256)) * 40)
        elif kind == "magic_only":
            path.write_bytes(b"NVR\x00")
        elif kind == "bad_metric_name":  # a metric name that is no longer UTF-8: the API raises
            damaged_data = bytearray(data)
            damaged_data[damaged_data.find(b"launch__grid_size") + 3] = 0xFF
            path.write_bytes(bytes(damaged_data))
        return path

    return make


@pytest.mark.parametrize("kind", ["half", "garbage", "magic_only"])
def test_load_report_returns_nothing_for_a_damaged_file(damaged, kind: str) -> None:
    """What the library does: no exception, a context without results."""
    assert ncu_report.load_report(str(damaged(kind))).num_ranges() == 0


def test_load_report_api_raises_on_a_damaged_metric_name(damaged) -> None:
    action = ncu_report.load_report(str(damaged("bad_metric_name"))).range_by_idx(0).action_by_idx(0)
    with pytest.raises(Exception):  # noqa: B017 - SWIG raises a bare TypeError; any exception is the point
        for name in action.metric_names():
            action.metric_by_name(name)


@pytest.mark.parametrize("kind", ["half", "garbage", "magic_only", "bad_metric_name"])
def test_damaged_report_gives_one_line_input_error(damaged, kind: str) -> None:
    path = damaged(kind)
    with pytest.raises(InputError) as caught:
        ncu_rep.read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "corrupt" in message


def test_library_log_lines_do_not_reach_the_terminal(damaged, capfd) -> None:
    """The protobuf parser logs to fd 2; the importer folds that into its one-line error instead."""
    with pytest.raises(InputError) as caught:
        ncu_rep.read(damaged("garbage"))
    assert capfd.readouterr().err == ""
    assert "FileHeader" in str(caught.value)


def test_reports_read_one_after_another_do_not_leak_into_each_other(sgemm_path: Path, sample_trace) -> None:
    """ncu_report keeps state between reports in one process, which is why each is read in a child process."""
    h100, raw_csv = sample_trace("h100/samples.ncu-rep.gz"), sample_trace("h100/samples.raw.csv")
    name = "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"
    header, units = [row.split('","') for row in raw_csv.read_text().splitlines()[:2]]
    assert units[header.index(name)] == "thread"  # ncu's own export of the H100 report
    script = (
        "import sys, ncu_report\n"
        "ncu_report.load_report(sys.argv[1])\n"
        "print(ncu_report.load_report(sys.argv[2]).range_by_idx(0).action_by_idx(0)"
        f".metric_by_name({name!r}).unit())\n"
    )
    leaked = subprocess.run(
        [sys.executable, "-c", script, str(sgemm_path), str(plain_report(h100))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert leaked.stdout.strip() == "inst"  # the library alone, loading the RTX 2080 Ti report first

    read_once(sgemm_path)
    [unit] = read_once(h100).metrics.filter(pl.col("name") == name, pl.col("launch_key") == 0)["unit"]
    assert unit == "thread"


def test_missing_ncu_report_says_how_to_install(sgemm_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # what `import ncu_report` sees when not installed
    with pytest.raises(InputError) as caught:
        ncu_rep.read(sgemm_path)
    assert "pip install 'tracekit[ncu]'" in str(caught.value)


# ---- store -------------------------------------------------------------------------------------------------


def test_store_round_trip(store: Store, sgemm_path: Path, sgemm) -> None:
    result = store.add_import(sgemm, sgemm_path)
    assert result.created and result.launch_count == 1
    info = store.get_import(result.import_id)
    assert (info["format"], info["tool_version"], info["device_name"], info["sm_count"]) == (
        "ncu-rep",
        "2023.1.0.0",
        "NVIDIA GeForce RTX 2080 Ti",
        68,
    )
    assert info["device_extra"]["max_registers_per_sm"] == 65536
    [launch] = store.launches(import_id=result.import_id).rows(named=True)
    assert (launch["kernel_name"], launch["registers_per_thread"], launch["duration_ns"]) == (
        "volta_sgemm_32x128_nn",
        57,
        10720.0,
    )
    metrics = store.metrics([launch["id"]])
    assert metrics.height == 716 + 8  # and the 8 rule results with a message
    fields = ["section", "name", "unit", "value", "text_value", "kind"]
    stored = metrics.filter(pl.col("name").str.starts_with("rule:")).select(fields).sort("name", "text_value")
    parsed = sgemm.metrics.filter(pl.col("name").str.starts_with("rule:")).select(fields).sort("name", "text_value")
    assert stored.height == 8 and stored.equals(parsed)
    by_name = {row["name"]: row for row in metrics.rows(named=True)}
    assert by_name["launch__occupancy_limit_registers"]["value"] == 4.0
    assert by_name["launch__func_cache_config"]["text_value"] == "CachePreferNone"
    assert by_name["inst_executed"]["kind"] == "int"


# ---- the team's H100 sample: .ncu-rep against its own --page raw CSV export ---------------------------------

# Where ncu's pages show something other than what the report stores, by design of ncu:
# - derived__pct_occupancy_per_shared_mem_size is stored in %/byte (15419) and printed rescaled as "15.419 %/Kbyte";
# - negative values (counter noise, here -0.097 % tensor-pipe activity) are stored as such and printed as 0.
# - idc__requests.sum is stored with unit "request" and printed without one.
PAGE_RESCALED = {"derived__pct_occupancy_per_shared_mem_size"}
PAGE_UNITLESS = {"idc__requests.sum"}


@pytest.mark.gpu_samples
def test_sample_report_matches_its_raw_csv_export(sample_trace) -> None:
    """The H100 samples' report and `ncu --import samples.ncu-rep --csv --page raw` of it: same launches, same
    values on every metric both carry, up to the rounding of the printed cell (read from the CSV text here)."""
    report_path, csv_path = sample_trace("h100/samples.ncu-rep.gz"), sample_trace("h100/samples.raw.csv")
    from tracekit.importers.ncu_csv import reader as ncu_csv

    report, csv_import = read_once(report_path), ncu_csv.read(csv_path)
    assert report.launches.height == csv_import.launches.height == 14
    assert report.device.name == "NVIDIA H100 80GB HBM3" and report.device.sm_count == 132
    for field in LAUNCH_FIELDS:
        assert report.launches[field].to_list() == csv_import.launches[field].to_list(), field
    assert report.launches["duration_ns"].to_list() == pytest.approx(
        csv_import.launches["duration_ns"].to_list(), rel=1e-3
    )

    keys = ["source_launch_id", "name"]
    joined = with_launch_ids(report).join(with_launch_ids(csv_import), on=keys, suffix="_csv")
    assert joined.height == csv_import.metrics.height  # every metric of the CSV is in the report
    assert report.metrics.height > csv_import.metrics.height  # the report also keeps metrics without a value

    texts = joined.filter(pl.col("kind") == "text", pl.col("text_value").is_not_null())
    assert texts.height > 0 and (texts["text_value"] == texts["text_value_csv"]).all()

    numeric = joined.filter(
        pl.col("value").is_not_null(), pl.col("value_csv").is_not_null(), ~pl.col("name").is_in(PAGE_RESCALED)
    ).join(printed_precision(csv_path), on=keys)
    assert numeric.height > 25_000
    unit_differs = numeric.filter(pl.col("unit").ne_missing(pl.col("unit_csv")))
    assert set(unit_differs["name"].to_list()) <= PAGE_UNITLESS, unit_differs.select("name", "unit", "unit_csv")
    allowed = pl.max_horizontal(1e-6 * pl.col("value").abs(), pl.col("half_ulp") * 1.0001)
    differs = numeric.filter((pl.col("value") - pl.col("value_csv")).abs() > allowed)
    assert differs.height == 0, differs.select("source_launch_id", "name", "unit", "value", "value_csv").head(10)
    negative = numeric.filter(pl.col("value") < 0)  # stored as measured, printed as "0"
    assert negative.height > 0 and (negative["value_csv"] == 0).all() and (negative["value"] > -0.5).all()


LAUNCH_FIELDS = [
    "kernel_name",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "stream_id",
    "context_id",
    "source_launch_id",
]


def with_launch_ids(parsed) -> pl.DataFrame:
    return parsed.metrics.join(parsed.launches.select("launch_key", "source_launch_id"), on="launch_key")


def printed_precision(csv_path: Path) -> pl.DataFrame:
    """(source_launch_id, name, half_ulp): half the last printed digit of each cell, in base units."""
    import csv

    from tracekit.importers.units import normalize_unit

    lines = [line for line in csv_path.read_text().splitlines() if not line.startswith("==")]
    header, units, *rows = list(csv.reader(lines))
    records = []
    for row in rows:
        for name, unit, cell in zip(header, units, row, strict=True):
            number = cell.replace(",", "")
            if number and number.lstrip("-").replace(".", "", 1).isdigit():
                decimals = len(number.partition(".")[2])
                records.append((row[header.index("ID")], name, 0.5 * 10.0**-decimals * normalize_unit(unit)[1]))
    return pl.DataFrame(
        records, schema={"source_launch_id": pl.Utf8, "name": pl.Utf8, "half_ulp": pl.Float64}, orient="row"
    )


def test_launch_shape_from_the_totals_when_the_report_has_no_dims(sgemm_path: Path) -> None:
    """Older reports carry the launch shape only as launch__grid_size / launch__block_size: the real 2080 Ti
    report's actions, with its launch__*_dim_* metrics taken out, give grid (50, 1, 1) and block (256, 1, 1)."""
    actions = ncu_rep._load_actions(ncu_report, sgemm_path)
    dims = {f"launch__{kind}_dim_{axis}" for kind in ("grid", "block") for axis in "xyz"}
    assert dims <= {name for _, name, *_ in actions[0]["metrics"]}
    older = [{**action, "metrics": [m for m in action["metrics"] if m[1] not in dims]} for action in actions]
    [launch] = ncu_rep._parsed(sgemm_path, older).launches.rows(named=True)
    assert (launch["grid_x"], launch["grid_y"], launch["grid_z"]) == (2 * 25, 1, 1)
    assert (launch["block_x"], launch["block_y"], launch["block_z"]) == (256, 1, 1)
    # With the dims present they win over the totals (the report's own 2-D grid).
    [launch] = ncu_rep._parsed(sgemm_path, actions).launches.rows(named=True)
    assert (launch["grid_x"], launch["grid_y"]) == (2, 25)


def test_memory_utilizations_and_occupancy_rows_are_kept(sample_trace) -> None:
    """The H100 samples' report keeps the utilizations the Memory Workload section maps (Mem Pipes Busy is
    sm__memory_throughput) and Nsight's own theoretical occupancy rows, value for value with the library's."""
    path = sample_trace("h100/samples.ncu-rep.gz")
    parsed = read_once(path)
    action = ncu_report.load_report(str(plain_report(path))).range_by_idx(0).action_by_idx(0)
    first = parsed.metrics.filter(pl.col("launch_key") == 0)
    for name in (
        "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__maximum_warps_per_active_cycle_pct",
        "launch__occupancy_limit_shared_mem",
        "launch__occupancy_limit_registers",
    ):
        [value] = first.filter(pl.col("name") == name)["value"].to_list()
        assert value == pytest.approx(action.metric_by_name(name).value()), name


# ---- rule results: stored as the details-page CSV reader stores them --------------------------------------------

RULE_FIELDS = ["source_launch_id", "section", "name", "unit", "text_value", "kind"]


def rule_rows(parsed) -> pl.DataFrame:
    return with_launch_ids(parsed).filter(pl.col("name").str.starts_with("rule:"))


@pytest.mark.gpu_samples
def test_rule_results_match_the_details_page_export(sample_trace) -> None:
    """The H100 samples' report and `ncu --import samples.ncu-rep --csv --page details` of it: per launch the same
    rule rows (name, section, "[type] text" with links rendered as the page prints them) and the same estimated
    speedups, the report's exact, the page's rounded to the digits it prints."""
    from tracekit.importers.ncu_csv import reader as ncu_csv

    report = read_once(sample_trace("h100/samples.ncu-rep.gz"))
    details = ncu_csv.read(sample_trace("h100/samples.details.csv"))
    ours, page = rule_rows(report), rule_rows(details)
    assert ours.height == page.height == 138
    assert ours["source_launch_id"].n_unique() == 14
    assert ours.select(RULE_FIELDS).sort(RULE_FIELDS).equals(page.select(RULE_FIELDS).sort(RULE_FIELDS))
    assert set(ours["text_value"].str.slice(0, 6).to_list()) == {"[OPT] ", "[INF] ", "[WRN] "}
    assert not ours["text_value"].str.contains("@section:|@url:").any()

    # Speedups: one rule can print several messages (CPIStall: OPT and INF), so pair them by their text.
    keys = ["source_launch_id", "name", "text_value"]
    speedups = ours.join(page, on=keys, suffix="_page", nulls_equal=True).select(*keys, "value", "value_page")
    assert speedups.height == 138
    assert (speedups["value"].is_null() == speedups["value_page"].is_null()).all()
    given = speedups.filter(pl.col("value").is_not_null())
    assert given.height == 93  # the rules that estimate a speedup
    assert given["value"].to_list() == pytest.approx(given["value_page"].to_list(), rel=5e-4, abs=5e-3)
    uncoalesced = given.filter(pl.col("name") == "rule:UncoalescedGlobalAccess", pl.col("source_launch_id") == "5")
    assert uncoalesced["value_page"].to_list() == [69.67]


def test_rule_results_against_the_library_on_every_real_report(real_export) -> None:
    """Older reports (2020-2025, ncu 2020.x to 2025.x) import with their rule results: one row per rule result
    with a message, as NVIDIA's API lists them; message types WRN (older rules), ERR (a rule that failed) and
    none; @source links of 2020 rendered to their text."""
    names = [
        "ncu_rep_2020_RTX3080_montecarlopi.ncu-rep",
        "ncu_rep_2021_GTX1660S_raytracer.ncu-rep",
        "ncu_rep_2023_GTX1650_pp_ex3.ncu-rep",
        "ncu_rep_2025_A10G_esmm_profile_output.ncu-rep",
        "ncu_rep_2025_GTX1650_heatsim_full.ncu-rep",
        "ncu_rep_2025_RTX2060S_powermodel_PS1_100.ncu-rep",
        SGEMM,
    ]
    prefixes: set[str] = set()
    for name in names:
        path = real_export(name)
        parsed = read_once(path)
        # the raytracer's third launch was cut off (no duration, grid or block): kept, with tracekit's own marker
        assert [w for w in parsed.warnings if "did not finish" not in w and "no source counters" not in w] == [], name
        context = ncu_report.load_report(str(path))
        listed = [
            (str(key), f"rule:{result.rule_identifier()}", result.section_identifier())
            for key, action in enumerate(a for r in range(context.num_ranges()) for a in context.range_by_idx(r))
            for result in action.rule_results()
            if result.has_rule_message()
        ]
        rows = rule_rows(parsed)  # tracekit's incomplete marker is not among them
        assert sorted(rows.select("source_launch_id", "name", "section").rows()) == sorted(listed), name
        assert not rows["text_value"].str.contains(r"@(url|section|source|sass):").any(), name
        prefixes |= {text[:5] if text.startswith("[") else "" for text in rows["text_value"].to_list()}
    assert prefixes == {"[OPT]", "[WRN]", "[INF]", "[ERR]", ""}
    montecarlo = rule_rows(read_once(real_export(names[0])))
    first = montecarlo.filter(pl.col("name") == "rule:UncoalescedGlobalAccess")["text_value"][0]
    assert first.startswith("[WRN] Uncoalesced global access, expected 97600 transactions, got 780800 (8.00x) at PC 0x")
    assert montecarlo["value"].is_null().all()  # 2020 rules estimate no speedup


def test_unreadable_rule_results_warn_and_keep_the_metrics(sgemm_path: Path) -> None:
    """Where the library cannot list a launch's rule results, the import says so and keeps the metrics."""
    actions = ncu_rep._load_actions(ncu_report, sgemm_path)
    assert len(actions[0]["rules"]) == 8
    broken = [{**actions[0], "rules": "RuntimeError: rule block damaged"}]
    parsed = ncu_rep._parsed(sgemm_path, broken)
    assert parsed.warnings == [
        "launch 0: its rule results could not be read (RuntimeError: rule block damaged); its metrics are imported"
    ]
    assert counters(parsed).height == parsed.metrics.height == 716


# ---- rule results in the verdict: `tracekit analyze <report> --json` ----------------------------------------------

# What each flag's advice says, and what says more warps would not help: a rule printed beside advice must not be
# contradicted by it.
FLAG_ADVICE = {
    "uncoalesced-access": ("Coalesce global accesses",),
    "shared-bank-conflicts": ("Remove shared-memory bank conflicts",),
    "branch-divergence": ("Reduce divergence",),
    "block-imbalance": ("Balance the work across blocks", "Balance work across"),
    "tail-effect": ("Balance the work across blocks", "Size the grid to a whole number of waves"),
    "low-occupancy": ("More occupancy helps", "Run more warps", "Raise the theoretical occupancy"),
}
NO_MORE_WARPS = ("More occupancy will not help", "More warps will mostly queue")


def assert_advice_agrees_with_rules(classification: dict) -> None:
    advice, flags = classification["advice"], classification["flags"]
    for rule in classification["nsight_rules"]:
        [line] = [
            e
            for e in classification["evidence"]
            if e.startswith(f"Nsight Compute rule {rule['name']} (") and rule["text"].split(". ")[0][:300] in e
        ]
        if rule["flag"] is None:
            assert rule["agrees"] is None
            continue
        assert rule["agrees"] == (rule["flag"] in flags)
        if rule["agrees"]:
            assert f"Agrees with the flag {rule['flag']}." in line
            if rule["flag"] == "low-occupancy":
                assert not [a for a in advice if a.startswith(NO_MORE_WARPS)], (rule, advice)
        else:
            assert "Agrees" not in line
            said = [a for a in advice if a.startswith(FLAG_ADVICE[rule["flag"]])]
            if rule["flag"] == "low-occupancy" and said:
                assert "its advice agrees that more warps help" in line, (line, said)
            else:
                assert not said, (line, said)
            if "more warps would only queue" in line or "adds no warps" in line:
                assert classification["mode"] == "throughput-bound"


@pytest.mark.gpu_samples
def test_analyze_a_report_cross_checks_its_rule_results(sample_trace, tmp_path: Path) -> None:
    """`tracekit analyze samples.ncu-rep --json`: every launch carries Nsight's OPT/WRN rules as evidence with
    `agrees` filled, and the advice never contradicts a rule printed beside it."""
    import json
    import os

    path = sample_trace("h100/samples.ncu-rep.gz")
    completed = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRACEKIT_DB": str(tmp_path / "store.sqlite")},
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout)
    assert len(results) == 14
    page = rule_rows(read_once(path))
    for result in results:
        verdict = result["classification"]
        rules = verdict["nsight_rules"]
        assert rules, result["kernel"]["name"]
        # Only OPT/WRN rules (suggestions) are cross-checked, each message as stored, the largest speedup kept.
        launch = page.filter(pl.col("source_launch_id") == str(result["launch_id"] - results[0]["launch_id"]))
        suggested = launch.filter(pl.col("text_value").str.contains(r"^\[(OPT|WRN)\]"))
        assert {r["name"] for r in rules} == {name.removeprefix("rule:") for name in suggested["name"].to_list()}
        for rule in rules:
            [value] = suggested.filter(
                pl.col("name") == f"rule:{rule['name']}",
                pl.col("text_value") == f"[{rule['rule_type']}] {rule['text']}",
            )["value"].to_list()
            assert rule["estimated_speedup_pct"] == value
        for name in {r["name"] for r in rules}:
            best = suggested.filter(pl.col("name") == f"rule:{name}")["value"].max()
            assert max((r["estimated_speedup_pct"] or 0) for r in rules if r["name"] == name) == (best or 0)
        assert_advice_agrees_with_rules(verdict)

    by_kernel = {result["kernel"]["name"].split("(")[0]: result["classification"] for result in results}
    # The random permutation: Nsight's uncoalesced-access rule (70% excessive sectors) and the verdict's flag agree.
    uncoalesced = next(r for r in by_kernel["permute"]["nsight_rules"] if r["name"] == "UncoalescedGlobalAccess")
    assert uncoalesced["agrees"] is True and "uncoalesced-access" in by_kernel["permute"]["flags"]
    # Imbalanced blocks: Nsight's WorkloadImbalance (SMs with fewer active cycles) is the verdict's tail-effect,
    # whose advice is to balance the blocks.
    imbalance = next(r for r in by_kernel["imbalanced_blocks"]["nsight_rules"] if r["name"] == "WorkloadImbalance")
    assert imbalance["text"].startswith("One or more SMSPs have a much higher number of active cycles")
    assert (imbalance["flag"], imbalance["agrees"]) == ("tail-effect", True)
    assert any(a.startswith("Balance the work across blocks") for a in by_kernel["imbalanced_blocks"]["advice"])
    # An imbalance between L2 slices (reduceInterleaved) is no SM idle time: it bears on no flag.
    [l2_slices] = [r for r in by_kernel["reduceInterleaved"]["nsight_rules"] if r["name"] == "WorkloadImbalance"]
    assert l2_slices["text"].startswith("One or more L2 Slices") and (l2_slices["flag"], l2_slices["agrees"]) == (
        None,
        None,
    )
