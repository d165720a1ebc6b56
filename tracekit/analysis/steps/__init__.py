"""Whole steps of a training or inference loop: where a step's time goes, why the GPU idles, and what a kernel
change does to the step. One concern per module: `detect` (steps), `intervals` and `busy` (the busy/idle union),
`calls` (what an API call does to the queue), `causes` (idle causes), `categories` and `operators` (GPU time by
kind and by operator), `critical_path` and `whatif` (the step replayed with changed kernels), `ranks` (several
ranks of one job), `advice` (what to try first); `analysis.analyze_steps` puts them together."""

from tracekit.analysis.steps.analysis import StepError, analyze_steps
from tracekit.analysis.steps.types import StepsResult

__all__ = ["StepError", "StepsResult", "analyze_steps"]
