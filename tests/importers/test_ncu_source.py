"""The Source page importers on the real H200 recordings of sample_traces/source_lines (issue 45): the .ncu-rep
read through ncu_report, its CSV exports in both shapes read by ncu_source_csv, cross-checked against each other and
against NVIDIA's ncu_report called directly; a report without source counters; a hostile source file."""

from __future__ import annotations

import functools
import gzip
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from tracekit.errors import InputError
from tracekit.importers import detect_format, ncu_rep, ncu_source_csv
from tracekit.ingest import read_file

ncu_report = pytest.importorskip("ncu_report")

SET = Path(__file__).resolve().parents[2] / "sample_traces" / "source_lines" / "h200"


@functools.cache
def report_path() -> Path:
    target = Path(__file__).resolve().parents[2] / ".pytest_cache" / "source_lines.ncu-rep"
    target.parent.mkdir(exist_ok=True)
    if not target.exists():
        with gzip.open(SET / "source_lines.ncu-rep.gz") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


@functools.cache
def parsed():
    return ncu_rep.read(report_path())


def kernel_key(name: str) -> int:
    [key] = [k for k, n in parsed().launches.select("launch_key", "kernel_name").rows() if n.split("(")[0] == name]
    return key


def test_every_launch_has_its_source_samples_and_embedded_files() -> None:
    p = parsed()
    assert p.launches.height == 20
    assert p.warnings == []
    assert sorted(p.source_samples["launch_key"].unique().to_list()) == list(range(20))
    files = p.source_files.filter(pl.col("launch_key") == kernel_key("transposeNaive"))
    [transpose] = [t for path, t in files.select("path", "text").rows() if path.endswith("/transpose.cu")]
    ours = (SET.parent / "src" / "transpose.cu").read_text()
    assert transpose.splitlines()[15] == ours.splitlines()[15]  # line 16: the naive store, as recorded


def test_counters_match_ncu_report_called_directly() -> None:
    context = ncu_report.load_report(str(report_path()))
    action = context.range_by_idx(0).action_by_idx(kernel_key("transposeCoalesced"))
    metric = action.metric_by_name("derived__memory_l1_wavefronts_shared_excessive")
    ids = metric.correlation_ids()
    by_line: dict[int, float] = {}
    for i in range(metric.num_instances()):
        line = action.source_info(ids.as_uint64(i)).line()
        by_line[line] = by_line.get(line, 0.0) + metric.as_double(i)
    ours = (
        parsed()
        .source_samples.filter(pl.col("launch_key") == kernel_key("transposeCoalesced"))
        .group_by("line")
        .agg(pl.col("shared_wavefronts_excess").sum())
    )
    for line, excess in ours.rows():
        assert excess == round(by_line.get(line, 0.0))
    samples = action.metric_by_name("smsp__pcsamp_sample_count")
    total = sum(samples.as_double(i) for i in range(samples.num_instances()))
    assert parsed().source_samples.filter(pl.col("launch_key") == kernel_key("transposeCoalesced"))[
        "samples"
    ].sum() == round(total)


def test_sass_opcodes_give_address_space_and_operation() -> None:
    s = parsed().source_samples.filter(pl.col("launch_key") == kernel_key("fir_local_window"))
    local = s.filter(pl.col("address_space") == "local")
    assert local.height > 0
    assert set(local["sass"].str.extract(r"^\s*(\w+)").to_list()) <= {"LDL", "STL"}
    red = parsed().source_samples.filter(
        (pl.col("launch_key") == kernel_key("histo_kernel_gmem")) & (pl.col("operation") == "reduction")
    )
    assert red["file"].str.ends_with("device_atomic_functions.hpp").all()  # inlined atomicAdd: the header's line


@pytest.mark.parametrize("shape", ["sass", "cuda_sass"])
def test_csv_exports_agree_with_the_report(shape: str) -> None:
    path = SET / "csv" / f"reduce1.{shape}.csv.gz"
    assert detect_format(path) == ncu_source_csv.FORMAT
    csv_import = read_file(path)
    [name] = csv_import.launches["kernel_name"].to_list()
    assert name == "reduce1(const int *, int *)"
    ours = csv_import.source_samples
    rep = parsed().source_samples.filter(pl.col("launch_key") == kernel_key("reduce1"))
    columns = ["samples", "inst_executed", "l2_sectors_global_excess", "shared_wavefronts_excess"]
    assert ours.select(pl.col(columns).sum()).row(0) == rep.select(pl.col(columns).sum()).row(0)
    stalls_csv: dict[str, int] = {}
    for text in ours["stall_samples"]:
        for reason, n in json.loads(text).items():
            stalls_csv[reason] = stalls_csv.get(reason, 0) + n
    stalls_rep: dict[str, int] = {}
    for text in rep["stall_samples"]:
        for reason, n in json.loads(text).items():
            stalls_rep[reason] = stalls_rep.get(reason, 0) + n
    assert stalls_csv == stalls_rep
    if shape == "cuda_sass":
        by_line = lambda f: f.group_by("line").agg(pl.col("samples").sum()).sort("line")  # noqa: E731
        assert by_line(ours).equals(by_line(rep))
        [text] = csv_import.source_files["text"].to_list()
        assert "sdata[index] += sdata[index + s];" in text.splitlines()[32]
    else:
        assert ours["line"].is_null().all()
        assert any("SASS-only" in w for w in csv_import.warnings)


def test_a_report_without_source_counters_says_so_in_one_line(real_export) -> None:
    p = ncu_rep.read(real_export("ncu_rep_2025_A10G_esmm_profile_output.ncu-rep"))
    notes = [w for w in p.warnings if "no source counters" in w]
    assert len(notes) == 1
    assert p.launches.height == 4 and p.metrics.height > 0
    assert p.source_samples.height == 0


def test_a_damaged_source_csv_is_one_input_error(tmp_path: Path) -> None:
    text = gzip.decompress((SET / "csv" / "reduce1.cuda_sass.csv.gz").read_bytes()).decode()
    lines = text.splitlines()
    lines[5] = lines[5].replace('"0x', '"zz', 1)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines))
    with pytest.raises(InputError) as caught:
        read_file(bad)
    assert "line 6" in str(caught.value) and "\n" not in str(caught.value)
