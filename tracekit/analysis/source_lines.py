"""Which source lines of a launch hold its limiter, what kind of problem each is, and what fixing the top one buys.

Input: one launch's Source-page samples (`tracekit.parsed.SOURCE_SAMPLE_SCHEMA`, one row per SASS instruction),
its duration and the limiter the verdict named. Pure polars; no I/O.

Attribution before counting, because warp-state samples land on the instruction a warp waits *at*, which is not
always the line that caused the wait:
- instructions from a CUDA toolkit header (an inlined `atomicAdd`, an intrinsic) count on the user's line that
  inlined them: the line that computed the registers they read (the call's arguments), else the previous user line
  in PC order; the header's place is kept as the line's inline chain;
- samples stalled on a barrier count on the barrier (`BAR`) before the waiting instruction;
- samples draining stores at exit count on the last global store before the exit.

Each line gets a plain-words kind from its counters, in this order: local memory (local loads/stores), atomics
contention (global atomics or reductions), bank conflict (excess shared wavefronts), uncoalesced access (excess L2
sectors), divergence (lanes predicated off), barrier wait, dependency chain (fixed-latency waits), then the
unnamed ones (memory latency, busy issuing). The fixable kinds carry an estimate of what removing their waste buys,
as a share of the launch's time, read with the latency-hiding model (a warp's time is its waits plus its issue; a
fix shortens the waits it removes, and buys more only where the pipe it unloads is the throughput bound): at least
the part of the line's own samples its waste stands for, at most the launch's whole waste of that kind as a share of
the launch's traffic of that kind where the line's waits show that pipe full (the roofline's assumption); the
estimate is the middle, the interval the two widened by a tenth for the sampling and the model. Lines rank by that
estimate, then by samples.

Three readings follow the fix rather than the instruction the samples sit on:
- a divergent branch is named on the line whose compare sets the predicate its body runs under, or, for a real
  branch (BSSY..BSYNC), on the line of the branch with divergent-branch counts (the fix rewrites the condition),
  with the body's idle lanes counted there;
- a barrier's fix (fewer barriers: the last steps unrolled in one warp) also frees the work that the lanes idle
  between it and the previous barrier do only because the barrier keeps their warps in step;
- consecutive lines that are each a dependency chain are one chain (one register carried statement to statement),
  reported at its first line: the fix (independent accumulators, ILP) restructures all of them together.

Samples by line with no instruction behind them (Proton's PC sampling: no PC, SASS or counters) are named only from
what their stalls alone say: a line whose samples wait at memory barriers (`membar`) is atomics contention, ordered
(acquire/release) atomics, Triton's default, being what waits there; a dependency chain, which needs the line's
instructions to rule out memory, is not named.

The analysis words nothing (issue 42): a line's evidence is a code with its numbers (`LineEvidence`), the limiter's
lines and the notes are data; `tracekit.present.source_lines` words them for every view.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

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
# Stall reasons of a warp that issues or could: the issue slots a line holds (not its waits).
ISSUE_STALLS = ("selected", "not_selected", "math_pipe_throttle", "dispatch_stall")
# Stall reasons of a warp whose instruction waits for a place in a pipe's queue (MIO: shared memory, transcendentals;
# LSU: global/local memory). A queue holds warp instructions, full or with lanes off, so its waits shrink with the
# number of warp instructions, as issue slots do.
QUEUE_STALLS = ("mio_throttle", "lg_throttle")
# The stall reasons whose samples a warp instruction's count sets: its issue slots and its places in a pipe queue.
SLOT_STALLS = ISSUE_STALLS + QUEUE_STALLS
# Stall reasons of a warp waiting on the shared-memory pipe: its result (latency) or its queue (throughput).
SHARED_WAITS = ("short_scoreboard", "mio_throttle")
# A guard predicate on a SASS instruction ("@!P1 IADD3 ..."), and a compare's destination predicates
# ("ISETP.NE.AND P1, PT, R3, RZ, PT": P1 and PT).
SASS_GUARD = re.compile(r"^\s*@!?(U?P[0-6T])\s")
SASS_OPCODE = re.compile(r"^\s*(?:@!?U?P[0-6T]\s+)?([A-Z][A-Z0-9_]*)(\S*)\s*(.*)$")
PREDICATE = re.compile(r"^U?P[0-6]$")
# Control flow: a guarded branch or exit skips code rather than running it with lanes off.
CONTROL_OPCODES = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK", "WARPSYNC", "KILL"}

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

# The verdict's limiter -> the excess counter (its column) whose lines hold it.
LIMITER_COUNTERS = {
    "dram": "l2_sectors_global_excess",
    "l2": "l2_sectors_global_excess",
    "memory": "l2_sectors_global_excess",
    "l1/shared": "shared_wavefronts_excess",
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


class EvidenceCode(StrEnum):
    """Which counters name a line's kind (`LineEvidence`); a kind can rest on more than one."""

    LOCAL_MEMORY = "local_memory"  # local-memory loads/stores
    GLOBAL_ATOMICS = "global_atomics"  # global atomics or reductions
    ORDERED_ATOMICS = "ordered_atomics"  # no instructions, samples waiting at memory barriers (`membar`)
    BANK_CONFLICT = "bank_conflict"  # excess shared wavefronts
    UNCOALESCED = "uncoalesced"  # excess L2 sectors
    BRANCH_LANES = "branch_lanes"  # the branch the line decides runs its body with few lanes active
    OWN_LANES = "own_lanes"  # the line's own instructions run with few lanes active
    BARRIER_WAIT = "barrier_wait"  # its samples wait at the barrier most
    DEPENDENCY_CHAIN = "dependency_chain"  # its samples wait on the previous instruction's result
    JOINED_CHAIN = "joined_chain"  # consecutive chain lines, one register carried from line to line
    MEMORY_WAIT = "memory_wait"  # its top stall is a wait on memory
    ISSUE = "issue"  # its top stall is issuing, or ready to
    TOP_STALL = "top_stall"  # its top stall, none of the above
    NO_SAMPLES = "no_samples"


