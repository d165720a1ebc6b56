"""The typed result of the job analysis: frozen dataclasses whose field names are the JSON keys of
`tracekit.job/1` (units in the names)."""

from __future__ import annotations

from dataclasses import dataclass

JOB_SCHEMA = "tracekit.job/1"

# What made a rank late at a collective, from its own window compared with the other ranks'.
COMPUTE, LOADER, SYNC, HOST, COMMUNICATION = "compute", "data loading", "host sync", "host (Python)", "communication"
CAUSES = (COMPUTE, LOADER, SYNC, HOST, COMMUNICATION)
CAUSE_GROUPS = {COMPUTE: "compute", LOADER: "host", SYNC: "host", HOST: "host", COMMUNICATION: "communication"}


@dataclass(frozen=True)
class RankClock:
    """A rank's clock offset from the reference rank's (the lowest), from the ends of the collectives it shares."""

    rank: int
    offset_ns: int  # subtract from the rank's times to put them on the reference rank's clock
    collectives: int  # collectives matched on this rank
    source: str
    sampled: bool  # the trace lacks GPU activity its own launches say ran (sampled or dropped events)
    missing_launches: int
    dropped_ns: int  # GPU gaps the missing launches would have filled: not counted as idle


@dataclass(frozen=True)
class CollectiveArrival:
    """One collective matched across ranks: who arrived last and by how much (on the corrected clocks)."""

    step: int
    process_group: str
    collective: str
    sequence: int
    ranks: int
    last_rank: int
    late_ns: int  # the last arrival minus the median arrival
    noise_ns: int  # what the ranks' own step-to-step variation makes of a last arrival at this collective
    significant: bool  # late_ns beyond noise_ns
    counted: bool  # holds its step back: significant, or the job's straggler last here beyond one deviation


@dataclass(frozen=True)
class CauseShare:
    cause: str  # one of CAUSES
    excess_ns: int  # the straggler's time of this kind minus the other ranks' median, over its late collectives


@dataclass(frozen=True)
class KernelExcess:
    name: str
    excess_ns: int  # the straggler's GPU time in this kernel in the step minus a typical rank's


@dataclass(frozen=True)
class StepStraggler:
    step: int
    span_ns: int  # the median rank's step span
    rank: int | None  # None: no collective's last arrival beyond the noise
    late_ns: int  # its summed lateness over the collectives it was last to reach beyond the noise
    collectives_last: int
    spread_ns: int  # the largest lateness of any collective in the step
    noise_ns: int
    cause: str | None
    causes: tuple[CauseShare, ...]  # largest first
    longer_kernels: tuple[KernelExcess, ...]  # compute: the kernels that ran longer, largest first
    gain_ns: int  # the step's time saved with the straggler's cause at the others' median (`replay`)


@dataclass(frozen=True)
class RankStepCell:
    """One rank in one step, for the ranks-by-step heat map."""

    rank: int
    step: int
    span_ns: int  # the rank's step range, start to end
    late_ns: int  # summed (arrival minus median arrival) over the step's collectives, >= 0
    busy_ns: int
    idle_ns: int
    dropped_ns: int


# The lanes of a rank's timeline: its GPU's work, and its idle gaps by what the host did (`rank.IDLE_CLASSES`).
TIMELINE_LANES = ("compute", "collective", "loader", "sync", "host", "dropped")


@dataclass(frozen=True)
class TimelineBar:
    lane: str  # one of TIMELINE_LANES
    name: str  # the kernel's name; empty for an idle gap
    start_ns: int  # from the typical rank's step start, on the reference rank's clock
    end_ns: int


@dataclass(frozen=True)
class RankTimeline:
    """One rank's step as its GPU ran it, on the reference clock: the straggler's, and a typical rank's beside it."""

    rank: int
    role: str  # straggler | typical
    step: int
    bars: tuple[TimelineBar, ...]


@dataclass(frozen=True)
class JobStraggler:
    rank: int | None  # None: no rank late consistently over the steps (t below t_needed), or too few steps
    share: float  # of the counted collectives, the part it was last to reach
    steps_named: int  # steps whose straggler it was
    cause: str | None
    cause_group: str | None  # compute | host | communication
    gain_ns: int  # mean step time saved with its cause at the others' median (its steps' `replay`, over all steps)
    gain_pct: float  # of the median step
    # the evidence, for the rank latest on average (the straggler where named): its mean lateness per step (over
    # the step's collectives, arrival minus the median arrival) and that mean in standard errors of its
    # step-to-step variation, against the one-sided t quantile it needs (ALPHA over the ranks)
    candidate: int
    late_per_step_ns: int
    t: float
    t_needed: float
    # a rank late consistently whose gain, replayed without the profiler, is within the replay's own error
    # (`unprofiled.REPLAY_ERROR_PCT` of the step): not named; 0 where none was withheld
    withheld_gain_ns: int = 0


@dataclass(frozen=True)
class JobResult:
    schema: str
    ranks: int
    steps: int
    matched_by: str  # sequence (record_param_comms' Seq) | order (the collective's order in its step)
    clocks: tuple[RankClock, ...]
    straggler: JobStraggler
    step_stragglers: tuple[StepStraggler, ...]
    collectives: tuple[CollectiveArrival, ...]
    cells: tuple[RankStepCell, ...]
    typical_rank: int  # the rank whose steps are nearest the median (the dashboard's timeline beside the straggler)
    timelines: tuple[RankTimeline, ...]  # the straggler's worst step and the typical rank's same step; () without one
    warnings: tuple[str, ...]
    # which program the figures describe: without the profiler (each rank's windows replayed without its cost,
    # `unprofiled`) or as traced; the profiler setting and the calibration whose costs were taken out
    unprofiled: bool = False
    setting: str | None = None
    calibration: str | None = None
    step_ns: int = 0  # the job's median step (the loop's period: consecutive steps' last collectives' ends)
    traced_step_ns: int = 0  # the same, as traced
