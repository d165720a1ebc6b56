"""A ceilings profile as JSON (what `tracekit calibrate` writes, `tracekit ceilings --json` prints and the package
ships under tracekit/ceilings/profiles/), and back. Pure conversion: reading files is lookup.py's job."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tracekit.ceilings.nominal import NominalPeaks, normalize_cc
from tracekit.ceilings.types import (
    NOMINAL,
    PROFILE_SCHEMA,
    Ceiling,
    ConcurrencyPoint,
    DeviceCeilings,
    LatencyPoint,
    Observation,
    between_mixes,
    mix_position,
)

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
    by_mix_raw = raw.get("dram_stream_by_mix") or {}
    if not isinstance(by_mix_raw, Mapping):
        raise ProfileFormatError("ceilings.dram_stream_by_mix: expected an object by read:write mix")
    by_mix = {
        str(mix): ceiling_from_json(
            obj, f"ceilings.dram_stream_by_mix.{mix}", "byte/s", nominal_of("dram_stream_bytes_per_s", peaks), source
        )
        for mix, obj in by_mix_raw.items()
    }
    concurrency = tuple(
        ConcurrencyPoint(
            _number(point.get("bytes_in_flight_per_sm"), f"dram_concurrency_curve[{i}].bytes_in_flight_per_sm"),
            _number(point.get("throughput_bytes_per_s"), f"dram_concurrency_curve[{i}].throughput_bytes_per_s"),
        )
        for i, point in enumerate(_list_of_objects(data, "dram_concurrency_curve"))
    )
    observations = tuple(
        observation_from_json(obj, f"observations[{i}]") for i, obj in enumerate(_list_of_objects(data, "observations"))
    )
    clocks_raw = data.get("clocks") or {}
    clocks = (
        {str(k): float(v) for k, v in clocks_raw.items() if isinstance(v, int | float)}
        if isinstance(clocks_raw, Mapping)
        else {}
    )
    sm_count = device.get("sm_count")
    profile = DeviceCeilings(
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
        dram_stream_by_mix=by_mix,
        dram_concurrency_curve=tuple(sorted(concurrency, key=lambda p: p.bytes_in_flight_per_sm)),
        observations=observations,
        clocks=clocks,
        driver=None if data.get("driver") is None else str(data["driver"]),
        command=None if data.get("command") is None else str(data["command"]),
        measured_at=None if data.get("measured_at") is None else str(data["measured_at"]),
        basis=basis,
    )
    return with_observations(profile)


def _list_of_objects(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    found = data.get(key) or []
    if not isinstance(found, list) or not all(isinstance(item, Mapping) for item in found):
        raise ProfileFormatError(f"{key}: expected a list of objects")
    return found


def observation_from_json(obj: Mapping[str, Any], where: str) -> Observation:
    ceiling = obj.get("ceiling")
    if not isinstance(ceiling, str) or not ceiling:
        raise ProfileFormatError(f"{where}.ceiling: expected the name of a ceiling")
    value = _number(obj.get("value"), f"{where}.value")
    if value <= 0:
        raise ProfileFormatError(f"{where}.value: expected a positive number, found {value!r}")
    index = obj.get("launch_index", 0)
    return Observation(
        ceiling=ceiling,
        value=value,
        kernel=str(obj.get("kernel") or ""),
        file=str(obj.get("file") or ""),
        launch_index=index if isinstance(index, int) and not isinstance(index, bool) else 0,
        counters=str(obj.get("counters") or ""),
        scattered_fraction=_optional_number(obj.get("scattered_fraction"), f"{where}.scattered_fraction"),
        write_fraction=_optional_number(obj.get("write_fraction"), f"{where}.write_fraction"),
    )


def observation_to_json(observation: Observation) -> dict[str, Any]:
    return {
        "ceiling": observation.ceiling,
        "value": observation.value,
        "kernel": observation.kernel,
        "file": observation.file,
        "launch_index": observation.launch_index,
        "counters": observation.counters,
        "scattered_fraction": observation.scattered_fraction,
        "write_fraction": observation.write_fraction,
    }


def _raised(ceiling: Ceiling | None, best: Observation | None) -> Ceiling | None:
    """The ceiling, or the real kernel's rate where it ran faster than the microbenchmarks (the plateau is kept as
    `benchmark_value`, the kernel as `observed_by`)."""
    if ceiling is None or best is None or best.value <= ceiling.value:
        return ceiling
    share = f"{100.0 * best.value / ceiling.value - 100.0:.3g}%"
    return replace(
        ceiling,
        value=best.value,
        benchmark_value=ceiling.value,
        observed_by=best.provenance,
        detail=f"{ceiling.detail}; a real kernel ran {share} above the microbenchmarks: {best.provenance}",
    )


def _interpolated(profile: DeviceCeilings, name: str, write_fraction: float | None) -> float | None:
    """The stream ceiling a judged name stands for: a mix, an interpolation between two mixes at the launch's write
    share ("dram_stream_by_mix.1:0~2:1", DRAM time per byte linear in it), or the profile's stream ceiling."""
    if not name.startswith("dram_stream_by_mix."):
        return profile.dram_stream_bytes_per_s.value if profile.dram_stream_bytes_per_s else None
    ends = name.removeprefix("dram_stream_by_mix.").split("~")
    found = [c.value for m in ends if (c := profile.dram_stream_by_mix.get(m)) is not None]
    if len(found) != len(ends):
        return None
    t = _position(ends, write_fraction)
    if len(found) == 1 or t is None:
        return min(found)
    return between_mixes(found[0], found[1], t)


