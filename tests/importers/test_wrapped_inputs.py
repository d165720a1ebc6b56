"""Inputs in a wrapper. A gzip-compressed profile imports like the file inside it, whatever its reader: an Nsight
Compute CSV page or an Nsight Systems SQLite export is inflated to a temporary copy first (readers of warp traces
and Chrome traces read gzip themselves). Errors name the file given, with the line of the inflated content; a gzip
of something tracekit refuses is refused the same way. An nsys capture stream never converted (.qdstrm) is named,
with its commands."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest

from tracekit.errors import InputError
from tracekit.importers import detect_format, read_file
from tracekit.scratch import scratch_dir

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces" / "h100"


def inflated_copies() -> set[Path]:
    """The inflated copies in the scratch folder (other tests running beside this one make other entries there)."""
    return {p for p in scratch_dir().iterdir() if p.name.endswith(".inflated")}


def gzipped(source: Path, target: Path) -> Path:
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


@pytest.mark.parametrize(
    ("sample", "fmt"),
    [("samples.raw.csv", "ncu-csv"), ("samples.details.csv", "ncu-csv"), ("samples.sqlite", "nsys-sqlite")],
)
def test_a_gzip_profile_reads_as_the_file_inside(tmp_path: Path, sample: str, fmt: str) -> None:
    plain = read_file(SAMPLES / sample)
    packed = gzipped(SAMPLES / sample, tmp_path / f"{sample}.gz")
    before = inflated_copies()
    assert detect_format(packed) == fmt
    inflated = read_file(packed)
    assert inflated.launches.equals(plain.launches)
    assert inflated.launches.height == plain.launches.height > 0
    assert inflated_copies() <= before  # the inflated copy is gone


def test_errors_name_the_gzip_file_and_the_line_inside(tmp_path: Path) -> None:
    text = (SAMPLES / "samples.details.csv").read_bytes()[:3000]  # cut inside a quoted field
    packed = tmp_path / "cut.csv.gz"
    packed.write_bytes(gzip.compress(text))
    with pytest.raises(InputError) as caught:
        read_file(packed)
    assert caught.value.path == str(packed) and caught.value.line == text.count(b"\n") + 1
    assert str(caught.value).startswith(f"{packed}:{caught.value.line}: ")


def test_gzip_of_what_tracekit_refuses_says_what_it_is(tmp_path: Path) -> None:
    garbage = tmp_path / "noise.gz"
    garbage.write_bytes(gzip.compress(b"just some text\n" * 10))
    with pytest.raises(InputError, match="not a format tracekit reads"):
        detect_format(garbage)
    report = tmp_path / "report1.nsys-rep"
    report.write_bytes(b"NVIDIA Tegra Profiler Report 2025@2@1@130-252135690618v0.\n" + bytes(200))  # nsys's header
    with pytest.raises(InputError, match=r"^.*report1\.nsys-rep\.gz: gzip-compressed an Nsight Systems report"):
        detect_format(gzipped(report, tmp_path / "report1.nsys-rep.gz"))


def test_a_gzip_sqlite_without_gpu_activity_is_refused_as_the_plain_one(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    with sqlite3.connect(empty) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    with pytest.raises(InputError) as plain:
        read_file(empty)
    with pytest.raises(InputError) as packed:
        read_file(gzipped(empty, tmp_path / "empty.sqlite.gz"))
    assert packed.value.message == plain.value.message


def test_an_unconverted_nsys_capture_stream_gets_the_command_that_converts_it(tmp_path: Path) -> None:
    stream = tmp_path / "report3.qdstrm"
    stream.write_bytes(bytes(range(256)) * 64)  # binary with no signature tracekit knows
    with pytest.raises(InputError) as caught:
        detect_format(stream)
    message = str(caught.value)
    assert "\n" not in message and "Nsight Systems capture stream (.qdstrm)" in message
    assert "QdstrmImporter -i report3.qdstrm" in message and "import report3.sqlite" in message
    other = tmp_path / "report3.bin"
    other.write_bytes(stream.read_bytes())
    with pytest.raises(InputError, match="not a format tracekit reads"):
        detect_format(other)  # the same bytes under another name: nothing is claimed from the name alone
