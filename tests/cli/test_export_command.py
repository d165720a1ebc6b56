"""`tracekit export --format perfetto` as a user runs it: real samples into a temp store, then the trace JSON read
back with json and checked slice by slice against an independent reading of the source file."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import REGION_EXAMPLES as EXAMPLES
from tests.helpers import run_cli, skip_or_fail

REPO = Path(__file__).resolve().parents[2]
REGIONS = REPO / "sample_traces" / "regions"
H100 = REPO / "sample_traces" / "h100"


def tracekit(*args: str, db: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, "--db", str(db))


def export(source: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "trace.json"
    done = tracekit("export", str(source), "-o", str(out), *extra, db=tmp_path / "store.sqlite")
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def tracks(document: dict) -> tuple[dict[int, str], dict[tuple[int, int], str], list[dict]]:
    """Process names, thread names and slices of a Chrome trace."""
    processes, threads, slices = {}, {}, []
    for event in document["traceEvents"]:
        if event["ph"] == "M" and event["name"] == "process_name":
            processes[event["pid"]] = event["args"]["name"]
        elif event["ph"] == "M" and event["name"] == "thread_name":
            threads[(event["pid"], event["tid"])] = event["args"]["name"]
        elif event["ph"] == "X":
            slices.append(event)
    return processes, threads, slices


def assert_nested(slices: list[dict]) -> None:
    """On every thread, slices either nest or follow each other (what the trace viewers require)."""
    by_thread = defaultdict(list)
    for s in slices:
        by_thread[(s["pid"], s["tid"])].append((round(s["ts"] * 1000), round((s["ts"] + s["dur"]) * 1000)))
    for spans in by_thread.values():
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], "slices of one thread overlap without nesting"
            stack.append(end)


def on_tracks(document: dict) -> list[tuple[int, int, int, str, int, int]]:
    """(sm, block, warp, name, start_ns, end_ns) as the tracks say: SM from the process name, block and warp from
    the thread name, times from ts/dur (µs)."""
    processes, threads, slices = tracks(document)
    rows = []
    for s in slices:
        sm = int(processes[s["pid"]].split("SM ")[1])
        _, block, _, warp = threads[(s["pid"], s["tid"])].split()[:4]
        start = round(s["ts"] * 1000)
        rows.append((sm, int(block), int(warp), s["name"], start, start + round(s["dur"] * 1000)))
    return rows


def test_export_v2_regions(tmp_path):
    path = REGIONS / "ws_pipeline.v2.gz"
    with gzip.open(path, "rt") as handle:
        rows = [r for r in csv.DictReader(x for x in handle if not x.startswith("#")) if r["region"]]
    origin = min(int(r["start_ns"]) for r in rows)
    expected = sorted(
        (
            int(r["sm_id"]),
            int(r["block_id"]),
            int(r["warp_in_block"]),
            r["region"],
            int(r["start_ns"]) - origin,
            int(r["end_ns"]) - origin,
        )
        for r in rows
    )
    document = export(path, tmp_path)
    assert document["displayTimeUnit"] == "ns"
    assert sorted(on_tracks(document)) == expected  # one slice per region, right times, right SM and warp track
    assert_nested(tracks(document)[2])
    processes, threads, _ = tracks(document)
    assert len(processes) == len({r["sm_id"] for r in rows})
    assert len({tid for _, tid in threads}) == len(threads)  # tids unique in the file


def test_export_plain_warp_trace(tmp_path):
    path = H100 / "vector_add_08warps.csv.gz"
    with gzip.open(path, "rt") as handle:
        rows = list(csv.DictReader(x for x in handle if not x.startswith("#")))
    origin = min(int(r["start_ns"]) for r in rows)
    expected = sorted(
        (
            int(r["sm_id"]),
            int(r["block_id"]),
            int(r["warp_in_block"]),
            "warp",
            int(r["start_ns"]) - origin,
            int(r["end_ns"]) - origin,
        )
        for r in rows
    )
    document = export(path, tmp_path)
    assert sorted(on_tracks(document)) == expected
    assert_nested(tracks(document)[2])


def test_export_gaunernst_example(tmp_path):
    path = EXAMPLES / "gaunernst_matmul_sm100_trace_v5.json.gz"
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared region examples live beside the checkout)")
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    db = tmp_path / "store.sqlite"
    assert tracekit("import", str(path), "--map", "warps_per_block=4", db=db).returncode == 0
    document = export(Path("1"), tmp_path)  # import 1
    expected = sorted(
        (e["pid"], (e["tid"] - e["pid"]) // 4, (e["tid"] - e["pid"]) % 4, e["name"], e["ts"], e["ts"] + e["dur"])
        for e in events
    )
    assert sorted(on_tracks(document)) == expected
    assert_nested(tracks(document)[2])


def test_export_proton_cycles(tmp_path):
    path = REGIONS / "proton_matmul.chrome_trace.gz"
    with gzip.open(path, "rt") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e["ph"] == "X"]
    out = tmp_path / "p.json"
    done = tracekit("export", str(path), "-o", str(out), "--clock-hz", "1.98e9", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    _, _, slices = tracks(document)
    assert len(slices) == len(events)
    longest = max(events, key=lambda e: e["dur"])
    assert max(s["dur"] for s in slices) == pytest.approx(round(longest["dur"] * 1000 / 1.98) / 1000, abs=1e-3)
    assert_nested(slices)
    unclocked = tracekit("export", str(path), "-o", str(out), db=tmp_path / "s.sqlite")
    assert unclocked.returncode == 0 and "1 GHz" in unclocked.stderr


def test_export_bad_requests_exit_2(tmp_path):
    db = tmp_path / "s.sqlite"
    missing = tracekit("export", "launch:42", "-o", str(tmp_path / "x.json"), db=db)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no launch with id 42" in missing.stderr
    fmt = tracekit(
        "export", str(REGIONS / "ws_pipeline.v2.gz"), "-o", str(tmp_path / "x.json"), "--format", "pb", db=db
    )
    assert fmt.returncode == 2 and "--format" in fmt.stderr and "Traceback" not in fmt.stderr
    assert not (tmp_path / "x.json").exists()


def proto_on_tracks(path: Path) -> list[tuple[int, int, int, str, int, int]]:
    """(sm, block, warp, name, start_ns, end_ns) of a Perfetto protobuf trace, decoded with the perfetto package's
    protobuf classes: SM from the process track's name, block and warp from the thread track's, each slice a
    BEGIN/END pair on its thread track. Events are replayed in time order (stable), as the trace processor sorts
    them, and every END must close the innermost open slice of its track."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    processes: dict[int, tuple[int, str]] = {}
    threads: dict[int, tuple[int, int, int, str]] = {}
    events = []
    for order, packet in enumerate(trace.packet):
        if packet.HasField("track_descriptor"):
            track = packet.track_descriptor
            if track.HasField("process"):
                processes[track.uuid] = (track.process.pid, track.process.process_name)
            elif track.HasField("thread"):
                threads[track.uuid] = (track.parent_uuid, track.thread.pid, track.thread.tid, track.thread.thread_name)
        elif packet.HasField("track_event"):
            assert packet.trusted_packet_sequence_id == 1
            events.append((packet.timestamp, order, packet.track_event))
    assert len({tid for _, _, tid, _ in threads.values()}) == len(threads)  # tids unique in the file
    open_slices: dict[int, list[tuple[str, int]]] = defaultdict(list)
    rows = []
    for ts, _, event in sorted(events, key=lambda e: (e[0], e[1])):
        if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            open_slices[event.track_uuid].append((event.name, ts))
            continue
        assert event.type == pb.TrackEvent.TYPE_SLICE_END and open_slices[event.track_uuid], "END without BEGIN"
        name, start = open_slices[event.track_uuid].pop()
        parent, pid, _, thread_name = threads[event.track_uuid]
        process_pid, process_name = processes[parent]
        assert process_pid == pid  # the warp's thread belongs to its SM's process
        _, block, _, warp = thread_name.split()[:4]
        rows.append((int(process_name.split("SM ")[1]), int(block), int(warp), name, start, ts))
    assert not any(open_slices.values()), "slices left open"
    return rows


