"""Which source lines of a launch hold its limiter, what kind of problem each is, and what fixing the top one buys.

Input: one launch's Source-page samples (`tracekit.parsed.SOURCE_SAMPLE_SCHEMA`, one row per SASS instruction),
its duration and the limiter the verdict named. Pure polars; no I/O.

Attribution before counting, because warp-state samples land on the instruction a warp waits *at*, which is not
always the line that caused the wait:
- instructions from a CUDA toolkit header (an inlined `atomicAdd`, an intrinsic) count on the user's line that
  inlined them, the previous user line in PC order; the header's place is kept as the line's inline chain;
- samples stalled on a barrier count on the barrier (`BAR`) before the waiting instruction;
- samples draining stores at exit count on the last global store before the exit.

Each line gets a plain-words kind from its counters, in this order: local memory (local loads/stores), atomics
contention (global atomics or reductions), bank conflict (excess shared wavefronts), uncoalesced access (excess L2
sectors), divergence (lanes predicated off), barrier wait, dependency chain (fixed-latency waits), then the
unnamed ones (memory latency, busy issuing). The fixable kinds carry an estimate of what removing their waste buys,
as a share of the launch's time: at least the line's own samples times its waste fraction (the time its stalls
stand for), at most the launch's whole waste of that kind as a share of the launch's traffic of that kind (time
proportional to the traffic the limiter sees, the roofline's assumption); the estimate is the middle, the interval
the two widened by a tenth for the sampling and the model. Lines rank by that estimate, then by samples.

Samples by line with no instruction behind them (Proton's PC sampling: no PC, SASS or counters) are named only from
what their stalls alone say: a line whose samples wait at memory barriers (`membar`) is atomics contention, ordered
(acquire/release) atomics, Triton's default, being what waits there; a dependency chain, which needs the line's
instructions to rule out memory, is not named.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

WARP_LANES = 32
# A file under a CUDA toolkit include folder: its instructions were inlined into the user's code.
TOOLKIT_HEADER = re.compile(
    r"(^|/)(cuda[^/]*|targets/[^/]+)/include/|/crt/|/cuda/std/|/cub/|/thrust/|/cooperative_groups"
)
UNCOALESCED_MIN_EXCESS = 0.25  # of the line's L2 sectors
BANK_CONFLICT_MIN_EXCESS = 0.25  # of the line's shared wavefronts
DIVERGENCE_MAX_LANES = 0.75  # predicated-on lanes per executed lane
# Of a line's samples, without instructions to name its operations: what waiting at memory barriers (the `membar`
# stall) must reach for the line to be read as ordered atomics (acq_rel atomics wait there for their result).
ORDERED_ATOMICS_MIN_MEMBAR = 0.25
INTERVAL_WIDEN = 0.10

KIND_LOCAL = "local memory"
KIND_ATOMICS = "atomics contention"
KIND_BANK = "bank conflict"
KIND_UNCOALESCED = "uncoalesced access"
KIND_DIVERGENCE = "divergence"
KIND_BARRIER = "barrier wait"
KIND_CHAIN = "dependency chain"
KIND_MEMORY = "memory latency"
KIND_ISSUE = "busy issuing"
KIND_OTHER = "other stalls"
FIXABLE = (KIND_LOCAL, KIND_ATOMICS, KIND_BANK, KIND_UNCOALESCED, KIND_DIVERGENCE, KIND_BARRIER, KIND_CHAIN)

# The verdict's limiter -> the excess counter whose lines hold it.
LIMITER_EVIDENCE = {
    "dram": ("l2_sectors_global_excess", "excess L2 sectors", "DRAM-bound"),
    "l2": ("l2_sectors_global_excess", "excess L2 sectors", "L2-bound"),
    "memory": ("l2_sectors_global_excess", "excess L2 sectors", "memory-bound"),
    "l1/shared": ("shared_wavefronts_excess", "excess shared wavefronts", "L1/shared-bound"),
}
COUNTERS = (
    "inst_executed",
    "thread_inst_executed",
    "thread_inst_executed_true",
    "l2_sectors_global",
    "l2_sectors_global_excess",
    "shared_wavefronts",
    "shared_wavefronts_excess",
    "divergent_branches",
)


@dataclass(frozen=True)
class StallShare:
    reason: str
    samples: int


@dataclass(frozen=True)
class SourceLine:
    """One source line of a launch with what it cost and what kind of problem it is."""

    file: str | None
    line: int | None
    pc_offset: int | None  # the instruction, where the SASS has no source lines
    sass: str | None  # the instruction's SASS, where the SASS has no source lines
    inline_chain: tuple[str, ...]  # the inlined functions' places counted here ("device_atomic_functions.hpp:112")
    samples: int
    samples_share: float  # of the launch's samples
    stalls: tuple[StallShare, ...]  # largest first
    inst_executed: int
    active_lanes_share: float | None  # predicated-on lanes per issued lane slot
    l2_sectors_global: int
    l2_sectors_global_excess: int
    shared_wavefronts: int
    shared_wavefronts_excess: int
    shared_conflicts_nway: float | None  # the worst instruction's N-way
    divergent_branches: int
    operations: tuple[str, ...]  # "global load", "shared store", ...
    kind: str
    evidence: str  # the counters behind the kind, in words
    gain_share: float | None  # estimated share of the launch's time fixing it buys (fixable kinds)
    gain_share_low: float | None
    gain_share_high: float | None


@dataclass(frozen=True)
class LimiterLines:
    """The lines that hold the limiter the verdict named, by their share of its excess traffic."""

    limiter: str | None
    counter: str | None  # "excess L2 sectors" | "excess shared wavefronts" | None (stall samples)
    lines: tuple[tuple[str | None, int | None, float], ...]  # (file, line, share of the excess)
    sentence: str


@dataclass(frozen=True)
class FixEstimate:
    """What fixing the top line buys: the launch's time saved, with an interval."""

    file: str | None
    line: int | None
    kind: str
    duration_ns: float | None
    saved_share: float
    saved_share_low: float
    saved_share_high: float
    saved_ns: float | None
    saved_ns_low: float | None
    saved_ns_high: float | None
    basis: str


