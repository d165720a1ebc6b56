"""Files tracekit refuses, each with its own accurate hint, through `tracekit import` on the real files of
../shared/real_exports: ncu's text output, ncu's console output, Nsight Systems reports not exported, AMD's
rocprof output, Git LFS pointers, nsys exports without GPU activity. Each refusal is one line, exit code 2,
and the store is left as it was.

Also what is no longer refused: an nsys export with memory copies and no kernel table, and a `--map` alone
that makes an unrecognized CSV a warp trace.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tracekit.store import Store

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces" / "h100"


def tracekit(*args: str, db: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, "--db", str(db))


def refused(path: Path, db: Path) -> str:
    """The one line `tracekit import` prints for a refused file; checks exit code 2 and an unchanged store."""
    done = tracekit("import", str(path), db=db)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"tracekit: error: {path}: ")
    assert Store.open(str(db)).imports().height == 0
    return lines[0].removeprefix(f"tracekit: error: {path}: ")


@pytest.mark.parametrize(
    ("name", "kernels", "rerun"),
    [
        ("ncu_text_details_2022_A100class_layernorm_playground.log", 31, "ncu --csv --page details ..."),
        ("ncu_text_print_summary_2025_A10G_esmm.txt", 30, "ncu --csv --print-summary per-kernel ..."),
    ],
)
def test_ncu_text_output(real_export, tmp_path, name, kernels, rerun):
    """ncu without --csv: the kernels are in the file, as text sections; say so, and how to get a table."""
    path = real_export(name)
    profiled = sum(1 for line in path.read_text().splitlines() if line.startswith('==PROF== Profiling "'))
    assert profiled == kernels
    assert refused(path, tmp_path / "s.sqlite") == (
        f"this is Nsight Compute's text output ({kernels} kernels profiled), not a table tracekit can read: "
        f"rerun with --csv ({rerun}), or export a report (ncu -o report ...) and import the .ncu-rep"
    )


def test_ncu_console_output_of_an_export_run(real_export, tmp_path):
    """ncu's stdout when it wrote a report: name the report it wrote."""
    path = real_export("ncu_prof_lines_report_only_dphpc.log")
    assert refused(path, tmp_path / "s.sqlite") == (
        "no Nsight Compute table: this is ncu's console output of a run that wrote a report "
        "(/home/nwadekar/dphpc/dphpc-gemm/ncu_analysis.ncu-rep); import that .ncu-rep, or rerun with --csv"
    )


def test_ncu_connected_but_profiled_nothing(real_export, tmp_path):
    path = real_export("ncu_raw_B200_prof_lines_only_RooflineAnalysis.csv")
    connected = path.read_text().count("==PROF== Connected to process")
    assert refused(path, tmp_path / "s.sqlite") == (
        f"no Nsight Compute table: ncu connected to {connected} processes and profiled no kernel (a --kernel-name "
        "or --launch-skip filter that matched nothing, or processes that launch none)"
    )


def test_nsys_report_names_the_export_command(real_export, tmp_path):
    """An .nsys-rep (as users keep it): its magic line gives the nsys version; the hint is the one command."""
    path = real_export("nsys_2025.2.1_T4_mlp_nsys_report.nsys-rep")
    assert path.read_bytes().startswith(b"NVIDIA Tegra Profiler Report 2025@2@1@130")
    stem = path.stem
    assert refused(path, tmp_path / "s.sqlite") == (
        f"an Nsight Systems report (nsys 2025.2.1.130), which tracekit reads once exported to SQLite: "
        f"nsys export --type sqlite -o {stem}.sqlite {path.name}, then import {stem}.sqlite"
    )


@pytest.mark.parametrize("name", ["rocprof_MI300A_multigpu_results.json", "rocprof_stats_batched_gemm.csv"])
def test_rocprof_is_named_as_amds(real_export, tmp_path, name):
    """rocprof's --hip-trace JSON is Chrome-trace shaped: it is named before the Chrome-trace readers try it."""
    assert refused(real_export(name), tmp_path / "s.sqlite") == (
        "AMD rocprof output (kernels on an AMD GPU), which tracekit does not read: it reads NVIDIA's profilers "
        "(Nsight Compute, Nsight Systems, nvprof); open an AMD trace in Perfetto (ui.perfetto.dev) or analyse "
        "it with AMD's rocprof-compute"
    )


@pytest.mark.parametrize(
    "name",
    [
        "nsys_2025.2.1_T4_mlp_nsys_report.nsys-rep",
        "nvprof_sqlite_2xP100_qcu_log_x99.nvvp",
        "rocprof_stats_batched_gemm.csv",
    ],
)
def test_git_lfs_pointer_of_any_profile(real_export, tmp_path, name):
    """A pointer committed in place of any of these files says so, with the original's size, whatever its name."""
    data = real_export(name).read_bytes()
    pointer = tmp_path / name
    pointer.write_text(
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n"
    )
    assert refused(pointer, tmp_path / "s.sqlite") == (
        f"a Git LFS pointer file, not the file itself (the {len(data):,}-byte original was not downloaded): "
        "run `git lfs pull` in its repository, then import the file"
    )


