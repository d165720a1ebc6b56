"""SYNTHETIC jobs: rank traces made from one recorded rank with stated perturbations, for the accuracy tests and the
benchmark (never presented as recordings).

The template is a recorded data-parallel rank (`sample_traces/steps/h200_lean/ddp_rank0`: ResNet-34 DDP on an
H200): one step's computation kernels in order, split into the groups before each of its gradient all-reduces
(and the optimizer after the last), with their recorded durations, and each all-reduce's recorded transfer time.
Every synthetic rank runs that step, one stream, in lockstep at the all-reduces: a collective ends on every rank
at the last arrival plus its transfer time (plus 0-2 us of jitter). Each step starts with a DataLoader range on the
host (GPU idle), every kernel's duration varies by `noise` (relative, normal), the loader's by twice that.

Perturbations of one rank (`straggler`), `delay_ns` a step:
- compute: the longest kernel of the first group runs `delay_ns` longer;
- loader: its DataLoader range lasts `delay_ns` longer;
- sync: after the first group the host synchronizes (cudaStreamSynchronize) and then runs `delay_ns` of host code
  (`aten::item`, the GPU idle);
- link: its first all-reduce of each step (the largest bucket) ends `delay_ns` later on it (a slower link);
plus, on every rank but rank 0, a clock offset drawn uniformly in +-`max_offset_ns`, and on `sampled_rank` the
kernels of the second group dropped from the trace (their launches kept), as a sampling profiler loses them.

The host is the program's bottleneck: it launches each kernel just before it runs. As in a real trace, it also
pays what recording its events costs (`profiler_paid`: the shipped calibration's per-event costs for the setting
these traces read as, CPU activity without shapes), so the traced steps are longer than the program's by that, and
the job replayed without the profiler is the program again, where the injection still shows.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

CAUSES = ("compute", "loader", "sync", "link")
TEMPLATE = Path(__file__).resolve().parents[2] / "sample_traces" / "steps" / "h200_lean" / "ddp_rank0.pt.trace.json.gz"
LOADER_NAME = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
ALLREDUCE_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
EPOCH_NS = 1_000_000_000
LAUNCH_GAP_NS = 2_000  # host launch to the next kernel on an idle stream
LAUNCH_CALL_NS = 1_500  # a launch call's recorded length


@dataclass(frozen=True)
class Template:
    groups: tuple[tuple[tuple[str, int], ...], ...]  # kernels (name, duration_ns) before each all-reduce, then after
    transfers_ns: tuple[int, ...]  # each all-reduce's transfer time
    loader_ns: int


def load_template(path: Path = TEMPLATE, step: int = 5, kernels_per_group: int | None = None) -> Template:
    """The recorded rank's step as a template; `kernels_per_group` fuses neighbouring kernels (named after the
    longest of them, their durations summed) to make small traces with the same timing."""
    from tracekit.analysis.job.rank import rank_tables
    from tracekit.job.read import read_rank

    tables = rank_tables(read_rank(path))
    kernels = tables.kernels.filter((pl.col("step") == step) & (pl.col("kind") == "kernel")).sort("start_ns")
    # the all-reduce kernels as they ran (`start_ns` is the rank's arrival: when it was ready for one)
    reduces = tables.collectives.filter(pl.col("step") == step).sort("kernel_start_ns")
    compute = kernels.filter(~pl.col("collective"))
    groups = []
    edges = [*reduces["kernel_start_ns"].to_list(), None]
    previous = None
    for edge in edges:
        part = compute.filter(
            (pl.col("start_ns") >= previous if previous is not None else pl.lit(True))
            & (pl.col("start_ns") < edge if edge is not None else pl.lit(True))
        )
        rows = [(n, e - s) for n, s, e in part.select("name", "start_ns", "end_ns").iter_rows()]
        groups.append(tuple(_fuse(rows, kernels_per_group) if kernels_per_group else rows))
        previous = edge
    transfers = [max(20_000, e - s) for s, e in reduces.select("kernel_start_ns", "end_ns").iter_rows()]
    # recorded transfers include the wait for the other rank: the least of them stands for a transfer alone
    least = min(transfers)
    return Template(tuple(groups), tuple(least for _ in transfers), loader_ns=1_500_000)


def _fuse(rows: list[tuple[str, int]], count: int) -> list[tuple[str, int]]:
    if len(rows) <= count:
        return rows
    fused = []
    for chunk in np.array_split(np.arange(len(rows)), count):
        members = [rows[i] for i in chunk]
        fused.append((max(members, key=lambda m: m[1])[0], sum(m[1] for m in members)))
    return fused


@dataclass(frozen=True)
class Paid:
    """The host time recording costs the program before each kernel launch, each step and each collective."""

    launch_ns: int = 0  # the launch call's CUPTI cost beyond its own recorded length, and its operator's
    step_ns: int = 0  # the ProfilerStep annotation and the DataLoader range
    collective_ns: int = 0  # record_param_comms


def profiler_paid(host_ops: bool) -> Paid:
    """What the replay takes out of a synthetic rank's host (`analysis.steps.unprofiled`: each recorded event's
    cost out of the host time before the next call, a call's own cost out of its length as far as that goes)."""
    from tracekit.analysis.steps.calibration import shipped
    from tracekit.analysis.steps.profiler_cost import CPU_CUDA, RUNTIME
    from tracekit.analysis.steps.unprofiled import MIN_CALL_NS
    from tracekit.host_events import ANNOTATION_DOMAIN, OPERATOR_DOMAIN

    cost = shipped().for_setting(CPU_CUDA)
    runtime = cost.of(RUNTIME)
    beyond_call = runtime - min(runtime, LAUNCH_CALL_NS - MIN_CALL_NS)
    operator = cost.of(OPERATOR_DOMAIN)
    return Paid(
        launch_ns=round(beyond_call + (operator if host_ops else 0)),
        step_ns=round(cost.of(ANNOTATION_DOMAIN) + operator),
        collective_ns=round(operator),
    )