@dataclass(frozen=True)
class LineEvidence:
    """The counters behind a line's kind: a code and the numbers that show it, as fractions (0..1); the views word
    it (`tracekit.present.source_lines.evidence_words`), so the fields a code leaves unused are None."""

    code: EvidenceCode
    samples_share: float | None = None  # the line's share of the launch's samples (local memory, atomics)
    stall: str | None = None  # the stall reason `stall_share` counts (None for a chain: wait and short_scoreboard)
    stall_share: float | None = None  # of the line's samples, those on `stall` (a chain's: waiting on a result)
    excess_share: float | None = None  # of its shared wavefronts (bank conflict) or of its L2 sectors (uncoalesced)
    conflict_nway: float | None = None  # the worst instruction's N-way bank conflict
    sectors_per_needed: float | None = None  # L2 sectors per sector needed (uncoalesced); None where none is needed
    active_lanes_share: float | None = None  # active lanes per lane slot: the branch body's, else the line's own
    body_lines: tuple[int, ...] = ()  # the lines the branch the line decides runs (`BRANCH_LANES`)
    line_first: int | None = None  # a joined chain's first line ...
    line_last: int | None = None  # ... and its last
    stretch_idle_share: float | None = None  # a barrier: lanes idle in the steps it ends, of the launch's samples


class SourceLinesNote(StrEnum):
    """What the views note about a launch's source lines."""

    NO_LINE_INFO = "no_line_info"  # the SASS has no source lines (built without -lineinfo)


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
    evidence: LineEvidence  # the counters behind the kind
    gain_share: float | None  # estimated share of the launch's time fixing it buys (fixable kinds)
    gain_share_low: float | None
    gain_share_high: float | None
    line_last: int | None = None  # the last line of a finding spanning several (a dependency chain), else None


@dataclass(frozen=True)
class LimiterLines:
    """The lines that hold the limiter the verdict named, by their share of its excess traffic."""

    limiter: str | None
    counter: str | None  # "l2_sectors_global_excess" | "shared_wavefronts_excess" | None (by the warp samples)
    lines: tuple[tuple[str | None, int | None, float], ...]  # (file, line, share of the excess, else of the samples)
    # the first of `lines` as ranked: its kind and evidence, None where it is not among the lines returned (`top`)
    top_kind: str | None
    top_evidence: LineEvidence | None


