"""nvprof's database, CSV and text tables, on real files: counts checked against an independent read of each file
(sqlite3, csv), values against the cells, and a `--metrics` table's verdict."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.errors import InputError
from tracekit.importers import detect_format, read_file

DATA = Path(__file__).parent / "data" / "nvprof"
TRACE_CSV = DATA / "gpu_trace_GTX1080Ti_MC_SingleAsianOptionP.csv"
METRICS_CSV = DATA / "metrics_all_GTX1080Ti_vectorAdd.csv"
NVVP = "nvprof_sqlite_2xP100_qcu_log_x99.nvvp"


def _count(path: Path, sql: str) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        return int(connection.execute(sql).fetchone()[0])


def test_nvvp_kernels_come_from_the_concurrent_kernel_table(real_export):
    path = real_export(NVVP)
    assert detect_format(path) == "nvprof-nvvp"
    assert _count(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 0
    kernels = _count(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
    copies = _count(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    parsed = read_file(path)
    assert (parsed.launches.height, parsed.memcpys.height) == (kernels, copies) == (5405, 4311)
    device = parsed.device
    assert device is not None
    assert (device.name, device.compute_capability, device.sm_count, device.max_warps_per_sm) == (
        "Tesla P100-PCIE-16GB",
        "6.0",
        56,
        64,
    )
    assert device.sm_clock_hz == 1_328_500_000  # coreClockRate 1,328,500 kHz
    first = parsed.launches.row(0, named=True)
    assert first["mangled_name"].startswith("_Z20generate_seed_pseudo")
    assert first["kernel_name"].startswith("void generate_seed_pseudo<")  # demangled
    assert first["duration_ns"] == 1722410604162455370 - 1722410604160998461
    assert (first["grid_x"], first["block_x"], first["registers_per_thread"]) == (64, 64, 31)
    assert int(parsed.memcpys["size_bytes"].sum()) == _count(path, "SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert "kernels ran on" not in " ".join(parsed.warnings)  # every kernel ran on device 0


def test_gpu_trace_csv_launches_and_copies():
    """`nvprof --print-gpu-trace --csv`: times in the units row's ms, sizes in B/KB (binary), names with [corr]."""
    assert detect_format(TRACE_CSV) == "nvprof"
    rows = list(csv.reader(TRACE_CSV.read_text().splitlines()[5:]))
    parsed = read_file(TRACE_CSV)
    assert parsed.format == "nvprof-trace"
    assert parsed.launches.height == sum(1 for row in rows if row[2]) == 3
    assert parsed.memcpys.height == sum(1 for row in rows if row[-1].startswith("[CUDA memcpy")) == 2
    launches = parsed.launches.select(
        "kernel_name",
        "grid_x",
        "block_x",
        "registers_per_thread",
        "dynamic_smem_bytes",
        "start_ns",
        "duration_ns",
        "correlation_id",
        "stream_id",
        "device_id",
    ).rows()
    assert launches[0] == ("initRNG(curandStateXORWOW*, unsigned int)", 391, 128, 32, 0, 614489773, 2772828, 1099, 7, 0)
    assert launches[2][4] == 512 and launches[2][7] == 1113
    assert parsed.device is not None and parsed.device.name == "GeForce GTX 1080 Ti"
    # 0.035156 KB and 1.527344 KB: 36 and 1,564 bytes with KB = 1024 B (the Throughput column agrees only so)
    assert parsed.memcpys.select("kind", "size_bytes").rows() == [("HtoD", 36), ("DtoH", 1564)]


