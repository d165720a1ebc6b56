"""`tracekit serve` refuses a bad store or option with one line, before anything listens."""

from __future__ import annotations

import subprocess
import sys


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "serve", *args], capture_output=True, text=True, timeout=60
    )


def test_unknown_store_url_is_one_line_and_exit_code_2():
    result = serve("--db", "nosuchdialect://x", "--port", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("tracekit: error: cannot use store URL 'nosuchdialect://x'")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_zero_workers_is_refused():
    result = serve("--db", "sqlite:///:memory:", "--workers", "0")
    assert result.returncode == 2
    assert "--workers" in result.stderr and "Traceback" not in result.stderr
