"""tracekit: why a CUDA kernel is as fast as it is. `tracekit.open(path_or_url)` is the Python entry point."""

from tracekit.api import AnalysisResults, TraceAnalysis, analyze_stored, open

__all__ = ["AnalysisResults", "TraceAnalysis", "analyze_stored", "open"]
