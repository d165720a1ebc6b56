"""The instrumentation header ships with the package and `tracekit header` finds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_header_is_shipped_and_found() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "header"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip())
    assert path.name == "warp_trace.cuh" and path.is_file()
    text = path.read_text()
    for needed in (
        "#define WARP_TRACE_BEGIN",
        "#define WARP_TRACE_END",
        "%globaltimer",
        "%smid",
        "clock64()",
        "tracekit-warp-trace v1",
    ):
        assert needed in text, needed
