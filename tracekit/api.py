"""The one door from stored launches to their analyses, for the CLI, the reports, the dashboard and notebooks.

`TraceAnalysis` (from `tracekit.open`) is the door for a store, as HTA's `TraceAnalysis` is for a trace folder: each
method forwards in a line to the module that does the work (`tracekit.stored.*` reads the store and asks the pure
analysis; `tracekit.analysis.*` computes). The module-level functions are the same doors for a caller that holds a
`Store` (the CLI opens one per command). A launch gets one verdict whichever path asks (`stored.analyses`).

    import tracekit
    traces = tracekit.open("runs.sqlite")
    traces.import_file("report.ncu-rep")
    results = traces.analyze(import_id=1)
    results.to_polars()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Unpack

import polars as pl

from tracekit.analysis.comparison import compare_results
from tracekit.analysis.comparison import evaluate_gate as evaluate_gate  # `tracekit compare --fail-if`
from tracekit.analysis.comparison import parse_gate as parse_gate
from tracekit.analysis.gpu_time import GpuTime as GpuTime
from tracekit.analysis.gpu_time import TimeRow as TimeRow
from tracekit.analysis.gpu_time import gpu_time
from tracekit.analysis.metric_comparison import metric_comparison
from tracekit.analysis.occupancy_plan import KNOB_COLUMNS as KNOB_COLUMNS
from tracekit.analysis.occupancy_plan import occupancy_plan as occupancy_plan  # `tracekit occupancy`
from tracekit.analysis.predict import NOTHING_TO_PREDICT as NOTHING_TO_PREDICT
from tracekit.analysis.predict import Knobs as Knobs
from tracekit.analysis.predict import Prediction as Prediction  # typed by the launch page's what-if
from tracekit.analysis.region_timeline import MAX_SLICES as MAX_SLICES  # the dashboard's region panel says it
from tracekit.analysis.region_timeline import (
    RegionLayout,
    RegionTimeline,
    region_layout,
    region_occupancy_curves,
    region_timeline,
)
from tracekit.analysis.steps import StepsResult
from tracekit.analysis.steps.compare import StepComparison, compare_steps
from tracekit.analysis.steps.program import ProgramSteps as Program
from tracekit.analysis.steps.timeline import StepTimeline, step_timeline
from tracekit.analysis.steps.whatif import StepWhatIf
from tracekit.analysis.timeline import binned_activity as binned_activity  # the launch page's zoom
from tracekit.analysis.timeline import warps_in_window as warps_in_window  # the launch page's zoom
from tracekit.analysis.types import LaunchAnalysis as LaunchAnalysis
from tracekit.analysis.what_if import WhatIf
from tracekit.analysis.what_if import what_if as occupancy_what_if
from tracekit.format import parse_step_time
from tracekit.ingest import BatchError as BatchError  # the upload page says which file failed
from tracekit.ingest import FileOutcome as FileOutcome
from tracekit.ingest import ingest, ingest_batch
from tracekit.job.run import rank_files as rank_files  # `tracekit job` and `step DIR`: a folder's rank traces
from tracekit.job.run import run_job
from tracekit.matching import match_launches as match_launches  # `tracekit compare`'s groups
from tracekit.steps import calibrate_profiler as calibrate_profiler  # `tracekit calibrate --profiler`
from tracekit.steps import compared, events_of, program_of, steps_of
from tracekit.steps import program_timeline as program_timeline_of_import  # the steps page's and report's
from tracekit.store import Store
from tracekit.store import host_events as stored_host_events
from tracekit.store.parquet_export import export_parquet as export_parquet  # `tracekit export --parquet`
from tracekit.store.regions import launch_regions
from tracekit.stored import trace_features as trace_features  # HTA's analyses: `features`, `diff`, `critical-path`
from tracekit.stored.aggregates import MAX_WARP_BARS as MAX_WARP_BARS
from tracekit.stored.aggregates import figure_aggregates as figure_aggregates
from tracekit.stored.aggregates import full_view_bins as full_view_bins
from tracekit.stored.aggregates import launch_aggregates as launch_aggregates
from tracekit.stored.aggregates import relative_warps as relative_warps
from tracekit.stored.aggregates import report_aggregates as report_aggregates
from tracekit.stored.aggregates import warp_aggregates as warp_aggregates
from tracekit.stored.analyses import AnalysisResults as AnalysisResults
from tracekit.stored.analyses import analyze_stored as analyze_stored
from tracekit.stored.cache import LaunchResult as LaunchResult
from tracekit.stored.cache import cached_result as cached_result
from tracekit.stored.cache import launch_catalog as launch_catalog
from tracekit.stored.inputs import load_inputs as load_inputs
from tracekit.stored.predictions import Ceilings, Tries
from tracekit.stored.predictions import analysis_dict as analysis_dict
from tracekit.stored.predictions import predict_inputs as predict_inputs
from tracekit.stored.predictions import predict_stored as predict_stored
from tracekit.stored.predictions import what_to_try_all as what_to_try_all
from tracekit.stored.predictions import what_to_try_for as what_to_try_for
from tracekit.stored.predictions import what_to_try_stored as what_to_try_stored
from tracekit.stored.slices import launch_slices as launch_slices  # `tracekit export`'s traces
from tracekit.stored.source_line_view import SourceLinesView, source_lines  # `tracekit lines`, the source panel
from tracekit.stored.source_line_view import source_line_changes as source_line_changes  # compare by line
from tracekit.stored.source_line_view import source_line_views as source_line_views  # the report's sections
from tracekit.stored.step_kernels import step_what_if as step_what_if
from tracekit.stored.step_kernels import steps_with_kernels as steps_with_kernels


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


def region_window(
    layout: RegionLayout, window: tuple[int, int] | None = None, rows: tuple[int, int] | None = None
) -> RegionTimeline:
    """The region timeline's frames for a zoom (`region_timeline.region_timeline`): every instance as a bar up to
    MAX_SLICES in view, else binned rows; `window` in the launch's unit, `rows` the warp rows asked for."""
    return region_timeline(layout, window, rows)


