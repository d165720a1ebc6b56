"""`tracekit import` and `tracekit lines` on Proton's PC-sampling profile recorded on an H200 (issue 45): the
atomic_add line named first with its samples and kind through the table, the JSON and the API; a hostile profile's
names shown as text; a malformed one refused in one line with the store unchanged."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from tests.helpers import run_cli
from tracekit.api import source_lines
from tracekit.ingest import read_file
from tracekit.present.source_lines import to_json

ROOT = Path(__file__).resolve().parents[2] / "sample_traces" / "source_lines"
PROFILE = ROOT / "proton_h200" / "proton_pcsampling.hatchet.gz"


def limiter_line() -> int:
    lines = (ROOT / "proton_src" / "proton_cases.py").read_text().splitlines()
    [number] = [n for n, text in enumerate(lines, start=1) if "[atomic_histogram: limiter]" in text]
    return number


def line_node(line: int) -> dict:
    """The atomic_histogram kernel's node for `line`, read with the json module."""
    tree = json.loads(gzip.decompress(PROFILE.read_bytes()))[0]
    [scope] = [c for c in tree["children"] if c["frame"]["name"] == "atomic_histogram.before"]
    [kernel] = scope["children"]
    [node] = [c for c in kernel["children"] if re.search(rf":{line}@atomic_histogram$", c["frame"]["name"])]
    return node


def launch_of(db: Path, kernel: str) -> int:
    shown = json.loads(run_cli("show", "1", "--json", "--db", str(db)).stdout)
    [launch] = [x["id"] for x in shown["launches"] if x["kernel_name"] == kernel]
    return launch


def test_lines_names_the_atomic_add_line_first(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    done = run_cli("import", str(PROFILE), "--db", str(db))
    assert done.returncode == 0, done.stderr
    launch = launch_of(db, "atomic_histogram")
    data = json.loads(run_cli("lines", str(launch), "--json", "--db", str(db)).stdout)
    line = limiter_line()
    node = line_node(line)["metrics"]
    top = data["lines"][0]
    assert (top["place"], top["kind"]) == (f"proton_cases.py:{line}", "atomics contention")
    assert top["file"].endswith("/sample_traces/source_lines/proton_src/proton_cases.py")  # as recorded
    assert top["samples"] == node["num_stalled_samples"]
    assert top["stalls"]["membar"] == node["stalled_membar"]
    assert top["text"] is None  # Proton embeds no source
    table = run_cli("lines", str(launch), "--db", str(db))
    assert table.returncode == 0
    first_row = next(row for row in table.stdout.splitlines() if row.startswith("│ 1 "))
    assert f"proton_cases.py:{line}" in first_row and "atomics contention" in first_row
    assert data["fix"]["sentence"] in table.stdout
    report = run_cli("report", "1", "--launch", str(launch), "--format", "md", "--db", str(db))
    assert report.returncode == 0, report.stderr
    panel = report.stdout[report.stdout.index("**Source lines**") :]
    assert "Proton embeds none" in panel  # no code: the ranked lines instead
    listing = [row for row in panel.splitlines() if row.startswith("| ") and "◆" in row]
    assert listing[0].split(" | ")[1] == str(line)


def test_the_api_shows_the_cli_figures(store) -> None:
    parsed = read_file(PROFILE)
    result = store.add_import(parsed, PROFILE)
    launches = store.launches(import_id=result.import_id)
    [launch] = launches.filter(launches["kernel_name"] == "atomic_histogram")["id"].to_list()
    view = source_lines(store, launch)
    assert view is not None
    shown = to_json(view.launch_id, view.kernel_name, view.result, view.files, view.duration_ns)
    assert shown["lines"][0]["line"] == limiter_line()
    [key] = parsed.launches.filter(parsed.launches["kernel_name"] == "atomic_histogram")["launch_key"].to_list()
    samples = parsed.source_samples.filter(parsed.source_samples["launch_key"] == key)["samples"]
    assert shown["total_samples"] == int(samples.sum())


def test_a_plain_proton_profile_has_no_lines_and_says_how_to_record_them(tmp_path: Path, real_export) -> None:
    db = tmp_path / "store.sqlite"
    assert run_cli("import", str(real_export("hatchet_htyu_matmul.hatchet")), "--db", str(db)).returncode == 0
    missing = run_cli("lines", "1", "--db", str(db))
    assert missing.returncode == 2
    assert "no source samples" in missing.stderr and 'mode="pcsampling"' in missing.stderr


def hostile_profile(tmp_path: Path) -> tuple[Path, str]:
    hostile = "<script>alert(1)</script>\x1b[31mRED\x1b]0;title\x07"
    line = {
        "frame": {"name": f"/tmp/{hostile}.py:7@{hostile}", "type": "function"},
        "metrics": {"num_samples": 20, "num_stalled_samples": 10, "stalled_membar": 6, "stalled_long_scoreboard": 4},
        "children": [],
    }
    kernel = {
        "frame": {"name": hostile, "type": "function"},
        "metrics": {"count": 1, "time (ns)": 1000, "device_id": "0", "device_type": "CUDA"},
        "children": [line],
    }
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {}, "children": [kernel]}
    path = tmp_path / "hostile.hatchet"
    path.write_text(json.dumps([root, {"CUDA": {"0": {"arch": "90", "num_sms": 132}}}]))
    return path, hostile


