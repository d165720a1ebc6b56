"""`tracekit features`, `diff` and `critical-path` on real traces (sample_traces/steps/h200): the text shows the
tables, --json is the analysis, a stored import gives what its file gives, bad input is one line with exit code 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import HTA_CUPTI_TRACE, real_export_path, run_cli
from tracekit.analysis.trace_features import trace_features
from tracekit.importers.kineto import read_host_events
from tracekit.present.trace_features import features_json

REPO = Path(__file__).resolve().parents[2]
DDP = REPO / "sample_traces/steps/h200/ddp_rank0.pt.trace.json.gz"
STRAGGLER = REPO / "sample_traces/steps/h200/ddp_straggler_rank0.pt.trace.json.gz"


def tracekit(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)


def test_json_is_the_analysis_and_the_text_shows_it(tmp_path):
    done = tracekit("features", str(DDP), "--json", "--series")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    expected = json.loads(json.dumps(features_json(trace_features(read_host_events(DDP)), series=True)))
    assert data == expected
    assert data["schema"] == "tracekit.trace_features/1" and data["rank"] == 0
    launches = sum(s["launches"] for s in data["queue_length"]["streams"])
    assert len(data["queue_length"]["series"]) == 2 * launches
    allreduce = [c for c in data["collectives"]["collectives"] if c["collective"] == "allreduce"]
    assert allreduce and all(c["message_bytes"] == 4 * c["in_elements"] for c in allreduce)
    text = tracekit("features", str(DDP))
    assert text.returncode == 0, text.stderr
    for title in ("Launch queue per stream", "Copy and set bandwidth", "Collectives", "Launch delay per operator"):
        assert title in text.stdout
    assert "default_pg (0)" in text.stdout and "allreduce" in text.stdout and "[0, 1]" in text.stdout
    assert "Repeated small-kernel sequences" in text.stdout and "nchwToNhwcKernel" in text.stdout
    assert "series" not in json.loads(tracekit("features", str(DDP), "--json").stdout)["queue_length"]


def test_a_stored_import_gives_what_its_file_gives(tmp_path):
    db = str(tmp_path / "store.sqlite")
    assert tracekit("import", str(DDP), "--db", db).returncode == 0
    stored = json.loads(tracekit("features", "import:1", "--db", db, "--json").stdout)
    direct = json.loads(tracekit("features", str(DDP), "--json").stdout)
    assert stored["source"] != direct["source"]
    assert {k: v for k, v in stored.items() if k != "source"} == {k: v for k, v in direct.items() if k != "source"}


def test_diff_and_critical_path(tmp_path):
    done = tracekit("diff", str(DDP), str(STRAGGLER), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["schema"] == "tracekit.trace_diff/1" and data["added"] == data["removed"] == 0
    assert "AccumulateGrad" in data["operators"][0]["operator"]
    text = tracekit("diff", str(DDP), str(STRAGGLER), "--top", "3")
    assert "Operators, after against before" in text.stdout and "AccumulateGrad" in text.stdout
    out = tmp_path / "critical.json"
    written = tracekit("critical-path", str(DDP), "-o", str(out))
    assert written.returncode == 0, written.stderr
    trace = json.loads(out.read_text())
    links = trace["otherData"]["critical_path_links"]
    assert links > 0 and f"{links:,} critical path links" in written.stdout
    assert sum(1 for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 3) == links


def data_small_kernels(path: Path) -> int:
    """The kernels under the default 20 us, as `features --json` counts them."""
    return json.loads(tracekit("features", str(path), "--json").stdout)["kernel_sequences"]["small_kernels"]


def test_bad_input_is_one_line(tmp_path):
    missing = tracekit("features", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "nope.json" in missing.stderr and len(missing.stderr.splitlines()) == 1
    csv = tmp_path / "table.csv"
    csv.write_text("a,b\n1,2\n")
    wrong = tracekit("diff", str(csv), str(DDP))
    assert wrong.returncode == 2 and "table.csv" in wrong.stderr and "Traceback" not in wrong.stderr
    unwritable = tracekit("critical-path", str(DDP), "-o", str(tmp_path / "no" / "dir" / "x.json"))
    assert unwritable.returncode == 2 and "cannot write the trace" in unwritable.stderr
    bad_size = tracekit("features", str(DDP), "--small-kernel", "fast")
    assert (
        bad_size.returncode == 2
        and len(bad_size.stderr.splitlines()) == 1
        and "--small-kernel 'fast'" in bad_size.stderr
    )
    rate = tracekit("features", str(DDP), "--small-kernel", "44/s")  # a rate is no kernel length
    assert rate.returncode == 2 and "--small-kernel '44/s'" in rate.stderr
    smaller = json.loads(tracekit("features", str(DDP), "--small-kernel", "5us", "--json").stdout)
    assert smaller["kernel_sequences"]["small_ns"] == 5_000
    assert smaller["kernel_sequences"]["small_kernels"] < data_small_kernels(DDP)


def test_kernel_counters_of_a_range_profiled_trace(tmp_path):
    """HTA's CUPTI range-profiler trace: the counters per operator and kernel in the text and the JSON, the same
    from its import; `step` says in one line why it has no step; a trace without counters has no such table."""
    CUPTI = real_export_path(HTA_CUPTI_TRACE)  # noqa: N806 - the file the test is about
    done = tracekit("features", str(CUPTI), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data == json.loads(json.dumps(features_json(trace_features(read_host_events(CUPTI)))))
    counters = data["kernel_counters"]
    assert len(counters["kernels"]) == counters["kernel_launch_calls"] == 77 and counters["paired_with_launches"]
    assert sum(o["kernels"] for o in counters["operators"]) == 77
    assert sum(o["flops"] for o in counters["operators"]) == sum(k["flops"] for k in counters["kernels"])
    text = tracekit("features", str(CUPTI))
    assert text.returncode == 0, text.stderr
    assert "Kernel counters per operator (CUPTI range profiler)" in text.stdout and "aten::conv2d" in text.stdout
    assert "not the kernel's run time" in text.stdout and "fft2d_r2c_32x32" in text.stdout
    db = str(tmp_path / "store.sqlite")
    imported = tracekit("import", str(CUPTI), "--db", db)
    assert imported.returncode == 0 and "77 kernels' counters" in imported.stderr
    stored = json.loads(tracekit("features", "import:1", "--db", db, "--json").stdout)
    assert stored["kernel_counters"] == counters
    step = tracekit("step", str(CUPTI))
    assert step.returncode == 2 and "CUPTI range profiler (77 kernels' counters" in step.stderr
    assert len(step.stderr.strip().splitlines()) == 1
    plain = tracekit("features", str(DDP))
    assert "Kernel counters" not in plain.stdout
    assert json.loads(tracekit("features", str(DDP), "--json").stdout)["kernel_counters"] is None
