"""`tracekit demo` imports the samples, writes the report and serves them with the production server."""

from __future__ import annotations

import gzip
import json
import urllib.request

from tests.dashboards.test_serve_command import Served, assert_production_server_with_security


def test_demo_imports_reports_and_serves_with_waitress(tmp_path, write_warp_trace, synthetic_warps):
    samples = tmp_path / "samples"
    samples.mkdir()
    trace = write_warp_trace(tmp_path / "demo_kernel.csv", "demo_kernel", synthetic_warps(64))
    (samples / "demo_kernel.csv.gz").write_bytes(gzip.compress(trace.read_bytes()))
    served = Served(
        tmp_path,
        "demo",
        "--samples",
        str(samples),
        "--db",
        f"sqlite:///{tmp_path / 'store.sqlite'}",
        "--report",
        "r.html",
    )
    try:
        served.wait_ready()
        report = (tmp_path / "r.html").read_text()
        assert "demo_kernel" in report
        with urllib.request.urlopen(f"{served.url}/api/launches/1/analysis", timeout=30) as response:
            analysis = json.load(response)
        assert analysis["kernel"]["name"] == "demo_kernel" and analysis["warps"]["count"] == 256
    finally:
        if served.process.poll() is None:
            log = assert_production_server_with_security(served)
            assert "imported: " in log and "tracekit: dashboard on http://127.0.0.1:" in log
