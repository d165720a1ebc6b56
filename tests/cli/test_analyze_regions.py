"""`tracekit analyze --json` on the real region samples, through the store: the `regions` section against plain
readings of the files (csv/json) and the recording's own log."""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REGIONS = REPO / "sample_traces" / "regions"


def analyze_json(path: Path, tmp_path: Path) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "analyze", str(path), "--json", "--db", str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_analyze_json_regions_of_the_warp_specialized_sample(tmp_path):
    path = REGIONS / "ws_pipeline.v2.gz"
    with gzip.open(path, "rt") as handle:
        lines = list(handle)
    rows = [r for r in csv.DictReader(x for x in lines if not x.startswith("#")) if r["region"]]
    counts = Counter(r["region"] for r in rows)
    totals = Counter()
    for r in rows:
        totals[r["region"]] += int(r["end_ns"]) - int(r["start_ns"])
    (result,) = analyze_json(path, tmp_path)
    regions = result["regions"]
    assert regions["time_unit"] == "ns" and regions["sm_count"] == 132 and regions["warp_count"] == 528 * 5
    by_name = {s["region"]: s for s in regions["regions"]}
    assert {name: s["count"] for name, s in by_name.items()} == dict(counts)
    assert {name: s["inclusive_total"] for name, s in by_name.items()} == dict(totals)
    for stats in by_name.values():
        law = stats["littles_law"]  # the whole launch: every instance inside, the law closes exactly
        assert law["relative_error"] == pytest.approx(0, abs=1e-9)
        assert law["mean_warps_in_region_per_sm"] == pytest.approx(totals[stats["region"]] / (regions["span"] * 132))
    # The enclosing mainloop's exclusive time is what its nested regions leave of it.
    nested = sum(totals[name] for name in ("wait_empty", "load_tile", "wait_full", "compute"))
    assert by_name["mainloop"]["exclusive_total"] == totals["mainloop"] - nested
    assert [(role["name"], role["warp_count"]) for role in regions["roles"]] == [("warp 0", 528), ("warps 1-4", 2112)]


def test_analyze_json_splits_the_repeated_proton_launches(tmp_path):
    log = (REGIONS / "run_repeat.txt").read_text()
    shapes = [(int(grid), int(steps)) for grid, steps in re.findall(r"grid \((\d+),\), 4 warps, (\d+) K steps", log)]
    results = analyze_json(REGIONS / "proton_repeat.chrome_trace.gz", tmp_path)
    assert len(results) == len(shapes) == 4
    for result, (grid, steps) in zip(results, shapes, strict=True):
        regions = result["regions"]
        assert regions["time_unit"] == "cycles" and "not converted" in regions["time_note"]
        assert regions["warp_count"] == grid * 4
        counts = {s["region"]: s["count"] for s in regions["regions"]}
        assert counts == {"mainloop": grid * 4, "load": grid * 4 * steps, "dot": grid * 4 * steps, "store": grid * 4}
