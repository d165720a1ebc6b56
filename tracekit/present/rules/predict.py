"""The words of the predictor's steps (`tracekit.analysis.predict`): one sentence per step, from the step's values."""

from __future__ import annotations

from tracekit import format as fmt
from tracekit.present.rules.values import (
    V,
    Words,
    dur,
    frac,
    num,
    pct,
    times,
)


def _use_rate(v: V, name: str) -> str:
    value = v.n(name)
    return fmt.bandwidth(value) if v.s("rate_unit") == "B/s" else f"{pct(value)} of peak"


def _predict_achieved(v: V) -> str:
    if v.o("arrival_scale") is not None:
        why = (
            f"block starts bind the launch now, so its warps are set by how many start per second, not by its "
            f"blocks; {times(v.n('arrival_scale'))} the warps started per second hold "
        )
    elif v.o("cv") is not None:
        longer = f", {times(v.n('trips'))} the loop iterations per warp (cv / sqrt of it)" if v.n("trips") > 1 else ""
        why = (
            f"a block frees its slot when its last warp ends: warp lifetimes spread by cv {num(v.n('cv'))} (from that "
            f"lost share at {num(v.n('warps_per_block_now'))} warps per block){longer} keep "
            f"{frac(v.n('keep_new'))} at {num(v.n('warps_per_block_new'))} warps per block: "
        )
    else:
        why = "the same share: "
    span = (
        f" ({num(v.n('span_low'))}-{num(v.n('span_high'))} from a tail spread over a block time to lockstep equal "
        "blocks)"
        if v.o("span_low") is not None
        else ""
    )
    return (
        f"the launch keeps {num(v.n('achieved_now'))} of {num(v.n('theoretical_now'))} warps resident on average: "
        f"{frac(v.n('tail_now'))} of its block slots held over {num(v.n('waves_now'))} waves (the tail) and "
        f"{frac(v.n('keep_now'))} of each block's warps; {why}{frac(v.n('keep_new'))} of {num(v.n('theoretical_new'))} "
        f"warps x {frac(v.n('tail_new'))} of the slots held over {num(v.n('waves_new'))} waves is "
        f"{num(v.n('achieved_new'))} warps per SM on average{span}"
    )


def _predict_waves(v: V) -> str:
    shape = v.s("shape")
    tail = (
        f"; the last wave holds {frac(v.n('last_wave'))} of the slots, and blocks of unequal length spread the tail: "
        f"{frac(v.n('tail'))} of the slots held on average"
        if shape == "partial"
        else "; under one wave, so fewer warps in flight than the SM holds"
        if shape == "under-one"
        else f"; blocks of unequal length spread the tail: {frac(v.n('tail'))} of the slots held on average"
    )
    return (
        f"{num(v.n('grid'))} blocks in {num(v.n('waves'))} waves of {num(v.n('blocks'))} x {num(v.n('sms'))} SMs{tail}"
    )


def _predict_launch_rate(v: V) -> str:
    overhead = (
        f"; {dur(v.n('overhead_ns'))} per launch ({v.s('ceilings_source')})" if v.o("overhead_ns") is not None else ""
    )
    return (
        f"block starts at {fmt.si(v.n('rate'), 'blocks/s')} per SM for {num(v.n('block'))}-thread blocks "
        f"({v.s('source')}): {dur(v.n('launch_ns'))} for {num(v.n('grid'))} blocks, now {dur(v.n('launch_now_ns'))} "
        f"for {num(v.n('grid_now'))}{overhead}"
    )


def _predict_spare(v: V) -> str:
    return (
        f"Little's law: {v.s('unit')} at its ceiling needs {fmt.size(v.n('needed_bytes'))} in flight per SM at the "
        f"unloaded latency ({dur(v.n('unloaded_ns'))}); the launch's warps wait {dur(v.n('wait_ns'))} per memory round "
        f"(their lifetime x their memory share), so it holds {fmt.size(v.n('in_flight_bytes'))} per SM, "
        f"{times(v.n('spare'))} what the ceiling needs: it waits in a queue, and with less concurrency its throughput "
        f"holds until the bytes in flight fall below that need"
    )


def _predict_narrow(v: V) -> str:
    if v.o("unseen"):
        text = f"measure the changed configuration itself: {v.s('unseen')}"
    elif v.o("fitted"):
        text = "profile it at an occupancy beyond the measured range, near the one asked about"
    else:
        text = (
            f"profile it at two more occupancies (for example {num(v.n('low_warps'))} and {num(v.n('most_warps'))} "
            "warps per SM, by dynamic shared memory per block) so the saturation is fitted, not bounded"
        )
    return text + ("; measure the device's ceilings (tracekit calibrate)" if v.o("calibrate") else "")


