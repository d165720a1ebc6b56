"""`tracekit lines` and `api.source_lines` on a real SQLite and PostgreSQL store (issue 45): the CSV Source page of
the recorded reduce1 imported, the same lines and figures through the CLI table, its JSON and the API; a hostile
source file's text printed as plain escaped text."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import run_cli
from tracekit.api import source_lines
from tracekit.ingest import read_file
from tracekit.present.source_lines import to_json
from tracekit.store.source_lines import launch_source_files, launch_source_samples

SET = Path(__file__).resolve().parents[2] / "sample_traces" / "source_lines" / "h200"


def test_source_samples_round_trip_through_the_store(store) -> None:
    path = SET / "csv" / "reduce1.cuda_sass.csv.gz"
    parsed = read_file(path)
    result = store.add_import(parsed, path)
    [launch_id] = store.launches(import_id=result.import_id)["id"].to_list()
    samples = launch_source_samples(store, launch_id)
    assert samples.height == parsed.source_samples.height
    assert samples["samples"].sum() == parsed.source_samples["samples"].sum()
    assert samples["stall_samples"].to_list() == parsed.source_samples["stall_samples"].to_list()
    files = launch_source_files(store, launch_id)
    assert files["text"].to_list() == parsed.source_files["text"].to_list()
    view = source_lines(store, launch_id)
    assert view is not None
    lines = to_json(view.launch_id, view.kernel_name, view.result, view.files, view.duration_ns)
    assert lines["lines"][0]["line"] == 33
    assert lines["lines"][0]["kind"] == "bank conflict"
    store.delete_import(result.import_id)
    assert launch_source_samples(store, launch_id).height == 0


def test_cli_json_and_table_show_the_api_figures(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    path = SET / "csv" / "reduce1.cuda_sass.csv.gz"
    done = run_cli("import", str(path), "--db", str(db))
    assert done.returncode == 0, done.stderr
    shown = run_cli("lines", "1", "--json", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    top = data["lines"][0]
    assert (top["place"], top["kind"]) == ("reduction.cu:33", "bank conflict")
    table = run_cli("lines", "1", "--db", str(db))
    assert table.returncode == 0
    assert data["fix"]["sentence"] in table.stdout  # the same figures as the JSON and the API
    first_row = next(line for line in table.stdout.splitlines() if line.startswith("│ 1 "))
    assert "reduction.cu:33" in first_row
    assert "bank conflict" in first_row and top["stall_words"].split(",")[0] in first_row
    missing = run_cli("lines", "99", "--db", str(db))
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


def test_a_hostile_source_text_is_printed_as_plain_text(tmp_path: Path) -> None:
    text = gzip.decompress((SET / "csv" / "reduce1.cuda_sass.csv.gz").read_bytes()).decode()
    hostile = "<script>alert(1)</script>\x1b[31mRED\x1b]0;title\x07"
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('"33",'))
    cells = lines[at].split('","')
    cells[1] = hostile.replace('"', '""')
    lines[at] = '","'.join(cells)
    path = tmp_path / "hostile.csv"
    path.write_text("\n".join(lines))
    db = tmp_path / "store.sqlite"
    assert run_cli("import", str(path), "--db", str(db)).returncode == 0
    table = run_cli("lines", "1", "--db", str(db))
    assert table.returncode == 0
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b[31mRED" in table.stdout  # shown, escaped
    data = json.loads(run_cli("lines", "1", "--json", "--db", str(db)).stdout)
    assert data["lines"][0]["text"] == hostile  # JSON keeps the exact text, as data
