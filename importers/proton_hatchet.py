"""Triton Proton profiles (`proton.start(...)`'s default output, `*.hatchet`, plain or gzip), with the per-line
warp samples of its PC sampling (`mode="pcsampling"`): a JSON list of the call tree and a device table, as Proton's
viewer and Hatchet read them.

The tree's nodes are `{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}` under a `ROOT` node. A node
whose metrics name a device (`device_id`, `device_type`; `DeviceId`, `DeviceType` in Proton before late 2024,
which capitalised every metric key: `Count`, `Time (ns)`) is a GPU kernel; the others are scopes (`proton.scope`,
Python functions with `context="python"`, Triton launch-metadata names). A kernel node aggregates the `count`
launches of that kernel in that context: `time (ns)` is their total, so each node is imported as one launch whose
duration is the mean (`time (ns)` / `count`); a node of several launches keeps `count` and the total as its
metrics (section `Proton`), and a warning says how many nodes do. Its `nvtx_path` is its scopes' names, outermost first.
FLOPs and bytes (`flops8`..`flops64`, `flops`, `bytes`) are kept where the profile has them: on the kernel node,
or on a scope whose only kernel it is (a scope with several kernels cannot say how they share them).

The second element is the device table: `{"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": kHz, ...}}}`.
With PC sampling (`mode="pcsampling"`), each kernel node has one child per source line with its warp samples by
stall reason: `proton_pcsampling` turns them into the launch's source samples (`tracekit lines`).

Proton records no grid, block, registers or start times: these launches are timed but cannot be paired with an
Nsight Compute result, whose kernel key needs the grid and block.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from tracekit.cxx_name import demangle
from tracekit.errors import InputError
from tracekit.importers.ncu_source import source_frame
from tracekit.importers.proton_pcsampling import NO_SOURCE_TEXT, is_line_node, line_rows
from tracekit.importers.regions_common import load_json, plain_head
from tracekit.parsed import LAUNCH_SCHEMA, METRIC_SCHEMA, SOURCE_SAMPLE_SCHEMA, Device, ParsedImport, conform

FORMAT = "proton-hatchet"
SECTION = "Proton"
_SNIFF = re.compile(rb'^\[\s*\{.*"frame"\s*:\s*\{.*"metrics"\s*:', re.DOTALL)
WORK_METRICS = {"flops": "flop", "flops8": "flop", "flops16": "flop", "flops32": "flop", "flops64": "flop"}
WORK_METRICS |= {"bytes": "byte"}
DEVICE_KEYS = ("device_id", "device_type")
_OLD_KEYS = {"DeviceId": "device_id", "DeviceType": "device_type"}


def sniff(head: bytes) -> bool:
    text = plain_head(head).removeprefix(b"\xef\xbb\xbf").lstrip()
    return bool(_SNIFF.match(text[:4096]))


def _load(path: Path) -> Any:
    """The JSON document, plain or gzip (Proton writes plain; a kept profile is often gzipped)."""
    return load_json(path)


def _metric_keys(raw: Any) -> dict[str, Any]:
    """A node's metrics under today's keys: Proton before late 2024 capitalised them (`Count`, `Time (ns)`,
    `DeviceId`, `DeviceType`), later `count`, `time (ns)`, `device_id`, `device_type`."""
    if not isinstance(raw, dict):
        return {}
    return {_OLD_KEYS.get(key, key.lower()) if isinstance(key, str) else key: value for key, value in raw.items()}


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def read(path: Path, **options: Any) -> ParsedImport:
    path = Path(path)
    document = _load(path)
    if not isinstance(document, list) or not document or not isinstance(document[0], dict):
        raise InputError(str(path), "not a Proton profile: expected a JSON list whose first element is the call tree")
    launches: list[dict[str, Any]] = []
    metrics: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []  # PC sampling's rows, per kernel and source line
    warnings: list[str] = []
    aggregated = dropped = 0
    # depth-first, children in the writer's order: (node, its scope names, where, the enclosing scopes with work)
    stack: list[tuple[Any, tuple[str, ...], str, tuple[int, ...]]] = [(document[0], (), "tree", ())]
    scope_work: list[tuple[dict[str, float], list[int]]] = []  # per scope with FLOPs/bytes: them, its kernels
    while stack:
        node, scopes, where, owners = stack.pop()
        if not isinstance(node, dict) or not isinstance(node.get("frame"), dict):
            raise InputError(str(path), f"{where}: a node without a 'frame' object")
        name = node["frame"].get("name")
        values = _metric_keys(node.get("metrics"))
        if not isinstance(name, str):
            raise InputError(str(path), f"{where}: a node whose frame has no name")
        if any(key in values for key in DEVICE_KEYS):
            launch_key = len(launches)
            count = _number(values.get("count"))
            total = _number(values.get("time (ns)"))
            if count is None or count < 1 or total is None:
                raise InputError(str(path), f"kernel {name!r} ({where}) has no count or time (ns)")
            aggregated += count > 1
            below = node.get("children") or []
            below = below if isinstance(below, list) else []
            kernel_name = demangle(name)
            samples.extend(line_rows(launch_key, kernel_name, values, below, f"{where} > {name}", str(path)))
            dropped += sum(not is_line_node(child) for child in below)
            device = values.get("device_id")
            launches.append(
                {
                    "launch_key": launch_key,
                    "kernel_name": kernel_name,
                    "mangled_name": name if name.startswith("_Z") else None,
                    "device_id": int(str(device)) if str(device).isdigit() and len(str(device)) < 10 else None,
                    "device_type": values["device_type"] if isinstance(values.get("device_type"), str) else None,
                    "duration_ns": total / count,
                    "nvtx_path": " > ".join(scopes) or None,
                }
            )
            if count > 1:  # what the mean stands for
                metrics.append(_metric(launch_key, "count", "launch", count))
                metrics.append(_metric(launch_key, "time (ns)", "ns", total))
            for metric, unit in WORK_METRICS.items():
                value = _number(values.get(metric))
                if value is not None:
                    metrics.append(_metric(launch_key, metric, unit, value))
            for owner in owners:
                scope_work[owner][1].append(launch_key)
            continue
        work = {metric: v for metric in WORK_METRICS if (v := _number(values.get(metric))) is not None}
        inner = scopes if name == "ROOT" and not scopes else (*scopes, name)
        children = node.get("children") or []
        if not isinstance(children, list):
            raise InputError(str(path), f"{where}: 'children' of {name!r} is not a list")
        if work:
            owners = (*owners, len(scope_work))
            scope_work.append((work, []))
        stack.extend((child, inner, f"{where} > {name}", owners) for child in reversed(children))
    metrics.extend(_scope_work(scope_work, metrics))
    if aggregated:
        warnings.append(
            f"{aggregated:,} kernel nodes stand for several launches each (Proton's count): each is one launch "
            "here, with the mean duration"
        )
    if dropped:
        warnings.append(f"{dropped:,} nodes below kernels (neither a kernel nor a source line) are not imported")
    if samples:
        warnings.append(NO_SOURCE_TEXT)
    if not launches and not (len(document) > 1 and isinstance(document[1], dict) and document[1]):
        # no kernel and no Proton device table: a Hatchet literal of another profiler (a CPU call tree)
        raise InputError(
            str(path),
            "a Hatchet call-tree literal with no GPU kernel node and no Proton device table: a CPU profile "
            "(hatchet.GraphFrame.from_literal reads it), not a GPU profile; profile the GPU work with Triton's "
            "Proton or torch.profiler and import that",
        )
    if not launches:
        warnings.append("no kernel nodes: the profile holds scopes only")
    frame = pl.DataFrame(launches, schema={**dict(LAUNCH_SCHEMA), "device_type": pl.Utf8}) if launches else None
    return ParsedImport(
        format=FORMAT,
        tool="Triton Proton",
        device=_device(document, launches, warnings),
        launches=conform(frame, LAUNCH_SCHEMA) if frame is not None else ParsedImport(FORMAT).launches,
        metrics=conform(pl.DataFrame(metrics, schema=METRIC_SCHEMA), METRIC_SCHEMA)
        if metrics
        else ParsedImport(FORMAT).metrics,
        source_samples=source_frame(samples, SOURCE_SAMPLE_SCHEMA),
        warnings=warnings,
    )


def _metric(launch_key: int, name: str, unit: str, value: float) -> dict[str, Any]:
    kind = "int" if float(value).is_integer() else "float"
    return {"launch_key": launch_key, "section": SECTION, "name": name, "unit": unit, "value": value, "kind": kind}


def _scope_work(scope_work: list[tuple[dict[str, float], list[int]]], metrics: list[dict[str, Any]]) -> list[dict]:
    """The FLOPs/bytes of each scope with exactly one kernel below it, for that kernel; the kernel's own values
    and then the innermost scope's win (scopes are listed outermost first along a path)."""
    have = {(m["launch_key"], m["name"]) for m in metrics}
    extra: list[dict[str, Any]] = []
    for work, kernels in reversed(scope_work):
        if len(kernels) != 1:
            continue
        for metric, value in work.items():
            if (kernels[0], metric) not in have:
                extra.append(_metric(kernels[0], metric, WORK_METRICS[metric], value))
                have.add((kernels[0], metric))
    return extra


