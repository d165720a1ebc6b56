"""The words of `tracekit.analysis.rules.launch_overhead`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    dur,
    frac,
)

TEMPLATES: dict[str, Words] = {
    "launch-overhead.overhead": lambda v: (
        f"Launch overhead: {dur(v.n('overhead_ns'))} of the {dur(v.n('timed_ns'))} timed launch "
        f"({frac(v.n('overhead'))}) run no warp."
    ),
}