def _position(ends: list[str], write_fraction: float | None) -> float | None:
    """Where a write share lies between the two mixes an interpolated ceiling names (None: not two mixes)."""
    if write_fraction is None or len(ends) != 2:
        return None
    return mix_position(ends[0], ends[1], write_fraction)


def _raise_interpolation(profile: DeviceCeilings, observation: Observation, ends: list[str]) -> list[Observation]:
    """Observations for the two mixes an interpolated stream ceiling lies between, just enough that the interpolation
    at the launch's write share reaches the observed rate: the nearer mix is raised first, the other only when the
    nearer alone cannot (1/X = (1-t)/C_0 + t/C_1)."""
    t = _position(ends, observation.write_fraction)
    current = [profile.dram_stream_by_mix.get(m) for m in ends]
    if t is None or current[0] is None or current[1] is None:
        return [replace(observation, ceiling=f"dram_stream_by_mix.{m}") for m in ends]
    values = [current[0].value, current[1].value]
    weights = [1.0 - t, t]
    near, far = (1, 0) if t >= 0.5 else (0, 1)
    room = 1.0 / observation.value - weights[far] / values[far]
    if room > 0 and weights[near] > 0:
        values[near] = max(values[near], weights[near] / room)
    else:
        values = [max(v, observation.value) for v in values]
    return [
        replace(observation, ceiling=f"dram_stream_by_mix.{m}", value=v)
        for m, v, c in zip(ends, values, current, strict=True)
        if c is not None and v > c.value
    ]


def _best_observations(profile: DeviceCeilings) -> dict[str, Observation]:
    """The fastest observation per ceiling the profile has, with the bounds that observations of an interpolated or
    blended ceiling put on the ceilings they are made of."""
    best: dict[str, Observation] = {}

    def keep(observation: Observation) -> None:
        held = best.get(observation.ceiling)
        if held is None or observation.value > held.value:
            best[observation.ceiling] = observation

    for observation in profile.observations:
        stream_name, _, scattered = observation.ceiling.partition("+")
        if scattered:
            # a blend of stream and scattered traffic (1/C = (1-s)/C_stream + s/C_scattered) bounds the scattered
            # ceiling: the smallest C_scattered whose blend reaches the observed rate
            s = observation.scattered_fraction
            stream = _interpolated(profile, stream_name, observation.write_fraction)
            if s is None or not 0.0 < s <= 1.0 or stream is None:
                continue
            room = 1.0 / observation.value - (1.0 - s) / max(stream, observation.value)
            keep(replace(observation, ceiling=scattered, value=s / room if room > 0 else observation.value))
            if stream >= observation.value:
                continue  # the stream side is not what held the blend below the kernel
        ends = stream_name.removeprefix("dram_stream_by_mix.").split("~")
        if stream_name.startswith("dram_stream_by_mix.") and len(ends) == 2:
            for raised in _raise_interpolation(profile, observation, ends):
                keep(raised)
        else:
            keep(replace(observation, ceiling=stream_name))
    return best


def with_observations(profile: DeviceCeilings) -> DeviceCeilings:
    """Each ceiling the larger of its microbenchmark plateau and the fastest real kernel observed on it: a ceiling
    is never below a kernel that ran (issue 26)."""
    best = _best_observations(profile)
    if not best:
        return profile
    mixes = {k: _raised(c, best.get(f"dram_stream_by_mix.{k}")) for k, c in profile.dram_stream_by_mix.items()}
    changes: dict[str, Any] = {name: _raised(getattr(profile, name), best.get(name)) for name in SCALARS}
    return replace(
        profile,
        **changes,
        dram_stream_by_mix={k: c for k, c in mixes.items() if c is not None},
        tensor_flop_per_s={
            k: c
            for k, v in profile.tensor_flop_per_s.items()
            if (c := _raised(v, best.get(f"tensor_flop_per_s.{k}"))) is not None
        },
        block_launch_per_s_per_sm={
            size: c
            for size, v in profile.block_launch_per_s_per_sm.items()
            if (c := _raised(v, best.get(f"block_launch_per_s_per_sm.{size}"))) is not None
        },
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
        "benchmark_value": ceiling.benchmark_value,
        "observed_by": ceiling.observed_by,
    }


def ceilings_to_json(ceilings: DeviceCeilings) -> dict[str, Any]:
    """The profile as JSON: the shape `ceilings --json` prints and `calibrate` writes (readable back)."""
    out: dict[str, Any] = {name: ceiling_to_json(getattr(ceilings, name)) for name in SCALARS}
    out["tensor_flop_per_s"] = {k: ceiling_to_json(v) for k, v in ceilings.tensor_flop_per_s.items()}
    out["dram_stream_by_mix"] = {k: ceiling_to_json(v) for k, v in ceilings.dram_stream_by_mix.items()}
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
        "dram_concurrency_curve": [
            {"bytes_in_flight_per_sm": p.bytes_in_flight_per_sm, "throughput_bytes_per_s": p.throughput_bytes_per_s}
            for p in ceilings.dram_concurrency_curve
        ],
        "observations": [observation_to_json(o) for o in ceilings.observations],
    }