def region_occupancy(store: Store, launch_id: int, sm_count: int | None) -> pl.DataFrame:
    """Each region's mean resident warps per SM over time (`region_timeline.region_occupancy_curves`)."""
    return region_occupancy_curves(launch_regions(store, launch_id), sm_count)


def steps_of_import(store: Store, import_ref: str, step: str | None = None) -> StepsResult:
    """A stored import's steps (or a trace file's), as `tracekit step IMPORT` shows them (`tracekit.steps`)."""
    return steps_of(import_ref, step, store)


def program_of_import(
    store: Store | None, source: str, step: str | None = None, step_time: str | None = None
) -> Program:
    """A trace's or stored import's steps as the program runs them: replayed without the profiler (`tracekit step`)."""
    return program_of(source, step, store, parse_step_time(step_time) if step_time else None)


def compare_with_baseline(
    store: Store, baseline_ref: str, result: StepsResult, step: str | None = None
) -> StepComparison:
    """A step already analysed (as the program runs it) against a baseline import's, replayed the same way."""
    return compare_steps(program_of(baseline_ref, step, store).unprofiled, result)


def step_timeline_of_import(store: Store, import_ref: str, result: StepsResult) -> StepTimeline:
    """The frames of the timeline of `result`'s representative step (`tracekit.analysis.steps.timeline`)."""
    return step_timeline(events_of(import_ref, store), result.steps[result.representative_step or 0])


def imports_with_host_timeline(store: Store) -> list[tuple[int, str]]:
    """The imports that hold a host timeline (id, name)."""
    with store.engine.connect() as connection:
        return stored_host_events.imports_with_events(connection)


def open(db: str | None = None) -> TraceAnalysis:  # noqa: A001 - the public name the README shows
    """Open (or create) a store: a SQLite path, a SQLAlchemy URL, or the default embedded store."""
    return TraceAnalysis(Store.open(db))


