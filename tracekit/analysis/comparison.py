"""Two versions of a kernel side by side, and the regression gates CI runs on them.

Works on analysis results (`LaunchAnalysis`), field by field through their JSON paths. Each side may hold
several launches of its kernel; then the change is taken between the means, and a change no larger than the
run-to-run spread of either side (max - min over its launches) is marked as within noise rather than reported as
a difference.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from tracekit.analysis.types import LaunchAnalysis, to_json_dict
from tracekit.errors import TracekitError

# (field, dotted path in the result, which direction is better: "lower" | "higher" | None)
COMPARED_FIELDS: list[tuple[str, str, str | None]] = [
    ("duration_ns", "duration_ns", "lower"),
    ("theoretical_occupancy_pct", "occupancy.theoretical_pct", None),
    ("achieved_occupancy_pct", "occupancy.achieved_pct", None),
    ("trace_occupancy_warps_per_sm", "warps.mean_occupancy_warps_per_sm", None),
    ("throughput_warps_per_ns_per_sm", "warps.throughput_warps_per_ns_per_sm", "higher"),
    ("mean_latency_ns", "warps.mean_latency_ns", "lower"),
    ("p50_latency_ns", "warps.p50_latency_ns", "lower"),
    ("p99_latency_ns", "warps.p99_latency_ns", "lower"),
    ("littles_law_relative_error", "littles_law.relative_error", None),
    ("tail_ns", "tail.tail_ns", "lower"),
    ("tail_fraction", "tail.tail_fraction", "lower"),
    ("latency_stall_cycles_per_issue", "stalls.latency_cycles_per_issue", "lower"),
    ("bandwidth_stall_cycles_per_issue", "stalls.bandwidth_cycles_per_issue", "lower"),
    ("needed_occupancy_warps_per_sm", "classification.needed_occupancy_warps_per_sm", None),
]
FIELD_PATHS = {name: path for name, path, _ in COMPARED_FIELDS}
FIELD_NAMES = list(FIELD_PATHS)
TEXT_FIELDS: list[tuple[str, str]] = [
    ("verdict", "classification.mode"),
    ("limiter", "classification.limiter"),
    ("occupancy_limiter", "occupancy.limiter"),
]


def lookup(result: dict[str, Any], path: str) -> Any:
    value: Any = result
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True)
class FieldChange:
    field: str
    a: float | None  # mean over side A's launches
    b: float | None
    absolute_change: float | None  # b - a
    relative_change: float | None  # (b - a) / |a|
    spread_a: float | None  # max - min over A's launches (None with one launch)
    spread_b: float | None
    within_noise: bool | None  # None when no spread is known
    better: str | None  # "lower" | "higher" | None

    @property
    def improved(self) -> bool | None:
        if self.absolute_change is None or self.better is None or self.within_noise:
            return None
        return (self.absolute_change < 0) == (self.better == "lower")


@dataclass(frozen=True)
class Comparison:
    kernel_a: str | None
    kernel_b: str | None
    launches_a: int
    launches_b: int
    fields: list[FieldChange]
    text_fields: list[tuple[str, str | None, str | None]]

    def field(self, name: str) -> FieldChange:
        """A field by its comparison name, dotted path, or the path's last part (`mean_latency_ns`)."""
        path = lookup_path(name)
        for change in self.fields:
            if FIELD_PATHS[change.field] == path:
                return change
        raise TracekitError(f"unknown comparison field {name!r} (known: {', '.join(FIELD_NAMES)})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel_a": self.kernel_a,
            "kernel_b": self.kernel_b,
            "launches_a": self.launches_a,
            "launches_b": self.launches_b,
            "fields": [asdict(change) | {"improved": change.improved} for change in self.fields],
            "text_fields": [{"field": f, "a": a, "b": b, "changed": a != b} for f, a, b in self.text_fields],
        }


def lookup_path(name: str) -> str | None:
    """A gate may name a field by its comparison name, its dotted path, or the path's last part."""
    for field_name, path in FIELD_PATHS.items():
        if name in (field_name, path, path.rsplit(".", 1)[-1]):
            return path
    return None


def _numbers(results: list[dict[str, Any]], path: str) -> list[float]:
    values = (lookup(result, path) for result in results)
    return [float(value) for value in values if isinstance(value, int | float) and not isinstance(value, bool)]