@dataclass(frozen=True)
class FixEstimate:
    """What fixing the top line buys: the launch's time saved, with an interval (the basis: the module's docstring,
    worded by `tracekit.present.source_lines.FIX_BASIS`)."""

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


@dataclass(frozen=True)
class SourceLines:
    total_samples: int
    lines: tuple[SourceLine, ...]  # ranked: the fix worth most first, then by samples
    limiter: LimiterLines | None
    fix: FixEstimate | None
    notes: tuple[SourceLinesNote, ...]


def is_toolkit_header(path: str | None) -> bool:
    return bool(path) and TOOLKIT_HEADER.search(str(path)) is not None


def attributed(samples: pl.DataFrame) -> pl.DataFrame:
    """Per instruction, in PC order: `user_file`/`user_line` (toolkit headers folded into the user's line that
    inlined them, `inline_at` naming the header's place), and the stall samples as a {reason: n} dict column
    `stalls` with barrier waits moved to their barrier and exit drains to the last global store; `guard_file`/
    `guard_line`, the line whose compare set the predicate the instruction runs under where that is another line
    (a branch body's instruction: its idle lanes are the branch condition's); `region_file`/`region_line`, the
    barrier that ends the stretch the instruction runs in; `idle_lanes` (lanes predicated off per lane slot) and
    `slot_samples` (its samples issuing, ready to, or queued for a pipe: `SLOT_STALLS`)."""
    rows = samples.sort("function", "pc_offset").to_dicts()
    last_user: tuple[str | None, int | None] = (None, None)
    last_barrier: int | None = None
    last_store: int | None = None
    predicate_lines: dict[str, tuple[str | None, int | None]] = {}  # predicate -> the line whose compare set it
    writers: dict[str, tuple[int, str | None, int | None]] = {}  # register -> (index, line) of its last writer
    regions: list[list] = []  # open BSSY..BSYNC regions, innermost last: [barrier register, condition line]
    for index, row in enumerate(rows):
        stalls = {k: int(v) for k, v in json.loads(row.get("stall_samples") or "{}").items() if v}
        row["stalls"] = stalls
        if index and rows[index - 1]["function"] != row["function"]:
            last_barrier = last_store = None
            predicate_lines, writers, regions = {}, {}, []
        read, written = _registers(row)
        if is_toolkit_header(row["file"]) and last_user[1] is not None:
            row["user_file"], row["user_line"] = _call_line(read, writers) or last_user
            row["inline_at"] = f"{_base(row['file'])}:{row['line']}"
        else:
            row["user_file"], row["user_line"], row["inline_at"] = row["file"], row["line"], None
            if row["line"] is not None:
                last_user = (row["file"], row["line"])
        for register in written:
            writers[register] = (index, row["user_file"], row["user_line"])
        row["guard_file"], row["guard_line"] = _guard(row, predicate_lines)
        if row["guard_line"] is None:
            row["guard_file"], row["guard_line"] = _divergent_region(row, regions)
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
    next_barrier: tuple[str | None, int | None] = (None, None)
    for index in range(len(rows) - 1, -1, -1):  # the barrier that ends each instruction's stretch
        row = rows[index]
        if index + 1 < len(rows) and rows[index + 1]["function"] != row["function"]:
            next_barrier = (None, None)
        row["region_file"], row["region_line"] = next_barrier
        if row["operation"] == "barrier":
            next_barrier = (row["user_file"], row["user_line"])
    for row in rows:
        row["attributed_samples"] = sum(row["stalls"].values())
        row["slot_samples"] = sum(row["stalls"].get(reason, 0) for reason in SLOT_STALLS)
        inst, true_lanes = row.get("inst_executed"), row.get("thread_inst_executed_true")
        row["idle_lanes"] = 1.0 - true_lanes / (WARP_LANES * inst) if inst and true_lanes is not None else 0.0
        # without a line (SASS only, or no -lineinfo) each instruction stands alone
        row["unlined_pc"] = row["pc_offset"] if row["user_line"] is None else None
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def _base(path: str | None) -> str:
    return str(path).rsplit("/", 1)[-1] if path else "?"


