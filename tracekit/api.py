"""The one door from stored launches to their analyses, for the CLI, the reports, the dashboard and notebooks.

`analyze_stored` picks each launch's context from the whole store, not from what else the caller selected: the
launches of the same kernel (normalized name) on a compatible device, which hold its pairing candidates and its
sweep family. So a launch gets one verdict whichever path asks. Results are cached in the store, keyed by engine
version and by a digest of that context: an import or a delete that changes the context recomputes them.

    import tracekit
    store = tracekit.open("runs.sqlite")
    store.import_file("report.ncu-rep")
    results = store.analyze(import_id=1)
    results.to_polars()
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import polars as pl

from tracekit import counters
from tracekit.analysis.aggregates import latency_histogram, occupancy_over_time
from tracekit.analysis.comparison import Comparison, compare_results
from tracekit.analysis.engine import ENGINE_VERSION, LaunchInput, analyze, launch_sm_count
from tracekit.analysis.gpu_time import GpuTime, gpu_time
from tracekit.analysis.metric_comparison import metric_comparison
from tracekit.analysis.predict.types import Prediction as Prediction  # typed by the launch page's what-if
from tracekit.analysis.region_timeline import MAX_SLICES as MAX_SLICES  # the dashboard's region panel says it
from tracekit.analysis.region_timeline import (
    RegionLayout,
    RegionTimeline,
    region_figure_frames,
    region_layout,
    region_occupancy_curves,
    region_timeline,
)
from tracekit.analysis.steps import StepsResult
from tracekit.analysis.steps.compare import compare_steps
from tracekit.analysis.steps.critical_path import StepTimeline
from tracekit.analysis.steps.program import ProgramSteps
from tracekit.analysis.steps.types import Step, Suggestion
from tracekit.analysis.steps.whatif import LaunchSpeedup, StepWhatIf, step_line
from tracekit.analysis.steps.whatif import step_what_if as replay_on_step
from tracekit.analysis.timeline import binned_activity, relative_times
from tracekit.analysis.timeline import warps_in_window as warps_in_window  # the launch page's zoom
from tracekit.analysis.types import LaunchAnalysis, from_json_dict, to_cache_text, to_json_dict
from tracekit.analysis.warp_occupancy import REQUIRED_COLUMNS as ANALYSED_WARP_COLUMNS  # what the engine reads
from tracekit.analysis.what_if import WhatIf
from tracekit.analysis.what_if import what_if as occupancy_what_if
from tracekit.errors import TracekitError
from tracekit.kernel_key import neutral_kernel_name
from tracekit.notebook import NotebookDisplay
from tracekit.parsed import WARP_SCHEMA, empty_frame
from tracekit.steps import (
    compared,
    events_of,
    import_trace,
    program_of,
    program_of_events,
    read_events,
    replayed_events,
    steps_of,
    stored_events,
)
from tracekit.store import Store
from tracekit.store.regions import launch_regions, region_counts

log = logging.getLogger(__name__)


class LaunchResult(NotebookDisplay, LaunchAnalysis):
    """A launch's analysis as this door hands it out: the engine's result, which in a notebook displays itself
    (`_repr_html_`) and gives its plotly figures (`.figure(name)`). The engine's type knows no display."""


_FIELDS = tuple(f.name for f in dataclasses.fields(LaunchAnalysis))


def _handed_out(result: LaunchAnalysis) -> LaunchResult:
    if isinstance(result, LaunchResult):
        return result
    return LaunchResult(**{name: getattr(result, name) for name in _FIELDS})


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

    def predict(self, launch_id: int | None = None, **knobs: Any) -> Any:
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
            return [to_json_dict(result) for result in self.results]
        tries = what_to_try_all(self.store, self.results)
        return [
            _with_tries(result, tries.get(int(result.launch_id or 0), NOTHING_TO_PREDICT)) for result in self.results
        ]

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


def _context_name(name: str | None) -> str:
    """The name a launch's context is gathered by: the key's name as any demangler spells it, so the context
    holds every launch `KernelKey.matches` could pair (a PyTorch trace's kernel and ncu's spelling of it)."""
    return neutral_kernel_name(name)


def _context(catalog: pl.DataFrame, targets: pl.DataFrame) -> dict[int, list[int]]:
    """Each target's context: the stored launches of its normalized kernel name on a compatible device (same
    device name and compute capability, or one of them unknown)."""
    names = {name: _context_name(name) for name in catalog["kernel_name"].unique().to_list()}
    groups: dict[tuple[str, str | None, str | None], list[int]] = {}
    for launch_id, name, device, cc in catalog.select(
        "id", "kernel_name", "device_name", "compute_capability"
    ).iter_rows():
        groups.setdefault((names.get(name) or "", device, cc), []).append(launch_id)
    by_name: dict[str, list[tuple[str | None, str | None, list[int]]]] = {}
    for (name, device, cc), ids in groups.items():
        by_name.setdefault(name, []).append((device, cc, ids))
    memo: dict[tuple[str, str | None, str | None], list[int]] = {}
    context = {}
    for launch_id, name, device, cc in targets.select(
        "id", "kernel_name", "device_name", "compute_capability"
    ).iter_rows():
        key = (names.get(name) or _context_name(name), device, cc)
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


