"""`tracekit occupancy`: theoretical occupancy of a launch configuration, its limits, waves and cliffs."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from tracekit.api import KNOB_COLUMNS, occupancy_plan
from tracekit.cli.common import JsonOption, console, print_json
from tracekit.present.verdict import limit_label

KNOB_TITLES = {
    "block_size": "block size",
    "registers": "registers per thread",
    "shared_memory": "shared memory per block (bytes)",
}


def _pct(value: float) -> str:
    return f"{value:g}%"


def occupancy_command(
    cc: Annotated[str, typer.Option("--cc", help="Compute capability, e.g. 9.0.", show_default=False)],
    block: Annotated[int, typer.Option("--block", help="Threads per block.", show_default=False)],
    regs: Annotated[int, typer.Option("--regs", help="Registers per thread.", show_default=False)],
    smem: Annotated[int, typer.Option("--smem", help="Shared memory per block in bytes (static + dynamic).")] = 0,
    carveout: Annotated[
        str | None,
        typer.Option(
            "--carveout",
            help="Shared-memory carveout in bytes (Nsight's launch__shared_mem_config_size), or a percentage as "
            "cudaFuncAttributePreferredSharedMemoryCarveout takes it (50%); one the device does not offer is "
            "rounded up to the next it does, as the driver does; ignored on CC 5.x/6.x. Default: the SM's maximum.",
        ),
    ] = None,
    barriers: Annotated[int, typer.Option("--barriers", help="Barriers per block (CC 9.0 and newer).")] = 1,
    opt_in: Annotated[
        bool,
        typer.Option(
            "--opt-in",
            help="The kernel opted in to more than 48 KB of shared memory per block "
            "(cudaFuncAttributeMaxDynamicSharedMemorySize); without it more is refused, as the launch would be.",
        ),
    ] = False,
    grid: Annotated[int | None, typer.Option("--grid", help="Blocks in the grid: adds waves and the tail.")] = None,
    sms: Annotated[int | None, typer.Option("--sms", help="SM count, with --grid.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Theoretical occupancy: blocks per SM allowed by each limit, the limiter, and where occupancy changes."""
    plan = occupancy_plan(cc, block, regs, smem, carveout, barriers, opt_in, grid, sms)
    if as_json:
        print_json(plan.to_dict())
        return
    result, tail, nearest = plan.result, plan.tail, plan.nearest
    console.print(
        f"CC {result.compute_capability}: {block} threads ({result.warps_per_block} warps) per block, "
        f"{regs} registers per thread, {smem} bytes of shared memory per block",
        markup=False,
    )
    if result.shared_mem_config_bytes is not None:
        console.print(
            f"shared-memory carveout: {result.shared_mem_config_bytes} bytes "
            f"({result.shared_mem_config_bytes // 1024} KB)",
            markup=False,
        )
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    limits = Table("limit", "blocks per SM", "", title="Block limits")
    rows = dict(result.limits_blocks_per_sm)
    if result.barrier_limit_blocks_per_sm is not None:
        rows["barriers"] = result.barrier_limit_blocks_per_sm
    for name, blocks in rows.items():
        limits.add_row(limit_label(name), str(blocks), "limiter" if name in result.limiters else "")
    console.print(limits)
    console.print(f"active blocks per SM: {result.active_blocks_per_sm}", markup=False)
    console.print(
        f"theoretical warps per SM: {result.theoretical_warps_per_sm} of {result.max_warps_per_sm}", markup=False
    )
    console.print(f"theoretical occupancy: {_pct(result.theoretical_pct)}", markup=False)
    if tail is not None:
        console.print(
            f"waves per SM: {tail['waves_per_sm']:.2f} ({tail['full_waves']} full, partial wave of "
            f"{tail['partial_wave_blocks']} of {tail['blocks_per_wave']} blocks)",
            markup=False,
        )
        if tail["tail_effect"]:
            console.print(
                f"tail effect: the partial wave may take up to {tail['estimated_speedup_pct']:.1f}% of "
                f"the runtime (Nsight's estimated speedup)",
                markup=False,
            )
    if nearest:
        console.print("nearest cliffs:", markup=False)
        for cliff in nearest:
            console.print(f"  {cliff.text}", markup=False)
    for knob, frame in plan.steps.items():
        table = Table(
            KNOB_TITLES[knob],
            "active blocks",
            "warps",
            "occupancy",
            "limiter",
            title=f"occupancy by {KNOB_TITLES[knob]}",
        )
        column = KNOB_COLUMNS[knob]
        for row in frame.iter_rows(named=True):
            low, high = row[f"{column}_from"], row[f"{column}_to"]
            table.add_row(
                str(low) if low == high else f"{low}-{high}",
                str(row["active_blocks_per_sm"]),
                str(row["theoretical_warps_per_sm"]),
                _pct(row["theoretical_pct"]),
                row["limiter"],
            )
        console.print(table)