def _guard(row: dict, predicate_lines: dict[str, tuple[str | None, int | None]]) -> tuple[str | None, int | None]:
    """The line whose compare set the predicate `row` runs under, where that is not `row`'s own line and `row` is
    work rather than control flow; records the predicates `row` sets. The compiler turns a short branch into
    predicated instructions, so the branch's body shows its idle lanes on its own lines while the condition that
    decides them (and that the fix rewrites) is on the compare's line."""
    sass = str(row.get("sass") or "")
    match = SASS_OPCODE.match(sass)
    if match is None:
        return None, None
    opcode, operands = match.group(1), match.group(3)
    guard = SASS_GUARD.match(sass)
    condition = predicate_lines.get(guard.group(1)) if guard else None
    own = (row["user_file"], row["user_line"])
    if opcode.endswith("SETP") or opcode.endswith("SETP2") or opcode == "PLOP3":
        for operand in (x.strip() for x in operands.split(",")):
            if operand == "PT" or PREDICATE.match(operand):
                if operand != "PT":
                    predicate_lines[operand] = own
                continue
            break
    if condition is None or condition == own or opcode in CONTROL_OPCODES or own[1] is None:
        return None, None
    return condition


# A register operand: "R4", "UR6", "R4.64" (a pair), "R8.128" (four); not "RZ"/"URZ" nor "SR_TID.X".
SASS_REGISTER = re.compile(r"(?<![A-Za-z0-9_])(U?R)(\d+)(?:\.(64|128))?")
# Opcodes whose first register operand is read, not written (stores, reductions).
NO_DESTINATION = ("ST", "RED")