def _digests(context: Mapping[int, list[int]], overrides: Mapping[int, int]) -> dict[int, str]:
    """Each launch's context digest, computed once per distinct context (the launches of one kernel share theirs:
    a digest per launch hashed 100k launches' contexts of 7k ids each)."""
    by_context: dict[int, str] = {}
    digests = {}
    for launch_id, ids in context.items():
        key = id(ids)  # `_context` gives the launches of one context the same list
        if key not in by_context:
            members = set(ids)
            relevant = sorted((k, v) for k, v in overrides.items() if k in members)
            by_context[key] = hashlib.sha256(json.dumps([ids, relevant]).encode()).hexdigest()
        digests[launch_id] = by_context[key]
    return digests


def load_inputs(store: Store, launches: pl.DataFrame) -> list[LaunchInput]:
    """One `LaunchInput` per row of `launches`: its metrics and its warps when it was traced (the columns the engine
    reads: sections, units and clock reads stay compressed), its named regions."""
    launch_ids = launches["id"].to_list()
    metrics = store.metrics(launch_ids, counters.READ_COLUMNS) if launch_ids else pl.DataFrame()
    by_launch = _by_launch(metrics)
    traced = store.warp_counts(launch_ids) if launch_ids else {}  # one query, not one per untraced launch
    with_regions = region_counts(store, launch_ids) if launch_ids else {}
    warnings = store.import_warnings(launches["import_id"].unique().to_list()) if launch_ids else {}
    no_warps = empty_frame({k: WARP_SCHEMA[k] for k in ANALYSED_WARP_COLUMNS})
    no_metrics, no_regions = metrics.clear(), pl.DataFrame()  # shared: frames are immutable (56k launches of a family)
    return [
        LaunchInput(
            launch={**row, "import_warnings": warnings.get(row["import_id"], [])},
            metrics=by_launch.get(row["id"], no_metrics),
            warps=store.warps(row["id"], ANALYSED_WARP_COLUMNS) if row["id"] in traced else no_warps,
            regions=launch_regions(store, row["id"]) if row["id"] in with_regions else no_regions,
        )
        for row in launches.iter_rows(named=True)
    ]


def _by_launch(metrics: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """Each launch's metric rows in the order listed: slices of the frame sorted stably by launch, no copy per launch
    (the store keeps them launch by launch; a store written before that interleaved a raw page's launches, and is
    sorted here: `partition_by` took ~25% longer on 1,008 launches of 2,238 metrics)."""
    found: dict[int, pl.DataFrame] = {}
    if not metrics.height:
        return found
    ordered = metrics if metrics["launch_id"].is_sorted() else metrics.sort("launch_id", maintain_order=True)
    runs = ordered.get_column("launch_id").rle()
    offset = 0
    for length, launch_id in zip(runs.struct.field("len").to_list(), runs.struct.field("value").to_list(), strict=True):
        found[launch_id] = ordered.slice(offset, length)
        offset += length
    return found


def _cached(store: Store, digests: Mapping[int, str]) -> dict[int, LaunchAnalysis]:
    """The stored results of these launches that this engine computed in the same context (by digest)."""
    cached = store.cached_results(list(digests), ENGINE_VERSION)
    return {
        launch_id: from_json_dict(LaunchResult, json.loads(text))
        for launch_id, (digest, text) in cached.items()
        if digests.get(launch_id) == digest
    }


def cached_result(store: Store, launch_id: int, pair: int | None = None) -> LaunchAnalysis | None:
    """The launch's analysis if the store holds it for the launch's current context, else None; nothing is
    computed (the dashboard draws a big launch's page first and asks `analyze_stored` for its verdict after)."""
    launch = store.launches(launch_ids=[launch_id])
    if launch.height == 0:
        return None
    overrides = {launch_id: pair} if pair is not None else {}
    return _cached(store, _digests(_context(launch_catalog(store), launch), overrides)).get(launch_id)


def device_ceilings(device: Any) -> Any:
    """The ceilings that judge a launch's device (`tracekit.ceilings.ceilings_for`: a shipped measured profile, else
    nominal peaks), for the engine's `ceilings` section; None where the ceilings cannot be read."""
    try:
        return _ceilings_cached(device.name, device.cc, device.sm_count)
    except TracekitError:
        return None


@functools.lru_cache(maxsize=64)
def _ceilings_cached(name: str | None, cc: str | None, sm_count: int | None) -> Any:
    from tracekit.ceilings import ceilings_for

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
    context = _context(catalog, launches)
    digests = _digests(context, overrides)
    found = _cached(store, digests) if use_cache else {}
    missing = [launch_id for launch_id in context if launch_id not in found]
    if missing:
        needed = sorted({i for launch_id in missing for i in context[launch_id]} | set(missing))
        inputs = load_inputs(store, catalog.filter(pl.col("id").is_in(needed)))
        computed = analyze(inputs, targets=set(missing), overrides=overrides, ceilings_for=device_ceilings)
        stored = {r.launch_id: r for r in computed if r.launch_id is not None}  # all: stored launches have ids
        found.update(stored)
        if use_cache:
            store.save_results(
                ENGINE_VERSION, {launch_id: (digests[launch_id], to_cache_text(r)) for launch_id, r in stored.items()}
            )
    return AnalysisResults(tuple(_handed_out(found[launch_id]) for launch_id in launches["id"].to_list()), store)


# ---- figure aggregates: a launch's warps reduced for its figures (tracekit/analysis/aggregates.py) ---------------


def warp_aggregates(warps: pl.DataFrame, sm_count: int | None) -> dict[str, pl.DataFrame]:
    """The figure aggregates of the report's launch section, from warps already loaded: the launch page's frames
    (`figure_aggregates`, the same bins), so both draw one figure (`present.launch.launch_figures`)."""
    return {
        "activity_by_sm": binned_activity(warps, full_view_bins(warps["sm_id"].n_unique())),
        "occupancy_over_time": occupancy_over_time(warps, sm_count),
        "latency_histogram": latency_histogram(warps),
    }


def launch_aggregates(store: Store, launch_id: int) -> dict[str, pl.DataFrame] | None:
    """The figure aggregates of one stored launch (`warp_aggregates`); None when it has no warp records."""
    warps = store.warps(launch_id)
    if warps.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id])
    sm_count = launch_sm_count(launch["sm_count"][0] if launch.height else None, warps)
    return warp_aggregates(warps, sm_count)


