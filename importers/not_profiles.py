"""Files ML engineers keep beside their profiles that are no GPU timeline: each named for what it is, with the
file that holds the timeline instead (the refusal's one line; no reader takes them).

Judged by content, from the formats' documented signatures:
- a PyTorch Execution Trace (`torch.profiler.ExecutionTraceObserver`): a JSON object with `schema` and a `nodes`
  list of operators carrying `op_schema`, `inputs`, `outputs` (the graph of ops, without GPU timing);
- a TensorBoard event file (`events.out.tfevents.*`): TFRecord framing (8-byte length, 4-byte CRC) around `Event`
  protos, the first of which carries the file version `brain.Event:2`.
A TensorFlow profiler page (`<host>.overview_page.pb`, `.input_pipeline.pb`, ...) is a bare protobuf with no
signature: like nsys's capture stream, its file name is read for the refusal only.
"""

from __future__ import annotations

import re

_EXECUTION_TRACE = re.compile(rb'^\{\s*"schema"\s*:\s*"[^"]*".{0,400}?"nodes"\s*:\s*\[', re.DOTALL)
_ET_NODE = re.compile(rb'"op_schema"\s*:|"input_shapes"\s*:')
_TFRECORD_EVENT = b"brain.Event:"
_TF_PROFILE_PAGE = re.compile(
    r"[._](overview_page|input_pipeline|tensorflow_stats|kernel_stats|memory_profile|pod_viewer|xplane)\.pb$"
)


def not_a_profile(head: bytes, name: str) -> str | None:
    """What this file is and what to import instead, when it is one of the module docstring's; else None."""
    if _EXECUTION_TRACE.match(head.lstrip()) and _ET_NODE.search(head):
        return (
            "a PyTorch Execution Trace (ExecutionTraceObserver's graph of operators, with no GPU timing), not a "
            "profiler timeline: record the same steps with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
            "ProfilerActivity.CUDA]) and import its .pt.trace.json"
        )
    if len(head) > 12 and _TFRECORD_EVENT in head[12:64]:
        return (
            "a TensorBoard event file (tfevents: the summaries a run logged), not a profile: import the trace the "
            "PyTorch profiler wrote beside it (plugins/profile/<run>/*.pt.trace.json under the log directory)"
        )
    match = _TF_PROFILE_PAGE.search(name)
    if match and not head.lstrip().startswith((b"{", b"[")):
        return (
            f"a TensorFlow profiler protobuf ({match.group(1)}.pb, one page of TensorBoard's Profile tab), which "
            "tracekit does not read: open it in TensorBoard's Profile tab, or profile the run with nsys profile "
            "--trace=cuda and import its SQLite export (nsys export --type sqlite)"
        )
    return None