def test_git_lfs_pointer(tmp_path):
    """The pointer `git lfs` commits in place of the samples' report (spec v1: version, oid sha256, size)."""
    report = SAMPLES / "samples.ncu-rep.gz"
    data = report.read_bytes()
    pointer = tmp_path / "samples.ncu-rep"
    pointer.write_text(
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n"
    )
    assert refused(pointer, tmp_path / "s.sqlite") == (
        f"a Git LFS pointer file, not the file itself (the {len(data):,}-byte original was not downloaded): "
        "run `git lfs pull` in its repository, then import the file"
    )


def _runtime_calls(path: Path, like: str) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        return connection.execute(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = r.nameId "
            "WHERE s.value LIKE ?",
            (like,),
        ).fetchone()[0]


def test_nsys_launch_calls_without_gpu_activity(real_export, tmp_path):
    """192 cudaLaunchKernel calls in the API trace and no kernel table: GPU tracing was unavailable."""
    path = real_export("nsys_2023.2.3_nokerneltable_sgemm_report1.sqlite")
    assert _runtime_calls(path, "cudaLaunchKernel%") == 192
    assert refused(path, tmp_path / "s.sqlite") == (
        "no GPU activity recorded: the CUDA API trace holds 192 kernel launch calls but no kernel or memory copy "
        "was traced on the GPU (nsys could not trace this GPU's work: a GPU, driver or WSL setup where its CUDA "
        "GPU tracing is unavailable)"
    )


def test_nsys_diagnostic_events_only(real_export, tmp_path):
    """API calls and nsys's diagnostic messages, no GPU activity: the hint quotes nsys's error diagnostic."""
    path = real_export("nsys_2025.1.3_RTX5060_nokerneltable_minigemm_report1.sqlite")
    assert _runtime_calls(path, "cuLaunchKernel%") == 1
    assert refused(path, tmp_path / "s.sqlite") == (
        "no GPU activity recorded: the CUDA API trace holds 1 kernel launch call but no kernel or memory copy "
        "was traced on the GPU (nsys could not trace this GPU's work: a GPU, driver or WSL setup where its CUDA "
        "GPU tracing is unavailable); nsys's diagnostics report: CUDA device 0: Unified Memory cannot be traced "
        "on devices that don't support peer-to-peer transfers.Please verify that SLI/NVLink is functioning properly."
    )


@pytest.mark.parametrize(
    "name", ["nsys_2023.3.1_nokerneltable_sc23_report1.sqlite", "nsys_old_6tables_nokernel_cardiac_report1.sqlite"]
)
def test_nsys_without_cuda_trace(real_export, tmp_path, name):
    assert refused(real_export(name), tmp_path / "s.sqlite") == (
        "no CUDA trace in this report: no kernel, memory copy or CUDA API table (profile with "
        "nsys profile --trace=cuda)"
    )