@dataclass(frozen=True)
class SourceLines:
    total_samples: int
    lines: tuple[SourceLine, ...]  # ranked: the fix worth most first, then by samples
    limiter: LimiterLines | None
    fix: FixEstimate | None
    notes: tuple[str, ...]


def is_toolkit_header(path: str | None) -> bool:
    return bool(path) and TOOLKIT_HEADER.search(str(path)) is not None


def attributed(samples: pl.DataFrame) -> pl.DataFrame:
    """Per instruction, in PC order: `user_file`/`user_line` (toolkit headers folded into the user's line that
    inlined them, `inline_at` naming the header's place), and the stall samples as a {reason: n} dict column
    `stalls` with barrier waits moved to their barrier and exit drains to the last global store."""
    rows = samples.sort("function", "pc_offset").to_dicts()
    last_user: tuple[str | None, int | None] = (None, None)
    last_barrier: int | None = None
    last_store: int | None = None
    for index, row in enumerate(rows):
        stalls = {k: int(v) for k, v in json.loads(row.get("stall_samples") or "{}").items() if v}
        row["stalls"] = stalls
        if is_toolkit_header(row["file"]) and last_user[1] is not None:
            row["user_file"], row["user_line"] = last_user
            row["inline_at"] = f"{_base(row['file'])}:{row['line']}"
        else:
            row["user_file"], row["user_line"], row["inline_at"] = row["file"], row["line"], None
            if row["line"] is not None:
                last_user = (row["file"], row["line"])
        if index and rows[index - 1]["function"] != row["function"]:
            last_barrier = last_store = None
        moved = {}
        if stalls.get("barrier") and last_barrier is not None and row["operation"] != "barrier":
            moved["barrier"] = stalls.pop("barrier")
            target = rows[last_barrier]["stalls"]
            target["barrier"] = target.get("barrier", 0) + moved["barrier"]
        if stalls.get("drain") and last_store is not None and row["address_space"] is None:
            moved["drain"] = stalls.pop("drain")
            target = rows[last_store]["stalls"]
            target["drain"] = target.get("drain", 0) + moved["drain"]
        if row["operation"] == "barrier":
            last_barrier = index
        if row["address_space"] in ("global", "generic") and row["operation"] in ("store", "reduction", "atomic"):
            last_store = index
    for row in rows:
        row["attributed_samples"] = sum(row["stalls"].values())
        # without a line (SASS only, or no -lineinfo) each instruction stands alone
        row["unlined_pc"] = row["pc_offset"] if row["user_line"] is None else None
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def _base(path: str | None) -> str:
    return str(path).rsplit("/", 1)[-1] if path else "?"


