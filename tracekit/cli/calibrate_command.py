"""`tracekit calibrate`: measure this machine's GPU ceilings and write a profile (tracekit.ceilings/1)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from tracekit.ceilings.lookup import read_profile
from tracekit.cli.common import JsonOption, print_json
from tracekit.errors import TracekitError


def _default_output(name: str) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return Path(f"ceilings-{slug}.json")


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
    as_json: JsonOption = False,
) -> None:
    """Measure this machine's GPU ceilings (DRAM stream and scattered, L2, shared, FP32/FP64/tensor, block launch,
    launch overhead, DRAM loaded latency) with nvcc-built microbenchmarks and write them as a profile."""
    from tracekit.ceilings.calibrate import calibrate
    from tracekit.cli.ceilings_command import _print

    command = "tracekit " + " ".join(shlex.quote(a) for a in ["calibrate", *sys.argv[2:]])
    profile, raw_output = calibrate(command, quick=quick, repeats=repeats)
    target = output or _default_output(profile["device"]["name"])
    try:
        target.write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")
        if raw is not None:
            raw.write_text(json.dumps(raw_output, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise TracekitError(f"{target}: cannot write the profile: {exc.strerror}") from None
    print(f"calibrate: wrote {target}", file=sys.stderr, flush=True)
    written = read_profile(target)
    if as_json:
        print_json(profile)
    else:
        _print(written)
