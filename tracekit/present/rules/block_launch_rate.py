"""The words of `tracekit.analysis.rules.block_launch_rate`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.present.rules.values import (
    V,
    Words,
    dur,
    frac,
    num,
)


def _launch_rate(v: V) -> str:
    source = (
        f"{v.s('blocks_metric')} over {v.s('duration_metric')}"
        if v.o("source") == "counters"
        else "grid blocks over the warp trace's span"
    )
    if v.o("ceiling_achieved") is not None:
        rate = (
            f"an SM launches at most one block per {dur(v.n('launch_ns_per_sm'))} "
            f"({fmt.si(v.n('ceiling_ceiling_value'), 'blocks/s')} per SM, the measured rate on this GPU, "
            f"{v.s('ceiling_ceiling_source')})"
        )
    elif v.o("nominal_device") is not None:
        rate = (
            f"an SM launches about one block per {dur(v.n('launch_ns_per_sm'))} (assumed: no measured profile for "
            f"{v.s('nominal_device')})"
        )
    else:
        rate = f"an SM launches about one block per {dur(v.n('launch_ns_per_sm'))}"
    verdict = (
        "the launch rate, not a unit, bounds this launch"
        if v.n("share") >= v.n("threshold")
        else f"below the {frac(v.n('threshold'))} at which the launch rate is the bound"
    )
    return (
        f"{num(v.n('blocks'))} blocks on {int(v.n('sms'))} SMs in {dur(v.n('span_ns'))} ({source}): one block "
        f"per SM every {dur(v.n('per_block_ns'))}; {rate}, so blocks arrive at {frac(v.n('share'))} of the SMs' "
        f"block launch rate: {verdict}."
    )


TEMPLATES: dict[str, Words] = {
    "block-launch-rate.rate": _launch_rate,
    "block-launch-rate.bound": _launch_rate,
}

ADVICE: dict[str, Words] = {
    "fewer-larger-blocks": lambda v: (
        "Give each block more work (fewer, larger blocks, or a grid-stride loop) so blocks launch less often."
    ),
}
