"""`tracekit calibrate`: build the microbenchmarks (src/*.cu) with nvcc, run them on GPU 0, and turn each sweep into
a ceiling: the plateau (the sweep point with the highest median rate) and the spread of its repeats.

Needs only the CUDA toolkit and the driver (no Python GPU package). The profile it writes is read back by
`ceilings_for(..., override=PATH)` and `tracekit ceilings --ceilings PATH`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from tracekit.ceilings.nominal import NominalPeaks, nominal_peaks
from tracekit.ceilings.profile import nominal_of
from tracekit.ceilings.types import PROFILE_SCHEMA
from tracekit.errors import TracekitError

Progress = Callable[[str], None]

# Profile ceiling <- the program's sweeps (the best plateau over all their points), and what they are (the detail
# line). Every read:write mix of the stream sweep has its own ceiling too (`dram_stream_by_mix`).
SWEEPS: dict[str, tuple[tuple[str, ...], str]] = {
    "dram_stream_bytes_per_s": (
        ("dram_copy",),
        "copy streams over 1 GiB arrays (read + write bytes): 32-, 64- and 128-bit loads and stores, ILP x occupancy",
    ),
    "dram_read_bytes_per_s": (("dram_read",), "read-only streams over a 1 GiB array"),
    "dram_write_bytes_per_s": (("dram_write",), "write-only streams over a 1 GiB array"),
    "dram_random_sector_bytes_per_s": (
        ("dram_random_sector",),
        "independent 4-byte ld.global.cg loads at hashed addresses over 1 GiB (one 32-byte sector each)",
    ),
    "l2_bytes_per_s": (
        ("l2_read",),
        "128-bit ld.global.cg reads of a footprint well inside L2, read over and over (footprint x ILP x occupancy)",
    ),
    "shared_bytes_per_s": (("shared_read",), "conflict-free 4- and 16-byte shared loads"),
    "fp32_flop_per_s": (("fp32_fma",), "independent FP32 FMA chains (2 flop per FMA)"),
    "fp64_flop_per_s": (("fp64_fma",), "independent FP64 FMA chains (2 flop per FMA)"),
}
# A stream's read:write mix <- its sweep (reads and writes per element).
STREAM_MIXES = {"dram_read": "1:0", "dram_copy": "1:1", "dram_add": "2:1", "dram_write": "0:1"}
TENSOR_KINDS = ("fp16", "bf16", "tf32", "fp8", "int8")


class CalibrateError(TracekitError):
    """calibrate cannot run here (no GPU, no nvcc) or its benchmark failed; one line."""


def find_nvcc() -> str | None:
    """nvcc on the PATH, else under CUDA_HOME / CUDA_PATH, else /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def query_gpu(fields: Iterable[str]) -> dict[str, str] | None:
    """One nvidia-smi query of GPU 0 (None without nvidia-smi or a GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    names = list(fields)
    try:
        done = subprocess.run(
            [smi, "-i", "0", f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
    values = [v.strip() for v in line.split(",")]
    return dict(zip(names, values, strict=False)) if len(values) == len(names) else None


def check_machine() -> tuple[str, dict[str, str]]:
    """nvcc's path and the GPU's nvidia-smi facts, or a one-line CalibrateError saying what is missing."""
    gpu = query_gpu(["name", "compute_cap", "driver_version", "clocks.max.sm", "clocks.max.mem", "memory.total"])
    if gpu is None:
        raise CalibrateError("calibrate needs an NVIDIA GPU: nvidia-smi is missing or sees no GPU on this machine")
    nvcc = find_nvcc()
    if nvcc is None:
        raise CalibrateError(
            "calibrate needs nvcc (the CUDA toolkit) to build its benchmarks: none on PATH or CUDA_HOME"
        )
    return nvcc, gpu


def find_cublaslt(nvcc: str) -> tuple[Path, Path] | None:
    """cublasLt.h's folder and the libcublasLt shared library: the toolkit's, else a pip wheel's (nvidia-cublas)."""
    roots = [Path(nvcc).resolve().parent.parent, Path("/usr/local/cuda")]
    roots += [Path(r) for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if r]
    for entry in sys.path:
        nvidia = Path(entry) / "nvidia"
        if nvidia.is_dir():
            roots += [p for p in nvidia.iterdir() if p.is_dir()]
    for root in roots:
        header = next(iter(sorted(root.glob("include/cublasLt.h"))), None)
        if header is None:
            header = next(iter(sorted(root.glob("targets/*/include/cublasLt.h"))), None)
        if header is None:
            continue
        for libdir in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            libs = sorted((root / libdir).glob("libcublasLt.so*"))
            if libs:
                return header.parent, libs[0]
    return None


