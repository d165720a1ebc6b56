"""Every file the manifests of ../shared/real_exports list: it imports with the launch count an independent
count of its rows or events gives (sqlite3, csv, json, ncu_report here, never the reader), or it is refused
with one line that names what it is and what to run instead. A listed file that is missing fails in CI."""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REAL_EXPORTS, skip_or_fail
from tracekit.errors import InputError
from tracekit.importers import READER_MODULES, read_file
from tracekit.validate import check_values

MANIFESTS = (
    "MANIFEST_2026-11-23.tsv",
    "MANIFEST_2026-11-25.tsv",
    "MANIFEST_2026-11-26.tsv",
    "MANIFEST_2026-11-29.tsv",
)


def _manifest_rows() -> list[tuple[str, str]]:
    """(file, kind) of every listed file; 2026-11-29's manifest names them `file` and `format`."""
    rows: list[tuple[str, str]] = []
    for manifest in MANIFESTS:
        path = REAL_EXPORTS / manifest
        if path.exists():
            with open(path, newline="") as handle:
                rows += [
                    (row.get("local_name") or row["file"], row.get("kind") or row["format"])
                    for row in csv.DictReader(handle, delimiter="\t")
                ]
        else:
            rows.append((manifest, "manifest"))
    return rows


# ---- independent counts ------------------------------------------------------------------------------------------


def _sql(path: Path, query: str) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        return int(connection.execute(query).fetchone()[0])


def _ncu_table_ids(path: Path) -> int:
    """Distinct (host, process, ID) of an ncu CSV table found by its `"ID"` header, wherever it starts."""
    lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    ids = set()
    for row in csv.DictReader(lines[start:]):
        if (row.get("ID") or "").isdigit():
            ids.add((row.get("Host Name"), row.get("Process ID"), row["ID"]))
    return len(ids)


def _ncu_rep_actions(path: Path) -> int:
    ncu_report = pytest.importorskip("ncu_report")
    context = ncu_report.load_report(str(path))
    return sum(context.range_by_idx(i).num_actions() for i in range(context.num_ranges()))


