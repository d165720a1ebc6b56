"""Judge `tracekit.analysis.source_lines` on the source-lines set: python sample_traces/source_lines/evaluate.py.

Ground truth comes from the kernels' own sources and the timing pass, never from the tool: the problem line of each
case is the one its source marks `[case: limiter]` (the fix's line `[case: fixed]`), its kind is cases.csv's, the
measured gain is (before - after) / before of the median times in h200/timings.csv, recorded before any profile.
Prints one row per case and the issue's four figures; `evaluate()` returns them for tests/analysis.

`evaluate.py --heldout` judges the held-out cases (heldout_cases.csv, recorded into h200_heldout/ by
`make_source_lines.sh OUT_DIR heldout`), which the analysis was not tuned on, and labels their figures held-out;
`evaluate.py CASES_CSV RECORDING_DIR` judges any case file against any recording folder of the same layout."""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.csv"
RECORDING = HERE / "h200"
HELDOUT_CASES = HERE / "heldout_cases.csv"
HELDOUT_RECORDING = HERE / "h200_heldout"
MARKER = re.compile(r"\[(\w+): (limiter|fixed)\]")


@dataclass(frozen=True)
class CaseResult:
    case: str
    kind: str
    limiter_line: tuple[str, int]
    top_before: tuple[str | None, int | None, str]
    ranks_first: bool
    top_after: tuple[str | None, int | None, str]
    still_first_after: bool
    measured_gain: float
    estimated_gain: float | None
    estimated_low: float | None
    estimated_high: float | None

    @property
    def within_25pct(self) -> bool:
        return self.estimated_gain is not None and abs(self.estimated_gain - self.measured_gain) <= 0.25 * abs(
            self.measured_gain
        )

    @property
    def interval_holds(self) -> bool:
        return (
            self.estimated_low is not None
            and self.estimated_high is not None
            and self.estimated_low <= self.measured_gain <= self.estimated_high
        )


def markers() -> dict[tuple[str, str], tuple[str, int]]:
    """(case, "limiter" | "fixed") -> (file name, line), from the sources' comments."""
    found: dict[tuple[str, str], tuple[str, int]] = {}
    for path in sorted((HERE / "src").glob("*.cu")):
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            for case, role in MARKER.findall(text):
                found.setdefault((case, role), (path.name, number))
    return found


def evaluate(
    samples: pl.DataFrame, launches: pl.DataFrame, cases_csv: Path = CASES, recording: Path = RECORDING
) -> list[CaseResult]:
    """`samples`/`launches`: the ncu-rep's import (`ParsedImport.source_samples`, `.launches`); `cases_csv` the
    cases to judge, `recording` the folder whose timings.csv was recorded with that import."""
    from tracekit.analysis.source_lines import analyze_source_lines

    timings = {
        (r["case"], r["variant"]): r for r in csv.DictReader((recording / "timings.csv").read_text().splitlines())
    }
    cases = list(csv.DictReader(cases_csv.read_text().splitlines()))
    marks = markers()
    for case in cases:
        for role in ("limiter", "fixed"):
            if (case["case"], role) not in marks:
                raise ValueError(f"no [{case['case']}: {role}] marker in src/*.cu")
        for variant in ("before", "after"):
            if (case["case"], variant) not in timings:
                raise ValueError(f"{recording / 'timings.csv'} has no {variant} row for {case['case']}")
    key_of = {str(name).split("(")[0]: key for key, name in launches.select("launch_key", "kernel_name").rows()}
    duration = dict(launches.select("launch_key", "duration_ns").rows())

    def ranked(kernel: str):
        key = key_of[kernel]
        result = analyze_source_lines(samples.filter(pl.col("launch_key") == key), duration[key])
        assert result is not None
        return result

    out = []
    for case in cases:
        name, kind = case["case"], case["kind"]
        before, after = timings[(name, "before")], timings[(name, "after")]
        measured = (float(before["median_ns"]) - float(after["median_ns"])) / float(before["median_ns"])
        limiter, fixed = marks[(name, "limiter")], marks[(name, "fixed")]
        first = ranked(before["kernel"])
        top = first.lines[0]
        top_before = (_base(top.file), top.line, top.kind)
        marked = next((x for x in first.lines if (_base(x.file), x.line) == limiter), None)
        second = ranked(after["kernel"]).lines[0]
        top_after = (_base(second.file), second.line, second.kind)
        out.append(
            CaseResult(
                case=name,
                kind=kind,
                limiter_line=limiter,
                top_before=top_before,
                ranks_first=top_before == (*limiter, kind),
                top_after=top_after,
                still_first_after=top_after == (*fixed, kind),
                measured_gain=measured,
                estimated_gain=marked.gain_share if marked else None,
                estimated_low=marked.gain_share_low if marked else None,
                estimated_high=marked.gain_share_high if marked else None,
            )
        )
    return out


