"""How `tracekit report` scales: 1,000 Nsight Compute launches, and one 10M-warp trace.

Builds both inputs in a temporary folder:
- a 1,000-launch `ncu --page raw` CSV made by repeating the data rows of a real export
  (../shared/real_exports/ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv, 16 launches of one kernel), with new IDs;
- a synthetic warp trace in the documented `tracekit-warp-trace v1` CSV layout (132 SMs, 8 warps per block,
  blocks dealt to SMs in waves, warps of 20-40 us).
For each it imports the file into a fresh SQLite store (`tracekit import`), then times, in separate processes,
`tracekit analyze --json` (the baseline: the analysis alone) and `tracekit report --format html|md` on the
stored import, printing wall time, the process's peak RSS and the output's size next to the targets
(about a minute, 2.5 GB, an HTML file small enough to open).

Usage: python benchmarks/bench_report.py [--launches 1000] [--warps 10000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
NCU_RAW = REPO.parent / "shared" / "real_exports" / "ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv"
TARGET_S, TARGET_RSS_GB, TARGET_HTML_MB = 60.0, 2.5, 25.0
SM_COUNT, WARPS_PER_BLOCK = 132, 8


def ncu_raw_with_launches(path: Path, launches: int) -> None:
    """Repeat the real export's data rows until there are `launches`, numbering the IDs afresh."""
    lines = NCU_RAW.read_text().splitlines()
    prof = [line for line in lines if line.startswith("==")]
    rows = list(csv.reader(line for line in lines if not line.startswith("==")))
    header, units, data = rows[0], rows[1], rows[2:]
    id_column = header.index("ID")
    with open(path, "w", newline="") as handle:
        handle.write("\n".join(prof) + "\n")
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(header)
        writer.writerow(units)
        for launch in range(launches):
            row = list(data[launch % len(data)])
            row[id_column] = str(launch)
            writer.writerow(row)


def warp_trace(path: Path, warps: int) -> None:
    blocks = -(-warps // WARPS_PER_BLOCK)
    resident_blocks = SM_COUNT * 8
    frame = (
        pl.DataFrame({"row": pl.int_range(warps, eager=True, dtype=pl.Int64)})
        .select(
            ((pl.col("row") // WARPS_PER_BLOCK) % SM_COUNT).alias("sm_id"),
            (pl.col("row") // WARPS_PER_BLOCK).alias("block_id"),
            (pl.col("row") % WARPS_PER_BLOCK).alias("warp_in_block"),
            (
                1_700_000_000_000_000_000
                + (pl.col("row") // WARPS_PER_BLOCK // resident_blocks) * 45_000
                + (pl.col("row") * 7919) % 5_000
            ).alias("start_ns"),
            (20_000 + (pl.col("row") * 104_729) % 20_000).alias("latency_ns"),
        )
        .with_columns(end_ns=pl.col("start_ns") + pl.col("latency_ns"))
        .drop("latency_ns")
    )
    header = (
        "# tracekit-warp-trace v1\n# kernel: synthetic_10M\n# device_name: NVIDIA H100 80GB HBM3\n"
        f"# compute_capability: 9.0\n# sm_count: {SM_COUNT}\n# sm_clock_hz: 1980000000\n"
        f"# max_warps_per_sm: 64\n# grid: {blocks},1,1\n# block: {WARPS_PER_BLOCK * 32},1,1\n"
        "# registers_per_thread: 32\n"
    )
    with open(path, "w") as handle:
        handle.write(header)
        frame.write_csv(handle)


def run(args: list[str], stdout_path: Path | None = None) -> tuple[float, float]:
    """Run `tracekit ARGS` in a child process; (wall seconds, the child's peak RSS in GB)."""
    command = [sys.executable, "-m", "tracekit.cli.main", *args]
    started = time.perf_counter()
    with open(stdout_path or os.devnull, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    stderr = process.stderr.read()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"tracekit {' '.join(args)} failed:\n{stderr}")
    return elapsed, usage.ru_maxrss / 1024**2  # ru_maxrss is in KiB on Linux


def import_id(db: str, path: Path) -> str:
    subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "import", "--db", db, str(path)], check=True, capture_output=True
    )
    from tracekit.store import Store

    imports = Store.open(db).imports()
    return str(int(imports["id"].max()))


def bench_case(name: str, source: Path, folder: Path) -> None:
    slug = name.replace(",", "").replace(" ", "_")
    db = f"sqlite:///{folder / f'{slug}.sqlite'}"
    started = time.perf_counter()
    reference = import_id(db, source)
    print(f"\n{name}: input {source.stat().st_size / 1e6:,.1f} MB, import {time.perf_counter() - started:,.1f} s")
    print(f"  {'step':<24}{'wall s':>9}{'peak RSS GB':>13}{'output MB':>11}   target")
    steps = [
        ("analyze --json (baseline)", ["analyze", "--db", db, "--json", reference], "analysis.json"),
        ("report --format md", ["report", "--db", db, "--format", "md", reference], "report.md"),
        ("report --format html", ["report", "--db", db, reference, "-o", str(folder / f"{slug}.html")], None),
    ]
    for label, args, stdout_name in steps:
        out = folder / f"{slug}.{stdout_name}" if stdout_name else None
        elapsed, rss_gb = run(args, out)
        written = out if out else folder / f"{slug}.html"
        size_mb = written.stat().st_size / 1e6
        target = f"<= {TARGET_S:.0f} s, <= {TARGET_RSS_GB} GB" + (
            f", <= {TARGET_HTML_MB:.0f} MB" if "html" in label else ""
        )
        print(f"  {label:<24}{elapsed:>9.1f}{rss_gb:>13.2f}{size_mb:>11.1f}   {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=1000)
    parser.add_argument("--warps", type=int, default=10_000_000)
    parser.add_argument("--keep", type=Path, help="write the inputs and outputs here and keep them")
    options = parser.parse_args()
    if not NCU_RAW.exists():
        raise SystemExit(f"{NCU_RAW} is absent (the shared real exports live beside the checkout)")
    with tempfile.TemporaryDirectory(prefix="bench_report_") as scratch:
        folder = options.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        ncu_path = folder / f"ncu_raw_{options.launches}_launches.csv"
        ncu_raw_with_launches(ncu_path, options.launches)
        bench_case(f"{options.launches} ncu launches", ncu_path, folder)
        trace_path = folder / f"warp_trace_{options.warps}.csv"
        started = time.perf_counter()
        warp_trace(trace_path, options.warps)
        print(f"\n(synthetic trace of {options.warps:,} warps written in {time.perf_counter() - started:.1f} s)")
        bench_case(f"{options.warps:,} warps", trace_path, folder)


if __name__ == "__main__":
    main()
