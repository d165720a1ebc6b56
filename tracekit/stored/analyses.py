"""The engine over stored launches: `analyze_stored` picks each launch's context from the whole store, not from
what else the caller selected (the launches of the same kernel on a compatible device, which hold its pairing
candidates and its sweep family), so a launch gets one verdict whichever path asks; results kept in the store
(`stored.cache`)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack, overload

import polars as pl

from tracekit.analysis.engine import analyze
from tracekit.analysis.pairing import pairing_candidates
from tracekit.analysis.predict import NOTHING_TO_PREDICT, Knobs, Prediction
from tracekit.analysis.types import Device, LaunchAnalysis
from tracekit.ceilings import DeviceCeilings, ceilings_for
from tracekit.errors import TracekitError
from tracekit.present.rules.worded import analysis_json, worded
from tracekit.store import Store
from tracekit.stored.cache import (
    cached_analyses,
    context_digests,
    handed_out,
    keep_analyses,
    launch_catalog,
)
from tracekit.stored.inputs import load_inputs
from tracekit.stored.predictions import predict_stored, what_to_try_all


@dataclass(frozen=True)
class AnalysisResults(Sequence[LaunchAnalysis]):
    """The analyses of a selection, in its order."""

    results: tuple[LaunchAnalysis, ...]
    store: Store | None = field(default=None, compare=False, repr=False)  # where they came from (for predict)

    def __len__(self) -> int:
        return len(self.results)

    @overload
    def __getitem__(self, index: int) -> LaunchAnalysis: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[LaunchAnalysis, ...]: ...
    def __getitem__(self, index: int | slice) -> LaunchAnalysis | tuple[LaunchAnalysis, ...]:
        return self.results[index]

    def __iter__(self) -> Iterator[LaunchAnalysis]:
        return iter(self.results)

    def by_launch(self, launch_id: int) -> LaunchAnalysis:
        for result in self.results:
            if result.launch_id == launch_id:
                return result
        raise KeyError(launch_id)

    def predict(self, launch_id: int | None = None, **knobs: Unpack[Knobs]) -> Prediction:
        """What a change would buy (`tracekit.analysis.predict`): knobs block, regs, smem, warps_per_sm, ilp,
        grid; the one launch of these results unless `launch_id` names one."""
        if self.store is None:
            raise TracekitError("these results were not read from a store: predict needs its counters")
        if launch_id is None:
            if len(self.results) != 1:
                raise TracekitError(f"{len(self.results)} launches: name one with launch_id=")
            launch_id = self.results[0].launch_id
        return predict_stored(self.store, self.by_launch(int(launch_id or 0)), **knobs)

    def to_dicts(self) -> list[dict[str, Any]]:
        """The "tracekit.analysis/2" objects, as `tracekit analyze --json` prints them: with `what_to_try` when the
        results came from a store (the predictor needs the launch's counters and the device's ceilings)."""
        if self.store is None:
            return [analysis_json(result) for result in self.results]
        tries = what_to_try_all(self.store, self.results)
        return [analysis_json(r, tries.get(int(r.launch_id or 0), NOTHING_TO_PREDICT)) for r in self.results]

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dicts(), indent=indent, allow_nan=False)

    def to_polars(self) -> pl.DataFrame:
        """One row per launch with the headline numbers (the full objects are in `to_dicts`)."""
        rows = []
        for r in self.results:
            warps, verdict = r.warps, r.classification
            rows.append(
                {
                    "launch_id": r.launch_id,
                    "kernel": r.kernel.name,
                    "kernel_key": r.kernel.key,
                    "duration_ns": r.duration_ns,
                    "mode": verdict.mode,
                    "limiter": verdict.limiter,
                    "flags": list(verdict.flags),
                    "theoretical_occupancy_pct": r.occupancy.theoretical_pct,
                    "achieved_occupancy_pct": r.occupancy.achieved_pct,
                    "trace_occupancy_warps_per_sm": warps.mean_occupancy_warps_per_sm if warps else None,
                    "mean_latency_ns": warps.mean_latency_ns if warps else None,
                    "throughput_warps_per_ns_per_sm": warps.throughput_warps_per_ns_per_sm if warps else None,
                    "tail_fraction": r.tail.tail_fraction if r.tail else None,
                    "needed_occupancy_warps_per_sm": verdict.needed_occupancy_warps_per_sm,
                    "counters_from_launch_id": r.pairing.counters_launch_id,
                    "pairing": r.pairing.status,
                }
            )
        return pl.DataFrame(rows, infer_schema_length=None)


def device_ceilings(device: Device) -> DeviceCeilings | None:
    """The ceilings that judge a launch's device (`tracekit.ceilings.ceilings_for`: a shipped measured profile, else
    nominal peaks), for the engine's `ceilings` section; None where the ceilings cannot be read."""
    try:
        return _ceilings_cached(device.name, device.cc, device.sm_count)
    except TracekitError:
        return None


@functools.lru_cache(maxsize=64)
def _ceilings_cached(name: str | None, cc: str | None, sm_count: int | None) -> DeviceCeilings:
    return ceilings_for(name, cc, sm_count)


def analyze_stored(
    store: Store,
    launches: pl.DataFrame | Iterable[int],
    pairs: Mapping[int, int] | None = None,
    use_cache: bool = True,
    catalog: pl.DataFrame | None = None,
) -> AnalysisResults:
    """The analyses of the given stored launches (a `Store.launches()` frame or launch ids), in their order.
    `pairs` maps a traced launch id to the profiled launch id its counters must come from; `catalog`: the
    store's `launches()` when the caller has just read it (a 100k-launch store takes a second to read)."""
    overrides = dict(pairs or {})
    if not isinstance(launches, pl.DataFrame):
        ids = list(launches)
        launches = store.launches(launch_ids=ids)
        order = {launch_id: i for i, launch_id in enumerate(ids)}
        launches = launches.sort(pl.col("id").replace_strict(order, default=len(order)))
    if launches.height == 0:
        return AnalysisResults((), store)
    for traced, profiled in overrides.items():
        if store.launches(launch_ids=[traced, profiled]).height < len({traced, profiled}):
            raise TracekitError(f"--pair {traced}={profiled}: no such launch in {store.url}")
    catalog = launch_catalog(store) if catalog is None else catalog
    context = pairing_candidates(catalog, launches)
    digests = context_digests(context, overrides)
    found = cached_analyses(store, digests) if use_cache else {}
    missing = [launch_id for launch_id in context if launch_id not in found]
    if missing:
        needed = sorted({i for launch_id in missing for i in context[launch_id]} | set(missing))
        inputs = load_inputs(store, catalog.filter(pl.col("id").is_in(needed)))
        computed = analyze(inputs, targets=set(missing), overrides=overrides, ceilings_for=device_ceilings)
        # worded once, as the cache keeps them (`stored.cache`)
        stored = {r.launch_id: worded(r) for r in computed if r.launch_id is not None}  # stored launches have ids
        found.update(stored)
        if use_cache:
            keep_analyses(store, digests, stored)
    return AnalysisResults(tuple(handed_out(found[launch_id]) for launch_id in launches["id"].to_list()), store)
