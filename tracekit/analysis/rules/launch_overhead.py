"""Launch overhead: the part of the timed launch (cudaEvent or Nsight Systems) in which no warp runs.

Hardware reason: a launch's timed duration includes the driver's and the front end's work before the first block
starts and after the last ends; the warp trace's span is the time warps ran. Their difference is time no rule
about warps can win back (CUDA C++ Best Practices Guide, "Kernel launch overhead"; batch or fuse launches, or use
CUDA graphs).
"""

from __future__ import annotations

from tracekit.analysis.rules.base import Finding, RuleContext, values

RULE_ID = "launch-overhead"
INPUTS = ("trace",)
FLAGS: tuple[str, ...] = ()  # the flags it can raise


def apply(ctx: RuleContext) -> list[Finding]:
    timed, span = ctx.trace.event_duration_ns, ctx.trace.span_ns
    if not timed or not span or timed <= span:
        return []
    overhead = 1 - span / timed
    return [
        Finding(
            "launch-overhead.overhead",
            RULE_ID,
            "launch-overhead.overhead",
            values(("overhead_ns", timed - span, "ns"), ("timed_ns", timed, "ns"), ("overhead", overhead, "fraction")),
            sm_time_fraction=overhead,
        )
    ]