def report_aggregates(store: Store, results: Iterable[LaunchAnalysis]) -> dict[int, dict[str, Any]]:
    """The figure aggregates of every traced launch among `results`, by launch id (with the region figures' frames,
    `region_timeline.region_figure_frames`, for launches with named regions)."""
    found: dict[int, dict[str, Any]] = {}
    for result in results:
        if result.launch_id is None:
            continue
        frames: dict[str, Any] = {}
        if result.warps is not None:
            frames.update(launch_aggregates(store, result.launch_id) or {})
        if result.regions is not None:  # regions in SM cycles alone give no warp records, but still their figures
            regions = launch_regions(store, result.launch_id)
            frames.update(region_figure_frames(regions, result.regions.sm_count))
        if frames:
            found[result.launch_id] = frames
    return found


# ---- the notebook front -----------------------------------------------------------------------------------------


class TraceAnalysis:
    """A store and its analyses, for notebooks: `tracekit.open(url_or_path)`."""

    def __init__(self, store: Store):
        self.store = store

    def import_file(self, path: str, name: str | None = None) -> int:
        """Import a profiler file (format detected from its content); the import id (an existing one when the
        same file was imported before)."""
        from tracekit.ingest import ingest

        result, _ = ingest(self.store, path, name=name) if name else ingest(self.store, path)
        return int(result.import_id)

    def imports(self) -> pl.DataFrame:
        return self.store.imports()

    def launches(self, import_id: int | None = None) -> pl.DataFrame:
        return self.store.launches(import_id=import_id)

    def analyze(
        self,
        launch_ids: Iterable[int] | None = None,
        import_id: int | None = None,
        pairs: Mapping[int, int] | None = None,
    ) -> AnalysisResults:
        """The analyses of the given launches, or of an import's, or of every stored launch."""
        if launch_ids is not None:
            return analyze_stored(self.store, list(launch_ids), pairs)
        return analyze_stored(self.store, self.store.launches(import_id=import_id), pairs)

    def steps(self, path: str, step: str | None = None) -> Any:
        """The whole steps of a PyTorch profiler trace or Nsight Systems export (`tracekit step`): busy and idle
        time, idle causes, categories, operators, critical path, what to try first (`tracekit.steps.steps_of`)."""
        return steps_of(path, step)

    def program_steps(self, path: str, step: str | None = None, step_time: str | None = None) -> ProgramSteps:
        """The steps as the program runs them: the trace replayed without the profiler's own host work, beside the
        traced steps (`tracekit step`); `step_time` (22.7ms, 44/s), the program's own, anchors the replay."""
        return program_steps(self.store, path, step, step_time)

    def compare_steps(self, baseline: str, path: str, step: str | None = None) -> Any:
        """The step of `path` (with a change) against the same step of `baseline` (without it): each part before
        and after, and what grew most (`tracekit step PATH --baseline BASELINE`)."""
        return compared(baseline, path, step, self.store)

    def step_what_if(self, path: str, kernel: str, profiles: Sequence[str] = (), **knobs: Any) -> Any:
        """The step time after changing `kernel`'s launch (`tracekit step --kernel`): knobs as `predict`'s."""
        return step_what_if(self.store, path, kernel, knobs, list(profiles))


