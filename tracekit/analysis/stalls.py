"""Warp stall reasons: warp cycles per issued instruction, split by reason and grouped for the latency model.

Nsight Compute's Warp State Statistics section splits the average time between two instructions a warp issues
("Warp Cycles Per Issued Instruction") into stall reasons. In Volkov's model the question is whether warps wait
on *latency* (a dependency or a fixed delay, hidden by more warps or more independent instructions per warp)
or on *bandwidth* (a queue or pipe that is full, where more warps only queue longer). The groups below encode
that for each reason, following the Kernel Profiling Guide's descriptions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from tracekit.counters import WARP_CYCLES_PER_ISSUE, candidate_rows, metric_row

# Waiting on a dependency or a fixed delay; the unit behind it has spare capacity, so other warps (occupancy)
# or other independent instructions of the same warp (ILP) can fill the time.
LATENCY_REASONS = frozenset(
    {
        "long_scoreboard",  # result of an L1TEX operation (global, local, texture, surface memory)
        "short_scoreboard",  # result of an MIO operation (shared memory, special functions, some shuffles)
        "wait",  # fixed-latency dependency: the compiler-set stall count after an arithmetic instruction
        "barrier",  # sibling warps at __syncthreads(): the block waits for its slowest warp's latency chain
        "membar",  # a memory fence waits until earlier memory operations are visible: memory latency
        "branch_resolving",  # the branch target / PC update is computed in a fixed-latency step
        "drain",  # after EXIT, outstanding stores must reach memory: store latency at the warp's end
        "imc_miss",  # immediate-constant cache miss: the constant is fetched from memory (a miss latency, no queue)
        "sleeping",  # nanosleep/backoff: a deliberate fixed delay other warps can overlap
        "gmma",  # Hopper warpgroup MMA: waiting for an asynchronous tensor-core result, like a scoreboard
    }
)

# Waiting because a shared queue or pipe is full: a throughput limit is being hit (at least in bursts).
BANDWIDTH_REASONS = frozenset(
    {
        "lg_throttle",  # the local/global (LSU) instruction queue is full
        "mio_throttle",  # the MIO queue (shared memory, special functions, ...) is full
        "tex_throttle",  # the texture (L1TEX tex pipe) queue is full
        "math_pipe_throttle",  # the math pipe the next instruction needs is busy
    }
)

# Neither: issue bookkeeping and front-end/structural events that more warps or fewer bytes do not address.
OTHER_REASONS = frozenset(
    {
        "selected",  # the cycle the warp issues: 1 per instruction by definition
        "not_selected",  # eligible, but the scheduler picked another warp: there was enough parallelism
        "dispatch_stall",  # ready, but the dispatcher held it back for a pipeline conflict (structural hazard)
        "no_instruction",  # instruction not fetched yet (instruction cache miss, after a jump)
        "misc",  # Nsight's catch-all
    }
)

# Families of stall metrics, best first. "per_issue" values are already cycles per issued instruction; the
# others are converted: `per_warp_active.pct` is a share of active warp cycles (times warp cycles per issue
# gives cycles per issue), while warp-latency and PC-sampling values are only proportional to stall cycles
# and are scaled so that the reasons add up to the reported warp cycles per issued instruction.
_FAMILIES: tuple[tuple[str, re.Pattern[str], str, float], ...] = (
    (
        "per_issue",
        re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+?)_per_issue_active\.ratio$"),
        "direct",
        1.0,
    ),
    (
        "per_issue",
        re.compile(r"^smsp__average_warps_issue_stalled_([a-z0-9_]+?)_per_issue_active\.pct$"),
        "direct",
        0.01,
    ),
    (
        "per_warp_active",
        re.compile(r"^smsp__warp_issue_stalled_([a-z0-9_]+?)_per_warp_active\.pct$"),
        "share_of_active",
        0.01,
    ),
    (
        "warp_latency",
        re.compile(r"^smsp__average_warp_latency_issue_stalled_([a-z0-9_]+?)\.ratio$"),
        "proportional",
        1.0,
    ),
    ("pc_sampling", re.compile(r"^smsp__pcsamp_warps_issue_stalled_([a-z0-9_]+)$"), "proportional", 1.0),
)
_REASON_SPELLINGS = {"no_instructions": "no_instruction"}  # PC sampling spells it with an s


def stall_group(reason: str) -> str:
    """ "latency", "bandwidth" or "other" (reasons this module does not know count as other)."""
    if reason in LATENCY_REASONS:
        return "latency"
    if reason in BANDWIDTH_REASONS:
        return "bandwidth"
    return "other"


@dataclass(frozen=True)
class StallBreakdown:
    """Stall cycles per issued instruction, per reason and per group; all None when the report has none."""

    by_reason: dict[str, float] | None = None  # reason -> warp cycles per issued instruction
    latency_cycles_per_issue: float | None = None
    bandwidth_cycles_per_issue: float | None = None
    other_cycles_per_issue: float | None = None
    total_cycles_per_issue: float | None = None  # sum over the reasons
    reported_cycles_per_issue: float | None = None  # Nsight's own total, when the report has it
    source: str | None = None  # the metric family used: per_issue, per_warp_active, warp_latency, pc_sampling
    metric_names: dict[str, str] = field(default_factory=dict)  # reason -> the metric it was read from
    unknown_reasons: tuple[str, ...] = ()  # reasons counted as "other" because this module does not know them

    @property
    def available(self) -> bool:
        return self.by_reason is not None

    def group_cycles(self, group: str) -> float | None:
        return {
            "latency": self.latency_cycles_per_issue,
            "bandwidth": self.bandwidth_cycles_per_issue,
            "other": self.other_cycles_per_issue,
        }[group]

    @property
    def stalled_cycles_per_issue(self) -> float | None:
        """All cycles but the issue cycle itself ("selected"): the time warps actually wait."""
        if self.by_reason is None or self.total_cycles_per_issue is None:
            return None
        return self.total_cycles_per_issue - self.by_reason.get("selected", 0.0)

    def share(self, group: str) -> float | None:
        """The group's share of the stalled cycles (issue cycles excluded)."""
        stalled, cycles = self.stalled_cycles_per_issue, self.group_cycles(group)
        if stalled is None or cycles is None or stalled <= 0:
            return None
        if group == "other" and self.by_reason is not None:
            cycles -= self.by_reason.get("selected", 0.0)
        return cycles / stalled

    def dominant(self, count: int = 3) -> list[tuple[str, float]]:
        """The largest stall reasons (issue cycles excluded), largest first."""
        if not self.by_reason:
            return []
        ranked = sorted(((r, v) for r, v in self.by_reason.items() if r != "selected"), key=lambda rv: -rv[1])
        return ranked[:count]


