"""Kernels TorchInductor (PyTorch's compiler) generates, at the launch configurations its autotuner and its users
try: a random gather (`x[idx]`), an FMA-heavy polynomial (48 Horner steps per element) and a transpose
(`x.t().contiguous()`, a tiled two-dimensional kernel). Nobody on the team wrote them: each is compiled on the GPU
machine by `torch.compile`, its generated Triton kernel taken from the generated code (the kernel body as Inductor
wrote it, without its autotuning decorator) and launched at each configuration with the arguments Inductor's own
wrapper passes. The first configuration of each family is Inductor's usual pick (XBLOCK 1024, 4 warps for a large
pointwise kernel; 32 x 32 tiles, 4 warps for the transpose); the work is the same in every configuration.

`probe` prints what was generated (kernel names, arguments, the wrapper's call, the kernel source) for the record.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import triton

HORNER_STEPS = 48
N_POINTWISE = 1 << 26
N_GATHER_SOURCE = 1 << 26
N_GATHER = 1 << 24
SIDE = 8192


@dataclass(frozen=True)
class Generated:
    name: str
    source: str  # the kernel as Inductor generated it
    call: str  # the wrapper's launch of it
    jit: object  # triton.JITFunction
    args: tuple  # positional arguments, as the wrapper passes them
    output: torch.Tensor  # the buffer the kernel writes (one of `args`)
    expected: torch.Tensor  # what eager PyTorch computes
    numels: dict[str, int]  # xnumel, ynumel
    axes: dict[str, int]  # program_id axis of x and y


def generate(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> Generated:
    """Compile `fn` with Inductor, take its one generated Triton kernel and the wrapper's call of it."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    expected = fn(*inputs)
    _, codes = run_and_get_code(torch.compile(fn, dynamic=False), *inputs)
    wrapper = "\n".join(codes)
    kernels = re.findall(r"async_compile\.triton\(\s*'(\w+)',\s*'''(.*?)'''", wrapper, re.S)
    if len(kernels) != 1:
        raise RuntimeError(f"expected one generated kernel, found {[k for k, _ in kernels]}")
    name, source = kernels[0]
    call = re.search(rf"{name}\.run\((.*?)\)\n", wrapper, re.S)
    if call is None:
        raise RuntimeError(f"no call of {name} in the wrapper")
    # The kernel alone: its imports, then from @triton.jit on (the autotuning decorator above it is dropped).
    head, _, tail = source.partition("@triton.jit")
    imports = "\n".join(line for line in head.splitlines() if line.startswith(("import ", "from ")))
    # Triton reads a kernel's source from its file: the kernel goes to one of its own and is imported from there.
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(f"{imports}\n@triton.jit{tail}")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    jit = getattr(module, name)
    output = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=expected.device)
    args: list[object] = []
    for token in (t.strip() for t in call.group(1).split(",")):
        if not token or "=" in token:
            continue
        if m := re.fullmatch(r"arg(\d+)_1", token):
            args.append(inputs[int(m.group(1))])
        elif token.startswith("buf"):
            args.append(output)
        else:
            args.append(int(token))
    names = [a for a in jit.arg_names if a not in ("XBLOCK", "YBLOCK", "R0_BLOCK", "RBLOCK")]
    args = args[: len(names)]
    numels = {n: int(v) for n, v in zip(names, args, strict=True) if n in ("xnumel", "ynumel")}
    axes = {}
    for axis in ("x", "y"):
        found = re.search(rf"{axis}offset = .*?tl\.program_id\((\d)\)", source)
        if found:
            axes[axis] = int(found.group(1))
    return Generated(name, source, call.group(0), jit, tuple(args), output, expected, numels, axes)


def launch(g: Generated, num_warps: int, xblock: int, yblock: int | None = None) -> Callable[[], object]:
    grid = [1, 1, 1]
    grid[g.axes["x"]] = triton.cdiv(g.numels["xnumel"], xblock)
    meta = {"XBLOCK": xblock}
    if yblock is not None:
        grid[g.axes["y"]] = triton.cdiv(g.numels["ynumel"], yblock)
        meta["YBLOCK"] = yblock
    size = tuple(grid[: max(g.axes.values()) + 1])

    def run() -> object:
        return g.jit[size](*g.args, **meta, num_warps=num_warps, num_stages=1)

    return run


def _poly(x: torch.Tensor) -> torch.Tensor:
    y = x
    for i in range(HORNER_STEPS):
        y = y * x + (0.5 + 0.01 * i)
    return y


def _gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return x[idx]


def _transpose(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()


def families() -> list[tuple[str, Generated, str, int, int]]:
    """(kernel, generated, work, compulsory bytes, flops) per family."""
    dev = "cuda"
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.rand(N_POINTWISE, device=dev, generator=gen) * 1.8 - 0.9  # |x| < 1: the polynomial stays finite
    src = torch.randn(N_GATHER_SOURCE, device=dev, generator=gen)
    idx = torch.randint(0, N_GATHER_SOURCE, (N_GATHER,), device=dev, generator=gen)
    square = torch.randn(SIDE, SIDE, device=dev, generator=gen)
    return [
        (
            "inductor_gather",
            generate(_gather, src, idx),
            "2^24 int64 indices into 2^26 fp32, random",
            N_GATHER * (8 + 4 + 32),
            0,
        ),
        (
            "inductor_poly",
            generate(_poly, x),
            f"2^26 fp32, {HORNER_STEPS} Horner steps",
            N_POINTWISE * 8,
            N_POINTWISE * 2 * HORNER_STEPS,
        ),
        ("inductor_transpose", generate(_transpose, square), f"{SIDE} x {SIDE} fp32 transpose", 2 * SIDE * SIDE * 4, 0),
    ]


POINTWISE = ((1024, 4), (128, 4), (256, 4), (512, 4), (2048, 4), (1024, 1), (1024, 8), (1024, 16))
TILES = ((32, 32, 4), (16, 16, 1), (16, 64, 4), (64, 16, 4), (64, 64, 8), (32, 32, 8), (32, 128, 4), (128, 32, 8))


def configs(config_type: type) -> list:
    """The Config rows of real_kernels.py for every family and configuration."""
    out = []
    for kernel, g, work, compulsory, flops in families():
        if "ynumel" in g.numels:
            for yb, xb, nw in TILES:
                out.append(
                    config_type(
                        kernel,
                        f"y{yb:03d}_x{xb:03d}_w{nw:02d}",
                        "tuning",
                        xb * yb,
                        nw,
                        work,
                        compulsory,
                        flops,
                        launch(g, nw, xb, yb),
                    )
                )
        else:
            for xb, nw in POINTWISE:
                out.append(
                    config_type(
                        kernel, f"b{xb:05d}_w{nw:02d}", "tuning", xb, nw, work, compulsory, flops, launch(g, nw, xb)
                    )
                )
    return out


def probe() -> None:
    for kernel, g, work, _, _ in families():
        print(f"== {kernel}: {g.name} ({work})\nargs: {g.jit.arg_names}\nnumels: {g.numels} axes: {g.axes}")
        print(f"call: {g.call.strip()}\n{g.source}\n", flush=True)
        g.output.zero_()
        launch(g, 4, 1024 if "ynumel" not in g.numels else 32, 32 if "ynumel" in g.numels else None)()
        torch.cuda.synchronize()
        print(f"matches eager: {torch.allclose(g.output, g.expected, rtol=1e-4, atol=1e-5)}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["probe"]:
        probe()
