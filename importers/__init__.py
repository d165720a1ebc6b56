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
from typing import Any

from tracekit.errors import InputError
from tracekit.parsed import ParsedImport

# Order matters: binary signatures first, the text formats after.
# Region readers (intra-kernel profilers) before warp_trace, whose magic line also starts the v2 region trace.
# Kineto (PyTorch profiler) traces are Chrome traces too: its reader sniffs their header and categories first.
READER_MODULES = [
    "ncu_rep",
    "nvprof_nvvp",  # SQLite too: before nsys_sqlite, which takes any SQLite file
    "nsys_sqlite",
    "region_trace",
    "kineto",
    "proton_hatchet",
    "proton_chrome",
    "chrome_regions",
    "nsys_stats_csv",
    "warp_trace.reader",
    "nvprof",
    "ncu_source_csv",  # before ncu_csv: the Source page is a CSV of its own shape
    "ncu_csv.reader",
]
SNIFF_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


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
    other = known_other_output(head, path.name)  # before the readers: a rocprof trace is Chrome-trace JSON too
    if other:
        raise InputError(str(path), other)
    for fmt, module in formats().items():
        if module.sniff(head):
            return fmt
    from tracekit.importers.regions_common import plain_head

    inner = plain_head(head) if head.startswith(GZIP_MAGIC) else b""
    if inner:  # a gzip of a format whose reader takes plain files: read_file inflates it first
        other = known_other_output(inner, path.name)
        if other:
            raise InputError(str(path), f"gzip-compressed {other}")
        for fmt, module in formats().items():
            if module.sniff(inner):
                return fmt
    from tracekit.importers.chrome_trace_kinds import unread_chrome_trace

    chrome = unread_chrome_trace(path, head)
    if chrome:
        raise InputError(str(path), chrome)
    if path.name.lower().endswith(".qdstrm"):
        # nsys's raw capture stream, written while profiling and converted to .nsys-rep when the run ends; its
        # content has no stable signature, so only for the refusal (never to choose a reader) the name is read
        stem = path.name[: -len(".qdstrm")]
        raise InputError(
            str(path),
            "an Nsight Systems capture stream (.qdstrm) that was never converted to a report: convert it with "
            f"nsys's QdstrmImporter (QdstrmImporter -i {path.name}, in nsys's host folder), then "
            f"nsys export --type sqlite -o {stem}.sqlite {stem}.nsys-rep and import {stem}.sqlite",
        )
    raise InputError(str(path), NOT_A_FORMAT)


def _read_inflated(path: Path, module: ModuleType, options: dict[str, Any]) -> ParsedImport:
    """A gzip file whose reader takes plain files (an ncu CSV page, an nsys SQLite export, ...): read from a
    temporary inflated copy (bounded like every gzip tracekit inflates), errors naming the file given."""
    from tracekit.importers.regions_common import DEFAULT_MAX_INFLATED_BYTES
    from tracekit.importers.warp_trace.content import plain_content

    with plain_content(path, DEFAULT_MAX_INFLATED_BYTES) as plain:
        try:
            return module.read(plain, **options)
        except InputError as exc:
            raise InputError(str(path), exc.message, exc.line, exc.column) from None


NOT_A_FORMAT = (
    "not a format tracekit reads (expected an Nsight Compute CSV or .ncu-rep, an Nsight Systems SQLite export, "
    "nvprof output, a PyTorch profiler trace, or a warp trace)"
)
_LFS_POINTER = re.compile(rb"^version https://git-lfs\.github\.com/spec/v1\noid sha256:[0-9a-f]{64}\nsize (\d+)\n")
# Nsight Systems reports (.nsys-rep, and .qdrep before 2021.4) open with this line and the writer's version,
# `NVIDIA Tegra Profiler Report 2025@2@1@130-...` (year@release@patch@build); old .qdrep files with a format
# number alone (`NVIDIA Tegra Profiler Report 1.`).
_NSYS_REPORT = re.compile(rb"^NVIDIA Tegra Profiler Report (?:(\d{4})@(\d+)@(\d+)@(\d+)|\d+\.)")
# AMD's rocprof: --stats CSV (v1), the kernel trace of v1 (results.csv) and v3 (kernel_trace.csv), and the
# --hip-trace / --hsa-trace JSON (Chrome trace whose processes are the HIP and HSA API, COPY and GPU<n>).
_ROCPROF_CSV = re.compile(
    rb'^(?:\xef\xbb\xbf)?(?:"Name","Calls","TotalDurationNs","AverageNs","Percentage"'
    rb'|"?Index"?,"?KernelName"?,"?gpu-id"?|"?Kind"?,"?Agent_Id"?,"?Queue_Id"?,)',
    re.MULTILINE,
)
_ROCPROF_JSON = re.compile(rb'"name"\s*:\s*"(?:CPU HIP API|HIP API|CPU HSA API|HSA API)"')


def known_other_output(head: bytes, name: str = "FILE") -> str | None:
    """What a file no reader takes is, when it is something a GPU developer often has at hand, with the one
    thing to do instead: a Git LFS pointer, an Nsight Systems report not exported yet, a file beside a profile
    that holds no timeline (`not_profiles`), nsys stats' console or HTML tables, AMD's rocprof output."""
    lfs = _LFS_POINTER.match(head)
    if lfs:
        return (
            f"a Git LFS pointer file, not the file itself (the {int(lfs.group(1)):,}-byte original was not "
            "downloaded): run `git lfs pull` in its repository, then import the file"
        )
    report = _NSYS_REPORT.match(head)
    if report:
        written = (
            f"nsys {'.'.join(group.decode() for group in report.groups())}"
            if report.group(1)
            else "an old .qdrep, written before nsys 2021.4"
        )
        stem = name.rsplit(".", 1)[0] if "." in name else name
        return (
            f"an Nsight Systems report ({written}), which tracekit reads once exported to SQLite: "
            f"nsys export --type sqlite -o {stem}.sqlite {name}, then import {stem}.sqlite"
        )
    from tracekit.importers.not_profiles import not_a_profile

    other = not_a_profile(head, name)
    if other:
        return other
    from tracekit.importers.nsys_stats_csv import console_reason

    nsys_stats = console_reason(head)
    if nsys_stats:
        return nsys_stats
    if _ROCPROF_CSV.search(head) or (head.lstrip().startswith(b"{") and _ROCPROF_JSON.search(head)):
        return (
            "AMD rocprof output (kernels on an AMD GPU), which tracekit does not read: it reads NVIDIA's profilers "
            "(Nsight Compute, Nsight Systems, nvprof); open an AMD trace in Perfetto (ui.perfetto.dev) or analyse "
            "it with AMD's rocprof-compute"
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
        except InputError:  # a layout names a Chrome region trace's; any other key a warp trace's columns
            fmt = "chrome-regions" if "layout" in options["column_map"] else "warp-trace"
    fmt = fmt or detect_format(path)
    known = formats()
    if fmt not in known:
        raise InputError(str(path), f"unknown format {fmt!r} (known: {', '.join(sorted(known))})")
    module = known[fmt]
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if head.startswith(GZIP_MAGIC) and not module.sniff(head):  # the reader does not take gzip itself
        return _read_inflated(path, module, options)
    return module.read(path, **options)