def _registers(row: dict) -> tuple[set[str], set[str]]:
    """The registers `row`'s instruction reads and writes, from its SASS (empty where it has none)."""
    match = SASS_OPCODE.match(str(row.get("sass") or ""))
    if match is None:
        return set(), set()
    opcode, modifiers, operands = match.groups()
    tokens = [x.strip() for x in operands.split(",")]
    written: set[str] = set()
    if tokens and not opcode.startswith(NO_DESTINATION) and opcode not in CONTROL_OPCODES:
        first = SASS_REGISTER.match(tokens[0].lstrip("-|!"))
        if first is not None:
            width = 4 if ".128" in modifiers else 2 if (".64" in modifiers or ".WIDE" in modifiers) else 1
            written = {f"{first.group(1)}{int(first.group(2)) + k}" for k in range(width)}
            tokens = tokens[1:]
    read = {
        f"{prefix}{int(number) + k}"
        for token in tokens
        for prefix, number, bits in SASS_REGISTER.findall(token)
        for k in range(int(bits) // 32 if bits else 1)
    }
    return read, written


def _call_line(
    read: set[str], writers: Mapping[str, tuple[int, str | None, int | None]]
) -> tuple[str | None, int | None] | None:
    """The user line an inlined toolkit function (`atomicAdd`) was called from: the line that computed its
    arguments, the latest writer in PC order of the registers it reads. The previous user line in PC order is not
    always the call's: the compiler schedules other lines' work (a loop's increment and compare) between the
    arguments and the call; None where no register it reads has a writer."""
    found = [writers[x] for x in read if x in writers and writers[x][2] is not None]
    if not found:
        return None
    _, file, line = max(found, key=lambda x: x[0])
    return file, line


def _divergent_region(row: dict, regions: list[list]) -> tuple[str | None, int | None]:
    """The condition line of the divergent branch whose body `row` runs in, where that is another line; tracks the
    BSSY..BSYNC regions (sm_70+: BSSY opens a reconvergence point, BSYNC waits there). A branch whose warps split
    (`divergent_branches` > 0) runs each side with the other side's lanes off, on lines of their own (a loop in
    the `else`); as for a predicated body (`_guard`), those idle lanes are decided by the condition and rewriting
    the condition is the fix, so they count on the line of the region's first divergent branch."""
    match = SASS_OPCODE.match(str(row.get("sass") or ""))
    if match is None:
        return None, None
    opcode, operands = match.group(1), match.group(3)
    barrier = operands.split(",")[0].strip()
    own = (row["user_file"], row["user_line"])
    # the body's own control flow (a loop's back-edge, the BSYNC each side waits at) runs with the lanes off too
    condition = next((r[1] for r in reversed(regions) if r[1] is not None), None)
    if opcode == "BSSY":
        regions.append([barrier, None])
    elif opcode == "BSYNC":
        for depth in range(len(regions) - 1, -1, -1):
            if regions[depth][0] == barrier:
                del regions[depth:]
                break
    elif opcode == "BRA" and (row.get("divergent_branches") or 0) > 0 and regions and regions[-1][1] is None:
        regions[-1][1] = own
    if condition is None or condition == own or own[1] is None:
        return None, None
    return condition


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
    notes: list[SourceLinesNote] = []
    if rows["line"].is_null().all():
        notes.append(SourceLinesNote.NO_LINE_INFO)
    groups = _groups(rows)
    kernel = _kernel_totals(rows, groups)
    bodies = _branch_bodies(rows)
    lines = [_line(group, total, kernel, bodies) for group in groups]
    lines = [_widened(x) for x in _chains_joined(_with_barrier_stretches(lines, rows, total))]
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
    totals["mio_throttle_samples"] = float(_stall_totals(rows).get("mio_throttle", 0))
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


@dataclass(frozen=True)
class IdleLanes:
    """Lanes predicated off over a set of instructions: the active lanes per lane slot, and the samples the idle
    lanes stand for (each instruction's samples times its idle fraction), all of them and those holding an issue
    slot or a place in a pipe's queue (`SLOT_STALLS`)."""

    lanes: float | None
    samples: int
    idle_samples: float
    idle_slot_samples: float
    lines: tuple[int, ...]


def _idle_lanes(frame: pl.DataFrame) -> IdleLanes:
    inst = _sum(frame, "inst_executed")
    has_lanes = "thread_inst_executed_true" in frame.columns and frame["thread_inst_executed_true"].null_count() < (
        frame.height
    )
    lanes = _sum(frame, "thread_inst_executed_true") / (WARP_LANES * inst) if inst and has_lanes else None
    idle = frame.select(
        (pl.col("attributed_samples") * pl.col("idle_lanes")).sum().alias("all"),
        (pl.col("slot_samples") * pl.col("idle_lanes")).sum().alias("slots"),
    ).row(0)
    lines = tuple(sorted({int(x) for x in frame["user_line"].drop_nulls().to_list()}))
    return IdleLanes(lanes, _sum(frame, "attributed_samples"), float(idle[0] or 0), float(idle[1] or 0), lines)


def _branch_bodies(rows: pl.DataFrame) -> dict[tuple[str | None, int | None], IdleLanes]:
    """Branch condition's line -> the instructions that run under its predicate on other lines (its body)."""
    guarded = rows.filter(pl.col("guard_line").is_not_null())
    return {
        (file, line): _idle_lanes(body)
        for (file, line), body in guarded.group_by("guard_file", "guard_line", maintain_order=True)
    }


def _line(
    group: pl.DataFrame,
    total: int,
    kernel: Mapping[str, float],
    bodies: Mapping[tuple[str | None, int | None], IdleLanes],
) -> SourceLine:
    """The line with its kind and the estimate's bounds as the model gives them (widened by `_widened`)."""
    first = group.row(0, named=True)
    stalls = _stall_totals(group)
    samples = sum(stalls.values())
    share = samples / total if total else 0.0
    inst = _sum(group, "inst_executed")
    true_lanes = _sum(group, "thread_inst_executed_true")
    lanes = true_lanes / (WARP_LANES * inst) if inst and "thread_inst_executed_true" in group.columns else None
    # the lanes this line decides: its own instructions, not those run under another line's condition
    own = _idle_lanes(group.filter(pl.col("guard_line").is_null()))
    body = bodies.get((first["user_file"], first["user_line"])) if first["unlined_pc"] is None else None
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
        (own, body),
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
        gain_share_low=low,
        gain_share_high=high,
    )


def _widened(line: SourceLine) -> SourceLine:
    """The interval widened by a tenth each way, for the sampling and the model."""
    if line.gain_share_low is None or line.gain_share_high is None:
        return line
    return replace(
        line,
        gain_share=(line.gain_share_low + line.gain_share_high) / 2,
        gain_share_low=max(0.0, line.gain_share_low * (1 - INTERVAL_WIDEN)),
        gain_share_high=min(1.0, line.gain_share_high * (1 + INTERVAL_WIDEN)),
    )


