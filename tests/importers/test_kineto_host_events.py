"""The Kineto reader's host timeline (`read_host_events`) for the step analysis: read block by block when
libkineto laid the trace out, the same frames as parsing it whole, whatever the block size."""

from __future__ import annotations

from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from tracekit.importers import kineto

TORCH_STEP = Path(__file__).resolve().parents[2] / "sample_traces/torch_step/torch_step.pt.trace.json"


@pytest.mark.parametrize("block_bytes", [1000, 5000, 1 << 24])
def test_streamed_equals_whole(real_export, monkeypatch, block_bytes):
    monkeypatch.setattr(kineto, "STREAM_BLOCK_BYTES", block_bytes)
    for path in (TORCH_STEP, real_export("kineto_GH200_transformer.pt.trace.json")):
        streamed = kineto._streamed(path, 1 << 30, kineto._host_frames)
        assert streamed is not None, path  # both are laid out as libkineto writes
        whole = kineto._whole(path, 1 << 30, kineto._host_frames)
        for part, expected in zip(streamed[1], whole[1], strict=True):
            assert_frame_equal(part, expected)


def test_host_events_of_torch_step():
    events = kineto.read_host_events(TORCH_STEP)
    assert events.device_name == "NVIDIA H100 80GB HBM3"
    assert events.gpu["kind"].value_counts().sort("kind").rows() == [("kernel", 12), ("memset", 2)]
    assert events.calls.height == 16  # 14 launches and memsets, 2 cudaDeviceSynchronize
    gemm = events.gpu.filter(events.gpu["annotation_path"] == "step > qkv_gemm")
    assert gemm["operator"].to_list() == ["aten::matmul"]


def test_a_minified_trace_is_parsed_whole(tmp_path):
    """Another writer's layout (one line) is not streamed, and reads the same."""
    import orjson

    flat = tmp_path / "flat.json"
    flat.write_bytes(orjson.dumps(orjson.loads(TORCH_STEP.read_bytes())))
    assert kineto._streamed(flat, 1 << 30, kineto._host_frames) is None
    one, other = kineto.read_host_events(flat), kineto.read_host_events(TORCH_STEP)
    assert_frame_equal(one.gpu, other.gpu)
    assert_frame_equal(one.calls, other.calls)


HTA_TRITON = Path(__file__).resolve().parents[2] / "sample_traces/hta/triton_example.json.gz"


def test_a_compiled_triton_kernels_text_grid_is_read_either_way(tmp_path):
    """HTA's Triton example (a `torch.compile`d function on an A100): the operator Inductor's launcher records for
    its kernel carries `grid` as text ("grid(100,)"), the kernel's own as a list. The trace is read, whole and laid
    out as libkineto writes it alike (one typed column could hold only one of the two, so it was refused as not a
    PyTorch profiler's), with its one kernel, its driver launch and the operator."""
    import gzip

    import orjson

    document = orjson.loads(gzip.decompress(HTA_TRITON.read_bytes()))
    texts = [e["args"]["grid"] for e in document["traceEvents"] if isinstance(e.get("args", {}).get("grid"), str)]
    assert texts == ["grid(100,)"]
    laid_out = tmp_path / "libkineto.json"  # the same events as libkineto lays them out: read block by block
    header = {k: v for k, v in document.items() if k != "traceEvents"}
    inner = b"\n  },\n  {".join(orjson.dumps(e)[1:-1] for e in document["traceEvents"])
    laid_out.write_bytes(orjson.dumps(header)[:-1] + b', "traceEvents": [\n  {' + inner + b"\n  }\n]\n}")
    assert kineto._streamed(laid_out, 1 << 30, kineto._host_frames) is not None
    for path in (HTA_TRITON, laid_out):
        events = kineto.read_host_events(path)
        assert events.gpu["name"].to_list() == ["triton_poi_fused_add_cos_sin_0"]
        assert "cuLaunchKernel" in events.calls["name"].to_list()
        assert "triton_poi_fused_add_cos_sin_0" in events.ranges["name"].to_list()
