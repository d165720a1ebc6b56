"""CUB's block-wide primitives at the launch configurations a user tunes them over (REAL_SET=cub, make_cub.sh).

NVIDIA's CUB (the CCCL headers the CUDA toolkit ships) does the work: BlockLoad (warp-transposed) and BlockReduce,
BlockScan or BlockRadixSort, then BlockStore; `cub_kernels.cu` only places each block's tile. Each kernel runs at
the configurations CUB's own block examples sweep, BLOCK_THREADS x ITEMS_PER_THREAD of one 1,024-item tile (1024 x
1 to 32 x 32), over the same data in every configuration; the first is the examples' first. The library is built
on the GPU machine with nvcc (sm_90) and called through ctypes on PyTorch's current stream.

`probe` checks every configuration's result against PyTorch's.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
TILE = 1024
CONFIGS = ((1024, 1), (512, 2), (256, 4), (128, 8), (64, 16), (32, 32))
N_REDUCE = 1 << 27
N_SCAN = 1 << 26
N_SORT = 1 << 24


@cache
def library() -> ctypes.CDLL:
    out = Path(tempfile.mkdtemp()) / "libcub_kernels.so"
    subprocess.run(
        ["nvcc", "-arch=sm_90", "-O3", "-lineinfo", "-Xcompiler", "-fPIC", "-shared", str(HERE / "cub_kernels.cu")]
        + ["-o", str(out)],
        check=True,
    )
    return ctypes.CDLL(str(out))


def launcher(kernel: str, threads: int, items: int, src: torch.Tensor, dst: torch.Tensor) -> Callable[[], object]:
    fn = getattr(library(), f"launch_{kernel}_{threads}_{items}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    tiles = src.numel() // TILE

    def run() -> object:
        err = fn(src.data_ptr(), dst.data_ptr(), tiles, torch.cuda.current_stream().cuda_stream)
        if err:
            raise RuntimeError(f"{kernel}<{threads}, {items}>: CUDA error {err}")
        return dst

    return run


@cache
def buffers() -> dict[str, tuple[torch.Tensor, torch.Tensor, str, int]]:
    """(input, output, work, compulsory bytes) per kernel, the same in every configuration."""
    gen = torch.Generator(device="cuda").manual_seed(0)

    def ints(n: int, high: int) -> torch.Tensor:
        return torch.randint(0, high, (n,), device="cuda", generator=gen, dtype=torch.int32)

    return {
        "cub_block_reduce": (
            ints(N_REDUCE, 16),
            torch.empty(N_REDUCE // TILE, device="cuda", dtype=torch.int32),
            "2^27 int32 summed per 1,024-item tile",
            N_REDUCE * 4 + N_REDUCE // TILE * 4,
        ),
        "cub_block_scan": (
            ints(N_SCAN, 16),
            torch.empty(N_SCAN, device="cuda", dtype=torch.int32),
            "2^26 int32, exclusive prefix sum of each 1,024-item tile",
            2 * N_SCAN * 4,
        ),
        "cub_block_radix_sort": (
            ints(N_SORT, 1 << 30),
            torch.empty(N_SORT, device="cuda", dtype=torch.int32),
            "2^24 int32 keys, each 1,024-item tile sorted",
            2 * N_SORT * 4,
        ),
    }


def configs(config_type: type) -> list:
    """The Config rows of real_kernels.py: block_size is the tile (items a block handles), so that block_size /
    threads is ITEMS_PER_THREAD."""
    out = []
    for kernel, (src, dst, work, compulsory) in buffers().items():
        for threads, items in CONFIGS:
            run = launcher(kernel, threads, items, src, dst)
            out.append(
                config_type(
                    kernel, f"t{threads:04d}_i{items:02d}", "tuning", TILE, threads // 32, work, compulsory, 0, run
                )
            )
    return out


def expected(kernel: str, src: torch.Tensor) -> torch.Tensor:
    tiles = src.view(-1, TILE).to(torch.int64)
    if kernel == "cub_block_reduce":
        return tiles.sum(dim=1).to(torch.int32)
    if kernel == "cub_block_scan":
        return (tiles.cumsum(dim=1) - tiles).to(torch.int32).flatten()
    return tiles.sort(dim=1).values.to(torch.int32)


def probe() -> None:
    for kernel, (src, dst, _, _) in buffers().items():
        want = expected(kernel, src)
        for threads, items in CONFIGS:
            dst.zero_()
            launcher(kernel, threads, items, src, dst)()
            torch.cuda.synchronize()
            print(f"{kernel}<{threads}, {items}>: matches torch: {bool(torch.equal(dst.view_as(want), want))}")


if __name__ == "__main__":
    if sys.argv[1:] == ["probe"]:
        probe()