def predict_stored(store: Store, result: LaunchAnalysis, ceilings: Any = None, **knobs: Any) -> Any:
    """The prediction for one analysed launch, its counters and device ceilings read from `store`: the one
    function behind `tracekit predict`, `results.predict(...)` and the dashboard's what-if. `ceilings`: a profile
    path (`--ceilings FILE`) or DeviceCeilings; default the device's shipped profile, else nominal peaks."""
    from tracekit.analysis.predict import predict

    return predict(predict_inputs(store, result, ceilings), _change(knobs))


def _change(knobs: Mapping[str, Any]) -> Any:
    """`predict_stored`'s knobs as the predictor's `Change`; an unknown knob is one line."""
    from tracekit.analysis.predict import Change

    change = Change(
        threads_per_block=knobs.get("block"),
        registers_per_thread=knobs.get("regs"),
        dynamic_shared_mem_bytes=knobs.get("smem"),
        warps_per_sm=knobs.get("warps_per_sm"),
        ilp=knobs.get("ilp"),
        grid_blocks=knobs.get("grid"),
    )
    unknown = set(knobs) - {"block", "regs", "smem", "warps_per_sm", "ilp", "grid"}
    if unknown:
        raise TracekitError(f"unknown knob(s) {', '.join(sorted(unknown))}: block, regs, smem, warps_per_sm, ilp, grid")
    return change


def predict_inputs(store: Store, result: LaunchAnalysis, ceilings: Any = None) -> Any:
    """`PredictInputs` of one analysed launch: its counters from `store` and the device's ceilings (`ceilings`: a
    profile path or DeviceCeilings; default `ceilings_for` the device: its shipped measured profile, else nominal
    peaks, which the prediction's basis names)."""
    source = _counters_source(result)
    return _predict_inputs(result, store.metrics([source]) if source is not None else None, ceilings)


def _counters_source(result: LaunchAnalysis) -> int | None:
    return result.pairing.counters_launch_id or result.launch_id  # a trace's paired profiled launch


def _predict_inputs(result: LaunchAnalysis, metrics: pl.DataFrame | None, ceilings: Any) -> Any:
    from tracekit.analysis.predict import inputs_from_result
    from tracekit.ceilings import DeviceCeilings, ceilings_for

    device = result.kernel.device
    if not isinstance(ceilings, DeviceCeilings):
        ceilings = ceilings_for(device.name, device.cc, device.sm_count, override=ceilings)
    return inputs_from_result(result, metrics, ceilings=ceilings)


def what_to_try_stored(store: Store, result: LaunchAnalysis, top: int = 5, ceilings: Any = None) -> list[Any]:
    """The best few predicted changes for one launch (`tracekit.analysis.predict.what_to_try`: block size,
    registers, shared memory, ILP, grid), best first."""
    from tracekit.analysis.predict import what_to_try

    return what_to_try(predict_inputs(store, result, ceilings), top=top)


def what_to_try_for(store: Store, result: LaunchAnalysis, top: int = 5) -> list[Any] | str:
    """The best predicted change per knob for one launch, or why there is none (a launch without counters or a
    sweep is not predicted: nothing is read for it). What `analyze`, the report, the HTTP API and the launch page
    show."""
    if not result.classification.utilization and result.sweep is None:
        return NOTHING_TO_PREDICT
    try:
        return list(what_to_try_stored(store, result, top=top))
    except TracekitError as exc:
        return str(exc)


def what_to_try_all(store: Store, results: Iterable[LaunchAnalysis], top: int = 5) -> dict[int, list[Any] | str]:
    """`what_to_try_for` of many launches, by launch id, their counters read in one pass: an import's metrics
    share a chunk, and reading it once per launch decoded the whole chunk each time (a report's 20 launches of
    a 1,008-launch import: 3 s)."""
    from tracekit.analysis.predict import what_to_try

    chosen = [r for r in results if r.launch_id is not None]
    asked = {r.launch_id for r in chosen if r.classification.utilization or r.sweep is not None}
    counters_of = _counters(store, (r for r in chosen if r.launch_id in asked))
    found: dict[int, list[Any] | str] = {}
    for result in chosen:
        launch_id = int(result.launch_id or 0)
        if launch_id not in asked:
            found[launch_id] = NOTHING_TO_PREDICT
            continue
        try:
            inputs = _predict_inputs(result, counters_of(result), None)
            found[launch_id] = list(what_to_try(inputs, top=top))
        except TracekitError as exc:
            found[launch_id] = str(exc)
    return found


