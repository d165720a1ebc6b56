"""The typed result of the step analysis: frozen dataclasses whose field names are the JSON keys of
`tracekit.steps/1` (units in the names)."""

from __future__ import annotations

from dataclasses import dataclass

STEPS_SCHEMA = "tracekit.steps/1"

# Why the GPU idled, in the order they are judged (docs in causes.py).
LAUNCH_BOUND, KERNEL_WAIT, SYNCHRONIZATION, HOST_WORK, WAITING, UNATTRIBUTED = (
    "launch-bound",
    "kernel wait",
    "synchronization",
    "host work",
    "waiting on stream/event",
    "unattributed",
)
CAUSES: tuple[str, ...] = (LAUNCH_BOUND, KERNEL_WAIT, SYNCHRONIZATION, HOST_WORK, WAITING, UNATTRIBUTED)


@dataclass(frozen=True)
class Evidence:
    """One piece of what an idle cause is made of: an API call, a host gap or a copy, and the idle it explains."""

    kind: str  # call | host gap | copy | queued
    name: str  # the API call, operator or copy; "" for a host gap with no range
    start_ns: int
    end_ns: int
    idle_ns: int  # the GPU idle time this evidence explains


@dataclass(frozen=True)
class IdleCause:
    cause: str
    idle_ns: int
    gaps: int  # idle gaps (pieces) it explains
    evidence: tuple[Evidence, ...]  # the largest few


@dataclass(frozen=True)
class CategoryTime:
    category: str
    gpu_ns: int  # inside the step, time two streams overlap counted once (categories.COUNTED_FIRST)
    count: int


@dataclass(frozen=True)
class OperatorTime:
    operator: str  # the outermost CPU operator, "" when the launch had none
    annotation_path: str  # the record_function / NVTX path, "" when none
    gpu_ns: int
    count: int


@dataclass(frozen=True)
class Step:
    index: int
    label: str
    start_ns: int
    end_ns: int
    host_end_ns: int  # when the host left the step's range (the step ends later if its GPU work does)
    span_ns: int
    busy_ns: int  # the union of kernels, copies and sets on every stream of the device
    idle_ns: int
    kernels: int
    graph_kernels: int  # kernels replayed from a CUDA graph (counted with their cudaGraphLaunch)
    copies: int
    sets: int
    causes: tuple[IdleCause, ...]  # every cause, largest first; their idle_ns sum to idle_ns
    categories: tuple[CategoryTime, ...]
    operators: tuple[OperatorTime, ...]
    communication_ns: int  # the union of communication kernels and host-side collectives (gloo's worker ranges)
    communication_overlap_ns: int  # of which computation ran at the same time
    pageable_copy_ns: int = 0  # copies from or to pageable host memory: busy time a pinned copy would shorten
    pageable_copy_bytes: int = 0
    pageable_sync_idle_ns: int = 0  # of the synchronization idle, what the host waiting on pageable copies cost

    @property
    def busy_pct(self) -> float:
        return 100.0 * self.busy_ns / self.span_ns if self.span_ns else 0.0


@dataclass(frozen=True)
class PathSegment:
    """One link of a step's critical path: a GPU activity, or the host's time before a launch."""

    kind: str  # gpu | host
    name: str
    start_ns: int
    end_ns: int
    # a GPU activity's binding constraint (stream, host, event); a host link's idle cause (critical_path)
    reason: str


@dataclass(frozen=True)
class Suggestion:
    """A change to try for the whole step, with the step time it would save."""

    kind: str  # idle | kernel | copy
    what: str  # the cause or the kernel
    fix: str
    saves_ns: int
    saves_low_ns: int
    saves_high_ns: int


@dataclass(frozen=True)
class StepsResult:
    schema: str
    source: str | None
    rank: int | None
    device_name: str | None
    detected_by: str  # ProfilerStep | range NAME | repeating pattern | whole trace
    steps: tuple[Step, ...]
    median_step_ns: int
    # the index of the step the tables, timeline and critical path show (span nearest the median; not the trace's
    # first where there are three or more); the suggestions are each cause's median over all the steps
    representative_step: int | None
    critical_path: tuple[PathSegment, ...]
    what_to_try: tuple[Suggestion, ...]
    warnings: tuple[str, ...]


# Issue 43 (causes.py says what each is): queued work that started later than launch latency explains, and the
# process's one-time start-up; judged before unattributed.
STALLED_QUEUE, START_UP = "stalled queue", "start-up"
CAUSES = (*CAUSES[:-1], STALLED_QUEUE, START_UP, UNATTRIBUTED)
