"""What "the same kernel" means, once: the `KernelKey`.

A profiler prints a kernel's signature (`void fma_chain<(int)4>(float *, int)`), a warp trace usually its bare
name (`fma_chain<4>`). The key keeps the function name with its template arguments, normalized so both spellings
are one key while `fma_chain<1>` stays another, plus the launch configuration and the device; the name as every
tool spells it (`cxx_name.neutral_kernel_name`, the grammar's one home) pairs CUPTI's and Nsight Compute's.
Fields a source does not know (a trace without registers, say) are None and match anything; the name, grid and
block must be known.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracekit.cxx_name import (  # the kernel-name grammar's one home; re-exported for the key's users
    demangler_neutral,
    function_name,
    neutral_kernel_name,
    normalize_kernel_name,
)


def base_name(name: str | None) -> str:
    """The function name without return type, scopes, template arguments and parameters (Nsight's "base"
    function name, nsys's shortName), read by bracket depth from the demangled signature."""
    return function_name(name)


def product(values: Sequence[int | None]) -> int | None:
    """The product of grid or block dimensions; None when one is unknown."""
    total = 1
    for value in values:
        if value is None:
            return None
        total *= int(value)
    return total


def _same(a: Any, b: Any) -> bool:
    return a is None or b is None or a == b


# Nsight Compute's details page writes shared memory in Kbyte with two decimals (7,696 bytes print as "7.70"):
# a size read from it is a multiple of 10 bytes within 5 of the true one (the raw page gives exact bytes).
DETAILS_SMEM_ROUNDING_BYTES = 5


def same_smem_bytes(a: int | None, *b: int | None) -> bool:
    """Shared memory sizes agree: `a` and the sum of `b` (the parts another source gives), unknown matching
    anything. Each nonzero size that is a multiple of 10 bytes may be one the details page rounded, and widens
    the agreement by its rounding: far below the SM's allocation unit (128 bytes or more), so the two are one
    allocation, while sizes 16 or 32 bytes apart stay two."""
    if a is None or any(part is None for part in b):
        return True
    parts = [int(part) for part in b if part is not None]
    slack = DETAILS_SMEM_ROUNDING_BYTES * sum(1 for size in (a, *parts) if size and size % 10 == 0)
    return abs(a - sum(parts)) <= slack


def _same_dynamic_smem(a: KernelKey, b: KernelKey) -> bool:
    """Dynamic shared memory agrees (unknown is 0). A side that knows neither part (a source without shared
    memory sizes, or one that gives them only rounded, as nsys stats does) matches anything. A side whose static
    part is unknown may hold the block's whole shared memory as dynamic: CUPTI-based timelines such as PyTorch's
    profiler write static + dynamic as one number, so it matches the other side's dynamic or static + dynamic."""
    if (a.static_smem_bytes is None and a.dynamic_smem_bytes is None) or (
        b.static_smem_bytes is None and b.dynamic_smem_bytes is None
    ):
        return True
    mine, theirs = a.dynamic_smem_bytes or 0, b.dynamic_smem_bytes or 0
    if same_smem_bytes(mine, theirs):
        return True
    if a.static_smem_bytes is None and b.static_smem_bytes is not None:
        return same_smem_bytes(mine, theirs, b.static_smem_bytes)
    if b.static_smem_bytes is None and a.static_smem_bytes is not None:
        return same_smem_bytes(theirs, mine, a.static_smem_bytes)
    return False


@dataclass(frozen=True)
class KernelKey:
    name: str  # normalize_kernel_name
    grid: tuple[int | None, int | None, int | None]
    block: tuple[int | None, int | None, int | None]
    registers_per_thread: int | None
    static_smem_bytes: int | None
    dynamic_smem_bytes: int | None
    device_name: str | None
    compute_capability: str | None
    # the name as every tool spells it (`neutral_kernel_name` of the name as written); from `name` when not given
    neutral: str = field(default="", compare=False)

    def neutral_name(self) -> str:
        return self.neutral or demangler_neutral(self.name)

    def matches(self, other: KernelKey) -> bool:
        """Same kernel and launch configuration on the same device; unknown fields match anything."""
        return (
            bool(self.name)
            and (self.name == other.name or self.neutral_name() == other.neutral_name())
            and self.grid == other.grid
            and self.block == other.block
            and None not in self.grid
            and None not in self.block
            and _same(self.registers_per_thread, other.registers_per_thread)
            and same_smem_bytes(self.static_smem_bytes, other.static_smem_bytes)
            and _same_dynamic_smem(self, other)
            and self.same_device(other)
        )

    def same_device(self, other: KernelKey) -> bool:
        return _same(self.device_name, other.device_name) and _same(self.compute_capability, other.compute_capability)

    @property
    def threads(self) -> int | None:
        """Threads in the whole grid: the problem size a sweep keeps fixed while the occupancy changes."""
        grid, block = product(self.grid), product(self.block)
        return None if grid is None or block is None else grid * block

    def version_config(self) -> tuple:
        """What two versions of a kernel share when compared: name, grid, block and dynamic shared memory.
        Registers and static shared memory are left out: they are what a new version of the code changes."""
        return (self.name, self.grid, self.block, self.dynamic_smem_bytes or 0)

    def sweep_family(self) -> tuple[str, int | None, str | None, str | None]:
        """What launches of one occupancy sweep share: the kernel, the problem size and the device. Block size,
        registers and shared memory (the occupancy knobs) may differ."""
        return (self.name, self.threads, self.device_name, self.compute_capability)


def _int(value: Any) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return int(value)


_KEY_FIELDS = (
    "kernel_name",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "device_name",
    "compute_capability",
)
_KEY_VALUES = operator.itemgetter(*_KEY_FIELDS)


def kernel_key(launch: Mapping[str, Any]) -> KernelKey:
    """The key of one `Store.launches()` row (one key per distinct configuration: the engine keys every launch
    of a kernel's context, thousands in an Nsight Systems timeline)."""
    try:
        values = _KEY_VALUES(launch)
    except KeyError:  # a partial row (tests, hand-made inputs): missing fields are unknown
        values = tuple(launch.get(name) for name in _KEY_FIELDS)
    return _key_of(values)


@functools.lru_cache(maxsize=65536)
def _key_of(values: tuple[Any, ...]) -> KernelKey:
    name, gx, gy, gz, bx, by, bz, registers, static_smem, dynamic_smem, device, cc = values
    return KernelKey(
        name=normalize_kernel_name(name),
        grid=(_int(gx), _int(gy), _int(gz)),
        block=(_int(bx), _int(by), _int(bz)),
        registers_per_thread=_int(registers),
        static_smem_bytes=_int(static_smem),
        dynamic_smem_bytes=_int(dynamic_smem),
        device_name=device,
        compute_capability=cc,
        neutral=neutral_kernel_name(name),
    )
