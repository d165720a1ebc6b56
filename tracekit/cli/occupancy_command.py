"""`tracekit occupancy`: theoretical occupancy of a launch configuration, its limits, waves and cliffs."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from tracekit.analysis.occupancy import (
    KNOB_COLUMNS,
    carveout_bytes_from_percent,
    compact_cliffs,
    device_limits,
    nearest_cliffs,
    occupancy_cliffs,
    tail_estimate,
    theoretical_occupancy,
)
from tracekit.cli.common import JsonOption, console, print_json
from tracekit.errors import TracekitError

LIMIT_LABELS = {
    "registers": "registers",
    "shared_memory": "shared memory",
    "warps": "warps",
    "blocks": "blocks (SM)",
    "barriers": "barriers",
}
KNOB_TITLES = {
    "block_size": "block size",
    "registers": "registers per thread",
    "shared_memory": "shared memory per block (bytes)",
}


def _pct(value: float) -> str:
    return f"{value:g}%"


def _carveout_bytes(cc: str, text: str | None) -> int | None:
    """--carveout as bytes: "65536", or "50%" of the SM's largest carveout."""
    if text is None:
        return None
    value = text.strip()
    try:
        if value.endswith("%"):
            return carveout_bytes_from_percent(cc, int(value[:-1]))
        return int(value)
    except ValueError:
        raise TracekitError(f"--carveout {text!r}: expected bytes (65536) or a percentage (50%)") from None


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
    if (grid is None) != (sms is None):
        raise TracekitError("--grid and --sms go together: waves need both the grid size and the SM count")
    carveout_bytes = _carveout_bytes(cc, carveout)
    result = theoretical_occupancy(cc, block, regs, smem, carveout_bytes, barriers_per_block=barriers, opt_in=opt_in)
    if not opt_in and smem > device_limits(cc).default_shared_mem_per_block_bytes:
        raise TracekitError(
            f"{smem} bytes of shared memory per block: more than {device_limits(cc).default_shared_mem_per_block_bytes}"
            " needs the kernel's opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize), without which the launch "
            "fails; pass --opt-in if the kernel opts in"
        )
    # The curves at the same carveout, barrier count and opt-in as the launch itself.
    cliffs = occupancy_cliffs(cc, block, regs, smem, carveout_bytes, barriers_per_block=barriers, opt_in=opt_in)
    steps = {knob: compact_cliffs(frame) for knob, frame in cliffs.items()}
    nearest = nearest_cliffs(cliffs, block, regs, smem)
    tail = None
    if grid is not None and sms is not None:  # both or neither (checked above)
        if result.active_blocks_per_sm == 0:
            raise TracekitError(f"no block fits on an SM (limited by {result.limiter}): there are no waves")
        tail = tail_estimate(grid, result.active_blocks_per_sm, sms)
    if as_json:
        print_json(
            {
                **result.to_dict(),
                "nearest_cliffs": [cliff.to_dict() for cliff in nearest],
                "cliffs": {knob: frame.to_dicts() for knob, frame in steps.items()},
                "tail": tail,
            }
        )
        return

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
        limits.add_row(LIMIT_LABELS[name], str(blocks), "limiter" if name in result.limiters else "")
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
    for knob, frame in steps.items():
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
