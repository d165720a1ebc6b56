"""The door from a profiler file or a stored import to the step analysis (`tracekit.analysis.steps`): reads the
trace's host timeline with the reader its content names. Joining a step with the per-launch engine (the stored
launches and their paired Nsight Compute results, for what to try and the step what-if) is `tracekit.api`'s,
which calls these functions for the CLI's `tracekit step`, `TraceAnalysis.steps()` and the dashboard page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.analysis.steps import StepError, StepsResult, analyze_steps
from tracekit.analysis.steps.calibration import shipped
from tracekit.analysis.steps.compare import StepComparison, compare_steps
from tracekit.analysis.steps.profiler_cost import Calibration
from tracekit.analysis.steps.program import ProgramSteps, analyze_program
from tracekit.analysis.steps.ranks import AlignedStep, align
from tracekit.errors import InputError, TracekitError
from tracekit.host_events import HostEvents

if TYPE_CHECKING:
    from tracekit.analysis.steps.timeline import StepTimeline
    from tracekit.store import Store

HOST_READERS = {"kineto": "kineto", "nsys-sqlite": "nsys_sqlite"}


def read_events(path: str | Path) -> HostEvents:
    """The host timeline of a PyTorch profiler trace or an Nsight Systems SQLite export."""
    from tracekit.importers import detect_format, reader

    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    fmt = detect_format(path)
    if fmt not in HOST_READERS:
        raise InputError(
            str(path), f"a {fmt} file has no host timeline: steps need a PyTorch profiler trace or an nsys export"
        )
    module = reader(HOST_READERS[fmt])
    events: HostEvents = module.read_host_events(path)
    return events


_IMPORT_REF = re.compile(r"^(?:import:)?(\d+)$")


def is_import_ref(source: str | Path) -> bool:
    """`7` or `import:7` (and no file of that name): a stored import."""
    return bool(_IMPORT_REF.match(str(source).strip())) and not Path(source).exists()


def events_of(source: str | Path, store: Store | None = None) -> HostEvents:
    """The host timeline of a trace file, or of a stored import (`7`, `import:7`) from `store`."""
    if not is_import_ref(source):
        return read_events(source)
    if store is None:
        raise TracekitError(f"{source}: an import id needs a store (--db)")
    import_id = int(_IMPORT_REF.match(str(source).strip()).group(1))  # type: ignore[union-attr]
    events = stored_events(store, import_id)
    if events is None:
        found = store.get_import(import_id)  # raises NotFoundError, naming the store
        raise TracekitError(
            f"import {import_id} ({found['format']}) holds no host "
            "timeline: steps need a PyTorch profiler trace or an nsys export, imported by this version"
        )
    return events


def stored_events(store: Store, import_id: int) -> HostEvents | None:
    """The host timeline an import kept, or None where it kept none (a format without one, or an older version's)."""
    from tracekit.store import host_events

    with store.engine.connect() as connection:
        return host_events.load(connection, import_id)


def steps_of(source: str | Path, step: str | None = None, store: Store | None = None) -> StepsResult:
    """The steps of one trace file or stored import; a name no range has, or a trace without GPU activity, is one
    line."""
    return analyze_events(events_of(source, store), source, step)


def analyze_events(events: HostEvents, source: str | Path, step: str | None = None) -> StepsResult:
    """The steps of a host timeline already read from `source` (named in the one line a failure gives)."""
    try:
        return analyze_steps(events, step)
    except StepError as exc:
        raise _step_failure(events, source, exc) from None


def ranks_of(
    sources: list[str | Path], step: str | None = None, store: Store | None = None
) -> tuple[list[StepsResult], tuple[AlignedStep, ...]]:
    """Each rank's steps (one trace per rank) and the steps aligned across ranks."""
    results = [steps_of(source, step, store) for source in sources]
    return results, align(results)


def import_trace(store: Store, path: str | Path) -> int:
    from tracekit.ingest import ingest

    result, _ = ingest(store, path)
    return int(result.import_id)


def compared(
    before: str | Path, after: str | Path, step: str | None = None, store: Store | None = None
) -> StepComparison:
    """The step of `after` (with a change) set against the step of `before` (without it): trace files or stored
    imports, each replayed without the profiler (the same replay every step figure comes from)."""
    return compare_steps(program_of(before, step, store).unprofiled, program_of(after, step, store).unprofiled)


CALIBRATION_FILE = "profiler-calibration.json"  # what `tracekit calibrate --profiler` writes in the data folder
CALIBRATION_PROCESSES = 3  # each setting's loops in this many processes: the fit takes their median (`fit`)


def default_calibration_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("tracekit", appauthor=False)) / CALIBRATION_FILE


