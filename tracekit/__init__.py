"""tracekit: why a CUDA kernel is as fast as it is. `tracekit.open(path_or_url)` is the Python entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracekit.api import AnalysisResults, TraceAnalysis, analyze_stored, open

__all__ = ["AnalysisResults", "TraceAnalysis", "analyze_stored", "open"]


def __getattr__(name: str) -> Any:
    """The API on first use: `import tracekit.cli...` (every command, `tracekit --help`) does not load polars,
    SQLAlchemy and the engine until a command needs them."""
    if name in __all__:
        from tracekit import api

        return getattr(api, name)
    raise AttributeError(f"module 'tracekit' has no attribute {name!r}")