def _base(path: str | None) -> str | None:
    return path.rsplit("/", 1)[-1] if path else None


def figures(results: list[CaseResult]) -> dict[str, float]:
    n = len(results)
    return {
        "ranks_first_with_kind": sum(r.ranks_first for r in results) / n,
        "not_first_once_fixed": sum(not r.still_first_after for r in results) / n,
        "gain_within_25pct": sum(r.within_25pct for r in results) / n,
        "interval_holds": sum(r.interval_holds for r in results) / n,
    }


def main(argv: list[str] | None = None) -> int:
    import gzip
    import shutil
    import tempfile

    from tracekit.importers import ncu_rep

    parser = argparse.ArgumentParser(description="Judge the source-lines analysis on a recorded case set.")
    parser.add_argument("cases_csv", nargs="?", type=Path, help=f"case file (default {CASES.name})")
    parser.add_argument("recording", nargs="?", type=Path, help=f"recording folder (default {RECORDING.name}/)")
    parser.add_argument(
        "--heldout",
        action="store_true",
        help=f"the held-out cases: {HELDOUT_CASES.name} against {HELDOUT_RECORDING.name}/",
    )
    args = parser.parse_args(argv)
    heldout = args.heldout or (args.cases_csv is not None and args.cases_csv.resolve() == HELDOUT_CASES)
    cases_csv = args.cases_csv or (HELDOUT_CASES if args.heldout else CASES)
    recording = args.recording or (HELDOUT_RECORDING if args.heldout else RECORDING)
    report_gz = recording / "source_lines.ncu-rep.gz"
    for needed in (cases_csv, recording / "timings.csv", report_gz):
        if not needed.is_file():
            print(f"evaluate.py: {needed} not found", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "source_lines.ncu-rep"
        with gzip.open(report_gz) as src, open(report, "wb") as dst:
            shutil.copyfileobj(src, dst)
        parsed = ncu_rep.read(report)
    try:
        results = evaluate(parsed.source_samples, parsed.launches, cases_csv, recording)
    except (ValueError, KeyError) as error:
        print(f"evaluate.py: {error}", file=sys.stderr)
        return 2
    label = "held-out" if heldout else "in-sample"
    print(f"{label}: {cases_csv.name} against {recording.name}/ ({len(results)} cases)")
    print("case | marked line (kind) | ranked first | measured gain | estimate [interval] | after: first line")
    for r in results:
        est = (
            f"{r.estimated_gain:.2f} [{r.estimated_low:.2f}, {r.estimated_high:.2f}]"
            if r.estimated_gain is not None and r.estimated_low is not None and r.estimated_high is not None
            else "none"
        )
        print(
            f"{r.case} | {r.limiter_line[0]}:{r.limiter_line[1]} ({r.kind}) | "
            f"{'yes' if r.ranks_first else 'no: ' + str(r.top_before)} | {r.measured_gain:.2f} | {est} | "
            f"{r.top_after}{' (still first)' if r.still_first_after else ''}"
        )
    for name, value in figures(results).items():
        print(f"{'held-out ' if heldout else ''}{name}: {value:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
