"""The words of `tracekit.analysis.rules.trace_tail`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    frac,
)

TEMPLATES: dict[str, Words] = {
    "trace-tail.tail": lambda v: (
        f"In the warp trace the first SM runs out of work for good {frac(1 - v.n('tail'))} of "
        f"the way into the launch; the last {frac(v.n('tail'))} runs on fewer SMs."
    ),
}
