"""The words of `tracekit.analysis.rules.nsight_rules`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    pct,
)

_CHECKS = {
    "agrees": " Agrees with the flag {flag}.",
    "unmapped": "",
    "more-warps-advice": " This verdict does not flag low-occupancy, but its advice agrees that more warps help.",
    "block-launch": (
        " This verdict does not flag low-occupancy: the SMs' block launch rate bounds the launch, so a higher "
        "occupancy limit adds no warps."
    ),
    "unit-bound": " This verdict does not flag low-occupancy: a unit is at its bound, so more warps would only queue.",
    "no-counters": (
        " The report has no counters this verdict checks {flag} with: Nsight Compute's rule is the evidence for it."
    ),
    "below-threshold": (
        " This verdict does not flag {flag}: the cost it measures for it is below the flag's threshold (see the "
        "evidence above)."
    ),
}


def _nsight(v: V) -> str:
    speedup = f", estimated speedup {pct(v.n('speedup_pct'))}" if v.o("speedup_pct") is not None else ""
    check = _CHECKS[v.s("check")].format(flag=v.s("flag"))
    return f"Nsight Compute rule {v.s('name')} ({v.s('rule_type')}{speedup}): {v.s('first_sentence')}.{check}"


TEMPLATES: dict[str, Words] = {
    "nsight-cross-check.rule": _nsight,
}