def _tracekit(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_metrics_table_maps_nvprof_names_and_gets_a_verdict(tmp_path):
    """`nvprof --metrics all --csv`: one launch per kernel; nvprof's names stay, and the engine's ids are added
    with nvprof's scale converted; the utilization levels let Volkov's rule decide."""
    parsed = read_file(METRICS_CSV)
    assert parsed.launches.height == 1
    values = dict(zip(parsed.metrics["name"], parsed.metrics["value"], strict=True))
    assert values["invocations"] == 1
    assert values["achieved_occupancy"] == pytest.approx(0.592947)
    assert values["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(59.2947)
    assert values["smsp__sass_average_branch_targets_threads_uniform.pct"] == 100.0
    assert values["smsp__thread_inst_executed_per_inst_executed.ratio"] == pytest.approx(0.99980221 * 32)
    assert values["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == 10.0  # "Low (1)"
    assert values["lts__throughput.avg.pct_of_peak_sustained_elapsed"] == 20.0  # "Low (2)"
    assert values["gld_throughput"] == pytest.approx(126.023777 * 2**30)  # GB/s, binary
    assert "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum" not in values  # transactions are not sectors
    done = _tracekit("analyze", str(METRICS_CSV), "--json", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)[0]
    assert result["occupancy"]["achieved_pct"] == pytest.approx(59.2947)
    assert result["classification"]["mode"] == "latency-bound"
    assert "uncoalesced-access" not in result["classification"]["flags"]


def test_metrics_text_table(real_export):
    path = real_export("nvprof_metrics_text_2017_GTX1070_thrust2d.profile")
    kernels = sum(1 for line in path.read_text().splitlines() if line.startswith("    Kernel: "))
    parsed = read_file(path)
    assert parsed.launches.height == kernels == 2
    assert parsed.device is not None and parsed.device.name == "GeForce GTX 1070"
    first = parsed.metrics.filter(parsed.metrics["launch_key"] == 0)
    values = dict(zip(first["name"], first["value"], strict=True))
    assert values["gld_efficiency"] == 22.92 and values["achieved_occupancy"] == 0.753574
    assert values["dram_read_throughput.max"] == pytest.approx(1.1655 * 2**30)


@pytest.mark.parametrize(
    ("name", "kernels", "calls", "mean_ns"),
    [
        ("nvprof_csv_summary_2016_epicflow.csv", 2, 150, 1_582_900),
        ("nvprof_summary_text_2020_hotspot_optimalum.log", 1, 1, 3_374_157),
    ],
)
def test_summary_one_launch_per_kernel(real_export, name, kernels, calls, mean_ns):
    parsed = read_file(real_export(name))
    assert parsed.launches.height == kernels
    assert parsed.launches["duration_ns"][0] == pytest.approx(mean_ns)
    values = dict(zip(parsed.metrics["name"], parsed.metrics["value"], strict=False))
    assert values["invocations"] == calls
    assert any("one launch per kernel" in warning for warning in parsed.warnings)


def test_concatenated_runs_import_the_kernels_of_every_run(real_export):
    """A log of several nvprof runs, some of which profiled no kernel: every run's GPU-activity kernels."""
    path = real_export("nvprof_text_summary_concat_runs_nichitapavel.txt")
    runs: list[list[tuple[str, int]]] = []
    for block in path.read_text().split("Profiling result:")[1:]:
        kernels, inside = [], False
        for line in block.splitlines():
            inside = (inside or "GPU activities:" in line) and "API calls:" not in line and bool(line.strip())
            if inside:
                cells = line.split("GPU activities:")[-1].split(None, 6)
                kernels.append((cells[6], int(cells[2])))
        runs.append(kernels)
    assert len(runs) == 7 and sum(1 for kernels in runs if kernels) == 4
    parsed = read_file(path)
    expected = [kernel for kernels in runs for kernel in kernels]
    assert parsed.launches["kernel_name"].to_list() == [name for name, _ in expected]
    calls = parsed.metrics.filter(parsed.metrics["name"] == "invocations")["value"].to_list()
    assert calls == [n for _, n in expected]
    assert any("7 nvprof summaries (runs)" in w and "the 4 that profiled some" in w for w in parsed.warnings)


def test_kepler_alu_utilization_is_a_pipe_level(real_export, tmp_path):
    """Kepler's `alu_fu_utilization` (integer and FP arithmetic, levels 0-10) is read as the ALU pipe's % of
    peak, so the verdict weighs it instead of saying the metrics hold no utilization counter."""
    path = real_export("nvprof_text_metrics_nbody_step4_K20m.out")
    levels: dict[str, int] = {}
    kernel = ""
    for line in path.read_text().splitlines():
        if line.startswith("    Kernel: "):
            kernel = line.removeprefix("    Kernel: ").strip()
        elif " alu_fu_utilization " in line:
            levels[kernel] = int(line.rsplit("(", 1)[1].rstrip(")"))  # Avg, the last column: "Mid (5)"
    parsed = read_file(path)
    pipe = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"
    for key, name in enumerate(parsed.launches["kernel_name"].to_list()):
        values = parsed.metrics.filter((parsed.metrics["launch_key"] == key) & (parsed.metrics["name"] == pipe))
        assert values["value"].to_list() == [levels[name] * 10.0]
    done = _tracekit("analyze", str(path), "--json", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    for result in json.loads(done.stdout):
        verdict = result["classification"]
        assert [(u["limiter"], u["pct"]) for u in verdict["utilization"]] == [
            ("alu", levels[result["kernel"]["name"]] * 10.0)
        ]
        assert verdict["mode"] == "undetermined"  # one unit measured: a saturated memory side is not ruled out
        assert "only alu pipe measured" in verdict["reason"] and "no utilization" not in " ".join(verdict["evidence"])


# nvprof's text GPU trace as nvprof 9.0 prints it (`nvprof --print-gpu-trace ./app`): columns right-aligned to
# their header, the device name cut to its column, the name left-aligned with its [correlation id].
TEXT_TRACE = """\
==30176== NVPROF is profiling process 30176, command: ./vectorAddGPU
Vector Add on GPU time: 31.868ms
==30176== Profiling application: ./vectorAddGPU
==30176== Profiling result:
   Start  Duration            Grid Size      Block Size     Regs*    SSMem*    DSMem*      Size  Throughput  SrcMemType  DstMemType           Device   Context    Stream  Name
182.96ms  6.4049ms                    -               -         -         -         -  38.147MB  5.8163GB/s    Pageable      Device  GeForce GT 650M         1         7  [CUDA memcpy HtoD]
195.89ms  3.4072ms          (39063 1 1)       (256 1 1)         8        0B        0B         -           -           -           -  GeForce GT 650M         1         7  vectorAdd(float const *, float const *, float*, int) [112]
199.30ms  14.872ms                    -               -         -         -         -  38.147MB  2.5049GB/s      Device    Pageable  GeForce GT 650M         1         7  [CUDA memcpy DtoH]

Regs: Number of registers used per CUDA thread.
"""  # noqa: E501


def test_text_gpu_trace(tmp_path):
    path = tmp_path / "trace.log"
    path.write_text(TEXT_TRACE)
    parsed = read_file(path)
    columns = ("kernel_name", "grid_x", "grid_y", "block_x", "registers_per_thread", "static_smem_bytes")
    columns += ("start_ns", "duration_ns", "correlation_id", "stream_id")
    assert parsed.launches.select(columns).rows() == [
        ("vectorAdd(float const *, float const *, float*, int)", 39063, 1, 256, 8, 0, 195_890_000, 3_407_200, 112, 7)
    ]
    assert parsed.memcpys.select("kind", "size_bytes").rows() == [
        ("HtoD", round(38.147 * 2**20)),
        ("DtoH", round(38.147 * 2**20)),
    ]


def test_api_trace_alone_is_refused_with_the_rerun(tmp_path):
    path = tmp_path / "api.csv"
    path.write_text(
        '==1== Profiling result:\n"Start","Duration","Name","Correlation_ID"\nus,us,,\n0.0,2.866,"cuDeviceGetCount",1\n'
    )
    with pytest.raises(InputError, match=r"CUDA API trace .* nvprof --print-gpu-trace --csv"):
        read_file(path)