def test_nsys_memcpys_without_kernel_table_import(real_export, tmp_path):
    """A report of copies only (the RTX 3060 export with its kernel table dropped) imports its copies."""
    source = real_export("nsys_2025.5.2_RTX3060_perfsandbox_report1.sqlite")
    path = tmp_path / "copies_only.sqlite"
    shutil.copyfile(source, path)
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
        copies = connection.execute("SELECT COUNT(*), SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    assert copies[0] == 3
    db = tmp_path / "s.sqlite"
    done = tracekit("import", str(path), db=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported {path} as import 1: 0 launches, 0 warps"
    assert "the report recorded memory copies or sets but no kernel" in done.stderr
    memcpys = Store.open(str(db)).memcpys(1)
    assert (memcpys.height, int(memcpys["size_bytes"].sum())) == (copies[0], copies[1])


def test_map_alone_reads_an_unrecognized_csv_as_a_warp_trace(tmp_path):
    """The README's `--map` example: no --format needed."""
    path = tmp_path / "t.csv"
    path.write_text("smid,block_id,warp_in_block,t0,t1\n0,0,0,100,250\n1,1,0,120,400\n")
    db = tmp_path / "s.sqlite"
    done = tracekit("import", str(path), "--map", "start=t0", "--map", "end=t1", "--map", "sm=smid", db=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported {path} as import 1: 1 launch, 2 warps"
    warps = Store.open(str(db)).warps(Store.open(str(db)).launches(import_id=1)["id"][0])
    assert sorted(zip(warps["sm_id"], warps["end_ns"] - warps["start_ns"], strict=True)) == [(0, 150), (1, 280)]
    # without --map the same file is refused as not a format tracekit reads
    assert tracekit("import", str(path), db=tmp_path / "other.sqlite").returncode == 2


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("kineto_nokernel_flow_matching_RTX3090.json", ("none of them a kernel launch", "no GPU kernel activity")),
        ("legacy_autograd_cpuonly_luxmea_profiler_trace.json", ("CPU-only PyTorch profiler trace",)),
        ("other_ebpf_cuda_chrome_trace.json", ("host-side CUDA API calls", "nsys profile --trace=cuda")),
        ("nsysstats_osrt_sum_only_mineru.csv", ("OS runtime summary (osrt_sum)", "no CUDA trace")),
    ],
)
def test_profiles_without_kernels_are_refused_with_what_they_hold(real_export, tmp_path, name, words):
    """A trace that would store nothing is a refusal (exit 2, store unchanged) saying what it holds instead."""
    message = refused(real_export(name), tmp_path / "s.sqlite")
    for word in words:
        assert word in message, message


def test_a_range_profiled_trace_imports_its_counters_with_a_warning(real_export, tmp_path):
    """A CUPTI range-profiler trace holds no kernel activity but each kernel's counters: it is imported (no launch)
    with one warning saying so, and its counters are kept for `tracekit features`."""
    path = real_export("kineto_gz_hta_cupti_range_profiler.json.gz")
    done = tracekit("import", str(path), db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported {path} as import 1: 0 launches, 0 warps"
    assert "recorded with the CUPTI range profiler: 77 kernels' counters, no kernel activity" in done.stderr


# `nsys stats` as it prints to the console (column format; nsys 2026.3 banner and table) and as HTML tables
# (`--format htable`: one <table> per report, its header cells the console's column names).
NSYS_CONSOLE = """\
Generating SQLite file vector_add.sqlite from vector_add.nsys-rep
Processing [vector_add.sqlite] with [/opt/nvidia/nsight-systems-cli/2026.3.1/target-linux-x64/reports/cuda_gpu_kern_sum.py]...

 ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):

 Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name
 --------  ---------------  ---------  --------  --------  --------  --------  -----------  ----
    100.0      21570333587   16777216    1285.7    1248.0      1184      5120         67.6  void add_kernel<float>(T1 *)
"""  # noqa: E501
NSYS_HTML = """\
<table>
<tr><th>Time (%)</th><th>Total Time (ns)</th><th>Num Calls</th><th>Avg (ns)</th><th>Name</th></tr>
<tr><td>99.6</td><td>86755035</td><td>3</td><td>28918345.0</td><td>cudaMalloc</td></tr>
</table>
"""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (NSYS_CONSOLE, ("nsys stats console output holding the per-kernel summary (cuda_gpu_kern_sum)",)),
        (NSYS_HTML, ("nsys stats HTML (--format hdoc or htable) output",)),
    ],
)
def test_nsys_stats_console_and_html_name_their_reports(tmp_path, text, words):
    path = tmp_path / "stats.out"
    path.write_text(text)
    message = refused(path, tmp_path / "s.sqlite")
    for word in (*words, "totals per name, not launches", "nsys stats --report cuda_gpu_trace --format csv"):
        assert word in message, message


# A browser's performance trace (Chrome DevTools "Save profile": metadata, complete and begin/end events of the
# devtools.timeline, v8 and blink categories, integer pid and tid).
BROWSER_TRACE = {
    "traceEvents": [
        {"args": {"name": "CrBrowserMain"}, "cat": "__metadata", "name": "thread_name", "ph": "M", "pid": 7, "tid": 7},
        {"args": {}, "cat": "devtools.timeline", "name": "RunTask", "ph": "X", "dur": 40, "pid": 7, "tid": 9, "ts": 1},
        {"args": {"data": {}}, "cat": "v8", "name": "V8.Execute", "ph": "B", "pid": 7, "tid": 9, "ts": 5},
        {"args": {}, "cat": "v8", "name": "V8.Execute", "ph": "E", "pid": 7, "tid": 9, "ts": 30},
        {
            "args": {},
            "cat": "blink,devtools.timeline",
            "name": "UpdateLayoutTree",
            "ph": "X",
            "dur": 3,
            "pid": 7,
            "tid": 9,
            "ts": 31,
        },
    ],
    "metadata": {"source": "DevTools"},
}


def test_a_browser_trace_is_named_as_one(tmp_path):
    path = tmp_path / "Trace-20261126T071500.json"
    path.write_text(json.dumps(BROWSER_TRACE))
    message = refused(path, tmp_path / "s.sqlite")
    assert message.startswith("a web browser's performance trace"), message
    assert "sm-row" not in message and "('X')" not in message
