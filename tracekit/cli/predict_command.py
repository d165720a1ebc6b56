"""`tracekit predict`: what a new block size, occupancy, ILP or grid would buy a launch, with its interval."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from tracekit import format as fmt
from tracekit.analysis.predict import Prediction
from tracekit.api import analyze_stored, predict_stored
from tracekit.cli.common import DbOption, JsonOption, busy, console, open_store, print_json
from tracekit.errors import TracekitError
from tracekit.selection import resolve_launches

PREDICTION_SCHEMA = "tracekit.prediction/1"


def prediction_dict(prediction: Prediction) -> dict[str, Any]:
    """The --json object (docs/predict.md documents each field)."""
    return {"schema": PREDICTION_SCHEMA, **asdict(prediction)}


def suggestion_lines(found: list[Prediction] | str) -> list[str]:
    """`what to try` under a launch in `tracekit analyze`."""
    if isinstance(found, str):
        return [f"  what to try: nothing predicted ({found})"]
    if not found:
        return ["  what to try: no change of block size, registers, shared memory, ILP or grid is predicted to help"]
    lines = ["  what to try (predicted speed-up, interval; tracekit predict shows the reasoning):"]
    for p in found:
        nsight = f"; Nsight Compute's {p.nsight.rule}: {p.nsight.speedup:.2f}x" if p.nsight is not None else ""
        lines.append(
            f"    - {p.change.describe()}: {p.predicted.speedup:.2f}x ({p.predicted.low:.2f}-{p.predicted.high:.2f}x), "
            f"{p.regime}-bound after; basis: {', '.join(p.basis)}{nsight}"
        )
    return lines


def prediction_lines(p: Prediction) -> list[str]:
    """The terminal summary; exact values are in --json."""
    got = p.predicted
    lines = [
        f"launch {p.launch_id}: {p.kernel_name or '?'} -- {p.change.describe()}",
        f"  predicted {fmt.duration(got.duration_ns)} (now {fmt.duration(p.current_duration_ns)}): speed-up "
        f"{got.speedup:.2f}x, interval {got.low:.2f}-{got.high:.2f}x; {p.regime}-bound after the change",
        f"  basis: {', '.join(p.basis)}",
    ]
    if p.nsight is not None:
        lines.append(
            f"  Nsight Compute's {p.nsight.rule} rule estimates {p.nsight.speedup:.2f}x "
            f"({p.nsight.estimated_speedup_pct:.1f}% of the duration) for {p.nsight.applies_to}"
        )
    lines += [f"  - {f.step}: {f.text}" for f in p.findings]
    if p.narrow:
        lines.append(f"  to narrow it: {p.narrow}")
    return lines


def predict_command(
    source: Annotated[str, typer.Argument(help="A launch id (launch:12), an import id (7) or a profiler file.")],
    block: Annotated[int | None, typer.Option("--block", help="Threads per block.")] = None,
    regs: Annotated[int | None, typer.Option("--regs", help="Registers per thread.")] = None,
    smem: Annotated[
        int | None, typer.Option("--smem", help="Dynamic shared memory per block in bytes, as the launch passes it.")
    ] = None,
    warps_per_sm: Annotated[int | None, typer.Option("--warps-per-sm", help="Target warps per SM.")] = None,
    ilp: Annotated[float | None, typer.Option("--ilp", help="Independent requests per warp (now: 1).")] = None,
    grid: Annotated[int | None, typer.Option("--grid", help="Blocks in the grid (the same total work).")] = None,
    kernel: Annotated[str | None, typer.Option("--kernel", help="Only kernels whose name contains this.")] = None,
    ceilings: Annotated[
        Path | None,
        typer.Option(
            "--ceilings",
            help="A ceilings profile (tracekit calibrate -o FILE); default: the device's shipped measured profile, "
            "else nominal peaks.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Predict what a changed block size, registers, shared memory, occupancy, ILP or grid would buy a launch."""
    if ceilings is not None:
        from tracekit.ceilings import read_profile

        read_profile(ceilings)  # a bad profile is one line, before anything is imported
    store = open_store(db)
    launches = resolve_launches(store, source, kernel)
    if launches.height == 0:
        raise TracekitError(f"{source}: no launch to predict")
    launches = launches.unique("id", keep="first", maintain_order=True)
    with busy(f"analyzing {launches.height:,} launch{'es' if launches.height != 1 else ''}"):
        results = analyze_stored(store, launches)
    knobs = {"block": block, "regs": regs, "smem": smem, "warps_per_sm": warps_per_sm, "ilp": ilp, "grid": grid}
    knobs = {k: v for k, v in knobs.items() if v is not None}
    predictions = [predict_stored(store, result, ceilings, **knobs) for result in results]
    if as_json:
        print_json([prediction_dict(p) for p in predictions])
        return
    for prediction in predictions:
        for line in prediction_lines(prediction):
            console.print(line, markup=False)
