"""`tracekit ceilings`: the ceilings profile that judges a device (measured or nominal) and where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tracekit.ceilings import Ceiling, DeviceCeilings, ceilings_for, shipped_profiles
from tracekit.ceilings.calibrate import query_gpu
from tracekit.ceilings.profile import SCALARS, ceilings_to_json
from tracekit.ceilings.types import STREAM_MIXES
from tracekit.cli.common import JsonOption, console, print_json
from tracekit.errors import TracekitError
from tracekit.format import MISSING, duration, fraction, si

LABELS = {
    "dram_stream_bytes_per_s": "DRAM stream (copy)",
    "dram_read_bytes_per_s": "DRAM stream read",
    "dram_write_bytes_per_s": "DRAM stream write",
    "dram_random_sector_bytes_per_s": "DRAM random 32 B sectors",
    "l2_bytes_per_s": "L2-resident reads",
    "shared_bytes_per_s": "shared memory",
    "fp32_flop_per_s": "FP32 FMA",
    "fp64_flop_per_s": "FP64 FMA",
    "launch_overhead_s": "kernel launch overhead",
    "dram_unloaded_latency_ns": "DRAM latency, unloaded",
}


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return MISSING
    if unit == "s":
        return duration(value * 1e9)
    if unit == "ns":
        return duration(value)
    return si(value, {"byte/s": "B/s", "flop/s": "FLOP/s", "block/s": "blocks/s"}.get(unit, unit))


def _row(table: Table, label: str, ceiling: Ceiling, profile_source: str) -> None:
    """One ceiling; its source only where it is not the profile's own (printed once above the table), and the
    real kernel that raised it above its microbenchmark."""
    source = "" if ceiling.source == profile_source else ceiling.source
    if ceiling.observed_by:
        source = f"{source}; " if source else ""
        source += f"raised by a real kernel: {ceiling.observed_by}"
    table.add_row(
        label,
        _value(ceiling.value, ceiling.unit),
        _value(ceiling.nominal, ceiling.unit),
        fraction(ceiling.fraction_of_nominal),
        fraction(ceiling.spread_fraction),
        source,
    )


def _print(profile: DeviceCeilings) -> None:
    cc = f", CC {profile.compute_capability}" if profile.compute_capability else ""
    sms = f", {profile.sm_count} SMs" if profile.sm_count else ""
    console.print(f"{profile.device_name}{cc}{sms}: {profile.source}", markup=False)
    if profile.basis:
        console.print(f"nominal peaks: {profile.basis}", markup=False)
    if profile.measured_at or profile.driver:
        console.print(f"measured {profile.measured_at or '?'}, driver {profile.driver or '?'}", markup=False)
    if profile.command:
        console.print(f"command: {profile.command}", markup=False)
    table = Table("ceiling", "achievable", "nominal", "of nominal", "spread", "source (where not the profile)")
    # With the streams per read:write mix measured, the read, write and copy scalars are the same plateaus again.
    by_mix = ("dram_stream_bytes_per_s", "dram_read_bytes_per_s", "dram_write_bytes_per_s")
    for name in SCALARS:
        ceiling = getattr(profile, name)
        if ceiling is not None and not (profile.dram_stream_by_mix and name in by_mix):
            _row(table, LABELS[name], ceiling, profile.source)
    # The stream of each read:write mix: the ceiling a launch is judged by (interpolated between two mixes).
    for mix, ceiling in sorted(profile.dram_stream_by_mix.items(), key=lambda m: STREAM_MIXES.get(m[0], 2.0)):
        _row(table, f"DRAM stream, {mix} reads:writes", ceiling, profile.source)
    for kind, ceiling in profile.tensor_flop_per_s.items():
        _row(table, f"tensor {kind} (dense)", ceiling, profile.source)
    for threads, ceiling in profile.block_launch_per_s_per_sm.items():
        _row(table, f"block launch per SM, {threads} threads", ceiling, profile.source)
    console.print(table)
    if profile.dram_latency_curve:
        curve = Table("DRAM throughput", "mean load latency", "background warps/SM", title="DRAM loaded latency")
        for point in profile.dram_latency_curve:
            curve.add_row(
                _value(point.throughput_bytes_per_s, "byte/s"),
                duration(point.latency_ns),
                str(point.background_warps_per_sm),
            )
        console.print(curve)
    if not profile.measured:
        console.print(
            "no measured profile for this device: every judgement uses nominal peaks (run `tracekit calibrate`)",
            markup=False,
        )


def ceilings_command(
    device: Annotated[
        str | None,
        typer.Option("--device", help="Device name as the driver reports it (default: this machine's GPU 0)."),
    ] = None,
    cc: Annotated[str | None, typer.Option("--cc", help="Compute capability, e.g. 9.0 (narrows --device).")] = None,
    ceilings: Annotated[
        Path | None,
        typer.Option("--ceilings", help="A profile written by `tracekit calibrate -o FILE` (wins over --device)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the ceilings profile in use: measured achievable peaks (or nominal ones) per unit and access pattern."""
    if ceilings is None and device is None:
        gpu = query_gpu(["name", "compute_cap"])
        if gpu is None:
            shipped = ", ".join(f"{p.device_name} (CC {p.compute_capability})" for p in shipped_profiles())
            raise TracekitError(
                "no --device given and no NVIDIA GPU here: name one with --device "
                f"(shipped profiles: {shipped or 'none'})"
            )
        device, cc = gpu["name"], cc or gpu["compute_cap"]
    profile = ceilings_for(device, cc, override=ceilings)
    if ceilings is None and not profile.measured and profile.dram_stream_bytes_per_s is None:
        from tracekit.ceilings.nominal import NOMINAL_PEAKS

        known = ", ".join([p.device_name for p in shipped_profiles()] + [p.name for p in NOMINAL_PEAKS])
        raise TracekitError(
            f"--device {device!r}{f' --cc {cc}' if cc else ''}: no shipped profile and no nominal peaks for this "
            f"device (known: {known})"
        )
    if as_json:
        print_json(ceilings_to_json(profile))
    else:
        _print(profile)
