"""`tracekit --help` starts without the heavy modules, and still lists and runs every command."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracekit.cli.main import COMMANDS, app, command_help

HEAVY = ("polars", "sqlalchemy", "alembic", "plotly", "dash", "tracekit.api", "tracekit.store", "numpy")


def test_help_imports_none_of_the_heavy_modules() -> None:
    code = (
        "import sys\nfrom tracekit.cli.main import main\nsys.argv = ['tracekit', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert "analyze" in result.stdout


def test_the_registry_names_every_command_module() -> None:
    """Each command module's functions ending in _command are registered, under the docstring they carry."""
    folder = Path(__file__).resolve().parents[2] / "tracekit" / "cli"
    registered = set(COMMANDS.values())
    for path in sorted(set(folder.glob("*.py")) - {folder / "main.py"}):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_command") and not node.name.startswith("_"):
                assert (path.stem, node.name) in registered, f"{path.name}:{node.name} is not in COMMANDS"
    for name in COMMANDS:
        assert command_help(name), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_loads_and_shows_its_help(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    first_words = " ".join(command_help(name).split()[:4])
    assert first_words in " ".join(result.output.split())


def test_top_level_help_lists_each_command_with_its_docstring() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for name in COMMANDS:
        assert f"{name} {' '.join(command_help(name).split()[:3])}" in flat


# What importing an Nsight Compute details CSV never needs: the raw page's numpy, other readers' decoders, the
# migrations (the store is current), PostgreSQL's driver, the engine, renderers and the dashboard, and Rich's
# tables and progress bars when stderr is not a terminal.
NOT_FOR_DETAILS = (
    "numpy",
    "pandas",
    "pyarrow",
    "isal",  # the warp-trace reader's gzip check: detection imports only its sniff
    "plotly",
    "dash",
    "flask",
    "alembic",
    "psycopg",
    "sqlalchemy.dialects.postgresql",
    "rich.progress",
    "rich.table",
    "tracekit.api",
    "tracekit.analysis.engine",
    "tracekit.reports",
    "tracekit.dashboards",
)


def test_importing_a_details_csv_loads_only_what_it_needs(tmp_path: Path, sample_trace) -> None:
    from tracekit.store import Store

    details = sample_trace("h100/samples.details.csv")
    db = str(tmp_path / "store.sqlite")
    Store.open(db).engine.dispose()  # a current store, as after the first command
    code = (
        "import sys\nfrom tracekit.cli.main import main\n"
        f"sys.argv = ['tracekit', 'import', '--db', {db!r}, {str(details)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print(sorted(m for m in {NOT_FOR_DETAILS!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "[]"
    assert "samples.details.csv as import 1: 14 launches, 0 warps" in lines[0]
    assert Store.open(db).launches()["kernel_name"].len() == 14


def test_the_door_loads_no_statistics_or_cluster_library() -> None:
    """Every command that reads the store imports `tracekit.api`: scipy.stats (1.5 s to import, the job's t test)
    and Dask (the job's map) load when a job or a calibration runs, not with the door (a report of 1,008 launches
    went from 7.0x to 9.4x its floor when the door imported scipy.stats)."""
    code = (
        "import sys\nimport tracekit.api\n"
        "print(sorted(m for m in ('scipy.stats', 'scipy.optimize', 'dask', 'distributed') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


# What a cold `tracekit analyze --json` of a warp trace never needs: numpy (the steps', the job's and HTA's modules,
# which every command imports through the door, take it in the functions that use it; it cost the 10M-warp analyze
# about 0.1 s of start-up), scipy and Dask, the other readers' libraries, the migrations, renderers and the dashboard.
NOT_FOR_ANALYZE = (
    "numpy",
    "scipy",
    "dask",
    "distributed",
    "pandas",
    "pyarrow",
    "plotly",
    "dash",
    "flask",
    "alembic",
    "psycopg",
    "rich.progress",
    "rich.table",
    "tracekit.reports",
    "tracekit.dashboards",
    "tracekit.figures",
)


def test_analyzing_a_stored_warp_trace_loads_only_what_it_needs(tmp_path: Path, sample_trace) -> None:
    from tracekit.api import open as open_store

    db = str(tmp_path / "store.sqlite")
    open_store(db).import_file(str(sample_trace("h100/vector_add_08warps.csv.gz")))
    code = (
        "import sys\nfrom tracekit.cli.main import main\n"
        f"sys.argv = ['tracekit', 'analyze', '--db', {db!r}, '--json', 'import:1']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print('\\n' + repr(sorted(m for m in {NOT_FOR_ANALYZE!r} if m in sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    analysis, _, loaded = result.stdout.strip().rpartition("\n")
    assert loaded == "[]"
    [launch] = json.loads(analysis)
    assert launch["kernel"]["name"] == "vector_add" and launch["warps"]["count"] > 0


@pytest.mark.parametrize(
    ("preset", "expected"), [(None, "dirty_decay_ms:0,muzzy_decay_ms:0"), ("narenas:2", "narenas:2")]
)
def test_the_cli_asks_polars_to_return_freed_pages_before_polars_loads(preset, expected) -> None:
    """`tracekit` sets polars' allocator to return freed pages at once (`tracekit.allocator`: a parsed trace's pages
    do not stay through the replay, `benchmarks/bench_steps_memory.py`) before any command loads polars, which reads
    the setting once; a setting of the user's own is kept."""
    import os

    code = (
        "import os, sys\nfrom tracekit.cli.main import main\nsys.argv = ['tracekit', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('_RJEM_MALLOC_CONF'), 'polars' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if preset is not None:
        env["_RJEM_MALLOC_CONF"] = preset
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == f"{expected} False"
