"""Readers, one module per family of profiler output; each turns one file into a `ParsedImport`.

Every reader module has `FORMAT` (its name), `sniff(head: bytes) -> bool` (does this content look like mine?)
and `read(path: Path, **options) -> ParsedImport`. Detection looks at the content, never the file name.
Readers raise `tracekit.errors.InputError` for anything they cannot read, and never write to their input.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

from tracekit.errors import InputError
from tracekit.parsed import ParsedImport

# Order matters: binary signatures first, the text formats after.
# Region readers (intra-kernel profilers) before warp_trace, whose magic line also starts the v2 region trace.
# Kineto (PyTorch profiler) traces are Chrome traces too: its reader sniffs their header and categories first.
READER_MODULES = [
    "ncu_rep",
    "nsys_sqlite",
    "region_trace",
    "kineto",
    "proton_chrome",
    "chrome_regions",
    "warp_trace",
    "ncu_csv",
]
SNIFF_BYTES = 64 * 1024


def reader(name: str) -> ModuleType:
    return importlib.import_module(f"tracekit.importers.{name}")


def formats() -> dict[str, ModuleType]:
    modules = (reader(name) for name in READER_MODULES)
    return {module.FORMAT: module for module in modules}


def detect_format(path: Path) -> str:
    """The format of `path`, judged from its first bytes."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if not head:
        raise InputError(str(path), "the file is empty")
    for fmt, module in formats().items():
        if module.sniff(head):
            return fmt
    raise InputError(str(path), known_other_output(head) or NOT_A_FORMAT)


NOT_A_FORMAT = (
    "not a format tracekit reads (expected an Nsight Compute CSV or .ncu-rep, an Nsight Systems SQLite export, "
    "or a warp trace)"
)
_LFS_POINTER = re.compile(rb"^version https://git-lfs\.github\.com/spec/v1\noid sha256:[0-9a-f]{64}\nsize (\d+)\n")
_NVPROF_LINE = re.compile(rb"^==\d+== (?:NVPROF is profiling|Profiling application|Profiling result)", re.MULTILINE)
_NVPROF_CSV_HEADER = re.compile(
    rb'^"?Time\(%\)"?,"?Time"?,"?Calls"?,"?Avg"?,"?Min"?,"?Max"?,"?Name"?\r?$', re.MULTILINE
)


def known_other_output(head: bytes) -> str | None:
    """What a file no reader takes is, when it is something a CUDA developer often has at hand, with what to
    do instead: a Git LFS pointer, or output of nvprof (the profiler before Nsight)."""
    lfs = _LFS_POINTER.match(head)
    if lfs:
        return (
            f"a Git LFS pointer file, not the file itself (the {int(lfs.group(1)):,}-byte original was not "
            "downloaded): run `git lfs pull` in its repository, then import the file"
        )
    if _NVPROF_LINE.search(head) or _NVPROF_CSV_HEADER.search(head):
        return (
            "nvprof output (the profiler before Nsight, which tracekit does not read): profile with Nsight Compute "
            "(ncu --csv ... or ncu -o report ...) or Nsight Systems (nsys profile, then nsys export -t sqlite)"
        )
    return None


def read_file(path: str | Path, fmt: str | None = None, **options) -> ParsedImport:
    """Parse one file; `fmt` overrides detection."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "no such file" if not path.exists() else "not a regular file")
    if fmt is None and options.get("column_map"):
        # --map names a trace's columns: a file no reader recognizes is a warp trace with its own column names
        try:
            fmt = detect_format(path)
        except InputError:
            fmt = "warp-trace"
    fmt = fmt or detect_format(path)
    known = formats()
    if fmt not in known:
        raise InputError(str(path), f"unknown format {fmt!r} (known: {', '.join(sorted(known))})")
    return known[fmt].read(path, **options)
