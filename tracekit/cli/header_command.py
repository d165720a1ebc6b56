"""`tracekit header`: where the instrumentation header is, for `nvcc -I`."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from tracekit.cli.common import console


def header_path() -> Path:
    return Path(str(files("tracekit") / "cuda" / "warp_trace.cuh"))


def header_command() -> None:
    """Print the path of warp_trace.cuh (records per-warp start/end/SM inside a kernel): nvcc -I"$(dirname ...)"."""
    console.print(str(header_path()), markup=False)
