"""`tracekit analyze`: the latency-hiding analysis of each launch, as text or as JSON objects."""

from __future__ import annotations

import re
from typing import Annotated, Any

import polars as pl
import typer

from tracekit.analysis.types import LaunchAnalysis
from tracekit.api import analyze_stored
from tracekit.cli.common import DbOption, JsonOption, console, open_store, print_json
from tracekit.errors import TracekitError
from tracekit.selection import resolve_launches

MAX_NAME_CHARS = 160


def _fmt(value: Any, unit: str = "", digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}g}{unit}"
    return f"{value}{unit}"


def _pct(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{fraction:+.3%}"


def _short(name: str | None) -> str:
    name = name or "(unnamed)"
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 3] + "..."


def print_summary(result: LaunchAnalysis) -> None:
    """A terminal summary; the full object is in --json."""
    kernel, occupancy, verdict = result.kernel, result.occupancy, result.classification
    lines = [
        f"launch {result.launch_id}: {_short(kernel.name)}",
        f"  grid {list(kernel.grid)} block {list(kernel.block)}  regs {_fmt(kernel.registers_per_thread)}  "
        f"smem {_fmt(kernel.shared_mem_per_block_bytes, ' B')}  duration {_fmt(result.duration_ns, ' ns')}",
        f"  occupancy: theoretical {_fmt(occupancy.theoretical_pct, '%')} "
        f"(limiter {occupancy.limiter or 'n/a'}), achieved {_fmt(occupancy.achieved_pct, '%')}, "
        f"waves per SM {_fmt(occupancy.waves_per_sm)}",
        f"  counters: {result.pairing.evidence}",
    ]
    warps, law, tail = result.warps, result.littles_law, result.tail
    if warps:
        lines.append(
            f"  warps: {warps.count:,} on {warps.sm_count} SMs; latency mean "
            f"{_fmt(warps.mean_latency_ns, ' ns')} p99 {_fmt(warps.p99_latency_ns, ' ns')}; occupancy "
            f"{_fmt(warps.mean_occupancy_warps_per_sm)} warps/SM; throughput "
            f"{_fmt(warps.throughput_warps_per_ns_per_sm)} warps/ns/SM"
        )
    if law:
        lines.append(
            f"  Little's law ({law.window_kind}): occupancy {_fmt(law.mean_occupancy)} vs latency x throughput "
            f"{_fmt(law.latency_x_throughput)} ({_pct(law.relative_error)})"
        )
    if tail:
        lines.append(f"  tail: {_fmt(tail.tail_ns, ' ns')} ({tail.tail_fraction:.1%} of the launch)")
    if result.sweep_note:
        lines.append(f"  sweep: {result.sweep_note}")
    limiter = f" by {verdict.limiter}" if verdict.limiter else ""
    flags = f"  [{', '.join(verdict.flags)}]" if verdict.flags else ""
    lines.append(f"  verdict: {verdict.mode}{limiter}{flags}")
    lines += [f"    - {line}" for line in verdict.evidence]
    for line in lines:
        console.print(line, markup=False)


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
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Explain each launch: occupancy, latency, throughput, Little's law, tail, and what bounds it."""
    pairs = parse_pairs(pair)
    store = open_store(db)
    launches = pl.concat([resolve_launches(store, source, kernel) for source in sources], how="diagonal_relaxed")
    results = analyze_stored(store, launches.unique("id", keep="first", maintain_order=True), pairs)
    if as_json:
        print_json(results.to_dicts())
        return
    for result in results:
        print_summary(result)