@dataclass(frozen=True)
class SyntheticJob:
    ranks: int
    steps: int = 6
    cause: str | None = None  # one of CAUSES, or None: no straggler
    straggler: int = 0
    delay_ns: int = 3_000_000
    max_offset_ns: int = 500_000
    noise: float = 0.01
    sampled_rank: int | None = None
    seed: int = 0
    host_ops: bool = False  # a cpu_op and a flow event around every launch, as a full Kineto trace has (size)
    profiler_cost: bool = True  # the host pays what recording its events costs (`profiler_paid`)
    offsets_ns: tuple[int, ...] = field(default=(), compare=False)


def offsets(job: SyntheticJob) -> np.ndarray:
    """Each rank's injected clock offset (rank 0: none)."""
    drawn = np.random.default_rng([job.seed, 7]).uniform(-job.max_offset_ns, job.max_offset_ns, job.ranks)
    drawn[0] = 0
    return np.round(drawn).astype(np.int64)


def _durations(job: SyntheticJob, template: Template, rank: int) -> list[np.ndarray]:
    """Per group: steps x kernels durations for this rank (the same draws in both passes)."""
    rng = np.random.default_rng([job.seed, rank])
    out = []
    for index, group in enumerate(template.groups):
        base = np.array([d for _, d in group], dtype=np.float64)
        drawn = base * (1 + job.noise * rng.standard_normal((job.steps, len(group))))
        if job.cause == "compute" and rank == job.straggler and index == 0 and len(group):
            drawn[:, int(np.argmax(base))] += job.delay_ns
        out.append(np.maximum(drawn, 500).round().astype(np.int64))
    loader = template.loader_ns * (1 + 2 * job.noise * rng.standard_normal(job.steps))
    if job.cause == "loader" and rank == job.straggler:
        loader += job.delay_ns
    out.append(loader.round().astype(np.int64))
    return out


def _host_extra(job: SyntheticJob, rank: int, group: int) -> int:
    return job.delay_ns if job.cause == "sync" and rank == job.straggler and group == 0 else 0


def _link_extra(job: SyntheticJob, rank: int, collective: int) -> int:
    return job.delay_ns if job.cause == "link" and rank == job.straggler and collective == 0 else 0


def _paid(job: SyntheticJob) -> Paid:
    return profiler_paid(job.host_ops) if job.profiler_cost else Paid()


def collective_ends(job: SyntheticJob, template: Template) -> np.ndarray:
    """ranks x steps x collectives: each collective's end on each rank (true time), the lockstep simulated."""
    count = len(template.transfers_ns)
    ends = np.zeros((job.ranks, job.steps, count), dtype=np.int64)
    paid = _paid(job)
    sums = []
    for rank in range(job.ranks):
        durations = _durations(job, template, rank)
        per_launch = LAUNCH_GAP_NS + paid.launch_ns
        groups = np.stack([d.sum(axis=1) + per_launch * d.shape[1] for d in durations[:-1]], axis=1)
        sums.append((groups, durations[-1]))
    now = np.zeros(job.ranks, dtype=np.int64)
    jitter = np.random.default_rng([job.seed, 11]).integers(0, 2_000, (job.ranks, job.steps, count))
    for step in range(job.steps):
        for rank in range(job.ranks):
            now[rank] += paid.step_ns + sums[rank][1][step]
        for c in range(count):
            for rank in range(job.ranks):
                now[rank] += sums[rank][0][step, c] + _host_extra(job, rank, c) + paid.launch_ns + paid.collective_ns
            last = now.max()
            for rank in range(job.ranks):
                now[rank] = last + template.transfers_ns[c] + _link_extra(job, rank, c) + jitter[rank, step, c]
                ends[rank, step, c] = now[rank]
        for rank in range(job.ranks):
            now[rank] += sums[rank][0][step, count] + 20_000  # the optimizer, then the step's end
    return ends


