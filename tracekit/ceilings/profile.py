"""A ceilings profile as JSON (what `tracekit calibrate` writes, `tracekit ceilings --json` prints and the package
ships under tracekit/ceilings/profiles/), and back. Pure conversion: reading files is lookup.py's job."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tracekit.ceilings.nominal import NominalPeaks, normalize_cc
from tracekit.ceilings.types import NOMINAL, PROFILE_SCHEMA, Ceiling, DeviceCeilings, LatencyPoint

# Scalar ceilings: field name -> (unit, nominal from the datasheet peaks).
SCALARS: dict[str, str] = {
    "dram_stream_bytes_per_s": "byte/s",
    "dram_read_bytes_per_s": "byte/s",
    "dram_write_bytes_per_s": "byte/s",
    "dram_random_sector_bytes_per_s": "byte/s",
    "l2_bytes_per_s": "byte/s",
    "shared_bytes_per_s": "byte/s",
    "fp32_flop_per_s": "flop/s",
    "fp64_flop_per_s": "flop/s",
    "launch_overhead_s": "s",
    "dram_unloaded_latency_ns": "ns",
}


class ProfileFormatError(ValueError):
    """A profile whose content is not a tracekit ceilings profile; the message is one line."""


def nominal_of(name: str, peaks: NominalPeaks | None) -> float | None:
    """The datasheet figure comparable to a ceiling (DRAM ceilings all compare with the DRAM peak)."""
    if peaks is None:
        return None
    if name.startswith("dram_") and name.endswith("bytes_per_s"):
        return peaks.dram_bytes_per_s
    return {
        "shared_bytes_per_s": peaks.shared_bytes_per_s,
        "fp32_flop_per_s": peaks.fp32_flop_per_s,
        "fp64_flop_per_s": peaks.fp64_flop_per_s,
    }.get(name)


def nominal_ceilings(
    device_name: str, compute_capability: str | None, sm_count: int | None, peaks: NominalPeaks | None, basis: str
) -> DeviceCeilings:
    """Datasheet peaks as ceilings (source "nominal"); fields NVIDIA publishes no figure for stay None."""

    def one(name: str) -> Ceiling | None:
        value = nominal_of(name, peaks)
        return None if value is None else Ceiling(value, SCALARS[name], value, NOMINAL, None, basis)

    tensor = (
        {}
        if peaks is None
        else {k: Ceiling(v, "flop/s", v, NOMINAL, None, basis) for k, v in peaks.tensor_flop_per_s.items()}
    )
    return DeviceCeilings(
        device_name=device_name or (peaks.name if peaks else "unknown"),
        compute_capability=normalize_cc(compute_capability) or (peaks.compute_capability if peaks else None),
        sm_count=sm_count if sm_count is not None else (peaks.sm_count if peaks else None),
        source=NOMINAL,
        dram_stream_bytes_per_s=one("dram_stream_bytes_per_s"),
        dram_read_bytes_per_s=one("dram_read_bytes_per_s"),
        dram_write_bytes_per_s=one("dram_write_bytes_per_s"),
        dram_random_sector_bytes_per_s=one("dram_random_sector_bytes_per_s"),
        shared_bytes_per_s=one("shared_bytes_per_s"),
        fp32_flop_per_s=one("fp32_flop_per_s"),
        fp64_flop_per_s=one("fp64_flop_per_s"),
        tensor_flop_per_s=tensor,
        clocks={} if peaks is None else {"boost_sm_hz": peaks.boost_clock_hz},
        basis=basis,
    )


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProfileFormatError(f"{where}: expected a finite number, found {value!r}")
    return float(value)


def _optional_number(value: Any, where: str) -> float | None:
    return None if value is None else _number(value, where)


def ceiling_from_json(obj: Any, where: str, unit: str, nominal: float | None, source: str) -> Ceiling:
    if not isinstance(obj, Mapping) or "value" not in obj:
        raise ProfileFormatError(f"{where}: expected an object with a 'value'")
    value = _number(obj["value"], f"{where}.value")
    if value <= 0:
        raise ProfileFormatError(f"{where}.value: expected a positive number, found {value!r}")
    stored_nominal = _optional_number(obj.get("nominal"), f"{where}.nominal")
    return Ceiling(
        value=value,
        unit=str(obj.get("unit") or unit),
        nominal=nominal if nominal is not None else stored_nominal,
        source=source,
        spread_fraction=_optional_number(obj.get("spread_fraction"), f"{where}.spread_fraction"),
        detail=str(obj.get("detail") or ""),
    )


def ceilings_from_json(data: Any, source: str, peaks: NominalPeaks | None, basis: str = "") -> DeviceCeilings:
    """A DeviceCeilings from a profile's JSON object; every measured ceiling's source is `source`
    ("measured: <file>"), its nominal the datasheet peak where one exists. Raises ProfileFormatError."""
    if not isinstance(data, Mapping):
        raise ProfileFormatError("expected a JSON object")
    if data.get("schema") != PROFILE_SCHEMA:
        raise ProfileFormatError(
            f"not a tracekit ceilings profile (schema {data.get('schema')!r}, expected {PROFILE_SCHEMA!r})"
        )
    device = data.get("device")
    if not isinstance(device, Mapping) or not device.get("name"):
        raise ProfileFormatError("device.name is missing")
    raw = data.get("ceilings")
    if not isinstance(raw, Mapping):
        raise ProfileFormatError("'ceilings' is missing")
    scalars: dict[str, Ceiling | None] = {}
    for name, unit in SCALARS.items():
        obj = raw.get(name)
        scalars[name] = (
            None if obj is None else ceiling_from_json(obj, f"ceilings.{name}", unit, nominal_of(name, peaks), source)
        )
    tensor_raw = raw.get("tensor_flop_per_s") or {}
    if not isinstance(tensor_raw, Mapping):
        raise ProfileFormatError("ceilings.tensor_flop_per_s: expected an object by type")
    tensor = {
        str(kind): ceiling_from_json(
            obj,
            f"ceilings.tensor_flop_per_s.{kind}",
            "flop/s",
            peaks.tensor_flop_per_s.get(str(kind)) if peaks else None,
            source,
        )
        for kind, obj in tensor_raw.items()
    }
    blocks_raw = raw.get("block_launch_per_s_per_sm") or {}
    if not isinstance(blocks_raw, Mapping):
        raise ProfileFormatError("ceilings.block_launch_per_s_per_sm: expected an object by threads per block")
    blocks: dict[int, Ceiling] = {}
    for size, obj in blocks_raw.items():
        if not str(size).isdigit():
            raise ProfileFormatError(f"ceilings.block_launch_per_s_per_sm: {size!r} is not a block size")
        blocks[int(size)] = ceiling_from_json(
            obj, f"ceilings.block_launch_per_s_per_sm.{size}", "block/s", None, source
        )
    curve_raw = data.get("dram_latency_curve") or []
    if not isinstance(curve_raw, list):
        raise ProfileFormatError("dram_latency_curve: expected a list of points")
    curve = []
    for i, point in enumerate(curve_raw):
        if not isinstance(point, Mapping):
            raise ProfileFormatError(f"dram_latency_curve[{i}]: expected an object")
        curve.append(
            LatencyPoint(
                _number(point.get("throughput_bytes_per_s"), f"dram_latency_curve[{i}].throughput_bytes_per_s"),
                _number(point.get("latency_ns"), f"dram_latency_curve[{i}].latency_ns"),
                int(point.get("background_warps_per_sm") or 0),
            )
        )
    clocks_raw = data.get("clocks") or {}
    clocks = (
        {str(k): float(v) for k, v in clocks_raw.items() if isinstance(v, int | float)}
        if isinstance(clocks_raw, Mapping)
        else {}
    )
    sm_count = device.get("sm_count")
    return DeviceCeilings(
        device_name=str(device["name"]),
        compute_capability=normalize_cc(device.get("compute_capability")),
        sm_count=int(sm_count) if isinstance(sm_count, int) else None,
        source=source,
        dram_stream_bytes_per_s=scalars["dram_stream_bytes_per_s"],
        dram_read_bytes_per_s=scalars["dram_read_bytes_per_s"],
        dram_write_bytes_per_s=scalars["dram_write_bytes_per_s"],
        dram_random_sector_bytes_per_s=scalars["dram_random_sector_bytes_per_s"],
        l2_bytes_per_s=scalars["l2_bytes_per_s"],
        shared_bytes_per_s=scalars["shared_bytes_per_s"],
        fp32_flop_per_s=scalars["fp32_flop_per_s"],
        fp64_flop_per_s=scalars["fp64_flop_per_s"],
        tensor_flop_per_s=tensor,
        block_launch_per_s_per_sm=dict(sorted(blocks.items())),
        launch_overhead_s=scalars["launch_overhead_s"],
        dram_unloaded_latency_ns=scalars["dram_unloaded_latency_ns"],
        dram_latency_curve=tuple(sorted(curve, key=lambda p: p.throughput_bytes_per_s)),
        clocks=clocks,
        driver=None if data.get("driver") is None else str(data["driver"]),
        command=None if data.get("command") is None else str(data["command"]),
        measured_at=None if data.get("measured_at") is None else str(data["measured_at"]),
        basis=basis,
    )


def ceiling_to_json(ceiling: Ceiling | None) -> dict[str, Any] | None:
    if ceiling is None:
        return None
    return {
        "value": ceiling.value,
        "unit": ceiling.unit,
        "nominal": ceiling.nominal,
        "fraction_of_nominal": ceiling.fraction_of_nominal,
        "source": ceiling.source,
        "spread_fraction": ceiling.spread_fraction,
        "detail": ceiling.detail,
    }


def ceilings_to_json(ceilings: DeviceCeilings) -> dict[str, Any]:
    """The profile as JSON: the shape `ceilings --json` prints and `calibrate` writes (readable back)."""
    out: dict[str, Any] = {name: ceiling_to_json(getattr(ceilings, name)) for name in SCALARS}
    out["tensor_flop_per_s"] = {k: ceiling_to_json(v) for k, v in ceilings.tensor_flop_per_s.items()}
    out["block_launch_per_s_per_sm"] = {
        str(k): ceiling_to_json(v) for k, v in ceilings.block_launch_per_s_per_sm.items()
    }
    return {
        "schema": PROFILE_SCHEMA,
        "device": {
            "name": ceilings.device_name,
            "compute_capability": ceilings.compute_capability,
            "sm_count": ceilings.sm_count,
        },
        "source": ceilings.source,
        "basis": ceilings.basis,
        "measured_at": ceilings.measured_at,
        "driver": ceilings.driver,
        "command": ceilings.command,
        "clocks": dict(ceilings.clocks),
        "ceilings": out,
        "dram_latency_curve": [
            {
                "throughput_bytes_per_s": p.throughput_bytes_per_s,
                "latency_ns": p.latency_ns,
                "background_warps_per_sm": p.background_warps_per_sm,
            }
            for p in ceilings.dram_latency_curve
        ],
    }
