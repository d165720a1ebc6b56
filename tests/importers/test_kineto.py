"""The PyTorch profiler (Kineto) reader on a real trace from a public repository and on the PyTorch step recorded
on the H100 with an Nsight Compute report of the same step.

Expected values are counted from the JSON with the json module (the reader uses orjson and polars), and the
pairing is checked against the ncu report's own rows."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from tracekit.api import analyze_stored
from tracekit.cli.summary_command import summarize
from tracekit.errors import InputError
from tracekit.importers import detect_format, kineto, read_file
from tracekit.ingest import ingest
from tracekit.kernel_key import demangler_neutral, kernel_key, normalize_kernel_name
from tracekit.store import Store
from tracekit.validate import check_values

GH200 = "kineto_GH200_transformer.pt.trace.json"
STEP = "torch_step/torch_step.pt.trace.json"
STEP_NCU = "torch_step/torch_step.raw.csv"


def events(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["traceEvents"]


def kernels_of(path: Path) -> list[dict]:
    return sorted((e for e in events(path) if e.get("cat") == "kernel"), key=lambda e: e["ts"])


def test_real_transformer_trace(real_export) -> None:
    path = real_export(GH200)
    assert detect_format(path) == "kineto"
    parsed = read_file(path)
    expected = kernels_of(path)
    assert parsed.launches.height == len(expected) == 48  # the manifest: 48 'kernel' events
    assert parsed.format == "kineto" and parsed.tool == "PyTorch Profiler (Kineto)"
    assert parsed.tool_version == "schema 1, CUDA runtime 12080, CUDA driver 13000, CUPTI 26"
    header = json.loads(path.read_text(encoding="utf-8"))["deviceProperties"][0]
    device = parsed.device
    assert device is not None
    assert (device.name, device.compute_capability, device.sm_count) == ("NVIDIA GH200 480GB", "9.0", 132)
    assert device.max_warps_per_sm == header["maxThreadsPerMultiprocessor"] // header["warpSize"] == 64
    assert device.extra["max_shared_memory_per_sm_bytes"] == header["sharedMemPerMultiprocessor"]
    rows = parsed.launches.to_dicts()
    for row, event in zip(rows, expected, strict=True):
        args = event["args"]
        assert row["kernel_name"] == event["name"]
        assert [row["grid_x"], row["grid_y"], row["grid_z"]] == args["grid"]
        assert [row["block_x"], row["block_y"], row["block_z"]] == args["block"]
        assert row["registers_per_thread"] == args["registers per thread"]
        # Kineto's "shared memory" is static + dynamic: kept whole as dynamic, static unknown
        assert (row["static_smem_bytes"], row["dynamic_smem_bytes"]) == (None, args["shared memory"])
        assert (row["stream_id"], row["device_id"], row["correlation_id"]) == (
            args["stream"],
            args["device"],
            args["correlation"],
        )
        assert row["source_launch_id"] == str(args["correlation"])
        assert row["start_ns"] == round(event["ts"] * 1000)
        assert abs(row["duration_ns"] - event["dur"] * 1000) <= 1
    # The path: the user annotations and operators around the launch call (its correlation id)
    assert rows[0]["nvtx_path"] == "ProfilerStep#7 > Self-Attention > aten::_native_multi_head_attention > aten::mm"
    assert all(row["nvtx_path"].startswith("ProfilerStep#") for row in rows)
    annotations = [e for e in events(path) if e.get("cat") in ("user_annotation", "gpu_user_annotation")]
    assert parsed.nvtx_ranges.height == len(annotations) == 15 + 12
    assert parsed.memcpys.height == 0 and parsed.warnings == []


@pytest.mark.parametrize("name", [GH200, STEP])
def test_the_columnar_and_the_event_by_event_paths_agree(real_export, sample_trace, name: str) -> None:
    """polars' JSON reader takes a Kineto trace whole; the event-by-event path (files that do not fit its schema)
    gives the same import."""
    path = real_export(name) if name == GH200 else sample_trace(name)
    data = kineto._content(path, 2**40)
    columnar = kineto._columnar(data)
    assert columnar is not None
    fast = kineto._assemble(path, *columnar)
    document = kineto._parse(path, data)
    slow = kineto._assemble(path, document, kineto._event_frames(path, document))
    for frame in ("launches", "memcpys", "nvtx_ranges"):
        assert_frame_equal(getattr(fast, frame), getattr(slow, frame))
    assert (fast.device, fast.tool_version, fast.warnings) == (slow.device, slow.tool_version, slow.warnings)


def test_recorded_step_paths_copies_and_sets(sample_trace) -> None:
    path = sample_trace(STEP)
    parsed = read_file(path)
    assert parsed.launches.height == len(kernels_of(path)) == 12
    paths = parsed.launches["nvtx_path"].to_list()
    assert paths[:4] == [
        "step > layer_norm > aten::layer_norm > aten::native_layer_norm",
        "step > qkv_gemm > aten::matmul > aten::mm",
        "step > scores_gemm > aten::matmul > aten::bmm",
        "step > softmax > aten::softmax > aten::_softmax",
    ]
    sets = [e for e in events(path) if e.get("cat") == "gpu_memset"]
    assert parsed.memcpys["kind"].to_list() == ["Memset"] * len(sets) == ["Memset"] * 2
    assert parsed.memcpys["size_bytes"].to_list() == [e["args"]["bytes"] for e in sets]
    assert parsed.device is not None and parsed.device.name == "NVIDIA H100 80GB HBM3"


def test_kernels_without_launch_calls_take_the_gpu_annotations(sample_trace, tmp_path) -> None:
    """A trace without the CPU side of the launches (no cuda_runtime events) still names each kernel's
    record_function ranges, from their GPU mirror on the kernel's stream."""
    document = json.loads(sample_trace(STEP).read_text(encoding="utf-8"))
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") != "cuda_runtime"]
    path = tmp_path / "no_runtime.pt.trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(document, handle)
    assert detect_format(path) == "kineto"
    paths = read_file(path).launches["nvtx_path"].to_list()
    assert paths[1:4] == ["qkv_gemm", "scores_gemm", "softmax"]