def compare_results(analyses_a: Sequence[LaunchAnalysis], analyses_b: Sequence[LaunchAnalysis]) -> Comparison:
    """Side A against side B, field by field. Fields are named by their path in the analysis JSON, the same
    paths a script reads from `tracekit analyze --json`."""
    if not analyses_a or not analyses_b:
        raise TracekitError("nothing to compare: one side has no launches")
    results_a = [to_json_dict(result) for result in analyses_a]
    results_b = [to_json_dict(result) for result in analyses_b]
    changes = []
    for name, path, better in COMPARED_FIELDS:
        values_a, values_b = _numbers(results_a, path), _numbers(results_b, path)
        mean_a = statistics.fmean(values_a) if values_a else None
        mean_b = statistics.fmean(values_b) if values_b else None
        spread_a = max(values_a) - min(values_a) if len(values_a) > 1 else None
        spread_b = max(values_b) - min(values_b) if len(values_b) > 1 else None
        absolute = relative = within_noise = None
        if mean_a is not None and mean_b is not None:
            absolute = mean_b - mean_a
            relative = absolute / abs(mean_a) if mean_a else None
            spreads = [s for s in (spread_a, spread_b) if s is not None]
            within_noise = abs(absolute) <= max(spreads) if spreads else None
        changes.append(FieldChange(name, mean_a, mean_b, absolute, relative, spread_a, spread_b, within_noise, better))
    texts = [(name, lookup(results_a[0], path), lookup(results_b[0], path)) for name, path in TEXT_FIELDS]
    return Comparison(
        lookup(results_a[0], "kernel.name"),
        lookup(results_b[0], "kernel.name"),
        len(results_a),
        len(results_b),
        changes,
        texts,
    )


# ---- regression gates ---------------------------------------------------------------------------------------

_GATE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>|<)\s*([+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(%?)\s*$")


@dataclass(frozen=True)
class Gate:
    """`duration_ns>+5%`: fail when B's value rose by more than 5% over A's. `<-5%` fails on a fall, and a value
    without `%` is an absolute change in the field's unit (`tail_fraction>+0.05`)."""

    text: str
    field: str
    operator: str
    threshold: float
    relative: bool


class GateOutcome(StrEnum):
    """What a gate found: its change crossed the threshold (failed) or not (passed), or its field is missing on a
    side so nothing could be compared (`tracekit compare` fails such a gate: a CI gate must not pass by not
    looking)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_EVALUATED = "not-evaluated"


@dataclass(frozen=True)
class GateResult:
    """A gate against a comparison, as data: `tracekit.present.comparison.gate_message` words it."""

    gate: Gate
    failed: bool  # the change crossed the threshold (False when not evaluated)
    change: float | None  # the relative (fraction) or absolute change the gate looked at; None when not evaluated
    field_change: FieldChange  # the gated field on both sides (means, spreads, within the run-to-run spread)

    @property
    def outcome(self) -> GateOutcome:
        if self.change is None:
            return GateOutcome.NOT_EVALUATED
        return GateOutcome.FAILED if self.failed else GateOutcome.PASSED

    @property
    def missing_sides(self) -> tuple[str, ...]:
        """The sides ("A", "B") without a value of the gated field."""
        return tuple(side for side, value in (("A", self.field_change.a), ("B", self.field_change.b)) if value is None)


def parse_gate(text: str) -> Gate:
    match = _GATE.match(text)
    if not match:
        raise TracekitError(
            f"--fail-if {text!r}: expected FIELD>+N% or FIELD<-N% (or an absolute N without %), "
            f"for example 'duration_ns>+5%'"
        )
    field, operator, number, percent = match.groups()
    if lookup_path(field) is None:
        raise TracekitError(f"--fail-if {text!r}: unknown field {field!r} (known: {', '.join(FIELD_NAMES)})")
    threshold = float(number) / 100 if percent else float(number)
    return Gate(text.strip(), field, operator, threshold, bool(percent))


def evaluate_gate(comparison: Comparison, gate: Gate) -> GateResult:
    change = comparison.field(gate.field)
    observed = change.relative_change if gate.relative else change.absolute_change
    if observed is None:
        return GateResult(gate, False, None, change)
    failed = observed > gate.threshold if gate.operator == ">" else observed < gate.threshold
    return GateResult(gate, failed, observed, change)
