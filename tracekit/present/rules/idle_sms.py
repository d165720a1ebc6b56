"""The words of `tracekit.analysis.rules.idle_sms`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    EXPLAINED,
    V,
    Words,
    frac,
)


def _idle_source(v: V) -> str:
    return v.s("ratio_metric") if v.o("source") == "counters" else "warp trace: SM time with no resident warp"


def _idle_cost(v: V) -> str:
    cause = {"too-few-blocks": "too few blocks", "block-imbalance": "a few long blocks"}.get(
        v.s("cause"), "the tail of the launch"
    )
    return f"SMs sit idle {frac(v.n('idle'))} of the launch's SM time ({cause}; {_idle_source(v)})."


TEMPLATES: dict[str, Words] = {
    "idle-sms.idle-explained": lambda v: (
        f"SMs were idle {frac(v.n('idle'))} of the elapsed SM time ({_idle_source(v)}), waiting on "
        f"{EXPLAINED[v.s('explained_by')]}: that idle time is the limiter's, not a tail."
    ),
    "idle-sms.idle": lambda v: (
        f"SMs were idle {frac(v.n('idle'))} of the elapsed SM time ({_idle_source(v)}): utilizations per active "
        f"cycle describe only the busy part."
    ),
    "idle-sms.cost": _idle_cost,
}

ADVICE: dict[str, Words] = {
    "balance-blocks-finish": lambda v: (
        "Balance the work across blocks (or hand it out dynamically) so all SMs finish together."
    ),
}
