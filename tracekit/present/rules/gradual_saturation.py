"""The words of `tracekit.analysis.rules.gradual_saturation`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    achieved_rate,
    against,
    dur,
    frac,
    label_of,
    num,
    pct,
)


def _gradual(v: V) -> str:
    if v.o("ceiling_achieved") is not None:
        load = (
            f"{v.s('unit_label')} runs at {pct(v.n('unit_pct'))} of its nominal peak ({v.s('unit_metric')}); "
            f"{label_of(v, 'ceiling')} {achieved_rate(v, 'ceiling')} is {against(v, 'ceiling')}: below the "
            f"{frac(v.n('at_ceiling_fraction'))} of a unit at its ceiling but above {frac(v.n('gradual_fraction'))}"
        )
        if v.o("loaded_latency_ns") is not None:
            load += (
                f", where the calibrated loaded-latency curve puts DRAM latency at {dur(v.n('loaded_latency_ns'))}, "
                f"{num(v.n('loaded_latency_ns') / v.n('unloaded_latency_ns'))}x its unloaded "
                f"{dur(v.n('unloaded_latency_ns'))}"
            )
    else:
        load = (
            f"{v.s('unit_label')} runs at {pct(v.n('unit_pct'))} of peak ({v.s('unit_metric')}), below the "
            f"{pct(v.n('threshold_pct'))} of a saturated unit but above {pct(v.n('gradual_pct'))}"
        )
    return (
        f"{load}, and {frac(v.n('memory_stall_share'))} of the stalled cycles wait on memory ({v.s('reasons')}), at "
        f"the launch's theoretical occupancy: the memory system is in gradual saturation, where latency grows with "
        f"load (Volkov 2016, ch. 3), so the launch is memory-bound rather than short of warps."
    )


TEMPLATES: dict[str, Words] = {
    "gradual-saturation.memory": _gradual,
}

ADVICE: dict[str, Words] = {
    "gradual-more-warps-queue": lambda v: (
        f"More warps will mostly queue in the memory system ({v.s('unit_label')} is the bound): move fewer bytes; "
        f"more independent loads per warp gain only what the remaining headroom allows."
    ),
}
