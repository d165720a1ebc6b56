"""The plain-text surface of issue 27, through the real CLI in a subprocess whose stdout is a pipe or a file: tables
at their natural width (no kernel name cut to "kern…"), the headline in plain words, `predict` in a few lines,
`import --help` naming every reader, `ceilings --device` as users type it, and "What to try first" always there."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.format import kernel_name

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces" / "h100"
CASES = REPO / "sample_traces" / "verdict_cases" / "h100"


def tracekit(*args: str, db: Path | None = None, stdout: int | None = subprocess.PIPE, **env: str):
    """The CLI in a subprocess; no COLUMNS, so nothing but the code decides how wide a piped table is."""
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | env
    command = [sys.executable, "-m", "tracekit.cli.main", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=600, env=environment)


def table_cells(text: str) -> list[list[str]]:
    """The body rows of every box-drawn table in `text`, as lists of cell texts."""
    return [[c.strip() for c in line.strip("│").split("│")] for line in text.splitlines() if line.startswith("│")]


def demangled_names(path: Path) -> set[str]:
    """Every kernel's demangled name, read from the Nsight Systems export with SQL (not through tracekit's reader)."""
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True) as connection:
        rows = connection.execute(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName"
        ).fetchall()
    return {name for (name,) in rows}


@pytest.mark.parametrize("columns", [None, "40"])
def test_summary_written_to_a_file_keeps_every_kernel_name_whole(tmp_path, columns):
    """Redirected to a file (and with a narrow COLUMNS left in the environment), the summary's rows hold each
    kernel's whole name and each number on one line: a script can grep the file."""
    export = SAMPLES / "samples.sqlite"
    out = tmp_path / "summary.txt"
    with out.open("w") as handle:
        done = tracekit(
            "summary",
            str(export),
            db=tmp_path / "s.sqlite",
            stdout=handle.fileno(),
            **({"COLUMNS": columns} if columns else {}),
        )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "…" not in text
    rows = table_cells(text)
    names = {row[-1] for row in rows if len(row) == 9}  # the kernel table: 8 numbers and the name
    assert names == {kernel_name(name) for name in demangled_names(export)}
    for row in rows:  # no cell wrapped onto a second line: every row is whole
        assert all(cell for cell in row[:2]), row
        assert re.fullmatch(r"\d+(\.\d+)?%", row[0]), row


def test_show_piped_keeps_full_signatures(tmp_path):
    """`show --names full` through a pipe: every launch row carries the whole demangled signature."""
    db = tmp_path / "s.sqlite"
    assert tracekit("import", str(SAMPLES / "samples.sqlite"), db=db).returncode == 0
    done = tracekit("show", "1", "--names", "full", db=db)
    assert done.returncode == 0, done.stderr
    rows = [row for row in table_cells(done.stdout) if len(row) == 7]
    assert rows and "…" not in done.stdout
    full = {kernel_name(name, "full") for name in demangled_names(SAMPLES / "samples.sqlite")}
    assert {row[1] for row in rows} == full


def test_import_help_lists_every_format_the_readers_read():
    """Each reader of importers.READER_MODULES, by its FORMAT (the modules imported here, not read as text), is a
    line of `import --help`, in detection order."""
    from tracekit.importers import formats

    done = tracekit("import", "--help", COLUMNS="200")
    assert done.returncode == 0, done.stderr
    listed = [line.strip().split(":")[0] for line in done.stdout.splitlines() if re.match(r"^\s+[a-z0-9-]+: \S", line)]
    assert listed == list(formats()) and len(listed) >= 10


PROFILE = REPO / "tracekit" / "ceilings" / "profiles" / "nvidia-h100-80gb-hbm3.json"


@pytest.mark.parametrize("typed", ["H100", "h100", "H100 SXM", "NVIDIA H100 80GB HBM3", "nvidia h100 80gb"])
def test_ceilings_finds_the_shipped_h100_profile_as_users_type_the_name(typed):
    """The spellings a user types find the shipped measured profile (values as in its file) with the H100 SXM5's
    nominal peaks beside them."""
    import json

    shipped = json.loads(PROFILE.read_text(encoding="utf-8"))
    done = tracekit("ceilings", "--device", typed, "--json")
    assert done.returncode == 0, done.stderr
    profile = json.loads(done.stdout)
    assert profile["source"] == "measured: tracekit/ceilings/profiles/nvidia-h100-80gb-hbm3.json"
    assert profile["device"]["name"] == shipped["device"]["name"]
    dram = profile["ceilings"]["dram_stream_bytes_per_s"]
    assert dram["value"] == shipped["ceilings"]["dram_stream_bytes_per_s"]["value"]
    assert dram["nominal"] == 3.35e12  # the H100 SXM5 datasheet's HBM3 bandwidth
    assert "SXM5" in profile["basis"]


def test_ceilings_text_lists_the_stream_of_every_read_write_mix_and_names_the_profile_once():
    """The DRAM ceiling a launch is judged by is its read:write mix's stream: each measured mix has its row (the
    value the profile holds, real kernels' raises included), and the profile's path is printed once, not per row."""
    from tracekit.ceilings import ceilings_for
    from tracekit.format import si

    profile = ceilings_for("NVIDIA H100 80GB HBM3", "9.0", 132)
    done = tracekit("ceilings", "--device", "H100", COLUMNS="250")
    assert done.returncode == 0, done.stderr
    assert len(profile.dram_stream_by_mix) == 4
    for mix, ceiling in profile.dram_stream_by_mix.items():
        [row] = [line for line in done.stdout.splitlines() if f"DRAM stream, {mix} reads:writes" in line]
        assert si(ceiling.value, "B/s") in row
    assert done.stdout.count("tracekit/ceilings/profiles/nvidia-h100-80gb-hbm3.json") == 1


def test_ceilings_of_a_device_nothing_knows_is_one_line():
    done = tracekit("ceilings", "--device", "nvidia")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert (
        line.startswith("tracekit: error: --device 'nvidia': no shipped profile and no nominal peaks")
        and "H100" in line
    )


def test_compare_written_to_a_file_escapes_control_characters_and_keeps_rows_whole(tmp_path):
    """`compare -o FILE`: the table at its natural width, and a kernel name's escape character written as text
    (a file someone cats is a terminal too)."""
    import gzip

    with gzip.open(SAMPLES / "vector_add_08warps.csv.gz", "rt") as handle:  # its kernel name with an ESC in it
        text = handle.read().replace("vector_add", "vector\x1b[31madd")
    assert "\x1b" in text
    copy = tmp_path / "trace.csv"
    copy.write_text(text)
    copies = [str(copy), str(copy)]
    out = tmp_path / "compare.txt"
    done = tracekit("compare", *copies, "--names", "full", "-o", str(out), db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    assert "\x1b" not in written and "vector\\x1b[31madd" in written
    [row] = [r for r in table_cells(written) if r[0] == "duration"]
    assert all(cell for cell in row[:5]) and "…" not in written
