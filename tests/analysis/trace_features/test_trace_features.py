"""HTA's trace analyses on real traces (the two-rank DDP step recorded on H200s, sample_traces/steps/h200), each
figure checked against a count made here from the trace's raw JSON events (the json module, not the reader)."""

from __future__ import annotations

import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.trace_features import trace_features
from tracekit.analysis.trace_features.collectives import DTYPE_BYTES
from tracekit.analysis.trace_features.diff import operator_diff
from tracekit.analysis.trace_features.perfetto import GPU_PID, PATH_PID, critical_path_trace
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps/h200"
DDP = STEPS / "ddp_rank0.pt.trace.json.gz"
STRAGGLER = STEPS / "ddp_straggler_rank0.pt.trace.json.gz"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
CALL_CATS = {"cuda_runtime", "cuda_driver"}


def raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as handle:
        return [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]


def ns(us: float) -> int:
    return round(us * 1000)


@pytest.fixture(scope="module")
def ddp():
    return trace_features(read_host_events(DDP)), raw_events(DDP)


def test_each_collective_carries_its_metadata(ddp):
    found, events = ddp
    kernels = [e for e in events if e["cat"] == "kernel" and "Collective name" in e["args"]]
    assert len(kernels) == found.collectives.table.height == 30
    table = found.collectives.table.sort("start_ns")
    for event, row in zip(sorted(kernels, key=lambda e: e["ts"]), table.iter_rows(named=True), strict=True):
        args = event["args"]
        assert row["collective"] == args["Collective name"] and row["dtype"] == args["dtype"]
        assert row["in_elements"] == args["In msg nelems"] and row["group_size"] == args["Group size"] == 2
        assert row["message_bytes"] == args["In msg nelems"] * DTYPE_BYTES[args["dtype"]]
        assert row["process_group"] == f"{args['Process Group Description']} ({args['Process Group Name']})"
        assert row["ranks"] == args["Process Group Ranks"] == "[0, 1]"
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"])  # 2(n-1)/n = 1 for all-reduce of 2; 1 broadcast
    by_kind = defaultdict(int)
    for event in kernels:
        by_kind[event["args"]["Collective name"], event["args"]["dtype"]] += 1
    assert {(g.collective, g.dtype): g.count for g in found.collectives.groups} == by_kind
    nccl = [e for e in events if e["cat"] == "kernel" and e["name"].startswith("nccl")]
    assert found.collectives.without_metadata == len(nccl) - len(kernels)


