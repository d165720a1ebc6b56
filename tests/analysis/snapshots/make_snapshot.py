"""The engine's verdicts of every sample and real export, kept as a snapshot so that a refactor can prove it changed
no verdict (issue 19: the rules split out of `classification.py`).

`python tests/analysis/snapshots/make_snapshot.py` imports each group of files below into a fresh temporary
SQLite store, runs the engine (`tracekit.api.analyze_stored`, what `tracekit analyze --json` prints) over its
launches and writes `engine_snapshot.json.gz` beside this script: per launch, keyed by `<file>#<index>` (the file's
path relative to the repo or to ../shared/real_exports, and the launch's index in its import), its projection:

- `mode`, `limiter`, `flags` (sorted), `findings` (the ranked finding kinds), `pairing` (its status);
- `numbers`: every numeric leaf of the JSON object (bools too), by flattened path (`warps.p90_latency_ns`,
  `classification.findings.0.sm_time_fraction`), except the store's own ids (launch and import ids depend on the
  order of imports, not on the analysis).

Groups (a store each, so a launch's context, its pairing candidates and its sweep, is the same every run):
`sample_traces/h100/` (every file), `sample_traces/verdict_cases/h100/` as its test imports it (`cases.raw.csv`
and the traces), its `cases.details.csv` alone, `sample_traces/verdict_cases/h100_ceilings/` (raw and traces),
`sample_traces/regions/` (traces and `ws_pipeline.raw.csv.gz`), its `ws_pipeline.details.csv` alone, and each
file of ../shared/real_exports/ alone. A file no reader takes today is left out. Every launch of an import of at most
`MAX_LAUNCHES` launches is kept; of a larger import (an Nsight Systems export of thousands of kernels), its first
`MAX_LAUNCHES`.

Regenerate it deliberately, by this script, when a verdict is meant to change (the measured ceilings of issue 20,
a new rule), and commit the new snapshot with the change that explains it: the diff of the snapshot is then the
review of what changed. `tests/analysis/test_refactor_snapshot.py` re-runs the projection and compares.
"""

from __future__ import annotations

import gzip
import json
import math
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

from tests.helpers import REAL_EXPORTS  # noqa: E402
from tracekit.api import analyze_stored  # noqa: E402
from tracekit.errors import TracekitError  # noqa: E402
from tracekit.ingest import ingest  # noqa: E402
from tracekit.store import Store  # noqa: E402

SNAPSHOT = Path(__file__).with_name("engine_snapshot.json.gz")
SAMPLES = REPO / "sample_traces"
MAX_LAUNCHES = 200
# Store ids, not analysis: they follow the order of imports.
ID_KEYS = frozenset(
    {"launch_id", "import_id", "counters_launch_id", "launch_ids", "candidate_launch_ids", "id", "engine_version"}
)
SKIPPED_NAMES = ("README", "MANIFEST", ".sh", ".txt", ".log", ".cu", ".cuh", ".py", ".toml", ".json")


def _candidates(folder: Path) -> list[Path]:
    """Files of a sample folder worth offering to the readers (scripts, notes and logs are not traces)."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not any(p.name.startswith(s) or p.name.endswith(s) for s in SKIPPED_NAMES)
    )


def groups() -> list[tuple[str, Path, list[Path]]]:
    """(label root, base folder for names, files) per store, in a fixed order."""
    cases = SAMPLES / "verdict_cases" / "h100"
    ceilings = SAMPLES / "verdict_cases" / "h100_ceilings"  # issue 20's cases, judged against the measured ceilings
    regions = SAMPLES / "regions"
    out: list[tuple[str, Path, list[Path]]] = [
        ("sample_traces/h100", REPO, _candidates(SAMPLES / "h100")),
        ("verdict_cases traces + raw", REPO, [p for p in _candidates(cases) if p.name != "cases.details.csv"]),
        ("verdict_cases details", REPO, [cases / "cases.details.csv"]),
        (
            "verdict_cases h100_ceilings traces + raw",
            REPO,
            [p for p in _candidates(ceilings) if p.name != "cases.details.csv"],
        ),
        ("sample_traces/regions", REPO, [p for p in _candidates(regions) if p.name != "ws_pipeline.details.csv"]),
        ("sample_traces/regions details", REPO, [regions / "ws_pipeline.details.csv"]),
    ]
    if REAL_EXPORTS.is_dir():
        for path in sorted(REAL_EXPORTS.iterdir()):
            if path.is_file() and not path.name.startswith(("README", "MANIFEST")):
                out.append((path.name, REAL_EXPORTS, [path]))
    return out


def _leaves(value: Any, path: str) -> Iterator[tuple[str, float | int | bool]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ID_KEYS:
                continue
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}.{i}")
    elif isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
        yield path, value


def project(result: dict[str, Any]) -> dict[str, Any]:
    """The compared projection of one `tracekit.analysis/2` object."""
    verdict = result["classification"]
    return {
        "mode": verdict["mode"],
        "limiter": verdict["limiter"],
        "flags": sorted(verdict["flags"]),
        "findings": [f["kind"] for f in verdict.get("findings") or []],
        "pairing": (result.get("pairing") or {}).get("status"),
        # the predictor's `what_to_try` is left out: its model is judged by benchmarks/bench_predict.py on the
        # measured sweep set and pinned by its own tests, and changes with it, not with the verdict
        "numbers": dict(_leaves({k: v for k, v in result.items() if k != "what_to_try"}, "")),
    }


def snapshot_group(base: Path, files: list[Path], workdir: Path) -> dict[str, dict[str, Any]]:
    """Import `files` into one fresh store (a file no reader takes is left out), analyze, project."""
    store = Store.open(f"sqlite:///{workdir / 'store.sqlite'}")
    try:
        imported: list[tuple[str, int]] = []
        for path in files:
            try:
                done, _ = ingest(store, str(path))
            except TracekitError:
                continue
            imported.append((path.relative_to(base).as_posix(), int(done.import_id)))
        out: dict[str, dict[str, Any]] = {}
        for name, import_id in imported:
            launches = store.launches(import_id=import_id).sort("id").head(MAX_LAUNCHES)
            for index, result in enumerate(analyze_stored(store, launches, use_cache=False).to_dicts()):
                out[f"{name}#{index}"] = project(result)
        return out
    finally:
        store.engine.dispose()


def build() -> dict[str, dict[str, Any]]:
    snapshot: dict[str, dict[str, Any]] = {}
    for _, base, files in groups():
        with tempfile.TemporaryDirectory(prefix="tk-snapshot-") as tmp:
            snapshot.update(snapshot_group(base, files, Path(tmp)))
    return snapshot


def main() -> None:
    snapshot = build()
    text = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), allow_nan=False)
    SNAPSHOT.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"{len(snapshot)} launches, {SNAPSHOT.stat().st_size / 1e6:.2f} MB -> {SNAPSHOT}")


if __name__ == "__main__":
    main()