def _source(name: str) -> str:
    return resources.files("tracekit.ceilings").joinpath("src", name).read_text(encoding="utf-8")


def build(nvcc: str, compute_capability: str, folder: Path, progress: Progress) -> tuple[Path, Path | None]:
    """The benchmark program and, where cuBLASLt is found, the tensor program, built for this GPU's arch."""
    arch = "sm_" + compute_capability.replace(".", "")
    programs: list[Path | None] = []
    for name, extra in (("calibrate", None), ("calibrate_tensor", find_cublaslt(nvcc))):
        if name == "calibrate_tensor" and extra is None:
            progress("cuBLASLt not found: tensor FLOP/s from mma.sync only")
            programs.append(None)
            continue
        source = folder / f"{name}.cu"
        source.write_text(_source(f"{name}.cu"), encoding="utf-8")
        command = [nvcc, "-O3", f"-arch={arch}", str(source), "-o", str(folder / name)]
        if extra is not None:
            include, lib = extra
            # through the linker: nvcc takes no versioned library (a wheel ships only libcublasLt.so.13) as input
            command += [f"-I{include}", "-Xlinker", str(lib), "-Xlinker", f"-rpath={lib.parent}"]
        progress(f"building {name} ({arch})")
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            message = (done.stderr.strip().splitlines() or ["no message"])[-1]
            if name == "calibrate":
                raise CalibrateError(f"nvcc could not build the benchmarks: {message}")
            progress(f"tensor program not built ({message}): tensor FLOP/s from mma.sync only")
            programs.append(None)
            continue
        programs.append(folder / name)
    main_program = programs[0]
    assert main_program is not None
    return main_program, programs[1]


