"""`tracekit predict`: what a new block size, occupancy, ILP or grid would buy a launch, with its interval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracekit import format as fmt
from tracekit.api import Knobs, analyze_stored, predict_stored
from tracekit.cli.common import DbOption, JsonOption, NamesOption, busy, console, open_store, print_json
from tracekit.errors import TracekitError
from tracekit.format import NameStyle
from tracekit.present.prediction import (
    PredictionText,
    prediction_dict,
    prediction_table,
    prediction_text,
    profiles_of,
)
from tracekit.selection import resolve_launches


def prediction_lines(text: PredictionText, explain: bool = False) -> list[str]:
    """One answer in a few lines: the prediction and its interval, what binds before and after, the basis;
    `explain` adds each step of the derivation. Exact values are in --json."""
    lines = [text.title, f"  {text.answer}", *(f"  {field}: {value}" for field, value in prediction_table(text).rows)]
    if explain:
        lines += [f"  - {step}" for step in text.steps]
    return lines


def ceilings_lines(profiles: list[str]) -> list[str]:
    """The measured ceilings files cited as "(measured)" above, each once."""
    return [f"measured ceilings: {path}" for path in profiles]


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
    explain: Annotated[
        bool, typer.Option("--explain", help="Each step of the derivation under its answer (exact values: --json).")
    ] = False,
    names: NamesOption = NameStyle.base,
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
    knobs = Knobs(block=block, regs=regs, smem=smem, warps_per_sm=warps_per_sm, ilp=ilp, grid=grid)
    predictions = [predict_stored(store, result, ceilings, **knobs) for result in results]
    if as_json:
        print_json([prediction_dict(p) for p in predictions])
        return
    texts = [
        prediction_text(p, result, fmt.kernel_name(result.kernel.name or result.kernel.mangled_name, names))
        for p, result in zip(predictions, results, strict=True)
    ]
    for text in texts:
        for line in prediction_lines(text, explain):
            console.print(line, markup=False)
    for line in ceilings_lines(profiles_of(texts)):
        console.print(line, markup=False)
