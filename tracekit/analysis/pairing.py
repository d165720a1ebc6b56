"""Which profiled launch a warp trace (or an Nsight Systems timing) takes its counters from: the one rule.

A trace has times but no counters; Nsight Compute has counters of another run of the same kernel. They are paired
when the kernel key matches (`KernelKey.matches`) and the run agrees:
- duration: the trace's span (first warp start to last warp end, or the timed duration) and the profiled duration
  within a factor of DURATION_TOLERANCE. Profiling flushes caches and replays the kernel, tracing adds clock reads,
  a trace ends when its warps exit while atomics still drain, and short kernels carry a fixed launch cost, so the
  two never agree exactly: 0.4x to 1.1x on the H100 samples and verdict cases (atomics on one address 0.46x, 8
  blocks on 132 SMs 0.40x). Two inputs of one kernel that run 4-6x apart (an identity vs a random permutation)
  are still told apart;
- order: when the trace's file and the profiled file hold the same number of launches of the key, the k-th pairs
  with the k-th, if their durations agree.
Several profiled launches agreeing with one another (repeats of one workload) pair with the closest in duration; if
they disagree with one another the match is ambiguous and nothing is paired. Of one run stored twice (a report and
its details page, which holds fewer counters), the export with more counters is borrowed. The result says which and
why, as a code and the durations it compared (`tracekit.present.rules.notes` words it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import polars as pl

from tracekit.analysis.types import Pairing, PairingReason
from tracekit.kernel_key import KernelKey, neutral_kernel_name

DURATION_TOLERANCE = 3.0  # trace span / profiled duration within [1/3, 3]
REPEAT_SPREAD = 1.25  # profiled launches this close to one another are repeats of one workload


@dataclass(frozen=True)
class PairingCandidate:
    """What the rule needs to know of one launch."""

    launch_id: int
    key: KernelKey
    has_counters: bool
    duration_ns: float | None  # the trace's span, or the profiled/timed duration
    import_id: int | None
    order: int  # position within its import (launch_index)
    counter_count: int = 0  # how many counters it holds: of one run exported twice, the fuller export is borrowed


def _ratio(a: float, b: float) -> float:
    return abs(math.log(a / b))


def pair_launch(launch: PairingCandidate, profiled: list[PairingCandidate], timed: list[PairingCandidate]) -> Pairing:
    """The pairing of `launch` (which has no counters) among the `profiled` launches. `timed` holds every launch
    without counters, for the order rule."""
    same = [p for p in profiled if launch.key.matches(p.key)]
    ids = tuple(p.launch_id for p in same)
    if not same:
        return Pairing("unpaired", None, PairingReason.NO_TWIN, ids)
    if launch.duration_ns is None or launch.duration_ns <= 0:
        return Pairing("unpaired", None, PairingReason.NO_DURATION, ids)
    span = launch.duration_ns
    # the candidates' durations against this launch's: none agrees (the other outcomes replace the reason)
    checked = Pairing(
        "unpaired", None, PairingReason.DURATION_MISMATCH, ids, tuple(p.duration_ns for p in same), duration_ns=span
    )
    agreeing = [p for p in same if p.duration_ns and _ratio(span, p.duration_ns) <= math.log(DURATION_TOLERANCE)]
    if not agreeing:
        return checked

    # Order within the run: the k-th launch of the key in this file with the k-th in the profiled file.
    siblings = sorted(
        (t for t in timed if t.import_id == launch.import_id and launch.key.matches(t.key)), key=lambda t: t.order
    )
    by_import: dict[int | None, list[PairingCandidate]] = {}
    for p in same:
        by_import.setdefault(p.import_id, []).append(p)
    # the same run may be stored twice (a report and its details page): the export with more counters goes first
    for group in sorted(by_import.values(), key=lambda g: -max(p.counter_count for p in g)):
        if len(group) == len(siblings) > 1:
            rank = [t.launch_id for t in siblings].index(launch.launch_id)
            match = sorted(group, key=lambda p: p.order)[rank]
            if match in agreeing:
                return replace(
                    checked,
                    status="paired",
                    counters_launch_id=match.launch_id,
                    reason=PairingReason.ORDER,
                    counters_duration_ns=match.duration_ns,
                    agreeing_count=len(agreeing),
                    order_position=rank + 1,
                    order_count=len(siblings),
                )

    durations = [p.duration_ns for p in agreeing if p.duration_ns]
    if len(agreeing) > 1 and max(durations) / min(durations) > REPEAT_SPREAD:
        return replace(checked, reason=PairingReason.AMBIGUOUS, agreeing_count=len(agreeing))
    best = min(agreeing, key=lambda p: (_ratio(span, p.duration_ns or span), -p.counter_count))
    return replace(
        checked,
        status="paired",
        counters_launch_id=best.launch_id,
        reason=PairingReason.DURATION,
        counters_duration_ns=best.duration_ns,
        agreeing_count=len(agreeing),
    )


def pairing_candidates(catalog: pl.DataFrame, targets: pl.DataFrame) -> dict[int, list[int]]:
    """Each target's pairing candidates (its context): the launches of `catalog` (`Store.launches()` frames, both)
    of its kernel name as any demangler spells it (so every launch `KernelKey.matches` could pair: a PyTorch
    trace's kernel and Nsight Compute's spelling of it) on a compatible device (same device name and compute
    capability, or one of them unknown). The targets of one context share one list."""
    names = {name: neutral_kernel_name(name) for name in catalog["kernel_name"].unique().to_list()}
    groups: dict[tuple[str, str | None, str | None], list[int]] = {}
    columns = ("id", "kernel_name", "device_name", "compute_capability")
    for launch_id, name, device, cc in catalog.select(columns).iter_rows():
        groups.setdefault((names.get(name) or "", device, cc), []).append(launch_id)
    by_name: dict[str, list[tuple[str | None, str | None, list[int]]]] = {}
    for (name, device, cc), ids in groups.items():
        by_name.setdefault(name, []).append((device, cc, ids))
    memo: dict[tuple[str, str | None, str | None], list[int]] = {}
    context = {}
    for launch_id, name, device, cc in targets.select(columns).iter_rows():
        key = (names.get(name) or neutral_kernel_name(name), device, cc)
        if key not in memo:
            memo[key] = sorted(
                i
                for other_device, other_cc, ids in by_name.get(key[0], [])
                if (other_device is None or device is None or other_device == device)
                and (other_cc is None or cc is None or other_cc == cc)
                for i in ids
            )
        context[launch_id] = memo[key]
    return context