def analyze_source_lines(
    samples: pl.DataFrame,
    duration_ns: float | None = None,
    limiter: str | None = None,
    top: int | None = None,
) -> SourceLines | None:
    """The launch's source lines ranked, the limiter's lines and the top line's fix estimate; None without
    samples. `samples`: `SOURCE_SAMPLE_SCHEMA` rows of one launch (launch_key may be absent)."""
    if samples.height == 0:
        return None
    rows = attributed(samples)
    total = int(rows["attributed_samples"].sum())
    notes: list[str] = []
    if rows["line"].is_null().all():
        notes.append("the SASS has no source lines (built without -lineinfo): lines are unknown")
    groups = _groups(rows)
    kernel = _kernel_totals(rows, groups)
    lines = [_line(group, total, kernel) for group in groups]
    lines.sort(key=lambda x: (-(x.gain_share or 0.0), -x.samples, x.line or 0))
    if top is not None:
        lines = lines[:top]
    fix = _fix(lines[0], duration_ns) if lines and lines[0].gain_share is not None else None
    return SourceLines(
        total_samples=total,
        lines=tuple(lines),
        limiter=_limiter_lines(rows, lines, limiter),
        fix=fix,
        notes=tuple(notes),
    )


def _groups(rows: pl.DataFrame) -> list[pl.DataFrame]:
    return [group for _, group in rows.group_by("user_file", "user_line", "unlined_pc", maintain_order=True)]


def _sum(frame: pl.DataFrame, column: str) -> int:
    if column not in frame.columns:
        return 0
    return int(frame[column].fill_null(0).sum())


def _kernel_totals(rows: pl.DataFrame, groups: list[pl.DataFrame]) -> dict[str, float]:
    totals: dict[str, float] = {column: _sum(rows, column) for column in COUNTERS}
    totals["samples"] = _sum(rows, "attributed_samples")
    local = rows.filter(pl.col("address_space") == "local")
    totals["local_lines_samples"] = float(
        rows.join(local.select("user_file", "user_line").unique(), on=["user_file", "user_line"], nulls_equal=True)[
            "attributed_samples"
        ].sum()
    )
    atomics = rows.filter(
        pl.col("address_space").is_in(["global", "generic"]) & pl.col("operation").is_in(["atomic", "reduction"])
    )
    totals["atomic_lines_samples"] = float(
        rows.join(atomics.select("user_file", "user_line").unique(), on=["user_file", "user_line"], nulls_equal=True)[
            "attributed_samples"
        ].sum()
    )
    for group in groups:  # lines without instructions whose stalls say ordered atomics
        stalls = _stall_totals(group)
        if _ordered_atomics(_stalls_only(group), stalls):
            totals["atomic_lines_samples"] += sum(stalls.values())
    return totals


def _stalls_only(group: pl.DataFrame) -> bool:
    """Samples by line with no instruction behind them (Proton's PC sampling): no PC, no SASS."""
    return bool(group["pc_offset"].is_null().all() and group["sass"].is_null().all())


def _ordered_atomics(stalls_only: bool, stalls: Mapping[str, int]) -> bool:
    """A line without instructions whose samples wait at memory barriers enough to be ordered atomics."""
    samples = sum(stalls.values())
    return stalls_only and bool(samples) and stalls.get("membar", 0) / samples >= ORDERED_ATOMICS_MIN_MEMBAR


def _stall_totals(group: pl.DataFrame) -> dict[str, int]:
    out: dict[str, int] = {}
    for stalls in group["stalls"].to_list():
        for reason, value in (stalls or {}).items():
            if value:
                out[reason] = out.get(reason, 0) + int(value)
    return out


