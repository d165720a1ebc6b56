"""A launch whose FLOPs are tensor-core FLOPs, right of the ridge on the roofline, is judged by its tensor roof: the
measured ceiling of its input type (bf16, fp16, tf32, fp8, int8).

Hardware reason (Williams, Waterman and Patterson 2009, "Roofline"; Nsight Compute's hierarchical tensor roofline):
right of the ridge point the attainable rate is the compute roof, so how close the tensor pipe is to the roof of its
input type is what there is to gain; occupancy and memory latency are the means, not the bound. Warp-specialized
kernels (wgmma fed by TMA through shared-memory pipelines: cuBLASLt's nvjet, cuDNN's flash attention) keep one or
two blocks per SM by design and hide latency with asynchronous copies, so "low occupancy" is no finding for them.
The tensor FLOPs are Nsight's `sm__ops_path_tensor_src_<type>` counters; the roof is the best cuBLASLt matmul of
that type `tracekit calibrate` measured (or a real kernel that ran faster, issue 26). A launch at
`NEAR_ROOF_FRACTION` (70%) of its tensor roof or more is bound by it: cuBLASLt's own GEMMs on the H100 run at 85-96%
of the roof, cuDNN's flash-attention forward (softmax between its matmuls) at 79%; 70% is where gradual saturation
begins for memory (rules/gradual_saturation.py), and below it a kernel has room the roof does not explain.
"""

from __future__ import annotations

from tracekit.analysis.achievable import AchievableUtilization
from tracekit.analysis.rules.base import Finding, RuleContext, achievable_values, nominal_note, values

RULE_ID = "tensor-roof"
INPUTS = ("ceilings",)
FLAGS: tuple[str, ...] = ()  # the flags it can raise
# The share of its tensor roof at which a compute-side launch is bound by the tensor pipe.
NEAR_ROOF_FRACTION = 0.7


def on_tensor_roof(ctx: RuleContext) -> AchievableUtilization | None:
    """The launch's tensor unit when its roofline point is a tensor type's, right of the ridge; else None."""
    section = ctx.ceilings
    roofline = section.roofline if section is not None else None
    if section is None or roofline is None or not (roofline.flop_kind or "").startswith("tensor_"):
        return None
    if roofline.bound_side != "compute":
        return None
    return section.unit(roofline.flop_kind or "")


def _point(tensor: AchievableUtilization, ctx: RuleContext) -> tuple:
    roofline = ctx.ceilings.roofline if ctx.ceilings is not None else None
    dram = next((p for p in roofline.points if p.level == "dram"), None) if roofline is not None else None
    intensity = dram.arithmetic_intensity_flop_per_byte if dram is not None else None
    return (
        *achievable_values("tensor", tensor),
        *values(
            ("tensor_type", tensor.unit.removeprefix("tensor_")),
            ("intensity", intensity, "FLOP/B"),
            ("near_fraction", NEAR_ROOF_FRACTION, "fraction"),
        ),
        *nominal_note(ctx),
    )


def bound(ctx: RuleContext) -> list[Finding]:
    """The tensor pipe as the limiter: a compute-side tensor launch at NEAR_ROOF_FRACTION of its roof or more."""
    tensor = on_tensor_roof(ctx)
    if tensor is None or tensor.of_achievable < NEAR_ROOF_FRACTION:
        return []
    return [
        Finding(
            "tensor-roof.near-roof",
            RULE_ID,
            "tensor-roof.near-roof",
            _point(tensor, ctx),
            limiter="tensor",
            advice=("reduce.tensor",),
        )
    ]


def apply(ctx: RuleContext) -> list[Finding]:
    """Where a tensor launch right of the ridge sits under its tensor roof (the verdict asks only when `bound` did
    not decide): a pipe busy every cycle can still be far below the roof (mma.sync on Hopper)."""
    tensor = on_tensor_roof(ctx)
    if tensor is None:
        return []
    return [Finding("tensor-roof.point", RULE_ID, "tensor-roof.point", _point(tensor, ctx))]
