"""Every verdict of the samples and real exports is the one the snapshot recorded (issue 19: the rules moved out of
`classification.py` into `tracekit/analysis/rules/` must not change a verdict).

Compared per launch of the snapshot (`tests/analysis/snapshots/engine_snapshot.json.gz`, made by
`make_snapshot.py` beside it, which says how it was made and when to regenerate it): `mode`, `limiter`, `flags`,
the ranked finding kinds, the pairing status, and every numeric leaf of the JSON object recorded there (floats
within a relative 1e-9). Not compared: evidence, advice and headline wording (sentences may be reworded), fields
added since the snapshot (JSON grows additively), and files or launches the snapshot does not hold (a new reader
may start importing a file of ../shared/real_exports/).
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.snapshots import make_snapshot
from tests.helpers import skip_or_fail


def _differences(key: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = [
        f"{key}: {field} {old[field]!r} -> {new[field]!r}"
        for field in ("mode", "limiter", "flags", "findings", "pairing")
        if old[field] != new[field]
    ]
    for path, value in old["numbers"].items():
        if path not in new["numbers"]:
            out.append(f"{key}: {path} is gone (was {value!r})")
            continue
        now = new["numbers"][path]
        same = (
            now == value
            if isinstance(value, bool) or isinstance(now, bool)
            else math.isclose(float(now), float(value), rel_tol=1e-9, abs_tol=1e-12)
        )
        if not same:
            out.append(f"{key}: {path} {value!r} -> {now!r}")
    return out


RECORDED: dict[str, dict[str, Any]] = json.loads(gzip.decompress(make_snapshot.SNAPSHOT.read_bytes()))


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    if not make_snapshot.REAL_EXPORTS.is_dir():
        skip_or_fail(f"{make_snapshot.REAL_EXPORTS} is absent (the shared real exports live beside the checkout)")
    return RECORDED


def _params() -> list[Any]:
    """One test per store group the snapshot holds launches of (files it does not hold are not compared)."""
    held = {key.rsplit("#", 1)[0] for key in RECORDED}
    return [
        pytest.param(label, base, files, id=label)
        for label, base, files in make_snapshot.groups()
        if any(path.relative_to(base).as_posix() in held for path in files)
    ]


@pytest.mark.parametrize(("label", "base", "files"), _params())
def test_verdicts_match_the_snapshot(
    recorded: dict[str, dict[str, Any]], label: str, base: Path, files: list[Path]
) -> None:
    names = {path.relative_to(base).as_posix() for path in files}
    expected = {key: value for key, value in recorded.items() if key.rsplit("#", 1)[0] in names}
    with tempfile.TemporaryDirectory(prefix="tk-snapshot-") as tmp:
        now = make_snapshot.snapshot_group(base, files, Path(tmp))
    missing = sorted(set(expected) - set(now))
    assert not missing, f"{label}: launches no longer analysed: {missing[:10]}"
    problems = [line for key in sorted(expected) for line in _differences(key, expected[key], now[key])]
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])