def _line(group: pl.DataFrame, total: int, kernel: Mapping[str, float]) -> SourceLine:
    first = group.row(0, named=True)
    stalls = _stall_totals(group)
    samples = sum(stalls.values())
    share = samples / total if total else 0.0
    inst = _sum(group, "inst_executed")
    true_lanes = _sum(group, "thread_inst_executed_true")
    lanes = true_lanes / (WARP_LANES * inst) if inst and "thread_inst_executed_true" in group.columns else None
    sectors, sectors_excess = _sum(group, "l2_sectors_global"), _sum(group, "l2_sectors_global_excess")
    wavefronts, wavefronts_excess = _sum(group, "shared_wavefronts"), _sum(group, "shared_wavefronts_excess")
    nways = group["shared_conflicts_nway"].drop_nulls().to_list() if "shared_conflicts_nway" in group.columns else []
    nway = float(max(nways)) if nways else None
    ops = group.filter(pl.col("operation").is_not_null())
    operations = tuple(
        sorted({f"{space} {op}" if space else str(op) for space, op in ops.select("address_space", "operation").rows()})
    )
    spaces = set(ops["address_space"].drop_nulls().to_list())
    op_kinds = set(ops.select(pl.concat_str("address_space", "operation", separator=" ")).to_series().drop_nulls())
    chain = tuple(sorted({str(x) for x in group["inline_at"].drop_nulls().to_list()}))
    kind, evidence, low, high = _kind(
        share,
        stalls,
        samples,
        lanes,
        (sectors, sectors_excess),
        (wavefronts, wavefronts_excess, nway),
        spaces,
        op_kinds,
        kernel,
        _stalls_only(group),
    )
    gain = None if low is None or high is None else (low + high) / 2
    return SourceLine(
        file=first["user_file"],
        line=first["user_line"],
        pc_offset=first["unlined_pc"],
        sass=first["sass"] if first["unlined_pc"] is not None else None,
        inline_chain=chain,
        samples=samples,
        samples_share=share,
        stalls=tuple(StallShare(r, n) for r, n in sorted(stalls.items(), key=lambda kv: (-kv[1], kv[0]))),
        inst_executed=inst,
        active_lanes_share=lanes,
        l2_sectors_global=sectors,
        l2_sectors_global_excess=sectors_excess,
        shared_wavefronts=wavefronts,
        shared_wavefronts_excess=wavefronts_excess,
        shared_conflicts_nway=nway,
        divergent_branches=_sum(group, "divergent_branches"),
        operations=operations,
        kind=kind,
        evidence=evidence,
        gain_share=gain,
        gain_share_low=None if low is None else max(0.0, low * (1 - INTERVAL_WIDEN)),
        gain_share_high=None if high is None else min(1.0, high * (1 + INTERVAL_WIDEN)),
    )


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _kind(
    share: float,
    stalls: Mapping[str, int],
    samples: int,
    lanes: float | None,
    sectors: tuple[int, int],
    wavefronts: tuple[int, int, float | None],
    spaces: set[str],
    op_kinds: set[str],
    kernel: Mapping[str, float],
    stalls_only: bool = False,
) -> tuple[str, str, float | None, float | None]:
    """(kind, evidence, lowest share of the launch's time fixing it buys, highest). `stalls_only`: the line has
    samples but no instructions (Proton's PC sampling), so only what its stalls alone say is named."""
    total_samples = kernel["samples"] or 1.0
    top = max(stalls, key=lambda r: stalls[r]) if stalls else None
    top_share = stalls[top] / samples if top and samples else 0.0
    if "local" in spaces and samples:
        upper = kernel["local_lines_samples"] / total_samples
        return KIND_LOCAL, f"local-memory loads/stores; {_pct(share)} of the samples", share, max(share, upper)
    if op_kinds & {"global atomic", "global reduction", "generic atomic", "generic reduction"} and samples:
        upper = kernel["atomic_lines_samples"] / total_samples
        return KIND_ATOMICS, f"global atomics; {_pct(share)} of the samples", share, max(share, upper)
    if _ordered_atomics(stalls_only, stalls):
        upper = kernel["atomic_lines_samples"] / total_samples
        membar = stalls.get("membar", 0) / samples
        evidence = (
            f"{_pct(membar)} of its samples wait at a memory barrier, as ordered (acquire/release) atomics do "
            f"(no instructions in the profile to confirm it); {_pct(share)} of the samples"
        )
        return KIND_ATOMICS, evidence, share, max(share, upper)
    total_wf, excess_wf, nway = wavefronts
    if total_wf and excess_wf / total_wf >= BANK_CONFLICT_MIN_EXCESS:
        waste = excess_wf / total_wf
        upper = excess_wf / kernel["shared_wavefronts"] if kernel["shared_wavefronts"] else waste
        ways = f"{nway:.0f}-way " if nway and nway > 1 else ""
        evidence = f"a {ways}bank conflict: {_pct(waste)} of its shared wavefronts are excess"
        return KIND_BANK, evidence, share * waste, max(share * waste, upper)
    total_sectors, excess_sectors = sectors
    if total_sectors and excess_sectors / total_sectors >= UNCOALESCED_MIN_EXCESS:
        waste = excess_sectors / total_sectors
        upper = excess_sectors / kernel["l2_sectors_global"] if kernel["l2_sectors_global"] else waste
        ideal = total_sectors - excess_sectors
        per = f", {total_sectors / ideal:.1f} sectors for each one needed" if ideal > 0 else ""
        evidence = f"{_pct(waste)} of its L2 sectors are excess{per}"
        return KIND_UNCOALESCED, evidence, share * waste, max(share * waste, upper)
    if lanes is not None and lanes < DIVERGENCE_MAX_LANES and samples:
        waste = 1.0 - lanes
        evidence = f"{_pct(lanes)} of the lanes active on average"
        return KIND_DIVERGENCE, evidence, share * waste, share * waste
    if top == "barrier":
        return KIND_BARRIER, f"{_pct(top_share)} of its samples wait at the barrier", share * top_share, share
    if top in ("wait", "short_scoreboard") and not stalls_only and not spaces - {"constant"}:
        waited = (stalls.get("wait", 0) + stalls.get("short_scoreboard", 0)) / samples
        evidence = f"{_pct(waited)} of its samples wait on the previous instruction's result"
        return KIND_CHAIN, evidence, share * waited, share * waited
    if top in ("long_scoreboard", "lg_throttle", "drain", "mio_throttle", "short_scoreboard"):
        return KIND_MEMORY, f"{_pct(top_share)} of its samples wait on memory ({top})", None, None
    if top in ("selected", "not_selected", "math_pipe_throttle", "dispatch_stall"):
        return KIND_ISSUE, f"{_pct(top_share)} of its samples issue or wait to ({top})", None, None
    return KIND_OTHER, f"top stall {top}" if top else "no samples", None, None