class ClockSampler:
    """nvidia-smi sampling SM and memory clocks every 200 ms while the benchmarks run: the clocks seen."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self.process: subprocess.Popen[str] | None = None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> ClockSampler:
        smi = shutil.which("nvidia-smi")
        if smi:
            self.process = subprocess.Popen(
                [smi, "-i", "0", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits", "-lms", "200"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()
        return self

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.samples.append((float(parts[0]) * 1e6, float(parts[1]) * 1e6))
            except (ValueError, IndexError):
                continue

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def summary(self) -> dict[str, float]:
        if not self.samples:
            return {}
        sm = [s for s, _ in self.samples]
        mem = [m for _, m in self.samples]
        return {
            "sm_hz_min": min(sm),
            "sm_hz_median": statistics.median(sm),
            "sm_hz_max": max(sm),
            "memory_hz_min": min(mem),
            "memory_hz_max": max(mem),
            "samples": float(len(sm)),
        }


def _run_program(program: Path, args: list[str], timeout_s: float) -> dict[str, Any]:
    done = subprocess.run([str(program), *args], stdout=subprocess.PIPE, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise CalibrateError(f"{program.name} failed (exit {done.returncode}); its messages are above")
    try:
        parsed: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise CalibrateError(f"{program.name} printed no JSON ({exc.msg})") from None
    return parsed


def measure(quick: bool, repeats: int, progress: Progress) -> dict[str, Any]:
    """Build and run the benchmarks; the raw output: device facts, nvidia-smi facts, clocks seen, sweep points."""
    nvcc, gpu = check_machine()
    with tempfile.TemporaryDirectory(prefix="tracekit-calibrate-") as tmp:
        program, tensor = build(nvcc, gpu["compute_cap"], Path(tmp), progress)
        args = (["--quick"] if quick else []) + ["--repeats", str(repeats)]
        with ClockSampler() as clocks:
            raw = _run_program(program, args, 1800)
            if tensor is not None:
                try:
                    raw["points"] += _run_program(tensor, args, 1800)["points"]
                except CalibrateError as exc:
                    progress(f"tensor program: {exc}")
        raw["clocks_seen"] = clocks.summary()
    raw["nvidia_smi"] = gpu
    nvcc_version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    raw["nvcc"] = (nvcc_version.strip().splitlines() or [""])[-1]
    return raw


def _rates(point: Mapping[str, Any]) -> list[float]:
    return [float(point["amount"]) / s for s in point.get("seconds", []) if s > 0]


def _spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}" for k, v in params.items())


def plateau(points: list[Mapping[str, Any]], lowest: bool = False) -> tuple[float, float, Mapping[str, Any]] | None:
    """(median rate, spread of its repeats, params) of the sweep point with the highest median rate (the lowest
    with `lowest`, for a time per launch)."""
    scored = [(statistics.median(r), _spread(r), p.get("params", {})) for p in points if (r := _rates(p))]
    if not scored:
        return None
    return (min if lowest else max)(scored, key=lambda s: s[0])


def _sweep_summary(points: list[Mapping[str, Any]]) -> str:
    """ "warps_per_sm 8,16,32,64; ilp 1,4": the values each parameter took, in numeric order."""
    keys: dict[str, set[float | str]] = {}
    for p in points:
        for k, v in p.get("params", {}).items():
            keys.setdefault(k, set()).add(float(v) if isinstance(v, int | float) else str(v))

    def text(values: set[float | str]) -> str:
        numbers = sorted(v for v in values if isinstance(v, float))
        return ",".join([f"{v:g}" for v in numbers] + sorted(str(v) for v in values if not isinstance(v, float)))

    return "; ".join(f"{k} {text(v)}" for k, v in keys.items())


def lower_envelope(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points no other point beats with at least the throughput at a lower latency: latency as a function of
    throughput. Background warps that sleep between bursts queue their loads together and see more latency at the
    same mean throughput than steady ones; the envelope is the steady memory system (Volkov 2016, ch. 3)."""
    kept = [
        p
        for p in points
        if not any(
            q is not p
            and q["throughput_bytes_per_s"] >= p["throughput_bytes_per_s"]
            and q["latency_ns"] < p["latency_ns"]
            for q in points
        )
    ]
    return sorted(kept, key=lambda p: p["throughput_bytes_per_s"])


def _ceiling(value: float, unit: str, nominal: float | None, spread: float, detail: str) -> dict[str, Any]:
    return {"value": value, "unit": unit, "nominal": nominal, "spread_fraction": spread, "detail": detail}


def _stream_params(point: Mapping[str, Any]) -> dict[str, Any]:
    """A stream point's parameters; a raw output from before issue 26 had float4 streams without width or mix."""
    params = dict(point.get("params", {}))
    params.setdefault("width_bytes", 16)
    return params


def stream_breakdown(by_sweep: Mapping[str, list[Mapping[str, Any]]], peaks: NominalPeaks | None) -> dict[str, Any]:
    """`dram_stream_by_mix` (best plateau per read:write mix) and `dram_stream_by_width` (per load/store width in
    bytes, over all mixes): where a stream's ceiling comes from, and what a kernel with narrower accesses reaches."""
    nominal = nominal_of("dram_stream_bytes_per_s", peaks)
    by_mix: dict[str, Any] = {}
    by_width: dict[str, list[Mapping[str, Any]]] = {}
    for sweep, mix in STREAM_MIXES.items():
        points = by_sweep.get(sweep, [])
        found = plateau(points)
        if found is None:
            continue
        value, spread, params = found
        by_mix[mix] = _ceiling(
            value, "byte/s", nominal, spread, f"read:write {mix} stream; plateau at {_params_text(params)}"
        )
        for point in points:
            width = _stream_params(point)["width_bytes"]
            by_width.setdefault(f"{float(width):g}", []).append({**point, "params": {**_stream_params(point)}})
    widths: dict[str, Any] = {}
    for width, points in sorted(by_width.items(), key=lambda kv: float(kv[0])):
        found = plateau(points)
        if found is not None:
            value, spread, params = found
            widths[width] = _ceiling(
                value, "byte/s", nominal, spread, f"{width}-byte loads and stores; plateau at {_params_text(params)}"
            )
    return {"dram_stream_by_mix": by_mix, "dram_stream_by_width": widths} if by_mix else {}


