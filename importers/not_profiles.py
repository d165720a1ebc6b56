"""Files ML engineers keep beside their profiles that are no GPU timeline: each named for what it is, with the
file that holds the timeline instead (the refusal's one line; no reader takes them).

Judged by content, from the formats' documented signatures:
- a PyTorch Execution Trace (`torch.profiler.ExecutionTraceObserver`): a JSON object with `schema` and a `nodes`
  list of operators carrying `op_schema`, `inputs`, `outputs` (the graph of ops, without GPU timing);
- a TensorBoard event file (`events.out.tfevents.*`): TFRecord framing (8-byte length, 4-byte CRC) around `Event`
  protos, the first of which carries the file version `brain.Event:2`;
- DLProf's CSV reports (`dlprof --reports=...`, `dlprof_<report>.csv`): a title line (`Kernel Report`, `Iteration
  Report`, `System Config`, ...) above the report's own header (`Kernel Name,Op ID,Op Name,...`);
- a TraceLens performance report sheet exported as CSV (`<trace>_perf_report_csvs/<sheet>.csv`: gpu_timeline,
  ops_summary, kernel_summary, a per-category roofline sheet such as GEMM, ...): a header whose columns are
  TraceLens's own (`total_direct_kernel_time_sum`, `Parent cpu_op`, `Kernel Time (µs)_mean`, `type,time ms,percent`);
- DLProf's database (`dlprof_dldb.sqlite`): SQLite with DLProf's tables (`read_only_ops`, `read_only_kernels`,
  `db_version`, ...), judged from the table list (`sqlite_not_a_profile`, which the SQLite reader asks), as its
  schema sits beyond the first 64 KiB.
A TensorFlow profiler page (`<host>.overview_page.pb`, `.input_pipeline.pb`, ...) is a bare protobuf with no
signature, and a Visual Profiler session saved by the GUI is an XML document under the same `.nvvp` name as
nvprof's SQLite data: like nsys's capture stream, their file names are read for the refusal only.
"""

from __future__ import annotations

import re

_EXECUTION_TRACE = re.compile(rb'^\{\s*"schema"\s*:\s*"[^"]*".{0,400}?"nodes"\s*:\s*\[', re.DOTALL)
_ET_NODE = re.compile(rb'"op_schema"\s*:|"input_shapes"\s*:')
_TFRECORD_EVENT = b"brain.Event:"
_TF_PROFILE_PAGE = re.compile(
    r"[._](overview_page|input_pipeline|tensorflow_stats|kernel_stats|memory_profile|pod_viewer|xplane)\.pb$"
)
# DLProf's reports: the report's title line, then its header (v1.8.0, the last release).
_DLPROF_REPORT = re.compile(
    rb"^(?:\xef\xbb\xbf)?(?P<title>[^\r\n,]{1,60})\r?\n(?:"
    rb"Op ID,Op Name,Direction,Op Type,|Iteration,Op ID,Op Name,|Kernel Name,Op ID,Op Name,"
    rb"|Op Type,# Ops,# Calls,|Name,Num Calls Aggregated,|Problem,Recommendation\r?\n|GPU Count,)"
)
# The reports' titles, as the refusal names them (dlprof_summary.csv opens with its System Config block, the
# detailed report's title is its iteration range).
_DLPROF_TITLES = {
    b"System Config": "Summary Report: ",
    b"All Iterations": "Detailed Report, All Iterations: ",
    **{
        title.encode(): f"{title}: "
        for title in (
            "Iteration Report",
            "Kernel Report",
            "Op Type Summary Report",
            "Tensor Core Report",
            "Expert Systems Feedback",
            "Group Op Report",
        )
    },
}
# TraceLens's sheets: columns no profiler's own CSV has, in the header (the first line; never JSON's or XML's).
_TRACELENS_HEADER = re.compile(
    rb"^(?:\xef\xbb\xbf)?(?![\s{\[<])(?:type,time ms[,_]"
    rb"|[^\r\n]*(?:total_direct_kernel_time|Parent cpu_op|Short Kernel duration \(\xc2\xb5s\)"
    rb"|Kernel duration \(\xc2\xb5s\)_|Kernel Time \(\xc2\xb5s\)_|kernel_details__summarize_kernel_stats"
    rb"|trunc_kernel_details))"
)
_XML = re.compile(rb"^(?:\xef\xbb\xbf)?\s*<(?:\?xml|[A-Za-z_])")
# Tables every DLProf database holds (its schema of v1.x); an Nsight Systems export has none of them.
DLPROF_TABLES = frozenset({"db_version", "read_only_ops", "read_only_kernels", "read_only_op_instances"})
_DLPROF_NSYS = (
    "import the Nsight Systems export DLProf recorded beside it (nsys_profile.sqlite by default; from the report "
    "alone: nsys export --type sqlite nsys_profile.nsys-rep, or .qdrep before nsys 2021.4)"
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
    dlprof = _DLPROF_REPORT.match(head)
    if dlprof:
        report = _DLPROF_TITLES.get(dlprof.group("title").strip(), "")  # never the file's own text
        return (
            f"a DLProf CSV report ({report}a table DLProf computed from an Nsight Systems profile), not a profile: "
            f"{_DLPROF_NSYS}"
        )
    if _TRACELENS_HEADER.match(head):
        return (
            "a TraceLens performance report sheet (a table TraceLens computed from a profiler trace), not a trace: "
            "import the trace it was computed from (for a PyTorch run, the profiler's .pt.trace.json given to "
            "TraceLens_generate_perf_report_pytorch)"
        )
    if name.lower().endswith(".nvvp") and _XML.match(head):
        return (
            "a Visual Profiler session file (XML the GUI saved, not the SQLite database nvprof writes under the "
            "same .nvvp name): import the nvprof output the session was made from (nvprof -o FILE.nvvp), or "
            "re-record with Nsight Systems (nsys profile --trace=cuda, then nsys export --type sqlite)"
        )
    match = _TF_PROFILE_PAGE.search(name)
    if match and not head.lstrip().startswith((b"{", b"[")):
        return (
            f"a TensorFlow profiler protobuf ({match.group(1)}.pb, one page of TensorBoard's Profile tab), which "
            "tracekit does not read: open it in TensorBoard's Profile tab, or profile the run with nsys profile "
            "--trace=cuda and import its SQLite export (nsys export --type sqlite)"
        )
    return None


def sqlite_not_a_profile(tables: set[str]) -> str | None:
    """What an SQLite file with these tables is, when it is one of the module docstring's; else None."""
    if DLPROF_TABLES.issubset(tables):
        return (
            "a DLProf database (dlprof_dldb: the operators, kernels and per-iteration aggregates DLProf computed "
            f"from an Nsight Systems profile for its viewer), not a profile export: {_DLPROF_NSYS}"
        )
    return None