class TraceAnalysis:
    """A store and its analyses: the door for notebooks and the dashboard (`tracekit.open(url_or_path)`)."""

    def __init__(self, store: Store):
        self.store = store

    @property
    def url(self) -> str:
        return self.store.url

    # ---- the catalog: imports and launches ----
    def import_file(self, path: str, name: str | None = None) -> int:
        """Import a profiler file (format from its content): its import id, the existing one for a file seen before."""
        return int(ingest(self.store, path, name=name)[0].import_id)

    def import_files(self, paths: Sequence[Path], names: Sequence[str], max_inflated_bytes: int) -> list[FileOutcome]:
        """Import uploaded files all or none (`ingest.ingest_batch`); BatchError names the first bad one."""
        return ingest_batch(self.store, paths, names=names, max_inflated_bytes=max_inflated_bytes)

    def delete_import(self, import_id: int) -> None:
        self.store.delete_import(import_id)

    def imports(self) -> pl.DataFrame:
        return self.store.imports()

    def launches(self, import_id: int | None = None, launch_ids: list[int] | None = None) -> pl.DataFrame:
        return self.store.launches(import_id=import_id, launch_ids=launch_ids)

    def catalog(self) -> pl.DataFrame:
        """Every stored launch, read again only when the launches changed (`stored.cache.launch_catalog`)."""
        return launch_catalog(self.store)

    def launch_count(self) -> int:
        return self.store.launch_count()

    def first_launch_ids(self, limit: int) -> list[int]:
        return self.store.first_launch_ids(limit)

    def metrics(self, launch_id: int) -> pl.DataFrame:
        return self.store.metrics([launch_id])

    # ---- one launch and its figures ----
    def analyze(
        self,
        launch_ids: Iterable[int] | pl.DataFrame | None = None,
        import_id: int | None = None,
        pairs: Mapping[int, int] | None = None,
        catalog: pl.DataFrame | None = None,
    ) -> AnalysisResults:
        """The analyses of the given launches (ids or a `launches()` frame), or of an import's, or of all;
        `catalog`: `catalog()` when the caller has just read it."""
        chosen = self.launches(import_id) if launch_ids is None else launch_ids
        return analyze_stored(self.store, chosen, pairs, catalog=catalog)

    def cached(self, launch_id: int, pair: int | None = None) -> LaunchAnalysis | None:
        return cached_result(self.store, launch_id, pair)

    def figure_aggregates(
        self, launch: Mapping[str, object], warps: Callable[[], pl.DataFrame] | None = None
    ) -> dict[str, pl.DataFrame] | None:
        return figure_aggregates(self.store, launch, warps)

    def relative_warps(self, launch_id: int) -> pl.DataFrame:
        return relative_warps(self.store, launch_id)

    def region_layout(self, launch_id: int) -> RegionLayout | None:
        """The launch's named regions laid out for its timeline (`region_timeline.region_layout`); None without any."""
        regions = launch_regions(self.store, launch_id)
        return region_layout(regions) if regions.height else None

    def source_lines(self, launch_id: int, analysis: LaunchAnalysis | None = None) -> SourceLinesView | None:
        return source_lines(self.store, launch_id, analysis=analysis)

    def region_occupancy(self, launch_id: int, sm_count: int | None) -> pl.DataFrame:
        return region_occupancy(self.store, launch_id, sm_count)

    def gpu_time(
        self, import_id: int, shown_name: Callable[[str | None], str], catalog: pl.DataFrame | None = None
    ) -> GpuTime:
        return gpu_time_of(self.store, import_id, shown_name, catalog)

    # ---- predictions ----
    def predict(self, result: LaunchAnalysis, ceilings: Ceilings = None, **knobs: Unpack[Knobs]) -> Prediction:
        """What a change would buy (knobs as `tracekit predict`'s: block, regs, smem, warps_per_sm, ilp, grid)."""
        return predict_stored(self.store, result, ceilings, **knobs)

    def what_to_try(self, result: LaunchAnalysis, top: int = 5) -> Tries:
        return what_to_try_for(self.store, result, top)

    def analysis_dict(self, result: LaunchAnalysis) -> dict[str, object]:
        return analysis_dict(self.store, result)

    # ---- whole steps ----
    def steps(self, source: str, step: str | None = None) -> StepsResult:
        """The whole steps of a PyTorch profiler trace, an Nsight Systems export or a stored import (`import:3`):
        busy and idle time, idle causes, categories, operators, critical path, what to try first."""
        return steps_of_import(self.store, source, step)

    def program_steps(self, source: str, step: str | None = None, step_time: str | None = None) -> Program:
        """The steps as the program runs them (the trace replayed without the profiler) beside the traced ones;
        `step_time` (22.7ms, 44/s), the program's own, anchors the replay."""
        return program_of_import(self.store, source, step, step_time)

    def program_timeline(self, import_ref: str, found: Program) -> StepTimeline | None:
        return program_timeline_of_import(self.store, import_ref, found)

    def compare_steps(self, baseline: str, path: str, step: str | None = None) -> StepComparison:
        """The step of `path` (with a change) against the same step of `baseline` (without it)."""
        return compared(baseline, path, step, self.store)

    def compare_with_baseline(self, baseline: str, result: StepsResult, step: str | None = None) -> StepComparison:
        return compare_with_baseline(self.store, baseline, result, step)

    def step_timeline(self, import_ref: str, result: StepsResult) -> StepTimeline:
        return step_timeline_of_import(self.store, import_ref, result)

    def imports_with_host_timeline(self) -> list[tuple[int, str]]:
        return imports_with_host_timeline(self.store)

    def features(self, source: str) -> trace_features.TraceFeatures:
        """HTA's trace analyses of a stored import (`import:3`) or a trace file, as `tracekit features` shows them."""
        return trace_features.features_of(self.store, source)

    def step_what_if(self, path: str, kernel: str, profiles: Sequence[str] = (), **knobs: Unpack[Knobs]) -> StepWhatIf:
        """The step time after changing `kernel`'s launch (`tracekit step --kernel`): knobs as `predict`'s."""
        return step_what_if(self.store, path, kernel, knobs, profiles)


job = run_job  # `tracekit job`: a job's rank traces on Dask, the straggler, its cause, its cost
compare_launches = compare_results  # `tracekit compare` and the compare page: side A against side B, field by field
shared_metrics = metric_comparison  # the compare page: the metrics both launches recorded, B's over A's
