"""The job page's drop without a browser: what a drop the job cannot use shows (one line, the file named by its
upload name, never the scratch copy's path), and the route."""

from __future__ import annotations

import base64
from pathlib import Path

from dashboards.pages_job import layout, run_uploaded_job
from tracekit.scratch import scratch_dir

REPO = Path(__file__).resolve().parents[2]
RANK = REPO / "sample_traces/steps/h200_lean/ddp_rank0.pt.trace.json.gz"


def _url(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _texts(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list | tuple):
        return [text for child in node for text in _texts(child)]
    children = getattr(node, "children", None)
    return [] if children is None else _texts(children)


def test_one_rank_is_not_a_job():
    [message] = _texts(run_uploaded_job([("rank0.pt.trace.json.gz", _url(RANK.read_bytes()))], 10**9))
    assert message == "a job needs two rank traces or more (a folder of them, or the files)"


def test_a_drop_over_the_limit_says_so_before_anything_runs():
    [message] = _texts(run_uploaded_job([("rank0.json", _url(b"x" * 2000)), ("rank1.json", _url(b"{}"))], 1000))
    assert message.startswith("rank0.json is 0.0 MB, over the upload limit")


def test_a_broken_rank_is_named_by_its_upload_name():
    drop = [("rank0.pt.trace.json.gz", _url(RANK.read_bytes())), ("<b>rank1</b>.json", _url(b"{not json"))]
    [message] = _texts(run_uploaded_job(drop, 10**9))
    assert "<b>rank1</b>.json" in message and "not valid JSON" in message
    assert str(scratch_dir()) not in message


def test_the_page_offers_a_drop_of_several_files():
    page = layout(10**6)
    upload = page.children[2]
    assert upload.id == "job-upload" and upload.multiple is True