def _nsys_kernels(path: Path) -> int:
    """The kernel table's rows; none where the export has no kernel table (a run of copies and sets only)."""
    if not _sql(path, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'"):
        return 0
    return _sql(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")


def _kineto_kernels(path: Path) -> int:
    """Kernel events (`Kernel` in the 2020-2021 layout), in the object's traceEvents or the 2020 top-level array."""
    return sum(1 for event in _chrome_events(path) if event.get("cat") in ("kernel", "Kernel"))


def _hatchet_kernels(path: Path) -> int:
    """Proton's kernel nodes: those whose metrics name a device (`device_id`, or `DeviceId` in 2024's Proton)."""

    def walk(node: dict) -> int:
        keys = {key.lower().replace("_", "") for key in node.get("metrics") or {}}
        return 1 if "deviceid" in keys else sum(walk(child) for child in node.get("children") or [])

    return walk(json.loads(path.read_text())[0])


def _nsys_stats_kernels(path: Path) -> int:
    with open(path, newline="") as handle:
        return sum(1 for row in csv.DictReader(handle) if not row["Name"].startswith("["))


def _nvprof_kernels(path: Path) -> int:
    """nvprof: the database's concurrent-kernel rows, the metrics table's kernels, the summary's kernel rows."""
    if path.read_bytes()[:16] == b"SQLite format 3\x00":
        return _sql(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
    lines = path.read_text(errors="replace").splitlines()
    if any(line.startswith("    Kernel: ") for line in lines):
        return sum(1 for line in lines if line.startswith("    Kernel: "))
    if lines[0].startswith("Time(%)"):
        return sum(1 for row in csv.DictReader(lines) if not row["Name"].startswith("["))
    kernels = 0
    for start in (i for i, line in enumerate(lines) if "GPU activities:" in line):  # each run's summary
        for line in lines[start:]:
            if "API calls:" in line or not line.strip():
                break
            name = line.split("GPU activities:", 1)[-1].split(None, 6)[6]  # after Time(%), Time, Calls, Avg, Min, Max
            kernels += not name.startswith("[")
    return kernels


def _chrome_events(path: Path) -> list[dict]:
    data = path.read_bytes()
    document = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return document["traceEvents"] if isinstance(document, dict) else document


def _kineto_no_kernel_words(path: Path) -> tuple[str, ...]:
    """The counts the refusal of a Kineto trace without kernels gives, counted here from its events."""
    events = _chrome_events(path)
    assert not any(e.get("cat") == "kernel" for e in events)
    calls = [e["name"] for e in events if e.get("cat") == "cuda_runtime" and e.get("ph") == "X"]
    ranges = sum(e.get("cat") == "cuda_profiler_range" for e in events)
    words = [f"{len(calls):,} CUDA runtime calls", "no GPU kernel activity"]
    if ranges:
        launches = sum(name.startswith("cudaLaunch") for name in calls)
        words += [f"({launches:,} kernel launches)", f"{ranges:,} CUPTI range-profiler events"]
    else:
        assert not any(name.startswith("cudaLaunch") for name in calls)
        words += ["none of them a kernel launch"]
    return tuple(words)


def _legacy_cpu_words(path: Path) -> tuple[str, ...]:
    events = _chrome_events(path)
    assert {e["pid"] for e in events} == {"CPU functions"}
    return ("CPU-only PyTorch profiler trace", f"{len(events):,} CPU operator events", "ProfilerActivity.CUDA")


def _host_api_words(path: Path) -> tuple[str, ...]:
    events = _chrome_events(path)
    api = [e for e in events if e.get("name", "").startswith("cu")]
    assert len(api) == len(events) and not any("cat" in e for e in events)
    return ("host-side CUDA API calls", f"{len(api):,} calls", "nsys profile --trace=cuda")


# What each manifest kind is: (count of launches, or None when refused; reader module; words the refusal says).
_Expectation = tuple[Callable[[Path], int] | None, str | None, tuple[str, ...]]
KINDS: dict[str, _Expectation] = {
    "ncu-details": (_ncu_table_ids, "ncu_csv.reader", ()),
    "ncu-raw": (_ncu_table_ids, "ncu_csv.reader", ()),
    "ncu-rep": (_ncu_rep_actions, "ncu_rep", ()),
    "nsys-sqlite": (_nsys_kernels, "nsys_sqlite", ()),
    "refuse-nvprof": (_nvprof_kernels, "nvprof", ()),  # read since nvprof's readers
    "refuse-kineto": (_kineto_kernels, "kineto", ()),  # read since the Kineto reader
    "proton-hatchet": (_hatchet_kernels, "proton_hatchet", ()),
    "refuse-other": (_nsys_stats_kernels, "nsys_stats_csv", ()),  # nsys stats cuda_gpu_trace CSV
    "refuse-nokernel": (None, None, ("no CUDA trace", "nsys profile --trace=cuda")),
    "refuse-text": (None, None, ("Nsight Compute's text output", "rerun with --csv")),
    "refuse-notable": (None, None, ("no Nsight Compute table", "import that .ncu-rep")),
    "refuse-nsysrep": (None, None, ("an Nsight Systems report", "nsys export --type sqlite -o")),
    "refuse-rocprof": (None, None, ("AMD rocprof output", "rocprof-compute")),
    # 2026-11-29's formats
    "kineto": (_kineto_kernels, "kineto", ()),
    "nsys-rep": (None, None, ("an Nsight Systems report", "nsys export --type sqlite -o")),
    "other": (None, None, ()),  # each file's words in REFUSAL_OVERRIDES
}
KINDS["nvprof-text"] = (_nvprof_kernels, "nvprof", ())
# Files whose kind's refusal differs: an nsys export with API calls but no GPU activity says so; a PyTorch trace
# without kernels says what it holds (its counts, counted here).
REFUSAL_OVERRIDES: dict[str, tuple[str, ...] | Callable[[Path], tuple[str, ...]]] = {
    "nsys_2023.2.3_nokerneltable_sgemm_report1.sqlite": ("no GPU activity recorded", "kernel launch calls"),
    "nsys_2023.4.4_4xH100_nokernel_vqe.sqlite": ("no GPU", "CUDA API"),
    "kineto_nokernel_flow_matching_RTX3090.json": _kineto_no_kernel_words,
    "legacy_autograd_cpuonly_luxmea_profiler_trace.json": _legacy_cpu_words,
    "nsysstats_osrt_sum_only_mineru.csv": (
        "OS runtime summary (osrt_sum)",
        "no CUDA trace",
        "nsys profile --trace=cuda",
    ),
}
# Files whose manifest kind means another thing in a later manifest: the eBPF host-side trace ("refuse-other" of
# 2026-11-26) is refused, where 2026-11-23's "refuse-other" (an nsys stats GPU trace) is read since.
FILE_KINDS: dict[str, _Expectation] = {
    "other_ebpf_cuda_chrome_trace.json": (None, None, ()),
    # a CUPTI range-profiler trace ("refuse-nokernel" of 2026-11-26) is imported since its counters are read: no
    # kernel event, so no launch; the counters are the host timeline's (tests/analysis/trace_features/test_counters)
    "kineto_gz_hta_cupti_range_profiler.json.gz": (_kineto_kernels, "kineto", ()),
}
REFUSAL_OVERRIDES["other_ebpf_cuda_chrome_trace.json"] = _host_api_words
REFUSAL_OVERRIDES |= {
    "qdrep_dynvit_nsys_profile.qdrep": (
        "an Nsight Systems report (an old .qdrep",
        "nsys export --type sqlite -o qdrep_dynvit_nsys_profile.sqlite qdrep_dynvit_nsys_profile.qdrep",
    ),
    "other_pytorch_execution_trace_resnet.json": (
        "a PyTorch Execution Trace",
        "no GPU timing",
        "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])",
    ),
    "other_tensorboard_events.tfevents": ("a TensorBoard event file", "not a profile", ".pt.trace.json"),
    "other_tf_profiler_overview_page.pb": (
        "a TensorFlow profiler protobuf (overview_page.pb",
        "TensorBoard's Profile tab",
        "nsys profile --trace=cuda",
    ),
}


@pytest.mark.parametrize(("name", "kind"), _manifest_rows())
def test_every_listed_file_imports_or_is_refused_in_one_line(name: str, kind: str):
    if kind == "manifest":
        skip_or_fail(f"{REAL_EXPORTS / name} is absent (the shared real exports live beside the checkout)")
    path = REAL_EXPORTS / name
    if not path.exists():
        skip_or_fail(f"{path} is listed in a manifest but absent")
    assert kind in KINDS, f"{name}: manifest kind {kind!r} has no expectation here"
    count, reader, refusal = FILE_KINDS.get(name, KINDS[kind])
    assert reader is None or reader in READER_MODULES, f"{name}: its reader {reader} is not registered"
    if count is None:
        with pytest.raises(InputError) as refused:
            read_file(path)
        message = str(refused.value)
        assert "\n" not in message, message
        expected = REFUSAL_OVERRIDES.get(name, refusal)
        assert expected, f"{name}: a refused file of kind {kind!r} needs the words of its refusal here"
        for words in expected(path) if callable(expected) else expected:
            assert words in message, message
        for internal in ("layout None", "device None", "deviceProperties"):  # never a reader's inner state
            assert internal not in message, message
        return
    parsed = read_file(path)
    check_values(str(path), parsed)
    assert parsed.launches.height == count(path), name
