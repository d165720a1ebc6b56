"""A rank's trace is read by the Kineto importer's one event reader (`importers.kineto.read_events`): the layout
libkineto writes, recorded or SYNTHETIC (`tracekit.job.synthetic` writes it too), is streamed in blocks and gives
the rows the whole document gives; another writer's layout (one line) is parsed whole and reads the same."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tracekit.importers import kineto
from tracekit.job import read
from tracekit.job.synthetic import SyntheticJob, load_template, write_job

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "sample_traces/steps/h200_lean/ddp_rank0.pt.trace.json.gz"
FRAMES = ("gpu", "calls", "ranges", "comms")


@pytest.fixture(scope="module")
def synthetic_rank(tmp_path_factory) -> Path:
    job = SyntheticJob(ranks=2, steps=3, cause="sync", straggler=1, sampled_rank=1, host_ops=True, seed=4)
    return write_job(job, tmp_path_factory.mktemp("job"), load_template(kernels_per_group=3), compress=False)[1]


@pytest.mark.parametrize("block_bytes", [4000, 1 << 20])
def test_streamed_in_blocks_equals_the_whole_document(synthetic_rank, monkeypatch, block_bytes):
    monkeypatch.setattr(kineto, "STREAM_BLOCK_BYTES", block_bytes)
    for path in (RECORDED, synthetic_rank):
        streamed = kineto._streamed(path, 1 << 30, read._job_frames)
        assert streamed is not None, path  # laid out as libkineto writes
        whole = kineto._whole(path, 1 << 30, read._job_frames)
        info = streamed[0]["distributedInfo"]
        assert {k: info[k] for k in ("rank", "world_size")} == whole[0]["distributedInfo"]
        for part, expected in zip(streamed[1], whole[1], strict=True):
            assert_frame_equal(part, expected)


def test_what_the_job_keeps_of_a_recorded_rank():
    frames = read.read_rank(RECORDED)
    assert frames.rank == 0  # its distributedInfo
    nccl = frames.gpu.filter(frames.gpu["name"].cast(pl.Utf8).str.starts_with("ncclDevKernel"))
    assert nccl.height > 0 and nccl["collective"].null_count() == 0 and nccl["external_id"].null_count() == 0
    # each NCCL kernel's record_param_comms (by External id); this PyTorch wrote no Seq (the job matches by order)
    assert set(nccl["external_id"]) <= set(frames.comms["external_id"])
    assert frames.comms["collective"].null_count() == 0 and frames.comms["sequence"].null_count() == frames.comms.height
    assert set(frames.calls["kind"]) <= {"launch", "sync"}
    steps = frames.ranges.filter(frames.ranges["kind"] == "step")["name"].to_list()
    assert steps == [f"ProfilerStep#{i}" for i in range(3, 8)]  # the schedule's active steps


def test_another_layout_is_parsed_whole_and_reads_the_same(synthetic_rank, tmp_path):
    flat = tmp_path / "flat_rank1.json"
    flat.write_bytes(orjson.dumps(orjson.loads(synthetic_rank.read_bytes())))
    assert kineto._streamed(flat, 1 << 30, read._job_frames) is None
    one, other = read.read_rank(flat), read.read_rank(synthetic_rank)
    assert (one.rank, one.world_size) == (other.rank, other.world_size) == (1, 2)
    for name in FRAMES:
        assert_frame_equal(getattr(one, name), getattr(other, name))
    # the sampled rank's dropped kernels: launches kept, their GPU activity absent
    assert other.calls.filter(other.calls["kind"] == "launch").height > other.gpu.height
