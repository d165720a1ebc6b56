"""The `nsys stats` GPU-trace CSV reader on a real B200 report (counted with the csv module), pairing with the
Nsight Compute report of the same run, and the refusal of the per-kernel summary."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from tracekit.api import analyze_stored
from tracekit.errors import InputError
from tracekit.importers import detect_format, nsys_stats_csv, read_file
from tracekit.ingest import ingest
from tracekit.store import Store

TRACE = "nsys_stats_cuda_gpu_trace_B200.csv"
SAME_RUN_NCU = "ncu_raw_2026_B200_cutlass_int8_accelsim.csv"  # the same run's ncu report (MANIFEST: same folder)


def rows_of(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_real_b200_gpu_trace(real_export) -> None:
    path = real_export(TRACE)
    assert detect_format(path) == "nsys-stats-csv"
    parsed = read_file(path)
    rows = rows_of(path)
    kernels = [r for r in rows if r["GrdX"]]
    assert parsed.launches.height == len(kernels) == 1
    assert parsed.memcpys.height == len(rows) - len(kernels) == 3
    launch = parsed.launches.row(0, named=True)
    kernel = kernels[0]
    assert launch["start_ns"] == int(kernel["Start (ns)"]) and launch["duration_ns"] == float(kernel["Duration (ns)"])
    assert launch["end_ns"] == int(kernel["Start (ns)"]) + int(kernel["Duration (ns)"])
    assert (launch["grid_x"], launch["block_x"], launch["registers_per_thread"]) == (64, 256, 122)
    assert (launch["correlation_id"], launch["stream_id"], launch["context_id"], launch["device_id"]) == (
        2380,
        20,
        1,
        0,
    )
    # the nvtx-name option prefixes the innermost NVTX range and a "/"
    assert launch["nvtx_path"] == "ABT_view (forced)"
    assert launch["kernel_name"] == kernel["Name"].split("/", 1)[1]
    # shared memory comes rounded to 1 kB (0.035 MB): unknown rather than wrong
    assert (launch["static_smem_bytes"], launch["dynamic_smem_bytes"]) == (None, None)
    assert any("three decimals" in w for w in parsed.warnings)
    assert parsed.memcpys["kind"].to_list() == ["HtoD", "HtoD", "Memset"]
    assert parsed.memcpys["size_bytes"].to_list() == [1_000_000, 1_000_000, 4_000_000]
    assert parsed.device is not None and parsed.device.name == "NVIDIA B200"


def test_pairs_with_the_ncu_report_of_the_same_run(real_export, tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'b200.sqlite'}")
    ids = [ingest(store, real_export(name))[0].import_id for name in (TRACE, SAME_RUN_NCU)]
    launches = pl.concat([store.launches(import_id=i) for i in ids], how="diagonal_relaxed")
    timed, profiled = analyze_stored(store, launches).to_dicts()
    assert timed["pairing"]["status"] == "paired", timed["pairing"]["evidence"]
    assert timed["counters_from"]["launch_id"] == profiled["launch_id"]
    assert timed["classification"]["mode"] == profiled["classification"]["mode"] == "latency-bound"
    assert timed["classification"]["flags"] == profiled["classification"]["flags"]
    assert timed["duration_ns"] == 25_473


def test_preamble_and_time_units(real_export, tmp_path) -> None:
    """What `nsys stats` prints to stdout before the table is skipped; `--timeunit us` headers are read."""
    lines = real_export(TRACE).read_text(encoding="utf-8").splitlines()
    header = lines[0].replace("Start (ns)", "Start (us)").replace("Duration (ns)", "Duration (us)")
    body = []
    for row in csv.reader(lines[1:]):
        row[0], row[1] = f"{int(row[0]) / 1000:.3f}", f"{int(row[1]) / 1000:.3f}"
        body.append(",".join(f'"{c}"' if "," in c else c for c in row))
    path = tmp_path / "stdout.csv"
    path.write_text(
        "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/2025.5.1/host-linux-x64/reports/"
        "cuda_gpu_trace.py]... \n\n ** CUDA GPU Trace (cuda_gpu_trace):\n\n" + "\n".join([header, *body]) + "\n",
        encoding="utf-8",
    )
    assert detect_format(path) == "nsys-stats-csv"
    launch = read_file(path).launches.row(0, named=True)
    assert (launch["start_ns"], launch["duration_ns"]) == (1_167_019_946, 25_473.0)


def test_a_bad_cell_is_refused_with_its_line(real_export, tmp_path) -> None:
    lines = real_export(TRACE).read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].replace(",122,", ",many,")
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="Reg/Trd is .many., not a number in range") as caught:
        nsys_stats_csv.read(path)
    assert caught.value.line == 5


@pytest.mark.parametrize(
    ("header", "what"),
    [
        (
            "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name",
            "per-kernel summary (cuda_gpu_kern_sum)",
        ),
        (
            "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation",
            "memory-operation summary (cuda_gpu_mem_time_sum)",
        ),
    ],
)
def test_summaries_are_refused_with_the_command_for_the_trace(tmp_path, header: str, what: str) -> None:
    """A summary holds totals per name, no launch: refused in one line that names it and the trace to write."""
    path = tmp_path / "kern_sum.csv"
    path.write_text(f'{header}\n62.5,1000,4,250.0,250.0,200,300,40.8,"void k<4>(float *, int)"\n', encoding="utf-8")
    assert detect_format(path) == "nsys-stats-csv"
    with pytest.raises(InputError, match=rf"{what.replace('(', '[(]').replace(')', '[)]')}.*cuda_gpu_trace") as err:
        read_file(path)
    assert "\n" not in str(err.value)
