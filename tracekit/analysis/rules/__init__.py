"""The verdict's rules, one module per rule, as Nsight Compute keeps one file per rule.

Each rule module has a stable `RULE_ID`, a docstring with the hardware reason and its reference, the context fields
it reads (`INPUTS`), and a pure `apply(context) -> list[Finding]` over one `RuleContext` (`rules/base.py`).
`rules/verdict.py` runs them, decides the mode and limiter in one place and ranks findings by the SM time they
cost; `rules/render.py` writes their sentences. `RULES` lists every rule module.
"""

from __future__ import annotations

from types import ModuleType

from tracekit.analysis.rules import (
    atomics_contention,
    bank_conflicts,
    barrier_stalls,
    block_imbalance,
    block_launch_rate,
    coalescing,
    divergence,
    gradual_saturation,
    idle_sms,
    launch_overhead,
    lost_occupancy,
    low_occupancy,
    memory_attribution,
    needed_occupancy,
    nsight_rules,
    occupancy_gap,
    partial_wave,
    saturated_unit,
    spills,
    stall_summary,
    sweep_plateau,
    tensor_roof,
    ties,
    too_few_blocks,
    trace_tail,
)

RULES: tuple[ModuleType, ...] = (
    saturated_unit,
    memory_attribution,
    ties,
    atomics_contention,
    block_launch_rate,
    gradual_saturation,
    tensor_roof,
    sweep_plateau,
    stall_summary,
    needed_occupancy,
    low_occupancy,
    occupancy_gap,
    too_few_blocks,
    partial_wave,
    idle_sms,
    trace_tail,
    block_imbalance,
    lost_occupancy,
    coalescing,
    bank_conflicts,
    spills,
    divergence,
    barrier_stalls,
    nsight_rules,
    launch_overhead,
)