NOTHING_TO_PREDICT = "no Nsight Compute counters and no occupancy sweep to predict from"


def analysis_dict(store: Store, result: LaunchAnalysis) -> dict[str, Any]:
    """One launch's "tracekit.analysis/2" object with its `what_to_try` (null when nothing can be predicted):
    `tracekit analyze --json`, `report --format json` and `GET /api/launches/<id>/analysis` print exactly this."""
    return _with_tries(result, what_to_try_for(store, result))


def _with_tries(result: LaunchAnalysis, found: list[Any] | str) -> dict[str, Any]:
    from tracekit.present.prediction import prediction_dict  # each entry is the prediction's one JSON shape

    tries = [prediction_dict(p) for p in found] if isinstance(found, list) else None
    return {**to_json_dict(result), "what_to_try": tries}


# ---- what the dashboard reads -----------------------------------------------------------------------------------

_CATALOGS: weakref.WeakKeyDictionary[Store, tuple[tuple[int, int], pl.DataFrame]] = weakref.WeakKeyDictionary()
_CATALOG_LOCK = threading.Lock()


def launch_catalog(store: Store) -> pl.DataFrame:
    """The store's launches (`Store.launches()`), read again only when its launches changed (one cheap query,
    `Store.launch_fingerprint`, where reading 100k launches takes about a second); kept per store object."""
    fingerprint = store.launch_fingerprint()
    with _CATALOG_LOCK:
        kept = _CATALOGS.get(store)
        if kept is not None and kept[0] == fingerprint:
            return kept[1]
        frame = store.launches()
        _CATALOGS[store] = (fingerprint, frame)
        return frame


MAX_WARP_BARS = 6000  # a figure draws each warp up to this many (three points each: under ~20k points sent)
MAX_HEATMAP_CELLS = 20000  # a binned warp timeline: SMs x time bins at most
# A launch's figure aggregates are kept in the store under the analysis code's digest (the functions that compute
# them are the engine's), shortened to fit the store's view kinds.
AGGREGATES_VERSION = ENGINE_VERSION.rsplit("+", 1)[-1][:6]
AGGREGATE_NAMES = ("sms", "occupancy", "latency", "activity")


