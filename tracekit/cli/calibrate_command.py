"""`tracekit calibrate`: measure this machine's GPU ceilings and write a profile (tracekit.ceilings/1)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tracekit.ceilings.lookup import read_profile
from tracekit.cli.common import JsonOption, print_json
from tracekit.errors import TracekitError


def _default_output(name: str) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return Path(f"ceilings-{slug}.json")


def _from_raw(path: Path) -> dict[str, Any]:
    """The profile of a raw output, summarized again; its command and time stay those of the measurement."""
    from tracekit.ceilings.calibrate import summarize

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw.get("points"), list):
            raise KeyError("points")
        profile = summarize(raw, str(raw["command"]))
    except FileNotFoundError:
        raise TracekitError(f"{path}: no such raw output") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TracekitError(f"{path}: not a raw output of tracekit calibrate ({type(exc).__name__}: {exc})") from None
    profile["measured_at"] = raw.get("measured_at", profile["measured_at"])
    return profile


def _calibrate_profiler(output: Path | None, as_json: bool) -> None:
    """The profiler's per-event costs on this machine (`tracekit.steps.calibrate_profiler`), written where
    `tracekit step` finds it."""
    from tracekit.api import calibrate_profiler

    calibration, target = calibrate_profiler(
        output, lambda s: print(f"calibrate: measuring the profiler at {s}", file=sys.stderr, flush=True)
    )
    if as_json:
        print_json(calibration)
        return
    print(f"calibrate: wrote {target}", file=sys.stderr, flush=True)
    for setting, costs in calibration["costs_ns"].items():
        parts = ", ".join(f"{kind} {ns / 1e3:.2f} us" for kind, ns in costs.items() if ns)
        print(f"  {setting}: {parts}")


def calibrate_command(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Profile to write (default: ceilings-<device>.json).")
    ] = None,
    raw: Annotated[
        Path | None, typer.Option("--raw", help="Also write the benchmarks' raw output (every repeat).")
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Fewer sweep points and repeats (a check, not a profile).")
    ] = False,
    repeats: Annotated[int, typer.Option("--repeats", help="Timed repeats per sweep point.", min=2, max=50)] = 5,
    from_raw: Annotated[
        Path | None,
        typer.Option("--from-raw", help="Summarize a raw output written by --raw again (no GPU needed)."),
    ] = None,
    profiler: Annotated[
        bool,
        typer.Option(
            "--profiler",
            help="Measure instead what the PyTorch profiler costs the host per recorded event, at each setting "
            "(needs PyTorch and a CUDA GPU); tracekit step takes it out of every step figure.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Measure this machine's GPU ceilings (DRAM stream and scattered, L2, shared, FP32/FP64/tensor, block launch,
    launch overhead, DRAM loaded latency) with nvcc-built microbenchmarks and write them as a profile."""
    from tracekit.ceilings.calibrate import calibrate
    from tracekit.cli.ceilings_command import _print

    if profiler:
        _calibrate_profiler(output, as_json)
        return

    if from_raw is not None:
        profile, raw_output = _from_raw(from_raw), None
    else:
        command = "tracekit " + " ".join(shlex.quote(a) for a in ["calibrate", *sys.argv[2:]])
        profile, raw_output = calibrate(command, quick=quick, repeats=repeats)
    target = output or _default_output(profile["device"]["name"])
    try:
        target.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        if raw is not None and raw_output is not None:
            raw.write_text(json.dumps(raw_output, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TracekitError(f"{target}: cannot write the profile: {exc.strerror}") from None
    print(f"calibrate: wrote {target}", file=sys.stderr, flush=True)
    written = read_profile(target)
    if as_json:
        print_json(profile)
    else:
        _print(written)