def _with_barrier_stretches(lines: list[SourceLine], rows: pl.DataFrame, total: int) -> list[SourceLine]:
    """A barrier's upper bound grows by the idle lanes of the branch bodies in the stretch it ends (since the
    previous barrier), where those lines are not a fixable kind of their own. Every warp of the block runs each
    step up to the barrier, its lanes predicated off or not; the fix (no barrier for the steps that one warp can do
    alone, the last warp unrolled) lets the idle warps leave, and their time goes with it. Body lines named
    otherwise (a bank conflict) have their waste counted by their own finding."""
    if not total:
        return lines
    kinds = {(x.file, x.line): x.kind for x in lines if x.pc_offset is None}
    named = {key for key, kind in kinds.items() if kind in FIXABLE}
    body = rows.filter(pl.col("guard_line").is_not_null() & pl.col("region_line").is_not_null())
    idle: dict[tuple[str | None, int | None], float] = {}
    for row in body.select(
        "user_file", "user_line", "region_file", "region_line", "attributed_samples", "idle_lanes"
    ).rows():
        if (row[0], row[1]) not in named:
            idle[(row[2], row[3])] = idle.get((row[2], row[3]), 0.0) + row[4] * row[5]
    out = []
    for line in lines:
        extra = idle.get((line.file, line.line), 0.0) / total
        if line.kind == KIND_BARRIER and extra and line.gain_share_high is not None:
            line = replace(
                line,
                gain_share_high=line.gain_share_high + extra,
                evidence=replace(line.evidence, stretch_idle_share=extra),
            )
        out.append(line)
    return out


def _chains_joined(lines: list[SourceLine]) -> list[SourceLine]:
    """Consecutive lines of one file that are each a dependency chain, as one finding at the first line: a chain
    written one statement a line (`a = a * b + c;` four times) is one register carried from line to line, its
    waits spread evenly over the lines; the fix (independent chains, ILP) rewrites them together, and what it buys
    is the waits of all of them (the Volkov model: the latency a warp waits out between dependent instructions)."""
    chains = sorted(
        (x for x in lines if x.kind == KIND_CHAIN and x.line is not None and x.pc_offset is None),
        key=lambda x: (str(x.file), x.line or 0),
    )
    runs: list[list[SourceLine]] = []
    for line in chains:
        last = runs[-1][-1] if runs else None
        if last is not None and last.file == line.file and (last.line or 0) + 1 == line.line:
            runs[-1].append(line)
        else:
            runs.append([line])
    joined = {id(run[0]): _joined(run) for run in runs if len(run) > 1}
    absorbed = {id(x) for run in runs if len(run) > 1 for x in run[1:]}
    return [joined.get(id(x), x) for x in lines if id(x) not in absorbed]


def _joined(run: list[SourceLine]) -> SourceLine:
    first = run[0]
    stalls: dict[str, int] = {}
    for line in run:
        for stall in line.stalls:
            stalls[stall.reason] = stalls.get(stall.reason, 0) + stall.samples
    samples = sum(x.samples for x in run)
    inst = sum(x.inst_executed for x in run)
    lanes = [(x.active_lanes_share, x.inst_executed) for x in run if x.active_lanes_share is not None]
    waited = (stalls.get("wait", 0) + stalls.get("short_scoreboard", 0)) / samples if samples else 0.0
    return replace(
        first,
        samples=samples,
        samples_share=sum(x.samples_share for x in run),
        stalls=tuple(StallShare(r, n) for r, n in sorted(stalls.items(), key=lambda kv: (-kv[1], kv[0]))),
        inst_executed=inst,
        active_lanes_share=sum(a * n for a, n in lanes) / inst if lanes and inst else first.active_lanes_share,
        operations=tuple(sorted({op for x in run for op in x.operations})),
        evidence=LineEvidence(
            EvidenceCode.JOINED_CHAIN, stall_share=waited, line_first=first.line, line_last=run[-1].line
        ),
        gain_share=sum(x.gain_share or 0.0 for x in run),
        gain_share_low=sum(x.gain_share_low or 0.0 for x in run),
        gain_share_high=sum(x.gain_share_high or 0.0 for x in run),
        line_last=run[-1].line,
    )


