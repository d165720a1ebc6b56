"""The words of `tracekit.analysis.rules.tensor_roof`'s findings and advice, from their values."""

from __future__ import annotations

from tracekit.present.rules.values import (
    V,
    Words,
    achieved_rate,
    amount,
    frac,
    num,
)


def _tensor_roof(v: V, near: bool) -> str:
    """The launch under the tensor roof of its input type (rules/tensor_roof.py)."""
    kind = v.s("tensor_type")
    where = (
        f"right of the ridge ({num(v.n('intensity'))} FLOP per DRAM byte)"
        if v.o("intensity") is not None
        else "right of the ridge"
    )
    text = (
        f"On the roofline the launch is {where}: its {kind} tensor work, {achieved_rate(v, 'tensor')}, is "
        f"{frac(v.n('tensor_of_achievable'))} of the {kind} tensor roof ({amount(v, 'tensor', 'ceiling_value')}, "
        f"{v.s('tensor_ceiling_source')})"
    )
    if near:
        return (
            f"{text}, at or above the {frac(v.n('near_fraction'))} at which the tensor pipe bounds it: occupancy and "
            "memory latency are not what limits it."
        )
    return text + "."


TEMPLATES: dict[str, Words] = {
    "tensor-roof.near-roof": lambda v: _tensor_roof(v, near=True),
    "tensor-roof.point": lambda v: _tensor_roof(v, near=False),
}

ADVICE: dict[str, Words] = {
    "reduce.tensor": lambda v: (
        f"The tensor pipe is {frac(v.n('tensor_of_achievable'))} of the {v.s('tensor_type')} roof: the rest is the gap "
        "to the best matmul of that type (larger tiles, fewer non-tensor instructions between the MMAs, wgmma "
        "rather than mma.sync on Hopper), or a faster input type."
    ),
}