def test_each_profiled_kernel_pairs_with_its_kineto_launch_and_gets_the_same_verdict(sample_trace, tmp_path) -> None:
    """The Kineto trace and the ncu report of the same step: each of the 12 profiled kernels is paired, by the
    one pairing rule, with the Kineto launch at its place in the step, and both give the same verdict."""
    store = Store.open(f"sqlite:///{tmp_path / 'step.sqlite'}")
    trace_id = ingest(store, sample_trace(STEP))[0].import_id
    report_id = ingest(store, sample_trace(STEP_NCU))[0].import_id
    traced = store.launches(import_id=trace_id)
    profiled = store.launches(import_id=report_id)
    assert traced.height == profiled.height == 12
    # the two demanglers spell the ATen kernels differently; the key reads them as one
    assert normalize_kernel_name(traced["kernel_name"][0]) != normalize_kernel_name(profiled["kernel_name"][0])
    both = pl.concat([traced, profiled], how="diagonal_relaxed")
    results = {r["launch_id"]: r for r in analyze_stored(store, both).to_dicts()}
    # the same results whichever is opened: the Kineto launches alone take their context from the store
    alone = {r["launch_id"]: r for r in analyze_stored(store, traced).to_dicts()}
    assert all(alone[i] == results[i] for i in traced["id"].to_list())
    traced_ids, profiled_ids = traced["id"].to_list(), profiled["id"].to_list()
    for traced_id, profiled_id in zip(traced_ids, profiled_ids, strict=True):
        timed, twin = results[traced_id], results[profiled_id]
        assert timed["pairing"]["status"] == "paired", timed["pairing"]["evidence"]
        assert timed["counters_from"]["launch_id"] == profiled_id
        assert twin["pairing"]["status"] == "own-counters"
        assert timed["classification"]["mode"] == twin["classification"]["mode"] != "undetermined"
        assert timed["classification"]["limiter"] == twin["classification"]["limiter"]
        assert timed["classification"]["flags"] == twin["classification"]["flags"]
        assert timed["occupancy"]["achieved_pct"] == twin["occupancy"]["achieved_pct"]
        assert timed["duration_ns"] != twin["duration_ns"]  # the timing stays the Kineto launch's own
    # reduce_kernel: Kineto's 2,064 bytes are ncu's 16 static + 2,048 dynamic
    reduce = profiled.filter(profiled["kernel_name"].str.contains("reduce_kernel")).row(0, named=True)
    assert (reduce["static_smem_bytes"], reduce["dynamic_smem_bytes"]) == (16, 2048)
    reduce_traced = traced.filter(traced["kernel_name"].str.contains("reduce_kernel")).row(0, named=True)
    assert reduce_traced["dynamic_smem_bytes"] == 2064
    assert kernel_key(reduce_traced).matches(kernel_key(reduce))
    assert not kernel_key({**reduce_traced, "dynamic_smem_bytes": 2048 + 32}).matches(kernel_key(reduce))