def test_queue_length_follows_launches_and_starts(ddp):
    found, events = ddp
    calls = {e["args"]["correlation"]: e for e in events if e["cat"] in CALL_CATS and "correlation" in e["args"]}
    issued = [e for e in events if e["cat"] in GPU_CATS and e["args"].get("correlation") in calls]
    per_stream: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for event in issued:
        per_stream[event["args"]["stream"]] += [
            (ns(calls[event["args"]["correlation"]]["ts"]), 1),
            (ns(event["ts"]), -1),
        ]
    assert {s.stream_id: s.launches for s in found.queues.streams} == {k: len(v) // 2 for k, v in per_stream.items()}
    for stream in found.queues.streams:
        length, longest = 0, 0
        for _, change in sorted(per_stream[stream.stream_id], key=lambda c: (c[0], -c[1])):
            length += change
            longest = max(longest, length)
        assert stream.max_length == longest
    series = found.queues.series
    assert series.height == 2 * len(issued)
    ends = series.group_by("stream_id").agg(pl.col("queue_length").last(), lowest=pl.col("queue_length").min())
    assert ends["queue_length"].to_list() == [0] * ends.height and ends["lowest"].min() >= 0  # no start before its call
    # the default stream of this GPU-bound DDP step fills its queue: the host was held back, as the step says
    default = found.queues.streams[0]
    assert default.max_length >= found.queues.full_at and default.full_ns > 0
    assert 0 < default.mean_length < default.max_length


def test_copy_bandwidth_per_kind(ddp):
    found, events = ddp
    moves = [e for e in events if e["cat"] in ("gpu_memcpy", "gpu_memset")]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for event in moves:
        kind = "Memset" if event["cat"] == "gpu_memset" else event["name"].split()[1]
        totals[kind][0] += 1
        totals[kind][1] += event["args"]["bytes"]
    assert {k.kind: [k.count, k.total_bytes] for k in found.bandwidth.kinds} == totals
    for kind in found.bandwidth.kinds:
        rates = [
            e["args"]["bytes"] / max(ns(e["dur"]), 1)
            for e in moves
            if ("Memset" if e["cat"] == "gpu_memset" else e["name"].split()[1]) == kind.kind
        ]
        assert kind.max_gbps == pytest.approx(max(rates)) and kind.median_gbps == pytest.approx(
            statistics.median(rates)
        )
        assert kind.peak_concurrent_gbps >= kind.max_gbps * (1 - 1e-9)
    series = found.bandwidth.series
    assert series.height == 2 * len(moves) and series["bandwidth_gbps"].min() >= 0


def test_launch_delay_from_the_call_return(ddp):
    found, events = ddp
    calls = {e["args"]["correlation"]: e for e in events if e["cat"] in CALL_CATS and "correlation" in e["args"]}
    first: dict[int, dict] = {}
    for event in sorted((e for e in events if e["cat"] in GPU_CATS), key=lambda e: e["ts"]):
        correlation = event["args"].get("correlation")
        if correlation in calls and correlation not in first:
            first[correlation] = event
    delays = [max(0, ns(event["ts"]) - ns(calls[c]["ts"]) - ns(calls[c]["dur"])) for c, event in first.items()]
    delays_ns = found.launch_delays
    assert delays_ns.launches == len(delays)
    assert delays_ns.median_delay_ns == pytest.approx(statistics.median(delays), abs=1)
    assert sum(o.launches for o in delays_ns.operators) == len(delays)
    assert delays_ns.long_delays == sum(d > 100_000 for d in delays)


def test_kernel_sequences_repeat_in_the_trace(ddp):
    found, events = ddp
    streams: dict[int, list[dict]] = defaultdict(list)
    for event in sorted((e for e in events if e["cat"] == "kernel"), key=lambda e: e["ts"]):
        streams[event["args"]["stream"]].append(event)
    assert found.sequences.sequences, "the ResNet's backward repeats its small kernels"
    covered = 0
    for sequence in found.sequences.sequences:
        length, runs = len(sequence.names), 0
        for stream in sequence.stream_ids:
            kernels, at = streams[stream], 0
            while at + length <= len(kernels):
                window = kernels[at : at + length]
                small = all(ns(k["dur"]) < found.sequences.small_ns for k in window)
                if small and tuple(k["name"] for k in window) == sequence.names:
                    runs, at = runs + 1, at + length
                else:
                    at += 1
        assert runs >= sequence.count >= 2  # counted without overlap, less any kernel a longer candidate took
        assert sequence.launches_saved == (length - 1) * sequence.count
        covered += sequence.count * length
    assert covered <= found.sequences.small_kernels


def test_operator_diff_of_two_runs():
    before, after = read_host_events(DDP), read_host_events(STRAGGLER)
    same = operator_diff(before, before)
    assert same.added == same.removed == same.changed == 0 and same.same == same.table.height
    assert same.table["gpu_delta_ns"].abs().max() == 0
    diff = operator_diff(before, after)
    counts: dict[str, int] = defaultdict(int)
    for event in raw_events(STRAGGLER):
        if event["cat"] == "cpu_op":
            counts[event["name"]] += 1
    assert dict(zip(diff.table["operator"], diff.table["count_b"], strict=True)) == {
        name: counts.get(name, 0) for name in diff.table["operator"]
    }
    # the straggler's other rank makes this rank's all-reduces wait: the gradient hooks' GPU time grows most
    top = diff.table.row(0, named=True)
    assert "AccumulateGrad" in top["operator"] and top["gpu_delta_ns"] > 10_000_000
    other = operator_diff(before, read_host_events(STEPS / "llama_small_eager.pt.trace.json.gz"))
    statuses = dict(zip(other.table["operator"], other.table["status"], strict=True))
    assert statuses["aten::conv2d"] == "removed" and other.added > 0


def test_critical_path_as_a_perfetto_trace():
    events = read_host_events(DDP)
    result = analyze_steps(events)
    step = result.steps[result.representative_step]
    trace = critical_path_trace(events, step, result.critical_path)
    written = json.loads(json.dumps(trace))  # plain JSON, as Perfetto reads it
    flagged = [e for e in written["traceEvents"] if e["pid"] == GPU_PID and e.get("args", {}).get("critical") == 1]
    on_path = [s for s in result.critical_path if s.kind == "gpu"]
    assert sorted((e["name"], round(e["ts"] * 1000)) for e in flagged) == sorted((s.name, s.start_ns) for s in on_path)
    links = [e for e in written["traceEvents"] if e["pid"] == PATH_PID and e["ph"] == "X"]
    assert [link["args"]["reason"] for link in links] == [s.reason for s in result.critical_path]
    assert all(a["ts"] <= b["ts"] for a, b in zip(links, links[1:], strict=False))


def test_an_nsys_export_names_its_copies_as_kineto_does(real_export):
    """The T4 export's copies by kind, counted in its own SQLite tables: `HtoD` and `DtoH` as the Kineto reader
    writes them (the host timeline once shortened the names twice, to `Htod`), so the bandwidth table, the queue
    and the pinned-copy advice read one spelling."""
    import sqlite3

    from tracekit.importers.nsys_sqlite import read_host_events as read_nsys

    path = real_export("nsys_2022.4_T4_streams_report2.sqlite")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT e.name, COUNT(*), SUM(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m "
            "JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = m.copyKind GROUP BY e.name"
        ).fetchall()
    expected = {name.removeprefix("CUDA_MEMCPY_KIND_").replace("TO", "to"): [n, b] for name, n, b in rows}
    found = trace_features(read_nsys(path))
    assert {k.kind: [k.count, k.total_bytes] for k in found.bandwidth.kinds} == expected
    assert set(expected) == {"HtoD", "DtoH"}
    assert sum(s.launches for s in found.queues.streams) == found.launch_delays.launches > 0


def test_collectives_of_hta_own_nccl_trace():
    """HTA's A100 DDP trace (sample_traces/hta): each NCCL kernel's metadata as its args hold it, and the same as the
    innermost `record_param_comms` open on the thread of its launch call says (both found here in the raw events)."""
    path = Path(__file__).resolve().parents[3] / "sample_traces/hta/nccl_data.json.gz"
    events = raw_events(path)
    calls = {e["args"]["correlation"]: e for e in events if e["cat"] in CALL_CATS and "correlation" in e["args"]}
    comms = [e for e in events if e["name"] == "record_param_comms" and "Collective name" in e["args"]]
    kernels = sorted(
        (e for e in events if e["cat"] == "kernel" and e["name"].startswith("nccl")), key=lambda e: e["ts"]
    )
    keys = ("Collective name", "In msg nelems", "dtype", "Process Group Ranks")
    expected = [tuple(k["args"][key] for key in keys) for k in kernels]
    for kernel, metadata in zip(kernels, expected, strict=True):
        call = calls[kernel["args"]["correlation"]]
        open_ = [
            c
            for c in comms
            if (c["pid"], c["tid"]) == (call["pid"], call["tid"])
            and ns(c["ts"]) <= ns(call["ts"]) < ns(c["ts"]) + ns(c["dur"])
        ]
        assert tuple(max(open_, key=lambda c: c["ts"])["args"][key] for key in keys) == metadata
    table = trace_features(read_host_events(path)).collectives
    assert table.without_metadata == 0 and len(expected) == 21
    assert table.table.sort("start_ns").select("collective", "in_elements", "dtype", "ranks").rows() == expected
    assert {c for c, *_ in expected} == {"allreduce", "broadcast"}


def test_a_long_series_is_cut_to_its_peaks(ddp):
    """The default stream's 10,380 changes drawn as 100 stretches of two points at most: the highest of each, so
    the chart still reaches the full queue, and where it ended, so it falls back to the empty queue at the end;
    the side stream's 60 changes stay as they are."""
    from tracekit.analysis.trace_features.series import peaks

    found, _ = ddp
    series = found.queues.series
    cut = peaks(series, "stream_id", "queue_length", points=100)
    for stream in found.queues.streams:
        mine = series.filter(pl.col("stream_id") == stream.stream_id)
        drawn = cut.filter(pl.col("stream_id") == stream.stream_id)
        assert drawn["queue_length"].max() == stream.max_length and drawn["time_ns"].is_sorted()
        if mine.height <= 100:
            assert drawn.equals(mine.select(drawn.columns))
        else:
            assert 100 <= drawn.height <= 200 and drawn["time_ns"][0] == mine["time_ns"].min()
            assert drawn.row(-1) == mine.select(drawn.columns).row(-1) and drawn["queue_length"][-1] == 0