def full_view_bins(sm_rows: int) -> int:
    """Time bins of the binned warp timeline: as many as keep SMs x bins under MAX_HEATMAP_CELLS (10 to 400)."""
    return max(10, min(400, MAX_HEATMAP_CELLS // max(sm_rows, 1)))


def relative_warps(store: Store, launch_id: int) -> pl.DataFrame:
    """One launch's warps with times relative to its first warp start (what the zoomable timeline draws)."""
    warps = store.warps(launch_id)
    return relative_times(warps) if warps.height else warps


def figure_aggregates(
    store: Store, launch: Mapping[str, Any], warps: Callable[[], pl.DataFrame] | None = None
) -> dict[str, pl.DataFrame] | None:
    """A traced launch's figure aggregates, all a launch page needs before any zoom: its SMs with the warp count
    ("sms"), the occupancy curve, the latency histogram and, above MAX_WARP_BARS warps, the whole launch binned on
    all SMs ("activity", else empty). Read from the store, else computed once from its warps (`warps`: a loader
    of `relative_warps`) and kept there for every process after; None for a launch without warps."""
    launch_id = int(launch["id"])
    stored = store.read_aggregates(launch_id, AGGREGATES_VERSION, AGGREGATE_NAMES)
    if stored is not None:
        return stored
    rows = warps() if warps is not None else relative_warps(store, launch_id)
    if not rows.height:
        return None
    sms = rows.select(pl.col("sm_id").unique().sort(), warp_count=pl.len())
    activity = binned_activity(rows, full_view_bins(sms.height)) if rows.height > MAX_WARP_BARS else None
    frames = {
        "sms": sms,
        "occupancy": occupancy_over_time(rows, launch_sm_count(launch.get("sm_count"), rows)),
        "latency": latency_histogram(rows),
        "activity": activity if activity is not None else pl.DataFrame(),
    }
    try:
        store.write_aggregates(launch_id, AGGREGATES_VERSION, frames)
    except Exception:  # noqa: BLE001 - a read-only or busy store: the aggregates stay with the caller only
        log.warning("could not keep launch %s's figure aggregates in the store", launch_id, exc_info=True)
    return frames


def compare_launches(a: Sequence[LaunchAnalysis], b: Sequence[LaunchAnalysis]) -> Comparison:
    """Side A against side B, field by field (`analysis.comparison.compare_results`, what `tracekit compare`
    prints), with each side's run-to-run spread where a side holds several launches."""
    return compare_results(a, b)


def shared_metrics(metrics_a: pl.DataFrame, metrics_b: pl.DataFrame) -> pl.DataFrame:
    """The numeric metrics two launches both recorded, with B's value over A's (`analysis.metric_comparison`)."""
    return metric_comparison(metrics_a, metrics_b)


def gpu_time_of(
    store: Store, import_id: int, shown_name: Callable[[str | None], str], catalog: pl.DataFrame | None = None
) -> GpuTime:
    """An import's GPU time per kernel and per copy kind (`analysis.gpu_time`, what `tracekit summary` prints);
    `catalog`: the store's launches, when already read. NotFoundError for an import the store does not hold."""
    store.get_import(import_id)
    launches = (
        store.launches(import_id=import_id) if catalog is None else catalog.filter(pl.col("import_id") == import_id)
    )
    return gpu_time(launches, store.memcpys(import_id), shown_name)


def occupancy_change(result: LaunchAnalysis, threads: int, registers: int, shared_mem_bytes: int) -> WhatIf:
    """The occupancy calculator on the launch's device for a new configuration (`analysis.what_if`): the
    dashboard's what-if beside `predict_stored`. TracekitError when the device cannot run it."""
    return occupancy_what_if(result, threads, registers, shared_mem_bytes)


def region_layout_of(store: Store, launch_id: int) -> RegionLayout | None:
    """The launch's named regions laid out for its timeline (`region_timeline.region_layout`); None without any."""
    regions = launch_regions(store, launch_id)
    return region_layout(regions) if regions.height else None


def region_window(
    layout: RegionLayout, window: tuple[int, int] | None = None, rows: tuple[int, int] | None = None
) -> RegionTimeline:
    """The region timeline's frames for a zoom (`region_timeline.region_timeline`): every instance as a bar up to
    MAX_SLICES in view, else binned rows; `window` in the launch's unit, `rows` the warp rows asked for."""
    return region_timeline(layout, window, rows)


def region_occupancy(store: Store, launch_id: int, sm_count: int | None) -> pl.DataFrame:
    """Each region's mean resident warps per SM over time (`region_timeline.region_occupancy_curves`)."""
    return region_occupancy_curves(launch_regions(store, launch_id), sm_count)


def open(db: str | None = None) -> TraceAnalysis:  # noqa: A001 - the public name the README shows
    """Open (or create) a store: a SQLite path, a SQLAlchemy URL, or the default embedded store."""
    return TraceAnalysis(Store.open(db))


# ---- whole steps (`tracekit.steps`): the steps page reads them here ----------------------------------------------


def steps_of_import(store: Store, import_ref: str, step: str | None = None) -> Any:
    """A stored import's steps, as `tracekit step IMPORT` shows them (`tracekit.steps.steps_of`)."""
    return steps_of(import_ref, step, store)


def program_steps(
    store: Store | None, source: str | Path, step: str | None = None, step_time: str | None = None
) -> ProgramSteps:
    """A trace's or stored import's steps replayed without the profiler (`tracekit.steps.program_of`)."""
    from tracekit import format as fmt

    anchor_ns = fmt.parse_step_time(step_time) if step_time is not None else None
    return program_of(source, step, store, anchor_ns)


def program_of_import(store: Store, import_ref: str, step: str | None = None) -> ProgramSteps:
    """A stored import's steps without the profiler (`tracekit step IMPORT`)."""
    return program_of(import_ref, step, store)


def program_view_of_import(store: Store, import_ref: str, step: str | None = None) -> tuple[ProgramSteps, Any]:
    """A stored import's steps without the profiler and the timeline of the step shown, on the replay's clock."""
    found = program_of(import_ref, step, store)
    return found, program_timeline_of_import(store, import_ref, found)


def program_timeline_of_import(store: Store, import_ref: str, found: ProgramSteps) -> Any:
    """The timeline of the step `found` shows, on the replay's clock (None without a step)."""
    from tracekit.analysis.steps.timeline import step_timeline

    shown = found.unprofiled.representative_step
    if shown is None:
        return None
    return step_timeline(replayed_events(events_of(import_ref, store), found), found.unprofiled.steps[shown])


def compare_with_baseline(store: Store, baseline_ref: str, result: Any, step: str | None = None) -> Any:
    """A step already analysed (`steps_of_import`) against a baseline import's (`tracekit step IMPORT --baseline
    BASELINE`): the baseline is read and analysed, the step is not again."""
    return compare_steps(program_of(baseline_ref, step, store).unprofiled, result)


def step_timeline_of_import(store: Store, import_ref: str, result: Any) -> Any:
    """The frames of the timeline of `result`'s representative step (`tracekit.analysis.steps.timeline`)."""
    from tracekit.analysis.steps.timeline import step_timeline

    return step_timeline(events_of(import_ref, store), result.steps[result.representative_step])


def imports_with_host_timeline(store: Store) -> list[tuple[int, str]]:
    """The imports that hold a host timeline (id, name)."""
    from tracekit.store import host_events

    with store.engine.connect() as connection:
        return host_events.imports_with_events(connection)


# ---- a step's kernels: their stored launches' predictions replayed on the step (`tracekit step`) ---------------
# Here, not in tracekit/steps.py: they join the step analysis with the per-launch engine, which this door holds.


@dataclass(frozen=True)
class _TraceStep:
    """A trace imported and its host timeline read once: its steps, the representative one and its timeline, for
    every kernel replayed on it."""

    import_id: int
    result: StepsResult
    step: Step | None  # None: the trace has no step
    line: StepTimeline | None
    spans_ns: tuple[int, ...]


def _trace_step(store: Store, trace: str | Path, profiles: Sequence[str | Path], step: str | None) -> _TraceStep:
    """Imports `profiles` (Nsight Compute results of the trace's kernels) and `trace` (its launches pair with them),
    reads the trace's host timeline once and finds its steps."""
    for profile in profiles:
        import_trace(store, profile)
    import_id = import_trace(store, trace)
    kept = stored_events(store, import_id)  # the timeline the import kept: the trace is not parsed again
    events = dataclasses.replace(kept, source=str(trace)) if kept is not None else read_events(trace)
    # the step as the program runs it: what-if and kernel suggestions replay the same timeline `tracekit step` shows
    program = program_of_events(events, trace, step)
    replayed = replayed_events(events, program)
    result = program.unprofiled
    spans = tuple(s.span_ns for s in result.steps)
    if result.representative_step is None:
        return _TraceStep(import_id, result, None, None, spans)
    chosen = result.steps[result.representative_step]
    return _TraceStep(import_id, result, chosen, step_line(replayed, chosen), spans)


def _step_launches(store: Store, traced: _TraceStep) -> pl.DataFrame:
    """The stored launches of the representative step's kernels (by their launch calls' correlation ids)."""
    ops = traced.line.ops if traced.line is not None else ()
    ids = [o.correlation for o in ops if o.kind == "kernel" and o.correlation is not None]
    return store.launches(import_id=traced.import_id).filter(pl.col("correlation_id").is_in(ids))


def _counters(store: Store, results: Iterable[LaunchAnalysis]) -> Callable[[LaunchAnalysis], pl.DataFrame | None]:
    """The counters each of `results` is predicted from (`predict_inputs`' frame), read from `store` in one pass
    for all of them: reading them a launch at a time decodes a shared chunk once per launch."""
    sources = sorted({s for r in results if (s := _counters_source(r)) is not None})
    metrics = store.metrics(sources, counters.READ_COLUMNS) if sources else pl.DataFrame()
    by_launch = _by_launch(metrics)

    def of(result: LaunchAnalysis) -> pl.DataFrame | None:
        source = _counters_source(result)
        return by_launch.get(source, metrics.clear()) if source is not None else None

    return of


def _launch_speedups(
    members: Sequence[tuple[int, LaunchAnalysis]],
    counters_of: Callable[[LaunchAnalysis], pl.DataFrame | None],
    knobs: Mapping[str, Any],
    skip_failed: bool,
) -> dict[int, LaunchSpeedup]:
    """The per-launch prediction of `knobs` for each (correlation id, analysed launch), as `predict_stored` gives
    it, from `counters_of` (`_counters`); `skip_failed`: a launch the predictor refuses is left out, else its error
    raised."""
    from tracekit.analysis.predict import predict

    change = _change(knobs)
    found: dict[int, LaunchSpeedup] = {}
    for correlation, result in members:
        try:
            got = predict(_predict_inputs(result, counters_of(result), None), change).predicted
        except TracekitError:
            if skip_failed:
                continue
            raise
        found[correlation] = LaunchSpeedup(got.speedup, got.low, got.high)
    return found


def step_what_if(
    store: Store,
    trace: str | Path,
    kernel: str,
    knobs: dict[str, Any],
    profiles: list[str | Path] | None = None,
    step: str | None = None,
) -> StepWhatIf:
    """The step time after changing `kernel`'s launch (knobs of `tracekit predict`: block, regs, smem, ...), the
    trace's representative step replayed with the predicted duration of each of the kernel's launches in it.
    `profiles`: Nsight Compute results of the same kernels, imported so that the launches pair with them."""
    traced = _trace_step(store, trace, profiles or [], step)
    if traced.step is None or traced.line is None:
        raise TracekitError(f"{trace}: no step to replay")
    named = store.launches(import_id=traced.import_id).filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    if named.height == 0:
        raise TracekitError(f"no kernel whose name contains {kernel!r} in the trace")
    launches = _step_launches(store, traced).filter(pl.col("kernel_name").str.contains(kernel, literal=True))
    members = list(zip(launches["correlation_id"].to_list(), analyze_stored(store, launches), strict=True))
    speedups = _launch_speedups(members, _counters(store, [r for _, r in members]), knobs, skip_failed=False)
    change = _change(knobs).describe()
    return replay_on_step(traced.line, traced.step, speedups, kernel, change, traced.spans_ns)


def _knobs(change: Any) -> dict[str, Any]:
    """A predictor `Change` as `predict_stored`'s knobs."""
    names = {
        "threads_per_block": "block",
        "registers_per_thread": "regs",
        "dynamic_shared_mem_bytes": "smem",
        "warps_per_sm": "warps_per_sm",
        "ilp": "ilp",
        "grid_blocks": "grid",
    }
    return {knob: getattr(change, field) for field, knob in names.items() if getattr(change, field) is not None}


def kernel_suggestions(store: Store, traced: _TraceStep, top: int = 5) -> list[Suggestion]:
    """The kernels of the representative step whose best predicted change (`what_to_try_for`: from their paired
    Nsight Compute results) would shorten the step most, the change replayed on the step for every launch of the
    kernel; kernels with no counters to predict from are left out."""
    from tracekit.analysis.predict import what_to_try

    launches = _step_launches(store, traced)
    if traced.step is None or traced.line is None or launches.height == 0:
        return []
    analyses = analyze_stored(store, launches)
    by_name: dict[str, list[tuple[int, Any]]] = {}
    for correlation, analysis in zip(launches["correlation_id"].to_list(), analyses, strict=True):
        if correlation is not None and analysis.classification.utilization:
            by_name.setdefault(analysis.kernel.name or "", []).append((int(correlation), analysis))
    counters_of = _counters(store, (a for members in by_name.values() for _, a in members))
    found = []
    for name, members in by_name.items():
        longest = max(members, key=lambda m: m[1].duration_ns or 0)[1]
        try:  # what_to_try_for's best change (every member has counters: utilization), from the counters read
            best = what_to_try(_predict_inputs(longest, counters_of(longest), None), top=1)
        except TracekitError:
            continue
        if not best:
            continue
        speedups = _launch_speedups(members, counters_of, _knobs(best[0].change), skip_failed=True)
        replayed = replay_on_step(traced.line, traced.step, speedups, name, best[0].change.describe(), traced.spans_ns)
        verdict = longest.classification
        headline = verdict.headline or verdict.mode
        found.append(
            Suggestion(
                "kernel",
                name,
                f"{replayed.change} ({headline}; {best[0].predicted.speedup:.2f}x per launch predicted, "
                f"{_launches(replayed.launches)} in the step)",
                replayed.current_ns - replayed.predicted_ns,
                replayed.current_ns - replayed.high_ns,
                replayed.current_ns - replayed.low_ns,
            )
        )
    found.sort(key=lambda s: -s.saves_ns)
    return found[:top]


def _launches(count: int) -> str:
    return f"{count} launch" if count == 1 else f"{count} launches"


def steps_with_kernels(
    store: Store, trace: str | Path, profiles: list[str | Path], step: str | None = None
) -> StepsResult:
    """The steps of `trace` with the kernels' suggestions (from `profiles`, Nsight Compute results of its
    kernels) ranked among the idle causes' by the step time they would save."""
    traced = _trace_step(store, trace, profiles, step)
    kernels = kernel_suggestions(store, traced)
    result = traced.result
    ranked = sorted([*result.what_to_try, *kernels], key=lambda s: -s.saves_ns)
    return dataclasses.replace(result, what_to_try=tuple(ranked))


def job(sources: Sequence[str | Path], scheduler: str | None = None, workers: int | None = None) -> Any:
    """A multi-rank job (a folder of rank traces, or the files) read on Dask: the straggler, its cause, its cost
    (`tracekit job`; a JobResult)."""
    from tracekit.job.run import run_job

    return run_job(sources, scheduler=scheduler, workers=workers)


def source_lines(store: Store, launch_id: int, top: int | None = None) -> dict[str, Any] | None:
    """A launch's source lines (issue 45): ranked with their kind, the lines holding the verdict's limiter and what
    fixing the top one buys, as `tracekit lines --json` prints it; None when the launch has no source samples."""
    from tracekit.analysis.source_lines import analyze_source_lines
    from tracekit.present.source_lines import to_json
    from tracekit.store.source_lines import launch_source_files, launch_source_samples

    samples = launch_source_samples(store, launch_id)
    if samples.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id]).row(0, named=True)
    limiter = None
    if launch.get("duration_ns") is not None:  # a Source-page CSV alone has no counters for a verdict
        limiter = analyze_stored(store, [launch_id])[0].classification.limiter
    result = analyze_source_lines(samples, launch.get("duration_ns"), limiter, top)
    if result is None:
        return None
    return to_json(
        launch_id, launch.get("kernel_name"), result, launch_source_files(store, launch_id), launch.get("duration_ns")
    )