def test_an_older_kineto_trace(sample_trace, tmp_path) -> None:
    """Kineto of 2020-2021: capitalized categories (Kernel, Runtime, Operator, Memset), GPU rows named by text
    (`"tid": "stream 7"`), no schemaVersion or deviceProperties header."""
    document = json.loads(sample_trace(STEP).read_text(encoding="utf-8"))
    renamed = {"kernel": "Kernel", "cuda_runtime": "Runtime", "cpu_op": "Operator", "gpu_memset": "Memset"}
    for event in document["traceEvents"]:
        if event.get("cat") in renamed:
            event["cat"] = renamed[event["cat"]]
        if event.get("cat") in ("Kernel", "Memset", "gpu_user_annotation"):
            event["tid"] = f"stream {event['tid']}"
    events = [e for e in document["traceEvents"] if e.get("cat") != "user_annotation"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    assert detect_format(path) == "kineto"
    parsed = read_file(path)
    assert parsed.launches.height == 12 and parsed.memcpys.height == 2
    assert parsed.launches["nvtx_path"][0] == "aten::layer_norm > aten::native_layer_norm"
    assert parsed.device is None and any("deviceProperties" in w for w in parsed.warnings)


def test_demangler_spellings_are_one_name() -> None:
    gnu = "void at::native::reduce_kernel<512, 1, Op<float, f<float>::operator()(at::T&)::{lambda(float, float)#1}>>(X)"
    edg = (
        "void at::reduce_kernel<512, 1, Op<float, f<float>::operator ()(at::T &)::[lambda(float, float) (instance 1)]>>"
        "(T3)"
    )
    assert demangler_neutral(normalize_kernel_name(gnu)) == demangler_neutral(normalize_kernel_name(edg))
    other = edg.replace("(instance 1)", "(instance 2)")
    assert demangler_neutral(normalize_kernel_name(gnu)) != demangler_neutral(normalize_kernel_name(other))
    assert demangler_neutral("(anonymousnamespace)::k<4>") == demangler_neutral("<unnamed>::k<4>") == "k<4>"


def test_summary_of_a_kineto_trace(sample_trace, tmp_path) -> None:
    """`tracekit summary` on a Kineto trace: per-kernel GPU time as the JSON's durations give it."""
    path = sample_trace(STEP)
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    summary = summarize(store, ingest(store, path)[0].import_id)
    expected: dict[str, list[int]] = {}
    for event in kernels_of(path):
        start = round(event["ts"] * 1000)
        expected.setdefault(event["name"], []).append(start + round(event["dur"] * 1000) - start)
    assert sum(row.count for row in summary.kernels) == 12
    assert summary.kernel_ns == sum(sum(v) for v in expected.values())
    gemm = next(
        row for row in summary.kernels if row.name.startswith("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128")
    )
    assert gemm.count == 3 and gemm.share > 0.9
    (sets,) = summary.memcpys
    assert (sets.name, sets.count, sets.total_bytes) == ("Memset", 2, 8)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"schemaVersion": 1, "traceEvents": [', "not valid JSON"),
        (b'{"schemaVersion": 1, "traceEvents": {}}', "expected a JSON object with a 'traceEvents' list"),
        (b'{"schemaVersion": 1, "traceEvents": [3]}', "traceEvents[0] is not an object"),
        (
            b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "1", "dur": 2}]}',
            "kernel event 1: ts is '1', not a number",
        ),
    ],
)
def test_bad_traces_are_refused_in_one_line(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        kineto.read(path)


def test_a_cpu_only_trace_is_refused_with_what_it_holds(tmp_path) -> None:
    """A trace recorded without CUDA activity stores nothing: a refusal that says so, not an empty import."""
    path = tmp_path / "cpu.pt.trace.json"
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.5}
                ],
            }
        ),
        encoding="utf-8",
    )
    assert detect_format(path) == "kineto"
    with pytest.raises(InputError) as refused:
        read_file(path)
    assert "CPU-only PyTorch profiler trace (1 CPU operator events" in str(refused.value)
    assert "without ProfilerActivity.CUDA" in str(refused.value)


HOSTILE: list[object] = [None, "x", -1, 1.5, [], {}, [1, 2], True, 2**70, "1e3", [1, "a", 3], -5.0, 1e300, 0]
EVENT_KEYS = ["ts", "dur", "pid", "tid", "name", "ph", "cat"]
ARG_KEYS = ["grid", "block", "shared memory", "registers per thread", "correlation", "device", "stream", "bytes"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(EVENT_KEYS + ARG_KEYS), st.sampled_from(HOSTILE)),
        min_size=1,
        max_size=3,
    )
)
def test_any_event_values_give_an_import_or_one_input_error(sample_trace, tmp_path, changes) -> None:
    """Hostile values in the recorded step's events: an import whose values pass the store's checks, or one
    InputError line, never another exception."""
    document = json.loads(sample_trace(STEP).read_text(encoding="utf-8"))
    events = [e for e in document["traceEvents"] if e.get("cat") in ("kernel", "cuda_runtime", "gpu_memset", "cpu_op")]
    for index, key, value in changes:
        event = events[index % len(events)]
        if key in EVENT_KEYS:
            event[key] = value
        else:
            event.setdefault("args", {})[key] = value
    path = tmp_path / "hostile.pt.trace.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        check_values(str(path), kineto.read(path).conformed())
    except InputError as error:
        assert "\n" not in str(error)