TEMPLATES: dict[str, Words] = {
    "predict.occupancy": lambda v: (
        f"calculator: {num(v.n('block'))} threads, {num(v.n('regs'))} registers, {fmt.size(v.n('smem'))} shared "
        f"memory per block -> {num(v.n('blocks'))} blocks, {num(v.n('warps'))} warps per SM (limited by "
        f"{v.s('limiter')}); now {num(v.n('blocks_now'))} blocks, {num(v.n('warps_now'))} warps"
    ),
    "predict.regs-capped": lambda v: (
        f"registers capped at {num(v.n('regs'))} per thread (__launch_bounds__ or -maxrregcount) from "
        f"{num(v.n('regs_now'))}: assumes the compiler fits the kernel without spilling; spills add local-memory "
        "traffic this prediction does not count"
    ),
    "predict.achieved": _predict_achieved,
    "predict.grid-loop": lambda v: (
        f"the same work over {num(v.n('grid'))} blocks: each thread's loop runs {times(v.n('trips'))} the iterations "
        "it runs now (a grid-stride loop); the loop's own ILP and per-iteration cost are taken as now, which a launch "
        "of one iteration per thread cannot show"
    ),
    "predict.concurrency": lambda v: (
        f"concurrency = warps x ILP: {num(v.n('achieved_now'))} x {num(v.n('ilp_now'))} = {num(v.n('conc_now'))} now, "
        f"{num(v.n('achieved_new'))} x {num(v.n('ilp_new'))} = {num(v.n('conc_new'))} after"
    ),
    "predict.sweep-fit": lambda v: (
        f"soft min fitted to {num(v.n('samples'))} measured launches at {num(v.n('levels'))} concurrencies "
        f"({num(v.n('low'))}-{num(v.n('high'))} warps x ILP per SM): sharpness p = {num(v.n('sharpness'))}, log error "
        f"{num(v.n('log_error'))}" + ("" if v.o("saturated") else "; no saturation measured (n / L throughout)")
    ),
    "predict.sweep-held": lambda v: (
        f"beyond {num(v.n('high'))} warps x ILP per SM the fit has seen no saturation it did not measure: its growth "
        f"is held to what this launch's counters allow ({v.s('unit')} at {frac(v.n('utilization'))} of what it can "
        "reach)"
    ),
    "predict.unit-use": lambda v: (
        f"{v.s('unit')} {_use_rate(v, 'achieved')} of the {_use_rate(v, 'ceiling')} achievable ({v.s('source')}): "
        f"{frac(v.n('utilization'))} of what it can reach"
    ),
    "predict.dram-latency": lambda v: (
        f"DRAM by Little's law with its loaded latency ({v.s('source')}): a warp waits for memory "
        f"{frac(v.n('memory_share'))} of its time (long-scoreboard stalls), memory latency {dur(v.n('latency_ns'))} "
        "now, growing along the measured curve as throughput nears the ceiling"
    ),
    "predict.busiest": lambda v: (
        f"busiest unit: {v.s('unit')}, {frac(v.n('utilization'))} of its achievable bound: "
        + {"throughput": "throughput-bound", "latency": "latency-bound, below the knee"}.get(
            v.s("regime"), "near the knee"
        )
    ),
    "predict.spare": _predict_spare,
    "predict.unseen": lambda v: (
        f"{v.s('why')}: the model cannot see it, so the interval spans {times(v.n('slower_x'))} slower to "
        f"{times(v.n('faster_x'))} faster than the point"
    ),
    "predict.spills": lambda v: (
        f"the launch spills registers to local memory: its global accesses need {frac(v.n('spill_free_share'))} of "
        "its DRAM bytes; with fewer live values per thread the spills go and its loads in flight, set by its "
        f"registers, stay (the point); if they stay, {times(v.n('spills_stay_x'))}"
    ),
    "predict.footprint": lambda v: (
        f"cache footprint: each SM would hold {fmt.size(v.n('per_sm_new'))} of its blocks' own data at once (now "
        f"{fmt.size(v.n('per_sm_now'))}), more than the {fmt.size(v.n('l1_new'))} its L1 keeps; L2 keeps "
        f"{frac(v.n('l2_kept'))} of the re-reads, and DRAM bytes grow up to {times(v.n('growth'))} if every byte L1 "
        "serves is a block's own re-read (none if all are shared data): the point takes the geometric middle"
    ),
    "predict.narrow": _predict_narrow,
    "predict.waves": _predict_waves,
    "predict.launch-rate": _predict_launch_rate,
    "predict.no-launch-rate": lambda v: (
        "no measured block launch rate for this device (tracekit calibrate): block starts not modelled"
    ),
    "predict.littles-law": lambda v: (
        f"Little's law: the bound needs about {num(v.n('needed'))} warps x ILP per SM in flight (latency x "
        f"throughput); {num(v.n('conc_new'))} after the change"
    ),
    "predict.littles-law-at-most": lambda v: (
        f"Little's law: every measured concurrency, the lowest {num(v.n('needed'))} warps x ILP per SM, already "
        f"reaches the bound, so it needs at most that in flight; {num(v.n('conc_new'))} after the change"
    ),
    "predict.result": lambda v: (
        f"predicted {dur(v.n('predicted_ns'))} (now {dur(v.n('now_ns'))}): speed-up {times(v.n('speedup'))}, interval "
        f"{times(v.n('low'))}-{times(v.n('high'))}"
    ),
    "predict.capped": lambda v: (
        f"held to {v.s('unit')}'s achievable ceiling: it runs at {frac(v.n('utilization'))} of it now, so no change "
        f"buys more than {times(v.n('headroom'))}"
    ),
}
