"""Every launch with counters, each unit's rate against the achievable ceiling it is judged by (issue 26).

`python tests/ceilings/observe.py` imports every profiler file of `sample_traces/` (the team's real-kernel set
`sample_traces/real_kernels/` included) and of `../shared/real_exports/`, each alone into a fresh temporary SQLite
store, analyzes its launches (`tracekit.api.analyze_stored`, what `tracekit analyze --json` prints) and reads the
result's `ceilings.units`: per unit (DRAM, L2, shared, FP32, FP64, tensor per type, block launch) the achieved rate,
the ceiling it was judged against and their ratio. It then writes, into each shipped measured profile
(`tracekit/ceilings/profiles/`), the fastest real kernel per ceiling as an `observations` entry (rate, kernel,
file, launch index, the counters it came from), so that a ceiling is never below a kernel that ran
(`docs/ceilings.md`). `tests/ceilings/test_every_launch.py` runs the same scan and checks that no unit runs more than
`TOLERANCE` above its ceiling.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

from tests.helpers import REAL_EXPORTS  # noqa: E402
from tracekit.analysis.types import LaunchAnalysis  # noqa: E402
from tracekit.api import analyze_stored  # noqa: E402
from tracekit.errors import TracekitError  # noqa: E402
from tracekit.importers import detect_format  # noqa: E402
from tracekit.ingest import ingest  # noqa: E402
from tracekit.store import Store  # noqa: E402

SAMPLES = REPO / "sample_traces"
PROFILES = REPO / "tracekit" / "ceilings" / "profiles"
# A unit may run this far above its achievable ceiling (the run-to-run spread of a measured plateau, docs/ceilings.md)
TOLERANCE = 1.03
# Files that are notes, scripts or calibrate's own output, never a profiler export.
SKIPPED_SUFFIXES = (".sh", ".txt", ".log", ".cu", ".cuh", ".py", ".toml", ".json", ".md", ".tsv")
SKIPPED_FOLDERS = ("ceilings", "src")
# What each unit's rate is read from (launch_work in tracekit/analysis/roofline.py), for an observation's provenance.
COUNTERS = {
    "dram": "dram__bytes.sum / gpu__time_duration.sum",
    "l2": "lts__t_sectors.sum x 32 B / gpu__time_duration.sum",
    "shared": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum x 128 B / gpu__time_duration.sum",
    "fp32": "smsp__sass_thread_inst_executed_op_f{fma x2,add,mul}_pred_on / gpu__time_duration.sum",
    "fp64": "smsp__sass_thread_inst_executed_op_d{fma x2,add,mul}_pred_on / gpu__time_duration.sum",
    "block_launch": "launch__grid_size / gpu__time_duration.sum / SMs",
}


@dataclass(frozen=True)
class UnitRate:
    """One unit of one launch against the ceiling it was judged by."""

    file: str  # relative to the repo, or to ../shared/real_exports ("real_exports/<name>")
    launch_index: int  # in its import, by launch id
    kernel: str
    device: str
    unit: str  # dram, l2, shared, fp32, fp64, tensor_<type>, block_launch
    achieved: float
    ceiling_name: str
    ceiling_value: float
    ceiling_source: str
    of_achievable: float
    scattered_fraction: float | None = None
    write_fraction: float | None = None


def candidate_files() -> list[tuple[str, Path]]:
    """(name, path) of every file that may be a profiler export, samples first, in a fixed order."""
    out: list[tuple[str, Path]] = []
    for path in sorted(SAMPLES.rglob("*")):
        relative = path.relative_to(SAMPLES)
        if not path.is_file() or relative.parts[0] in SKIPPED_FOLDERS or "src" in relative.parts[:-1]:
            continue
        if path.name.startswith("README") or path.name.endswith(SKIPPED_SUFFIXES):
            continue
        out.append((path.relative_to(REPO).as_posix(), path))
    if REAL_EXPORTS.is_dir():
        for path in sorted(REAL_EXPORTS.iterdir()):
            if path.is_file() and not path.name.startswith(("README", "MANIFEST")):
                out.append((f"real_exports/{path.name}", path))
    return out


def _units(name: str, index: int, result: LaunchAnalysis) -> Iterator[UnitRate]:
    section = result.ceilings
    if section is None:
        return
    for unit in section.units:
        yield UnitRate(
            file=name,
            launch_index=index,
            kernel=result.kernel.name or result.kernel.mangled_name or "",
            device=section.device_name,
            unit=unit.unit,
            achieved=unit.achieved,
            ceiling_name=unit.ceiling_name,
            ceiling_value=unit.ceiling_value,
            ceiling_source=unit.ceiling_source,
            of_achievable=unit.of_achievable,
            scattered_fraction=unit.scattered_fraction,
            write_fraction=unit.write_fraction,
        )


# Timelines of CUPTI activity (a PyTorch profiler trace, an Nsight Systems export): launches with no hardware counter,
# so no unit to judge; importing them found none and took three quarters of the scan.
NO_COUNTER_FORMATS = ("kineto", "nsys_sqlite")


def _format(path: Path) -> str | None:
    try:
        return detect_format(path)
    except TracekitError:
        return None


def scan_file(name: str, path: Path, workdir: Path, empty_store: Path | None = None) -> list[UnitRate]:
    """Every unit of every launch of one file (none when no reader takes it, or its format has no counters), in a
    new store in `workdir` (a copy of `empty_store`, a new store's file, where given)."""
    if _format(path) in NO_COUNTER_FORMATS:
        return []
    if empty_store is not None:
        shutil.copyfile(empty_store, workdir / "store.sqlite")
    store = Store.open(f"sqlite:///{workdir / 'store.sqlite'}")
    try:
        try:
            done, _ = ingest(store, str(path))
        except TracekitError:
            return []
        launches = store.launches(import_id=int(done.import_id)).sort("id").with_row_index("launch_index_in_file")
        # only launches with counters have a unit to judge (a step trace's thousands of timings have none)
        measured = store.metrics(launches["id"].to_list())["launch_id"].unique()
        launches = launches.filter(pl.col("id").is_in(measured.implode()))
        results = analyze_stored(store, launches.drop("launch_index_in_file"), use_cache=False).results
        indexes = launches["launch_index_in_file"].to_list()
        return [u for i, r in zip(indexes, results, strict=True) for u in _units(name, i, r)]
    finally:
        store.engine.dispose()


def scan() -> list[UnitRate]:
    out: list[UnitRate] = []
    with tempfile.TemporaryDirectory(prefix="tk-observe-") as template:
        # each file's store starts as a copy of one new store (migrating 240 new stores took half the scan)
        empty = Path(template) / "store.sqlite"
        Store.open(f"sqlite:///{empty}").engine.dispose()
        for name, path in candidate_files():
            with tempfile.TemporaryDirectory(prefix="tk-observe-") as tmp:
                out.extend(scan_file(name, path, Path(tmp), empty))
    return out


def above(rates: list[UnitRate], tolerance: float = TOLERANCE) -> list[UnitRate]:
    """The units that run more than `tolerance` times the achievable ceiling they are judged against."""
    return [r for r in rates if r.of_achievable > tolerance]


def observations_for(profile_file: str, rates: list[UnitRate]) -> list[dict[str, object]]:
    """The real kernels a shipped profile keeps as `observations`: per ceiling the fastest launch judged by it; for a
    DRAM ceiling blended from the stream and scattered ones, or interpolated between two read:write mixes, every
    launch above it (each with its scattered and written shares: the profile raises the parts exactly as far as
    that launch needs, tracekit/ceilings/profile.py), else the nearest to it."""
    source = f"measured: tracekit/ceilings/profiles/{profile_file}"
    kept: dict[str, list[UnitRate]] = {}
    for rate in rates:
        if rate.ceiling_source != source:
            continue
        composite = "+" in rate.ceiling_name or "~" in rate.ceiling_name
        held = kept.setdefault(rate.ceiling_name, [])
        above = [r for r in held if r.of_achievable > 1.0]
        if composite and rate.of_achievable > 1.0:
            held[:] = [*above, rate]
        elif composite:
            if not above and (not held or rate.of_achievable > held[0].of_achievable):
                held[:] = [rate]
        elif not held or rate.achieved > held[0].achieved:
            held[:] = [rate]
    return [
        {
            "ceiling": name,
            "value": rate.achieved,
            "kernel": rate.kernel,
            "file": rate.file,
            "launch_index": rate.launch_index,
            "counters": COUNTERS.get(rate.unit, "sm__ops_path_tensor_src_<type>.sum / gpu__time_duration.sum"),
            "scattered_fraction": rate.scattered_fraction if "+" in name else None,
            "write_fraction": rate.write_fraction if "~" in name else None,
        }
        for name, held in sorted(kept.items())
        for rate in held
    ]


def write_observations(rates: list[UnitRate]) -> None:
    """Each shipped profile's `observations`, replaced by the fastest real kernels of this scan."""
    for path in sorted(PROFILES.glob("*.json")):
        profile = json.loads(path.read_text(encoding="utf-8"))
        profile["observations"] = observations_for(path.name, rates)
        path.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        print(f"{path.name}: {len(profile['observations'])} observations")


def strip_observations() -> None:
    """Each shipped profile without its `observations`, so that a scan for writing them judges every launch by the
    microbenchmarks alone: judged by a profile already raised for them, the launches it was raised for sit at their
    ceiling, not above it, and writing twice would drop them."""
    for path in sorted(PROFILES.glob("*.json")):
        profile = json.loads(path.read_text(encoding="utf-8"))
        profile["observations"] = []
        path.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    if "--write" in sys.argv:
        strip_observations()
    rates = scan()
    print(f"{len(rates)} unit rates")
    for r in sorted(above(rates, 1.0), key=lambda r: -r.of_achievable):
        print(
            f"{r.of_achievable:7.3f} {r.unit:12s} {r.achieved:.4g} vs {r.ceiling_name} {r.ceiling_value:.4g} "
            f"[{r.ceiling_source}] {r.device} | {r.file}#{r.launch_index} {r.kernel[:60]}"
        )
    if "--write" in sys.argv:
        write_observations(rates)


if __name__ == "__main__":
    main()
