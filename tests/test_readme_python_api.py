"""The README's Python example runs as written, on a real report, and gives what `tracekit analyze` gives."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import tracekit
from tracekit.api import analyze_stored
from tracekit.store import Store

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_example(tmp_path, sample_trace) -> None:
    block = re.search(r"### From Python\n\n```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    db, report = tmp_path / "runs.sqlite", sample_trace("h100/samples.ncu-rep.gz")
    code = block.replace('"runs.sqlite"', repr(str(db))).replace('"report.ncu-rep"', repr(str(report)))
    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    results, frame = namespace["results"], namespace["frame"]
    assert isinstance(namespace["store"], tracekit.TraceAnalysis) and isinstance(results, tracekit.AnalysisResults)
    store = Store.open(f"sqlite:///{db}")
    expected = analyze_stored(store, store.launches(), use_cache=False).to_dicts()
    assert json.loads(namespace["text"]) == expected
    assert frame.height == len(expected) == 14
    assert frame["mode"].to_list() == [r["classification"]["mode"] for r in expected]
    assert printed.getvalue().strip() == expected[0]["classification"]["mode"]
