"""`tracekit import` on files kept beside profiles that are not profiles (issue 43): DLProf's database and CSV
reports, TraceLens's report sheets and a Visual Profiler session file, each refused in one line that names the file,
what it is and what to import instead, with exit code 2 and the store unchanged; the profiles beside them (an
Nsight Systems export, DLProf's own included, and an Nsight Compute CSV) still import. Real files from public
repositories (sample_traces/not_profiles/README.md gives their provenance), except the built session file."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tracekit.errors import InputError
from tracekit.importers import detect_format

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "sample_traces" / "not_profiles"
H100 = REPO / "sample_traces" / "h100"
NSYS_EXPORT = H100 / "samples.sqlite"
NCU_CSV = H100 / "samples.raw.csv"
DLPROF_DB_SHA256 = "11ac08c48816cbacfaeac06277df3d06948bc82d6778964a39aad0b9852d52bf"  # the README's, before gzip

DLPROF_NEXT = ("import the Nsight Systems export DLProf recorded beside it", "nsys_profile.sqlite")
TRACELENS = ("a TraceLens performance report sheet", "not a trace", "import the trace it was computed from")
REFUSALS = {
    "dlprof_summary.csv": ("a DLProf CSV report (Summary Report", *DLPROF_NEXT),
    "dlprof_detailed.csv": ("a DLProf CSV report (Detailed Report, All Iterations", *DLPROF_NEXT),
    "dlprof_iteration.csv": ("a DLProf CSV report (Iteration Report", *DLPROF_NEXT),
    "dlprof_kernel.csv": ("a DLProf CSV report (Kernel Report", *DLPROF_NEXT),
    "dlprof_op_type.csv": ("a DLProf CSV report (Op Type Summary Report", *DLPROF_NEXT),
    "dlprof_tensor_core.csv": ("a DLProf CSV report (Tensor Core Report", *DLPROF_NEXT),
    "dlprof_expert_systems.csv": ("a DLProf CSV report (Expert Systems Feedback", *DLPROF_NEXT),
    "dlprof_group_op.csv": ("a DLProf CSV report (Group Op Report", *DLPROF_NEXT),
    "dlprof_dldb.sqlite.gz": ("a DLProf database", "not a profile export", *DLPROF_NEXT),
    "tracelens_gpu_timeline.csv": TRACELENS,
    "tracelens_ops_summary.csv": TRACELENS,
    "tracelens_ops_summary_by_category.csv": TRACELENS,
    "tracelens_kernel_summary.csv": TRACELENS,
    "tracelens_GEMM.csv": TRACELENS,
    "visual_profiler_session.nvvp": (
        "a Visual Profiler session file",
        "not the SQLite database nvprof writes",
        "nvprof -o FILE.nvvp",
        "nsys profile --trace=cuda",
    ),
}


def kernel_rows(path: Path) -> int:
    """The kernels an Nsight Systems export holds, counted with sqlite3."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]


def ncu_launches(path: Path) -> int:
    """The launches of an ncu raw CSV: its rows after the header and the units row, counted with csv."""
    with path.open(newline="") as handle:
        return sum(1 for _ in csv.reader(handle)) - 2


def listing(db: Path) -> list[dict]:
    return json.loads(run_cli("ls", "--json", "--db", str(db)).stdout)


def refuse(path: Path, db: Path, words: tuple[str, ...]) -> None:
    before = listing(db)
    refused = run_cli("import", str(path), "--db", str(db))
    assert refused.returncode == 2, refused.stderr
    message = refused.stderr.strip()
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert path.name in message, message
    for text in words:
        assert text in message, message
    assert "not a format tracekit reads" not in message, message  # named for what it is, not the generic line
    assert listing(db) == before


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding the two profiles kept beside such files: an Nsight Systems export and an ncu CSV."""
    db = tmp_path / "store.sqlite"
    for path in (NSYS_EXPORT, NCU_CSV):
        assert run_cli("import", str(path), "--db", str(db)).returncode == 0
    return db


def test_the_profiles_still_import(store: Path) -> None:
    imports = {entry["name"]: entry for entry in listing(store)}
    assert imports["samples.sqlite"]["format"] == "nsys-sqlite"
    assert imports["samples.sqlite"]["launch_count"] == kernel_rows(NSYS_EXPORT)
    assert imports["samples.raw.csv"]["format"] == "ncu-csv"
    assert imports["samples.raw.csv"]["launch_count"] == ncu_launches(NCU_CSV)


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_each_is_refused_for_what_it_is(store: Path, name: str) -> None:
    refuse(HERE / name, store, REFUSALS[name])


def test_the_dlprof_database_as_dlprof_writes_it(store: Path, tmp_path: Path) -> None:
    """The SQLite file itself (its schema lies beyond the bytes sniffed, so the table list tells), unchanged after."""
    database = tmp_path / "dlprof_dldb.sqlite"
    database.write_bytes(gzip.decompress((HERE / "dlprof_dldb.sqlite.gz").read_bytes()))
    assert hashlib.sha256(database.read_bytes()).hexdigest() == DLPROF_DB_SHA256
    refuse(database, store, REFUSALS["dlprof_dldb.sqlite.gz"])
    assert hashlib.sha256(database.read_bytes()).hexdigest() == DLPROF_DB_SHA256
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("dlprof_dldb")) == ["dlprof_dldb.sqlite"]


@pytest.mark.parametrize("name", ["dlprof_iteration.csv", "tracelens_kernel_summary.csv"])
def test_the_content_tells_not_the_name(store: Path, tmp_path: Path, name: str) -> None:
    renamed = tmp_path / "profile.csv"
    shutil.copyfile(HERE / name, renamed)
    refuse(renamed, store, REFUSALS[name])
    with pytest.raises(InputError, match=REFUSALS[name][0].replace("(", r"\(")):
        detect_format(renamed)


def test_xml_under_another_name_and_a_dlprof_written_nsys_export_are_not_taken_for_these(
    real_export, tmp_path: Path
) -> None:
    xml = tmp_path / "session.xml"
    shutil.copyfile(HERE / "visual_profiler_session.nvvp", xml)
    with pytest.raises(InputError) as refused:
        detect_format(xml)
    assert "Visual Profiler" not in str(refused.value)
    export = real_export("nsys_2022.1_RTX2070S_dlprof_training.sqlite")  # DLProf ran nsys; its export is a profile
    db = tmp_path / "store.sqlite"
    assert run_cli("import", str(export), "--db", str(db)).returncode == 0
    [entry] = listing(db)
    assert entry["format"] == "nsys-sqlite" and entry["launch_count"] == kernel_rows(export)


def test_a_title_from_the_file_is_never_echoed(store: Path, tmp_path: Path) -> None:
    """The refusal names a DLProf report by its known title only: a hostile first line is not written back."""
    hostile = tmp_path / "report.csv"
    real = (HERE / "dlprof_kernel.csv").read_text().splitlines(keepends=True)
    hostile.write_text("\x1b[31mKernel Report\x07\n" + "".join(real[1:]))
    refuse(hostile, store, ("a DLProf CSV report (a table DLProf computed", *DLPROF_NEXT))
    refused = run_cli("import", str(hostile), "--db", str(store))
    assert "\x1b" not in refused.stderr and "\x07" not in refused.stderr