def test_export_proto_v2_regions(tmp_path):
    """The protobuf trace of the v2 sample: one slice per region, at its ns, on its SM's and warp's tracks."""
    path = REGIONS / "ws_pipeline.v2.gz"
    with gzip.open(path, "rt") as handle:
        rows = [r for r in csv.DictReader(x for x in handle if not x.startswith("#")) if r["region"]]
    origin = min(int(r["start_ns"]) for r in rows)
    expected = sorted(
        (
            int(r["sm_id"]),
            int(r["block_id"]),
            int(r["warp_in_block"]),
            r["region"],
            int(r["start_ns"]) - origin,
            int(r["end_ns"]) - origin,
        )
        for r in rows
    )
    db = tmp_path / "store.sqlite"
    by_suffix = tmp_path / "trace.pftrace"  # --format auto: protobuf for a .pftrace name
    done = tracekit("export", str(path), "-o", str(by_suffix), db=db)
    assert done.returncode == 0 and "Perfetto protobuf trace" in done.stdout, done.stderr
    assert sorted(proto_on_tracks(by_suffix)) == expected
    named = tmp_path / "trace.bin"
    done = tracekit("export", "1", "-o", str(named), "--format", "perfetto-proto", db=db)
    assert done.returncode == 0, done.stderr
    assert named.read_bytes() == by_suffix.read_bytes()