def write_job(
    job: SyntheticJob, folder: str | Path, template: Template | None = None, compress: bool = True
) -> list[Path]:
    """One Kineto trace per rank in `folder` (`rank<N>.pt.trace.json.gz`, or `.json` uncompressed)."""
    template = template or load_template(kernels_per_group=12)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ends = collective_ends(job, template)
    shifts = offsets(job)
    paths = []
    for rank in range(job.ranks):
        events = _rank_events(job, template, rank, ends[rank], int(shifts[rank]))
        header = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": job.ranks},
            "synthetic": "tracekit.job.synthetic: made from a recorded rank with stated perturbations",
        }
        path = folder / f"rank{rank}.pt.trace.json{'.gz' if compress else ''}"
        with gzip.open(path, "wb", compresslevel=1) if compress else open(path, "wb") as out:
            out.write(kineto_layout(header, events))
        paths.append(path)
    return paths


def kineto_layout(header: dict[str, Any], events: list[Any]) -> bytes:
    """The trace laid out as libkineto writes it (`output_json.cpp`, every torch.profiler export): the header, then
    the event array with each event opening at two spaces of indentation and closing on its own line, so that
    `importers.kineto.read_events` streams it as it streams a recorded trace."""
    body = b",\n".join(b"  {" + orjson.dumps(event)[1:-1] + b"\n  }" for event in events)
    return orjson.dumps(header)[:-1] + b', "traceEvents": [\n' + body + b"\n]\n}\n"


def _rank_events(job: SyntheticJob, template: Template, rank: int, ends: np.ndarray, shift: int) -> list[Any]:
    durations = _durations(job, template, rank)
    events: list[Any] = []
    correlation = 1

    def x(cat: str, name: str, start: int, end: int, **args: Any) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": (start + shift + EPOCH_NS) / 1000}
        event["dur"] = (end - start) / 1000
        if args:
            event["args"] = args
        return event

    def launch(name: str, start: int, end: int, keep: bool = True, args: dict[str, Any] | None = None) -> None:
        nonlocal correlation
        call_start = start - LAUNCH_GAP_NS
        if job.host_ops:
            events.append(
                x("cpu_op", "aten::launch_op", call_start - 3_000, call_start + 1_000, **{"External id": correlation})
            )
        call_end = call_start + LAUNCH_CALL_NS
        events.append(x("cuda_runtime", "cudaLaunchKernel", call_start, call_end, correlation=correlation))
        if keep:
            gpu = x("kernel", name, start, end, stream=7, correlation=correlation, **(args or {}))
            gpu["pid"], gpu["tid"] = rank, 7
            events.append(gpu)
        if job.host_ops:
            events.append(
                {
                    "ph": "f",
                    "id": correlation,
                    "pid": 0,
                    "tid": 1,
                    "ts": (call_start + shift + EPOCH_NS) / 1000,
                    "cat": "ac2g",
                    "name": "ac2g",
                }
            )
        correlation += 1

    now = 0
    count = len(template.transfers_ns)
    sequence = 0
    paid = _paid(job)
    # every rank starts its first step at time 0 of the true clock (written 1 s later: no negative times)
    for step in range(job.steps):
        step_start = now
        now += paid.step_ns
        loader_end = now + int(durations[-1][step])
        events.append(x("cpu_op", LOADER_NAME, now, loader_end))
        now = loader_end
        for c in range(count + 1):
            names = template.groups[c]
            dropped = job.sampled_rank == rank and c == 1
            for k, (name, _) in enumerate(names):
                start = now + paid.launch_ns + LAUNCH_GAP_NS
                end = start + int(durations[c][step, k])
                launch(name, start, end, keep=not dropped)
                now = end
            if _host_extra(job, rank, c):
                events.append(x("cuda_runtime", "cudaStreamSynchronize", now - 50_000, now))
                events.append(x("cpu_op", "aten::item", now, now + _host_extra(job, rank, c)))
                now += _host_extra(job, rank, c)
            if c < count:
                start = now + paid.collective_ns + paid.launch_ns + LAUNCH_GAP_NS
                end = int(ends[step, c])
                comm = {"Collective name": "allreduce", "Process Group Name": "0", "External id": 10_000_000 + sequence}
                events.append(x("cpu_op", "record_param_comms", start - 1_800, start - 200, Seq=sequence, **comm))
                launch(ALLREDUCE_KERNEL, start, end, args=comm)
                sequence += 1
                now = end
        now += 20_000
        events.append(x("user_annotation", f"ProfilerStep#{step}", step_start, now))
    return events
