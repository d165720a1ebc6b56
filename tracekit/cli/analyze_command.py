"""`tracekit analyze`: the latency-hiding analysis of each launch, as text or as JSON objects."""

from __future__ import annotations

import re
from typing import Annotated

import polars as pl
import typer

from tracekit import format as fmt
from tracekit.api import LaunchAnalysis, analyze_stored
from tracekit.cli.common import DbOption, JsonOption, NamesOption, busy, console, open_store, print_json, print_table
from tracekit.errors import TracekitError
from tracekit.format import NameStyle
from tracekit.present.launch import launch_tables
from tracekit.present.prediction import cite_once
from tracekit.present.rules.notes import counters_evidence, sweep_note
from tracekit.present.try_first import TryFirst, try_first
from tracekit.present.verdict import limited_by, verdict_text
from tracekit.selection import resolve_launches


def summary_lines(result: LaunchAnalysis, names: NameStyle = NameStyle.base) -> list[str]:
    """The terminal summary of one launch; the full object, exact values, is in --json."""
    kernel, occupancy, verdict = result.kernel, result.occupancy, result.classification
    smem = kernel.shared_mem_per_block_bytes
    lines = [
        f"launch {result.launch_id}: {fmt.kernel_name(kernel.name or kernel.mangled_name, names)}",
        *([f"  {verdict.headline}"] if verdict.headline else []),
        f"  grid {fmt.dims(kernel.grid)}, block {fmt.dims(kernel.block)}, "
        f"{fmt.number(kernel.registers_per_thread)} registers/thread, "
        f"{fmt.size(smem)} shared memory/block, duration {fmt.duration(result.duration_ns)}",
        f"  occupancy: theoretical {fmt.percent(occupancy.theoretical_pct)} ({limited_by(occupancy.limiter)}), "
        f"achieved {fmt.percent(occupancy.achieved_pct)}, {fmt.number(occupancy.waves_per_sm)} waves per SM",
        f"  counters: {counters_evidence(result)}",
    ]
    warps, law, tail = result.warps, result.littles_law, result.tail
    if warps:
        lines.append(
            f"  warps: {fmt.plural(warps.count, 'warp')} on {fmt.plural(warps.sm_count, 'SM')}; latency mean "
            f"{fmt.duration(warps.mean_latency_ns)}, p99 {fmt.duration(warps.p99_latency_ns)}; "
            f"{fmt.number(warps.mean_occupancy_warps_per_sm)} warps/SM in flight; throughput "
            f"{fmt.per_ns_rate(warps.throughput_warps_per_ns_per_sm, 'warps')} per SM"
        )
    if law:
        lines.append(
            f"  Little's law ({law.window_kind.replace('_', ' ')}): occupancy {fmt.number(law.mean_occupancy)} "
            f"warps/SM vs latency x throughput {fmt.number(law.latency_x_throughput)} "
            f"({fmt.fraction(law.relative_error, signed=True)})"
        )
    if tail:
        lines.append(f"  tail: {fmt.duration(tail.tail_ns)} ({fmt.fraction(tail.tail_fraction)} of the launch)")
    if note := sweep_note(result):
        lines.append(f"  sweep: {note}")
    flags = f"  [{', '.join(verdict.flags)}]" if verdict.flags else ""
    lines.append(f"  verdict: {verdict_text(verdict)}{flags}")
    lines += [f"    - {line}" for line in verdict.evidence]
    return lines


def print_summary(result: LaunchAnalysis, names: NameStyle = NameStyle.base) -> None:
    for line in summary_lines(result, names):
        console.print(line, markup=False)


def try_first_lines(section: TryFirst, profiles: list[str]) -> list[str]:
    """What to try first under a launch: each predicted change on one line, its basis after it (a ceilings file
    cited as "(measured)", its path kept in `profiles` to print once), or why there is none."""
    if not section.items:
        return [f"  {section.heading}: {section.note}"]
    lines = [f"  {section.heading} (tracekit predict --explain shows the reasoning):"]
    for item in section.items:
        nsight = f"; {item.nsight}" if item.nsight else ""
        basis = cite_once(item.basis, profiles)
        lines.append(f"    - {item.line}; basis: {basis}{nsight}")
    return lines


def parse_pairs(pairs: list[str] | None) -> dict[int, int]:
    """`--pair 12=30` (or `launch:12=launch:30`): launch 12 takes its counters from launch 30."""
    parsed = {}
    for text in pairs or []:
        match = re.fullmatch(r"\s*(?:launch:)?(\d+)\s*=\s*(?:launch:)?(\d+)\s*", text)
        if not match:
            raise TracekitError(f"--pair {text!r}: expected TRACED=PROFILED launch ids, for example --pair 12=30")
        parsed[int(match.group(1))] = int(match.group(2))
    return parsed


PairOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pair",
        help="TRACED=PROFILED launch ids: the traced launch takes its counters from that profiled one, whatever "
        "the pairing rule decides (repeatable).",
    ),
]


def analyze_command(
    sources: Annotated[list[str], typer.Argument(help="Files, import ids (7, import:7) or launch ids (launch:12).")],
    kernel: Annotated[str | None, typer.Option("--kernel", help="Only kernels whose name contains this.")] = None,
    pair: PairOption = None,
    names: NamesOption = NameStyle.base,
    db: DbOption = None,
    as_json: JsonOption = False,
    tables: Annotated[
        bool, typer.Option("--tables", help="Each launch's tables too, as the report and the launch page show them.")
    ] = False,
) -> None:
    """Explain each launch: occupancy, latency, throughput, Little's law, tail, and what bounds it."""
    pairs = parse_pairs(pair)
    store = open_store(db)
    launches = pl.concat([resolve_launches(store, source, kernel) for source in sources], how="diagonal_relaxed")
    launches = launches.unique("id", keep="first", maintain_order=True)
    with busy(f"analyzing {launches.height:,} launch{'es' if launches.height != 1 else ''}"):
        results = analyze_stored(store, launches, pairs)
    if as_json:
        print_json(results.to_dicts())  # with what_to_try (docs/predict.md)
        return
    from tracekit.api import what_to_try_for
    from tracekit.cli.predict_command import ceilings_lines

    profiles: list[str] = []
    for result in results:
        print_summary(result, names)
        for line in try_first_lines(try_first(result, what_to_try_for(store, result)), profiles):
            console.print(line, markup=False)
        for table in launch_tables(result) if tables else []:
            print_table(table)
    for line in ceilings_lines(profiles):
        console.print(line, markup=False)