def _kind(
    share: float,
    stalls: Mapping[str, int],
    samples: int,
    lanes: tuple[IdleLanes, IdleLanes | None],
    sectors: tuple[int, int],
    wavefronts: tuple[int, int, float | None],
    spaces: set[str],
    op_kinds: set[str],
    kernel: Mapping[str, float],
    stalls_only: bool = False,
) -> tuple[str, LineEvidence, float | None, float | None]:
    """(kind, evidence, lowest share of the launch's time fixing it buys, highest). `stalls_only`: the line has
    samples but no instructions (Proton's PC sampling), so only what its stalls alone say is named."""
    total_samples = kernel["samples"] or 1.0
    top = max(stalls, key=lambda r: stalls[r]) if stalls else None
    top_share = stalls[top] / samples if top and samples else 0.0
    if "local" in spaces and samples:
        upper = kernel["local_lines_samples"] / total_samples
        return KIND_LOCAL, LineEvidence(EvidenceCode.LOCAL_MEMORY, samples_share=share), share, max(share, upper)
    if op_kinds & {"global atomic", "global reduction", "generic atomic", "generic reduction"} and samples:
        upper = kernel["atomic_lines_samples"] / total_samples
        return KIND_ATOMICS, LineEvidence(EvidenceCode.GLOBAL_ATOMICS, samples_share=share), share, max(share, upper)
    if _ordered_atomics(stalls_only, stalls):
        upper = kernel["atomic_lines_samples"] / total_samples
        membar = stalls.get("membar", 0) / samples
        evidence = LineEvidence(EvidenceCode.ORDERED_ATOMICS, samples_share=share, stall="membar", stall_share=membar)
        return KIND_ATOMICS, evidence, share, max(share, upper)
    total_wf, excess_wf, nway = wavefronts
    if total_wf and excess_wf / total_wf >= BANK_CONFLICT_MIN_EXCESS:
        low, high = _bank_conflict_bounds(share, stalls, total_samples, excess_wf / total_wf, excess_wf, kernel)
        evidence = LineEvidence(EvidenceCode.BANK_CONFLICT, excess_share=excess_wf / total_wf, conflict_nway=nway)
        return KIND_BANK, evidence, low, high
    total_sectors, excess_sectors = sectors
    if total_sectors and excess_sectors / total_sectors >= UNCOALESCED_MIN_EXCESS:
        waste = excess_sectors / total_sectors
        upper = excess_sectors / kernel["l2_sectors_global"] if kernel["l2_sectors_global"] else waste
        ideal = total_sectors - excess_sectors
        per = total_sectors / ideal if ideal > 0 else None
        evidence = LineEvidence(EvidenceCode.UNCOALESCED, excess_share=waste, sectors_per_needed=per)
        return KIND_UNCOALESCED, evidence, share * waste, max(share * waste, upper)
    divergence = _divergence(samples, total_samples, *lanes)
    if divergence is not None:
        return divergence
    if top == "barrier":
        evidence = LineEvidence(EvidenceCode.BARRIER_WAIT, stall=top, stall_share=top_share)
        return KIND_BARRIER, evidence, share * top_share, share
    if top in ("wait", "short_scoreboard") and not stalls_only and not spaces - {"constant"}:
        waited = (stalls.get("wait", 0) + stalls.get("short_scoreboard", 0)) / samples
        return (
            KIND_CHAIN,
            LineEvidence(EvidenceCode.DEPENDENCY_CHAIN, stall_share=waited),
            share * waited,
            share * waited,
        )
    if top in ("long_scoreboard", "lg_throttle", "drain", "mio_throttle", "short_scoreboard"):
        return KIND_MEMORY, LineEvidence(EvidenceCode.MEMORY_WAIT, stall=top, stall_share=top_share), None, None
    if top in ("selected", "not_selected", "math_pipe_throttle", "dispatch_stall"):
        return KIND_ISSUE, LineEvidence(EvidenceCode.ISSUE, stall=top, stall_share=top_share), None, None
    if top is None:
        return KIND_OTHER, LineEvidence(EvidenceCode.NO_SAMPLES), None, None
    return KIND_OTHER, LineEvidence(EvidenceCode.TOP_STALL, stall=top, stall_share=top_share), None, None


