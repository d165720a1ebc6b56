"""The words of `tracekit.analysis.rules.low_occupancy`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    Words,
    num,
    pct,
)

TEMPLATES: dict[str, Words] = {
    "low-occupancy.theoretical-below-needed": lambda v: (
        f"The theoretical occupancy, {num(v.n('theoretical_warps'))} warps per SM"
        + (f" (limited by {v.s('limited_by')})" if v.o("limited_by") else "")
        + f", is below the ~{num(v.n('needed_warps'))} needed: the launch as configured cannot run enough warps to "
        f"hide the latency."
    ),
}

ADVICE: dict[str, Words] = {
    "faster-unit-no-help": lambda v: "A faster unit will not help: no unit is near its peak; latency is not hidden.",
    "ilp-full": lambda v: (
        "Give each warp more independent work (ILP): unroll, issue several loads before using them, "
        "process several elements per thread."
    ),
    "ilp-short": lambda v: "Give each warp more independent work (ILP): unroll, issue several loads before using them.",
    "raise-theoretical": lambda v: (
        f"Raise the theoretical occupancy ({pct(v.n('theoretical_pct'))} of the device's warps"
        + (f", limited by {v.s('limited_by')}" if v.o("limited_by") else "")
        + ") where the kernel allows."
    ),
    "run-more-warps-theoretical": lambda v: (
        f"Run more warps per SM, up to the theoretical {num(v.n('theoretical_warps'))}."
    ),
    "run-more-warps-needed": lambda v: (
        f"Run more warps per SM (about {num(v.n('needed_warps'))} to reach the bound): more blocks, or fewer "
        f"registers / less shared memory per block."
    ),
}