def concurrency_curve(by_sweep: Mapping[str, list[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Read-stream throughput against bytes in flight per SM (Little's law: throughput = bytes in flight x SMs /
    latency until DRAM saturates): per bytes-in-flight value the best median over widths, ILP and occupancy."""
    best: dict[float, dict[str, Any]] = {}
    for point in by_sweep.get("dram_read", []):
        params = point.get("params", {})
        rates = _rates(point)
        in_flight = params.get("bytes_in_flight_per_sm")
        if not rates or not isinstance(in_flight, int | float):
            continue
        rate = statistics.median(rates)
        if in_flight not in best or rate > best[in_flight]["throughput_bytes_per_s"]:
            best[in_flight] = {
                "bytes_in_flight_per_sm": float(in_flight),
                "throughput_bytes_per_s": rate,
                "warps_per_sm": params.get("warps_per_sm"),
                "ilp": params.get("ilp"),
                "width_bytes": params.get("width_bytes"),
            }
    return [best[k] for k in sorted(best)]


def summarize(raw: Mapping[str, Any], command: str, repeats_note: str = "") -> dict[str, Any]:
    """The profile (tracekit.ceilings/1) from the raw output: each ceiling the plateau of its sweep."""
    device = raw["device"]
    peaks, _basis = nominal_peaks(device["name"], device.get("compute_capability"))
    by_sweep: dict[str, list[Mapping[str, Any]]] = {}
    errors = []
    for point in raw.get("points", []):
        if "error" in point:
            errors.append(f"{point['sweep']}: {point['error']}")
            continue
        by_sweep.setdefault(point["sweep"], []).append(point)
    ceilings: dict[str, Any] = {}
    for name, (sweeps, what) in SWEEPS.items():
        points = [p for sweep in sweeps for p in by_sweep.get(sweep, [])]
        found = plateau(points)
        if found is None:
            continue
        value, spread, params = found
        unit = "flop/s" if "flop" in name else "byte/s"
        detail = f"{what}; plateau at {_params_text(params)}; sweep {_sweep_summary(points)}"
        if name == "dram_random_sector_bytes_per_s":
            # DRAM moves the L2's fetch granularity per missed sector (64 B on the H100: Nsight Compute counted
            # 1.002 GB of DRAM reads for 16.77 M random sectors); the ceiling is in DRAM bytes, as dram__bytes counts.
            granularity = int(raw.get("l2_fetch_granularity_bytes") or 32)
            factor = granularity / 32 if granularity in (32, 64, 128) else 1.0
            detail += (
                f"; {value / 1e12:.4g} TB/s of requested 32-byte sectors x {factor:g} (L2 fetch granularity "
                f"{granularity} B: DRAM bytes per random sector)"
            )
            value *= factor
        ceilings[name] = _ceiling(value, unit, nominal_of(name, peaks), spread, detail)
    ceilings.update(stream_breakdown(by_sweep, peaks))
    tensor: dict[str, Any] = {}
    for kind in TENSOR_KINDS:
        candidates = []
        for method in ("cublaslt", "mma_sync"):
            found = plateau(by_sweep.get(f"tensor_{method}_{kind}", []))
            if found is not None:
                candidates.append((*found, method))
        if candidates:
            value, spread, params, method = max(candidates, key=lambda c: c[0])
            accumulate = "int32" if kind == "int8" else "FP32"
            how = (
                f"cuBLASLt TN matmul, {accumulate} accumulation" if method == "cublaslt" else "mma.sync loop (no wgmma)"
            )
            others = ", ".join(f"{m}: {v / 1e12:.1f} TFLOP/s" for v, _, _, m in candidates)
            tensor[kind] = _ceiling(
                value,
                "flop/s",
                peaks.tensor_flop_per_s.get(kind) if peaks else None,
                spread,
                f"{how}; plateau at {_params_text(params)}; methods {others}",
            )
    ceilings["tensor_flop_per_s"] = tensor
    blocks: dict[str, Any] = {}
    for point in by_sweep.get("block_launch", []):
        rates = _rates(point)
        threads = int(point["params"]["threads"])
        resident = int(point["params"].get("resident_blocks_per_sm", 0))
        blocks[str(threads)] = _ceiling(
            statistics.median(rates),
            "block/s",
            None,
            _spread(rates),
            f"empty blocks of {threads} threads, {point['amount']:g} per SM in one launch ({resident} resident per SM)",
        )
    ceilings["block_launch_per_s_per_sm"] = blocks
    graph = plateau(by_sweep.get("launch_in_graph", []))
    stream = plateau(by_sweep.get("launch_back_to_back", []))
    sync = plateau(by_sweep.get("launch_and_sync", []))
    found = graph or stream
    if found is not None:
        launches_per_s, spread, params = found
        how = "in a CUDA graph (the GPU's own time per dependent launch)" if graph else "back to back in a stream"
        notes: list[str] = []
        if graph and stream:
            notes.append(f"from a stream {1e6 / stream[0]:.2f} us (the host's launch rate)")
        if sync:
            notes.append(f"launch + synchronize from the host {1e6 / sync[0]:.2f} us")
        ceilings["launch_overhead_s"] = _ceiling(
            1.0 / launches_per_s,
            "s",
            None,
            spread,
            f"GPU time per empty 1-block kernel, {params.get('launches', 0):g} launched {how}"
            + ("; " + "; ".join(notes) if notes else ""),
        )
    curve = []
    for point in by_sweep.get("dram_loaded_latency", []):
        params = point["params"]
        latency, throughput = params.get("latency_ns", []), params.get("throughput_bytes_per_s", [])
        if not latency:
            continue
        warps = int(params.get("background_warps_per_sm", 0))
        median_latency = statistics.median(latency)
        entry = {
            "throughput_bytes_per_s": statistics.median(throughput) if throughput else 0.0,
            "latency_ns": median_latency,
            "background_warps_per_sm": warps,
            "sleep_ns": params.get("sleep_ns"),
            "latency_spread_fraction": _spread(latency),
        }
        if warps == 0:
            ceilings["dram_unloaded_latency_ns"] = _ceiling(
                median_latency,
                "ns",
                None,
                _spread(latency),
                f"one thread chasing {params.get('steps', 0):g} dependent ld.global.cg loads over 1 GiB, "
                "nothing else running",
            )
        curve.append(entry)
    curve.sort(key=lambda e: e["throughput_bytes_per_s"])
    envelope = lower_envelope(curve)
    smi = raw.get("nvidia_smi", {})
    clocks = dict(raw.get("clocks_seen", {}))
    for key, field in (("clocks.max.sm", "sm_hz_max_rated"), ("clocks.max.mem", "memory_hz_max_rated")):
        with contextlib.suppress(KeyError, ValueError):
            clocks[field] = float(smi[key]) * 1e6
    return {
        "schema": PROFILE_SCHEMA,
        "device": device,
        "measured_at": raw.get("measured_at") or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "driver": smi.get("driver_version") or str(raw.get("driver_version", "")),
        "cuda": {
            "driver_api": raw.get("driver_version"),
            "runtime": raw.get("runtime_version"),
            "nvcc": raw.get("nvcc"),
        },
        "command": command,
        "repeats": raw.get("repeats"),
        "quick": raw.get("quick", False),
        "clocks": clocks,
        "ceilings": ceilings,
        "dram_latency_curve": envelope,
        "dram_latency_points": curve,
        "dram_concurrency_curve": concurrency_curve(by_sweep),
        "errors": errors,
        "note": repeats_note,
    }


def calibrate(
    command: str, quick: bool = False, repeats: int = 5, progress: Progress | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure GPU 0: (profile, raw output)."""
    say = progress or (lambda line: print(f"calibrate: {line}", file=sys.stderr, flush=True))
    raw = measure(quick, repeats, say)
    raw["measured_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    raw["command"] = command
    return summarize(raw, command), raw