def _device(document: list, launches: list[dict[str, Any]], warnings: list[str]) -> Device | None:
    """The first kernel's device from the device table (`{"CUDA": {"0": {...}}}`)."""
    table = document[1] if len(document) > 1 and isinstance(document[1], dict) else {}
    kind = next((k["device_type"] for k in launches if k.get("device_type")), None) or next(iter(table), None)
    device_id = next((k["device_id"] for k in launches if k.get("device_id") is not None), 0)
    devices = table.get(kind) if isinstance(kind, str) else None
    info = devices.get(str(device_id)) if isinstance(devices, dict) else None
    if not isinstance(info, dict):
        warnings.append("no device table for the kernels' device: the device is unknown")
        return None
    arch = str(info.get("arch", ""))
    clock_khz = _number(info.get("clock_rate"))
    sms = info.get("num_sms")
    capability = f"{arch[:-1]}.{arch[-1]}" if kind == "CUDA" and arch.isdigit() and len(arch) >= 2 else None
    if kind != "CUDA":
        warnings.append(f"the kernels ran on a {kind} device (arch {arch!r}); tracekit's model is NVIDIA's")
    return Device(
        name=None,  # Proton records the architecture, not the product name
        compute_capability=capability,
        sm_count=sms if isinstance(sms, int) else None,
        sm_clock_hz=clock_khz * 1e3 if clock_khz else None,
        extra={key: info[key] for key in ("bus_width", "memory_clock_rate") if key in info} | {"arch": arch},
    )
