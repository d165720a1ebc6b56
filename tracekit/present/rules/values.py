"""What every rule's words read: a finding's values by name (`V`), and the pieces many sentences share (a unit's
rate against its ceiling, "DRAM at 91.2% (dram__...)"). Numbers are written by `tracekit.format`, as every other
number a view shows (256.8 µs, 79.7%, 16,384)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tracekit import format as fmt
from tracekit.analysis.rules.base import Finding, Scalar, Value


def pct(value: float) -> str:
    """A value already in percent: 79.7%."""
    return fmt.percent(value)


def frac(value: float) -> str:
    """A fraction as percent: 0.375 -> 37.5%."""
    return fmt.fraction(value)


def num(value: float | int) -> str:
    """A plain number (warps, cycles, counts): 16,384, 57.3, 0.18."""
    return fmt.number(value)


def dur(ns: float) -> str:
    """A time in ns: 850 ns, 12.45 µs."""
    return fmt.duration(ns)


def times(value: float) -> str:
    """A speed-up or ratio: 1.37x (fmt.times)."""
    return fmt.times(value)


class V:
    """A finding's values by name: `v.n("pct")` a number, `v.s("metric")` a text, `v.o("x")` either or None."""

    def __init__(self, finding: Finding):
        self.id = finding.id
        self.values: tuple[Value, ...] | None = finding.values
        self.map: dict[str, Scalar] = {v.name: v.value for v in finding.values}

    @classmethod
    def of(cls, finding_id: str, items: Iterable[tuple[str, Scalar, str]]) -> V:
        """The values of a finding not built: (name, value, unit) items, as `rules.base.values` takes them."""
        v = cls.__new__(cls)
        v.id, v.values = finding_id, None
        v.map = {name: value for name, value, _ in items}
        return v

    def o(self, name: str) -> Any:
        return self.map.get(name)

    def n(self, name: str) -> float:
        value = self.map.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KeyError(f"{self.id}: no number {name!r}")
        return float(value)

    def s(self, name: str) -> str:
        return str(self.map.get(name))

    def prefixed(self, prefix: str) -> list[tuple[str, Scalar]]:
        pairs = self.map.items() if self.values is None else ((v.name, v.value) for v in self.values)
        return [(name.removeprefix(prefix), value) for name, value in pairs if name.startswith(prefix)]


def unit_group(v: V, prefix: str = "unit") -> str:
    """ "DRAM at 91.2% (dram__...)"-style pieces: label, pct and metric of a unit value group."""
    return f"{v.s(prefix + '_label')} {pct(v.n(prefix + '_pct'))} ({v.s(prefix + '_metric')})"


def amount(v: V, prefix: str, name: str) -> str:
    """A rate value of a unit: 2.02 TB/s, 63.6 TFLOP/s, 12.2 Mblocks/s per SM."""
    unit, value = v.s(prefix + "_rate_unit"), v.n(f"{prefix}_{name}")
    rate = fmt.bandwidth(value) if unit == "B/s" else fmt.si(value, unit)
    return rate + (" per SM" if v.o(prefix + "_unit") == "block_launch" else "")


def achieved_rate(v: V, prefix: str) -> str:
    return amount(v, prefix, "achieved")


# The units of a launch's ceilings section (`AchievableUtilization.unit`) in words; a tensor unit is "Tensor <type>".
UNIT_LABELS = {
    "dram": "DRAM",
    "l2": "L2",
    "shared": "Shared memory",
    "fp32": "FP32",
    "fp64": "FP64",
    "block_launch": "Block launch rate",
}


def label_of(v: V, prefix: str) -> str:
    name = v.s(prefix + "_unit")
    return UNIT_LABELS.get(name) or "Tensor " + name.removeprefix("tensor_")


def share(value: float) -> str:
    """A fraction as percent, three significant digits (79.7%, not 80%), as an access pattern's share says it."""
    percent = 100.0 * value
    return f"{percent:.3g}%" if abs(percent) < 100 else f"{percent:.0f}%"


def pattern_name(kind: str, scattered_fraction: float | None) -> str:
    """An access pattern (`AccessKind`) in words: "stream", "scattered", "mixed (23.4% scattered)"."""
    if kind == "mixed" and scattered_fraction is not None:
        return f"mixed ({share(scattered_fraction)} scattered)"
    return kind


def ceiling_what(v: V, prefix: str) -> str:
    """What the ceiling is: "what a stream reaches", "what scattered 32-byte sectors reach", ..."""
    kind = v.s(prefix + "_pattern") if v.o(prefix + "_pattern") else ""
    pattern = pattern_name(kind, v.o(prefix + "_scattered_fraction"))
    unit = v.s(prefix + "_unit") if v.o(prefix + "_unit") else ""
    if unit.startswith("tensor_"):
        return f"the {unit.removeprefix('tensor_')} tensor roof"
    return {"stream": "what a stream reaches", "scattered": "what scattered 32-byte sectors reach"}.get(
        pattern, f"what a {pattern} access reaches" if pattern else "the measured ceiling"
    )


def against(v: V, prefix: str) -> str:
    """ "60.3% of nominal, 96.8% of what scattered 32-byte sectors reach on this GPU (measured: <file>)"; against
    nominal ceilings only its share of nominal."""
    share = frac(v.n(prefix + "_of_achievable"))
    if v.o(prefix + "_ceiling_source") == "nominal":
        return f"{share} of nominal"
    what = ceiling_what(v, prefix)
    nominal = f"{frac(v.n(prefix + '_of_nominal'))} of nominal, " if v.o(prefix + "_of_nominal") is not None else ""
    return f"{nominal}{share} of {what} on this GPU ({v.s(prefix + '_ceiling_source')})"


EXPLAINED = {"block-launch": "the block launch rate", "atomics": "the atomics draining through one L2 slice"}


# What a template or a piece of advice is: a finding's values to their sentence.
Words = Callable[[V], str]
