"""Every file the manifests of ../shared/real_exports list: it imports with the launch count an independent
count of its rows or events gives (sqlite3, csv, json, ncu_report here, never the reader), or it is refused
with one line that names what it is and what to run instead. A listed file that is missing fails in CI."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import skip_or_fail
from tracekit.errors import InputError
from tracekit.importers import READER_MODULES, read_file
from tracekit.validate import check_values

REAL_EXPORTS = Path(__file__).resolve().parents[3] / "shared" / "real_exports"
MANIFESTS = ("MANIFEST_2026-11-23.tsv", "MANIFEST_2026-11-25.tsv")


def _manifest_rows() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for manifest in MANIFESTS:
        path = REAL_EXPORTS / manifest
        if path.exists():
            with open(path, newline="") as handle:
                rows += [(row["local_name"], row["kind"]) for row in csv.DictReader(handle, delimiter="\t")]
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
    return _sql(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")


def _kineto_kernels(path: Path) -> int:
    return sum(1 for event in json.loads(path.read_text())["traceEvents"] if event.get("cat") == "kernel")


def _hatchet_kernels(path: Path) -> int:
    """Proton's leaves (kernels) with their launch counts."""

    def walk(node: dict) -> int:
        children = node.get("children") or []
        if not children:
            return int((node.get("metrics") or {}).get("count") or 0)
        return sum(walk(child) for child in children)

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
    start = next(i for i, line in enumerate(lines) if "GPU activities:" in line)
    kernels = 0
    for line in lines[start:]:
        if "API calls:" in line or not line.strip():
            break
        name = line.split("GPU activities:", 1)[-1].split(None, 6)[6]  # after Time(%), Time, Calls, Avg, Min, Max
        kernels += not name.startswith("[")
    return kernels


# What each manifest kind is: (count of launches, or None when refused; reader module; words the refusal says).
_Expectation = tuple[Callable[[Path], int] | None, str | None, tuple[str, ...]]
KINDS: dict[str, _Expectation] = {
    "ncu-details": (_ncu_table_ids, "ncu_csv", ()),
    "ncu-raw": (_ncu_table_ids, "ncu_csv", ()),
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
}
# Files whose kind's refusal differs: an nsys export with API calls but no GPU activity says so.
REFUSAL_OVERRIDES = {
    "nsys_2023.2.3_nokerneltable_sgemm_report1.sqlite": ("no GPU activity recorded", "kernel launch calls"),
    "nsys_2023.4.4_4xH100_nokernel_vqe.sqlite": ("no GPU", "CUDA API"),
}


@pytest.mark.parametrize(("name", "kind"), _manifest_rows())
def test_every_listed_file_imports_or_is_refused_in_one_line(name: str, kind: str):
    if kind == "manifest":
        skip_or_fail(f"{REAL_EXPORTS / name} is absent (the shared real exports live beside the checkout)")
    path = REAL_EXPORTS / name
    if not path.exists():
        skip_or_fail(f"{path} is listed in a manifest but absent")
    assert kind in KINDS, f"{name}: manifest kind {kind!r} has no expectation here"
    count, reader, refusal = KINDS[kind]
    assert reader is None or reader in READER_MODULES, f"{name}: its reader {reader} is not registered"
    if count is None:
        with pytest.raises(InputError) as refused:
            read_file(path)
        message = str(refused.value)
        assert "\n" not in message, message
        for words in REFUSAL_OVERRIDES.get(name, refusal):
            assert words in message, message
        return
    parsed = read_file(path)
    check_values(str(path), parsed)
    assert parsed.launches.height == count(path), name
