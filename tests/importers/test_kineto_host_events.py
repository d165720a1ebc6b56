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
