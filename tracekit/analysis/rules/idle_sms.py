"""SMs idle before the launch ends cost SM time: a tail, unless the limiter itself keeps them waiting.

Hardware reason: the share of elapsed SM cycles with no resident warp (`sm__cycles_active` / elapsed cycles, or the
warp trace's SM time with no warp) is time the GPU is not working on the kernel; per-active-cycle utilizations
then describe only the busy part. Idle time caused by the limiter (blocks arriving too slowly, atomics draining in
one L2 slice) is the limiter's, not a tail. Reference: Nsight Compute "Launch Statistics" and WorkloadImbalance.
"""

from __future__ import annotations

from tracekit import counters as c
from tracekit.analysis.rules.base import Finding, RuleContext, VerdictState, values
from tracekit.analysis.rules.too_few_blocks import few_blocks
from tracekit.counters import metric_row

RULE_ID = "idle-sms"
INPUTS = ("metrics", "trace", "state")
FLAGS: tuple[str, ...] = ("tail-effect",)  # the flags it can raise
# Idle SM time at or above this share of the launch is a tail effect.
TAIL_LOSS_FRACTION = 0.2


def measured_idle(ctx: RuleContext) -> tuple[float, str, str | None] | None:
    """(idle share of SM time, source "counters" or "trace", the metric ratio cited) or None."""
    active, elapsed = metric_row(ctx.metrics, *c.SM_ACTIVE_CYCLES), metric_row(ctx.metrics, *c.ELAPSED_CYCLES)
    if active and elapsed and elapsed[1] > 0:
        return max(0.0, 1 - active[1] / elapsed[1]), "counters", f"{active[0]} / {elapsed[0]}"
    if ctx.trace.sm_idle_fraction is not None:
        return max(0.0, ctx.trace.sm_idle_fraction), "trace", None
    return None


def explained_by(state: VerdictState) -> str | None:
    """Idle SMs the limiter itself causes: "block-launch" or "atomics", else None."""
    if state.limiter == "block-launch":
        return "block-launch"
    if "atomic-contention" in state.flags:
        return "atomics"
    return None


def _idle_values(idle: tuple[float, str, str | None]) -> tuple[tuple[str, float | str | None, str], ...]:
    return (("idle", idle[0], "fraction"), ("source", idle[1], ""), ("ratio_metric", idle[2], ""))


def costly_idle(ctx: RuleContext) -> bool:
    """Idle SM time at the threshold that neither too few blocks nor the limiter explain."""
    idle = measured_idle(ctx)
    return idle is not None and idle[0] >= TAIL_LOSS_FRACTION and not few_blocks(ctx) and not explained_by(ctx.state)


def apply(ctx: RuleContext) -> list[Finding]:
    idle = measured_idle(ctx)
    if idle is None or idle[0] < TAIL_LOSS_FRACTION:
        return []
    explained = explained_by(ctx.state)
    cited = tuple(idle[2].split(" / ")) if idle[2] else ()
    if explained:
        return [
            Finding(
                "idle-sms.idle-explained",
                RULE_ID,
                "idle-sms.idle-explained",
                values(*_idle_values(idle), ("explained_by", explained)),
                metrics=cited,
            )
        ]
    flagged = not few_blocks(ctx)
    return [
        Finding(
            "idle-sms.idle",
            RULE_ID,
            "idle-sms.idle",
            values(*_idle_values(idle)),
            metrics=cited,
            flag="tail-effect" if flagged else None,
            advice=("balance-blocks-finish",) if flagged else (),
        )
    ]


def cost(ctx: RuleContext) -> Finding | None:
    """The SM time idle SMs cost (the "tail" of the ranked findings), unless the limiter explains it; the cause is
    read from the final flags (too few blocks, a few long blocks, the tail)."""
    idle = measured_idle(ctx)
    if idle is None or explained_by(ctx.state) or idle[0] <= 0:
        return None
    flags = ctx.state.flags
    cause = (
        "too-few-blocks" if "too-few-blocks" in flags else "block-imbalance" if "block-imbalance" in flags else "tail"
    )
    return Finding(
        "idle-sms.cost",
        RULE_ID,
        "idle-sms.cost",
        values(*_idle_values(idle), ("cause", cause)),
        metrics=tuple(idle[2].split(" / ")) if idle[2] else (),
        sm_time_fraction=idle[0],
    )