def _limiter_lines(rows: pl.DataFrame, lines: list[SourceLine], limiter: str | None) -> LimiterLines | None:
    evidence = LIMITER_EVIDENCE.get(limiter or "")
    if evidence is not None:
        column, counter, bound = evidence
        grouped = rows.group_by("user_file", "user_line").agg(pl.col(column).fill_null(0).sum().alias("excess"))
        total = float(grouped["excess"].sum())
        if total > 0:
            ranked = grouped.filter(pl.col("excess") > 0).sort("excess", "user_line", descending=[True, False])
            picked = tuple((f, ln, float(x) / total) for f, ln, x in ranked.head(3).rows())
            f, ln, s = picked[0]
            kind = next((x for x in lines if x.file == f and x.line == ln), None)
            what = f", {_article(kind.evidence)}" if kind is not None and kind.kind in (KIND_BANK,) else ""
            sentence = f"{bound}: {_pct(s)} of the {counter} are on line {ln} ({_base(f)}){what}"
            return LimiterLines(limiter, counter, picked, sentence)
    if not lines:
        return None
    by_samples = sorted(lines, key=lambda x: -x.samples)[:3]
    head = by_samples[0]
    bound = limiter or "no limiter named"
    where = f"line {head.line} ({_base(head.file)})" if head.line is not None else "code without source lines"
    sentence = f"{bound}: {_pct(head.samples_share)} of the warp samples are on {where}"
    sentence += f", {head.kind}"
    return LimiterLines(limiter, None, tuple((x.file, x.line, x.samples_share) for x in by_samples), sentence)


def _article(evidence: str) -> str:
    return evidence.split(":")[0]


def _fix(line: SourceLine, duration_ns: float | None) -> FixEstimate:
    assert line.gain_share is not None and line.gain_share_low is not None and line.gain_share_high is not None
    scale = duration_ns if duration_ns and duration_ns > 0 else None
    return FixEstimate(
        file=line.file,
        line=line.line,
        kind=line.kind,
        duration_ns=duration_ns,
        saved_share=line.gain_share,
        saved_share_low=line.gain_share_low,
        saved_share_high=line.gain_share_high,
        saved_ns=line.gain_share * scale if scale else None,
        saved_ns_low=line.gain_share_low * scale if scale else None,
        saved_ns_high=line.gain_share_high * scale if scale else None,
        basis=(
            "between the time the line's own stalls stand for and the launch's whole waste of this kind as a share "
            "of its traffic (time proportional to the traffic the limiter sees), widened by a tenth"
        ),
    )


def file_lines(files: pl.DataFrame, path: str | None) -> list[str] | None:
    """The embedded file `path` as lines (untrusted text), None where the report embedded none."""
    if path is None or files.height == 0:
        return None
    match = files.filter(pl.col("path") == path)
    if match.height == 0 or match["text"][0] is None:
        return None
    return str(match["text"][0]).splitlines()


def line_text(files: pl.DataFrame, path: str | None, line: int | None) -> str | None:
    """Line `line` of the embedded file `path`, None where the report embedded none."""
    lines = file_lines(files, path) if line is not None else None
    return lines[line - 1] if lines is not None and line is not None and 0 < line <= len(lines) else None