def _bank_conflict_bounds(
    share: float,
    stalls: Mapping[str, int],
    total_samples: float,
    waste: float,
    excess_wf: int,
    kernel: Mapping[str, float],
) -> tuple[float, float]:
    """The conflict's extra wavefronts lengthen the line's waits on the shared pipe (its result, short_scoreboard,
    and its queue, mio_throttle), not its issue or fixed-latency waits: at least that share of those waits. At
    most: where the queue is full (mio_throttle as large as the result waits), the pipe is the throughput bound and
    the launch's whole excess share of wavefronts goes (roofline); where the line only waits on results, the pipe
    has room and the fix shortens this line's own time, no more (latency hiding). Where the queue is full, the other
    lines' shared instructions wait in it behind this line's excess wavefronts (their samples sit on the waiting
    instruction, as lg_throttle's sit behind atomics): at least those waits (mio_throttle) times this line's excess
    as a share of the launch's wavefronts go too."""
    waits = sum(stalls.get(reason, 0) for reason in SHARED_WAITS)
    low = waits * waste / total_samples
    queued = stalls.get("mio_throttle", 0)
    throttled = queued > 0 and queued >= stalls.get("short_scoreboard", 0)
    if throttled:
        upper = excess_wf / kernel["shared_wavefronts"] if kernel["shared_wavefronts"] else waste
        others_queued = kernel["mio_throttle_samples"] - queued
        low += max(0.0, others_queued) * upper / total_samples
    else:
        upper = share * waste
    return low, max(low, upper)


def _divergence(
    samples: int, total_samples: float, own: IdleLanes, body: IdleLanes | None
) -> tuple[str, LineEvidence, float, float] | None:
    """Lanes predicated off, named on the line that decides them: a branch condition whose body (on other lines)
    runs with few lanes, or a line whose own instructions do. An idle lane holds an issue slot and a place in a
    pipe's queue (a warp instruction takes both whatever its lanes) but waits no longer than a busy one: at least
    the idle lanes' share of the issue and queue samples goes (slots other warps then use); at most their share of
    all the samples (the active lanes compacted into fewer warps, whose waits go too), and for a condition also its
    own samples, since the fix rewrites the condition (reduce1's `2 * s * tid`)."""
    decides = body is not None and body.samples > 0 and body.lanes is not None and body.lanes < DIVERGENCE_MAX_LANES
    own_idle = own.lanes is not None and own.lanes < DIVERGENCE_MAX_LANES and samples > 0
    if not (decides or own_idle):
        return None
    if decides and body is not None and body.lanes is not None:
        low = (body.idle_slot_samples + own.idle_slot_samples) / total_samples
        high = (body.idle_samples + samples) / total_samples
        evidence = LineEvidence(EvidenceCode.BRANCH_LANES, active_lanes_share=body.lanes, body_lines=body.lines)
        return KIND_DIVERGENCE, evidence, low, max(low, high)
    assert own.lanes is not None
    low, high = own.idle_slot_samples / total_samples, own.idle_samples / total_samples
    return KIND_DIVERGENCE, LineEvidence(EvidenceCode.OWN_LANES, active_lanes_share=own.lanes), low, max(low, high)


def _limiter_lines(rows: pl.DataFrame, lines: list[SourceLine], limiter: str | None) -> LimiterLines | None:
    column = LIMITER_COUNTERS.get(limiter or "")
    if column is not None:
        grouped = rows.group_by("user_file", "user_line").agg(pl.col(column).fill_null(0).sum().alias("excess"))
        total = float(grouped["excess"].sum())
        if total > 0:
            ranked = grouped.filter(pl.col("excess") > 0).sort("excess", "user_line", descending=[True, False])
            picked = tuple((f, ln, float(x) / total) for f, ln, x in ranked.head(3).rows())
            f, ln, _ = picked[0]
            top = next((x for x in lines if x.file == f and x.line == ln), None)
            return LimiterLines(
                limiter,
                column,
                picked,
                top.kind if top is not None else None,
                top.evidence if top is not None else None,
            )
    if not lines:
        return None
    by_samples = sorted(lines, key=lambda x: -x.samples)[:3]
    head = by_samples[0]
    picked = tuple((x.file, x.line, x.samples_share) for x in by_samples)
    return LimiterLines(limiter, None, picked, head.kind, head.evidence)


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