def test_export_proto_plain_warp_trace(tmp_path):
    path = H100 / "vector_add_08warps.csv.gz"
    with gzip.open(path, "rt") as handle:
        rows = list(csv.DictReader(x for x in handle if not x.startswith("#")))
    origin = min(int(r["start_ns"]) for r in rows)
    expected = sorted(
        (
            int(r["sm_id"]),
            int(r["block_id"]),
            int(r["warp_in_block"]),
            "warp",
            int(r["start_ns"]) - origin,
            int(r["end_ns"]) - origin,
        )
        for r in rows
    )
    out = tmp_path / "warps.json"  # a .json name: --format decides
    done = tracekit("export", str(path), "-o", str(out), "--format", "perfetto-proto", db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    assert sorted(proto_on_tracks(out)) == expected


def test_export_proto_overlapping_and_touching_regions(tmp_path):
    """Regions of one warp that overlap without nesting go to an extra lane; touching, nested and zero-length
    ones keep BEGIN/END balanced on one track."""
    lines = [
        "# tracekit-warp-trace v2",
        "# kernel: lanes",
        "launch,sm_id,block_id,warp_in_block,region,start_ns,end_ns,start_cycles,end_cycles",
        "0,3,0,0,outer,1000,2000,,",
        "0,3,0,0,first,1000,1500,,",  # starts with its parent
        "0,3,0,0,second,1500,2000,,",  # touches the first, ends with the parent
        "0,3,0,0,mark,1500,1500,,",  # zero length where they touch
        "0,3,0,0,straddle,1800,2300,,",  # overlaps the parent's end: another lane
    ]
    source = tmp_path / "lanes.csv"
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "lanes.pftrace"
    done = tracekit("export", str(source), "-o", str(out), db=tmp_path / "s.sqlite")
    assert done.returncode == 0, done.stderr
    got = sorted(proto_on_tracks(out))
    assert got == sorted(
        [
            (3, 0, 0, "outer", 0, 1000),
            (3, 0, 0, "first", 0, 500),
            (3, 0, 0, "second", 500, 1000),
            (3, 0, 0, "mark", 500, 500),
            (3, 0, 0, "straddle", 800, 1300),
        ]
    )


def test_export_auto_format_rule():
    from tracekit.cli.export_command import AUTO_PROTO_SLICES, _proto_wanted

    assert not _proto_wanted("auto", Path("t.json"), AUTO_PROTO_SLICES)
    assert _proto_wanted("auto", Path("t.json"), AUTO_PROTO_SLICES + 1)  # too large for the UI's JSON importer
    assert _proto_wanted("auto", Path("t.PFTRACE"), 10) and _proto_wanted("auto", Path("t.perfetto-trace"), 10)
    assert not _proto_wanted("perfetto", Path("t.pftrace"), AUTO_PROTO_SLICES * 10)  # asked for JSON: JSON