def calibration_of(path: str | Path | None = None) -> Calibration:
    """The profiler calibration to take out: the file given, else this machine's (`tracekit calibrate
    --profiler`), else the shipped one."""
    from tracekit.analysis.steps.profiler_cost import calibration_from_dict

    chosen = Path(path) if path is not None else default_calibration_path()
    if path is None and not chosen.is_file():
        return shipped()
    try:
        data = json.loads(chosen.read_text(encoding="utf-8"))
        return calibration_from_dict(data, str(chosen))
    except FileNotFoundError:
        raise InputError(str(chosen), "no such calibration file") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            str(chosen), f"not a profiler calibration written by tracekit calibrate --profiler ({exc})"
        ) from None


def program_of(
    source: str | Path,
    step: str | None = None,
    store: Store | None = None,
    anchor_ns: int | None = None,
    calibration: Calibration | None = None,
) -> ProgramSteps:
    """One trace's steps as the program runs them (the replay without the profiler) beside the traced ones."""
    return program_of_events(events_of(source, store), source, step, anchor_ns, calibration)


def program_of_events(
    events: HostEvents,
    source: str | Path,
    step: str | None = None,
    anchor_ns: int | None = None,
    calibration: Calibration | None = None,
) -> ProgramSteps:
    """`program_of` on a host timeline already read from `source` (named in the one line a failure gives)."""
    try:
        return analyze_program(events, calibration or calibration_of(), step, anchor_ns)
    except StepError as exc:
        raise _step_failure(events, source, exc) from None


def _step_failure(events: HostEvents, source: str | Path, exc: StepError) -> TracekitError:
    """The one line a failed step analysis gives; a trace of the CUPTI range profiler is named for what it is."""
    if events.gpu.height == 0 and events.counters.height:
        kernels = events.counters["kernel_index"].n_unique()
        return TracekitError(
            f"{source}: recorded with the CUPTI range profiler ({kernels:,} kernels' counters, no kernel activity):"
            " it replays each kernel to count it, so the trace holds no GPU timeline to cut into steps; its"
            " counters are in `tracekit features`, and a trace recorded without profiler_metrics gives the steps"
        )
    return TracekitError(f"{source}: {exc}")


def replayed_events(events: HostEvents, found: ProgramSteps, calibration: Calibration | None = None) -> HostEvents:
    """The timeline `found` was analysed on: `events` replayed without the profiler at its setting and scale."""
    from tracekit.analysis.steps.unprofiled import replay_without_profiler

    chosen = (calibration or calibration_of()).for_setting(found.setting)
    return replay_without_profiler(events, chosen, found.cost_scale)


def program_timeline(store: Store | None, source: str | Path, found: ProgramSteps) -> StepTimeline | None:
    """The timeline of the step `found` shows, on the replay's clock (None without a step)."""
    from tracekit.analysis.steps.timeline import step_timeline

    shown = found.unprofiled.representative_step
    if shown is None:
        return None
    return step_timeline(replayed_events(events_of(source, store), found), found.unprofiled.steps[shown])


def calibrate_profiler(
    output: str | Path | None = None, say: Callable[[str], None] = lambda setting: None
) -> tuple[dict[str, Any], Path]:
    """The profiler's per-event costs measured on this machine (`tracekit/profiler_cost_bench.py`, each setting in
    CALIBRATION_PROCESSES fresh processes: a profiler that has run once leaves its process slower, and one process's
    timing is one draw), fitted and scaled per setting as the shipped calibration is, written to `output` (default:
    where `calibration_of` looks). Needs PyTorch and a GPU."""
    import datetime
    import itertools
    import os
    import platform
    import subprocess
    import sys

    from tracekit.analysis.steps.calibration import scaled_like_shipped
    from tracekit.analysis.steps.profiler_cost import calibration_to_dict, fit
    from tracekit.profiler_cost_bench import SETTINGS

    rows = []
    for setting, process in itertools.product(SETTINGS, range(CALIBRATION_PROCESSES)):
        say(f"{setting} (process {process + 1} of {CALIBRATION_PROCESSES})")
        done = subprocess.run(
            [sys.executable, "-m", "tracekit.profiler_cost_bench", setting],
            capture_output=True,
            text=True,
            # the profiler as it runs by default: CUPTI kept for the process (torn down, some sessions lose events)
            env={k: v for k, v in os.environ.items() if k != "TEARDOWN_CUPTI"},
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise TracekitError(f"calibrate --profiler needs PyTorch with a CUDA GPU here: {last}")
        rows += [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    name = f"measured on {platform.node()} ({platform.processor() or platform.machine()}), {stamp}"
    scaled = scaled_like_shipped(fit(rows, name))
    target = Path(output) if output is not None else default_calibration_path()
    data = calibration_to_dict(scaled)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TracekitError(f"{target}: cannot write the calibration: {exc.strerror}") from None
    return data, target
