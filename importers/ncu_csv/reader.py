"""Nsight Compute CSV (`ncu --csv`): the details, raw and per-kernel summary pages, from a file or captured stdout.

The layout is told from the table header, never from the file name:
- details (`--page details`, the default): long form, one row per (launch, section, metric), plus rule rows.
  A metric row is named by its metric id where `ncu_names` maps its (section, label) pair, else by the label
  as shown; `section` keeps the section name. Rule rows become text metrics named `rule:<Rule Name>`, in the
  rule's section identifier (e.g. "SpeedOfLight"), with text_value `[<Rule Type>] <Rule Description>` and, where
  given, the Estimated Speedup as value (unit "%"). A 2025 "Body Item Label" column (`--print-details`) is kept
  in `section` as "<Section Name>: <Body Item Label>"; the name is still mapped by (Section Name, Metric Name).
  The 2019-2020 layouts (12 columns with "Kernel Time", section "GPU Speed Of Light" with "SOL FB" ...) map the
  same way through `ncu_names`, so their Duration fills duration_ns.
- raw (`--page raw`): wide, one row per launch with units in the second row; every non-empty metric cell becomes a
  metric row (ordered by metric column, then launch). Columns are parsed as numbers while reading where the first
  rows say so, which keeps thousand-launch files fast (`benchmarks/bench_import_ncu_csv.py`).
- per-kernel summary (`--print-summary per-kernel`): one launch per kernel and launch shape (the columns before
  "Section Name") with a metric `invocations`; each metric becomes three rows: `<name>` holds the Average,
  `<name>.min` the Minimum and `<name>.max` the Maximum. Launch fields (duration_ns, registers...) use the Average.

Cells: thousands separators ("4,194,688") and the dot-grouped locale style ("27.595.520", "1.234,5"; detected once
per file) are removed. Empty cells are dropped (the metric was not collected for that launch); "n/a" keeps the row
with a null value and text_value "n/a"; other text is kind "text". Numbers are kind "int" when integral (raw page:
when every launch's value in that column is), else "float". Metric-instance lists
(`--print-metric-instances values`: numbers separated by ";" or blanks) keep the cell as text_value and take the
mean of the instances as value. Units go through `normalize_unit` with values scaled; a per-block or per-thread
unit keeps its denominator ("Kbyte/block" -> "byte/block", x1000). Shared-memory sizes that the details page
prints rounded (Kbyte with two decimals) are made exact where they can be (the carveout and the driver's reserve
are whole KiB); a static or dynamic size that cannot keeps the printed cell and unit in text_value (`values`).

Launches are keyed by (Host Name, Process ID, ID) where those columns exist, since IDs repeat across processes.
Grid and block dimensions come from the "Grid Size"/"Block Size" columns, else from `launch__grid_dim_*` /
`launch__block_dim_*`, else from the 1-D `launch__grid_size` / `launch__block_size` as (n, 1, 1) (older details
pages print only the totals). NVTX columns (`--nvtx`) give `nvtx_path`: the push/pop stack outermost first, then
start/end ranges, joined with " > ". duration_ns is `gpu__time_duration.sum` ("Duration" in the Speed Of Light
section). The older layouts' "Kernel Time" (wall clock at profiling) is kept as a text metric. Lines before and
between table rows (==PROF==, ==WARNING==, ==ERROR==, application output) are skipped; ==WARNING== and ==ERROR==
lines are kept as warnings.

The device is the first launch's: `CC`, `device__attribute_*` (clock_rate is in kHz) with the per-SM limits in
`Device.extra`, else "# SMs" and, for max_warps_per_sm, Theoretical Active Warps per SM / Theoretical Occupancy.

The reader is split by concern, one module each in this package: `table` finds the table (the text, the header,
tool lines; the rows as a frame) and `refusals` says what a file without one is; `layouts` turns the details, summary
and raw pages into launches and metric rows, `values` parses cells and units, `launches` fills the launch fields and
the device, and `checks` refuses short rows and cells that must be numbers.
"""

from __future__ import annotations

from pathlib import Path

from tracekit.importers.ncu_csv.launches import fill_launch_fields, first_device, launch_metric_values
from tracekit.importers.ncu_csv.layouts import details_page, raw_page, summary_page
from tracekit.importers.ncu_csv.table import TOOL_LINE, decode_bytes, locate_table, parse_rows, read_bytes
from tracekit.parsed import LAUNCH_SCHEMA, METRIC_SCHEMA, ParsedImport, conform

FORMAT = "ncu-csv"
TOOL = "Nsight Compute"


def sniff(head: bytes) -> bool:
    """Nsight Compute CSV text: a table header naming "Kernel Name", or the profiler's own ==PROF== lines."""
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    text = decode_bytes(head, strict=False)
    for line in text.split("\n")[:500]:
        line = line.strip()
        if TOOL_LINE.match(line):
            return True
        if '"Kernel Name"' in line or (line.startswith("ID,") and ",Kernel Name," in line):
            return True
    return False


def read(path: Path, **options) -> ParsedImport:
    """Parse one Nsight Compute CSV; unknown options are ignored."""
    path = Path(path)
    table = locate_table(path, read_bytes(path))
    if "Metric Value" in table.header or ("Average" in table.header and "Metric Name" in table.header):
        layout = details_page if "Metric Value" in table.header else summary_page
        launches, metrics = layout(path, table, parse_rows(path, table))
        metrics = metrics.sort("_line", maintain_order=True)  # file order
        launch_values = launch_metric_values(path, metrics, launches)
    else:
        launches, metrics, launch_values = raw_page(path, table)  # metrics grouped by metric column
    launches = fill_launch_fields(launches, launch_values)
    warnings = [line for _, line in table.tool_lines if not line.startswith("==PROF==")]
    device, device_warnings = first_device(launches, metrics)
    return ParsedImport(
        format=FORMAT,
        tool=TOOL,
        device=device,
        launches=conform(launches, LAUNCH_SCHEMA),
        metrics=conform(metrics, METRIC_SCHEMA),
        warnings=warnings + device_warnings,
    )