_REASONS: dict[tuple[re.Pattern[str], str], str | None] = {}  # (pattern, metric name) -> reason: names repeat


def _reason(pattern: re.Pattern[str], name: str) -> str | None:
    """The stall reason `name` reports under `pattern`, or None (memoized: a thousand launches share their
    few thousand metric names, and matching each name of each launch cost seconds)."""
    key = (pattern, name)
    if key not in _REASONS:
        match = pattern.match(name)
        _REASONS[key] = _REASON_SPELLINGS.get(match.group(1), match.group(1)) if match else None
    return _REASONS[key]


def _read_family(metrics: pl.DataFrame, pattern: re.Pattern[str], scale: float) -> dict[str, tuple[str, float]]:
    found: dict[str, tuple[str, float]] = {}
    for name, value in candidate_rows(metrics, pattern):
        reason = _reason(pattern, name)
        if reason is not None:
            if reason.endswith("_not_issued"):  # PC sampling's subset of samples where nothing issued
                continue
            found.setdefault(reason, (name, float(value) * scale))
    return found


def stall_breakdown(metrics: pl.DataFrame) -> StallBreakdown:
    """Split warp cycles per issued instruction by stall reason, from the best stall metrics the launch has."""
    if metrics.is_empty() or "name" not in metrics.columns:
        return StallBreakdown()
    reported_row = metric_row(metrics, *WARP_CYCLES_PER_ISSUE)
    reported = reported_row[1] if reported_row else None
    for source, pattern, kind, scale in _FAMILIES:
        found = _read_family(metrics, pattern, scale)
        if not found:
            continue
        raw = {reason: value for reason, (_, value) in found.items()}
        if kind == "direct":
            by_reason = raw
        elif reported is None:
            continue  # a share or a proportion cannot become cycles without the total
        elif kind == "share_of_active":
            by_reason = {reason: share * reported for reason, share in raw.items()}
        else:
            raw_total = sum(raw.values())
            if raw_total <= 0:
                continue
            by_reason = {reason: value / raw_total * reported for reason, value in raw.items()}
        groups = {"latency": 0.0, "bandwidth": 0.0, "other": 0.0}
        for reason, cycles in by_reason.items():
            groups[stall_group(reason)] += cycles
        known = LATENCY_REASONS | BANDWIDTH_REASONS | OTHER_REASONS
        return StallBreakdown(
            by_reason=dict(sorted(by_reason.items())),
            latency_cycles_per_issue=groups["latency"],
            bandwidth_cycles_per_issue=groups["bandwidth"],
            other_cycles_per_issue=groups["other"],
            total_cycles_per_issue=sum(by_reason.values()),
            reported_cycles_per_issue=reported,
            source=source,
            metric_names={reason: name for reason, (name, _) in sorted(found.items())},
            unknown_reasons=tuple(sorted(r for r in by_reason if r not in known)),
        )
    return StallBreakdown(reported_cycles_per_issue=reported)
