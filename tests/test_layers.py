"""Renderers do not import each other, and the analysis imports no renderer: read from the source's import
statements (ast), so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolved against the file's package folder
                package = path.parent.name
                module = f"tracekit.{'dashboards' if package == 'dashboards' else package}.{module}".rstrip(".")
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for path in sorted((REPO / folder).glob("*.py")):
        hits = sorted(m for m in imports_of(path) if m.startswith(forbidden))
        if hits:
            bad[str(path.relative_to(REPO))] = hits
    return bad


def test_reports_do_not_import_the_dashboard():
    assert offending("tracekit/reports", ("tracekit.dashboards", "dashboards", "dash")) == {}


def test_dashboard_does_not_import_the_report_renderers():
    assert offending("dashboards", ("tracekit.reports.html", "tracekit.reports.markdown")) == {}


def test_analysis_imports_no_renderer_or_io():
    forbidden = ("tracekit.reports", "tracekit.dashboards", "tracekit.cli", "tracekit.store", "tracekit.format")
    forbidden += ("tracekit.figures", "plotly", "dash", "rich", "typer", "sqlalchemy")
    assert offending("tracekit/analysis", forbidden) == {}


def test_one_formatting_module_for_every_renderer():
    """CLI, reports and dashboard pages format numbers and kernel names through tracekit.format."""
    users = [
        "tracekit/cli/analyze_command.py",
        "tracekit/cli/store_commands.py",
        "tracekit/cli/summary_command.py",
        "tracekit/reports/content.py",
        "tracekit/reports/pairing.py",
        "dashboards/panels.py",
        "dashboards/pages_launch.py",
        "dashboards/pages_compare.py",
        "dashboards/pages_library.py",
    ]
    for name in users:
        assert any(m == "tracekit.format" or m.startswith("tracekit.format.") for m in imports_of(REPO / name)), name