def test_hostile_names_are_shown_as_text(tmp_path: Path) -> None:
    path, hostile = hostile_profile(tmp_path)
    db = tmp_path / "store.sqlite"
    assert run_cli("import", str(path), "--db", str(db)).returncode == 0
    table = run_cli("lines", "1", "--db", str(db))
    assert table.returncode == 0
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b[31mRED" in table.stdout  # shown, escaped
    data = json.loads(run_cli("lines", "1", "--json", "--db", str(db)).stdout)
    assert data["kernel_name"] == hostile and data["lines"][0]["file"] == f"/tmp/{hostile}.py"  # as data
    report = tmp_path / "report.html"
    assert run_cli("report", "1", "--db", str(db), "-o", str(report)).returncode == 0
    html = report.read_text()
    assert "<script>alert(1)" not in html  # escaped, never markup
    assert "&lt;script&gt;alert(1)" in html
    markdown = tmp_path / "report.md"
    assert run_cli("report", "1", "--format", "md", "--db", str(db), "-o", str(markdown)).returncode == 0
    # a control character from the input is shown, never written raw (Markdown escapes the backslash and bracket)
    for page, shown in ((html, "\\x1b[31mRED"), (markdown.read_text(), "\\\\x1b\\[31mRED")):
        assert "\x1b" not in page and "\x07" not in page
        assert shown in page


def test_a_malformed_profile_is_refused_in_one_line_and_the_store_is_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    assert run_cli("import", str(PROFILE), "--db", str(db)).returncode == 0
    before = json.loads(run_cli("ls", "--json", "--db", str(db)).stdout)
    text = gzip.decompress(PROFILE.read_bytes())
    truncated = tmp_path / "truncated.hatchet.gz"
    truncated.write_bytes(gzip.compress(text[: len(text) // 2]))
    path, _ = hostile_profile(tmp_path)
    bad_count = tmp_path / "bad_count.hatchet"
    bad_count.write_text(path.read_text().replace('"stalled_membar": 6', '"stalled_membar": "six"'))
    for bad, message in ((truncated, "not valid JSON"), (bad_count, "stalled_membar is 'six', not a sample count")):
        refused = run_cli("import", str(bad), "--db", str(db))
        assert refused.returncode == 2, refused.stderr
        assert message in refused.stderr and bad.name in refused.stderr
        assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert json.loads(run_cli("ls", "--json", "--db", str(db)).stdout) == before
