"""Renderers do not import each other, and the analysis imports no renderer: read from the source's import
statements (ast), so a lazy import inside a function counts too. Subpackages count (tracekit/analysis/rules)."""

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
            if (
                node.level
            ):  # relative: resolved against the file's package (importers/ and dashboards/ ship in tracekit)
                parts = path.relative_to(REPO).parent.parts[: len(path.relative_to(REPO).parent.parts) - node.level + 1]
                package = ".".join(parts if parts[0] == "tracekit" else ("tracekit", *parts))
                module = f"{package}.{module}".rstrip(".")
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for path in sorted((REPO / folder).rglob("*.py")):
        hits = sorted(m for m in imports_of(path) if m.startswith(forbidden))
        if hits:
            bad[str(path.relative_to(REPO))] = hits
    return bad


def test_reports_do_not_import_the_dashboard():
    assert offending("tracekit/reports", ("tracekit.dashboards", "dashboards", "dash")) == {}


def test_dashboard_does_not_import_the_report_renderers():
    assert offending("dashboards", ("tracekit.reports.html", "tracekit.reports.markdown")) == {}


def test_analysis_imports_no_renderer_or_io():
    """The analysis returns data: rules, advice and the predictor give template ids and values, and
    `tracekit/present/rules/` words them (one file per rule, as `tracekit/analysis/rules/` has them). So the analysis
    imports no wording (`tracekit.present`), no number formatting (`tracekit.format`) and no renderer."""
    forbidden = ("tracekit.reports", "tracekit.dashboards", "tracekit.cli", "tracekit.store", "tracekit.present")
    forbidden += ("tracekit.figures", "plotly", "dash", "rich", "typer", "sqlalchemy", "tracekit.format")
    # the device ceilings' types are data; reading a profile file or running calibrate is I/O
    forbidden += ("tracekit.ceilings.lookup", "tracekit.ceilings.profile", "tracekit.ceilings.calibrate")
    assert offending("tracekit/analysis", forbidden) == {}
    assert not (REPO / "tracekit/analysis/rules/render.py").exists()


def test_every_rule_has_its_words_beside_the_presentation():
    """One file of words per rule: `tracekit/present/rules/<rule>.py` for each `tracekit/analysis/rules/<rule>.py`
    that finds something (base.py holds the types)."""
    rules = {p.name for p in (REPO / "tracekit/analysis/rules").glob("*.py")} - {"__init__.py", "base.py"}
    words = {p.name for p in (REPO / "tracekit/present/rules").glob("*.py")}
    assert rules and rules <= words


def test_tracekit_format_is_pure():
    forbidden = ("tracekit.reports", "tracekit.dashboards", "tracekit.cli", "tracekit.store", "plotly", "dash")
    forbidden += ("tracekit.analysis",)  # present/rules words the analysis's data through format: format stays below
    assert not [m for m in imports_of(REPO / "tracekit/format.py") if m.startswith(forbidden + ("rich", "sqlalchemy"))]


def test_one_formatting_module_for_every_renderer():
    """CLI, reports and dashboard pages format numbers and kernel names through tracekit.format."""
    users = [
        "tracekit/cli/analyze_command.py",
        "tracekit/cli/store_commands.py",
        "tracekit/cli/summary_command.py",
        "tracekit/reports/content.py",
        "tracekit/matching.py",
        "dashboards/panels.py",
        "dashboards/pages_launch.py",
        "dashboards/pages_compare.py",
        "dashboards/pages_library.py",
    ]
    for name in users:
        assert any(m == "tracekit.format" or m.startswith("tracekit.format.") for m in imports_of(REPO / name)), name


# What each folder may import of tracekit (its own modules always). The dashboard reads through the one door
# (`tracekit.api`: results, the catalog, figure aggregates, regions, the what-if) and shows what `tracekit.present`
# decided, drawn by `tracekit.figures` and written by `tracekit.format`; files enter the store through
# `tracekit.ingest` (and its scratch folder), on the upload page only.
DASHBOARD_MAY_IMPORT = ("tracekit.api", "tracekit.present", "tracekit.figures", "tracekit.format", "tracekit.errors")
WRITERS_MAY_ALSO_IMPORT = {"dashboards/pages_upload.py": ("tracekit.scratch",)}  # files enter through the door
WRITERS_MAY_ALSO_IMPORT["dashboards/app.py"] = ("tracekit.scratch",)  # a killed worker's uploads, removed at start


def _outside(module: str, allowed: tuple[str, ...]) -> bool:
    if module == "tracekit" or not (module.startswith("tracekit.") or module.startswith(("dashboards", "importers"))):
        return False  # a library, or the bare package of `from tracekit import format`
    return not any(module == prefix or module.startswith(prefix + ".") for prefix in allowed)


def test_the_dashboard_reads_only_through_the_api():
    bad = {}
    for path in sorted((REPO / "dashboards").rglob("*.py")):
        name = str(path.relative_to(REPO))
        allowed = (*DASHBOARD_MAY_IMPORT, "tracekit.dashboards", *WRITERS_MAY_ALSO_IMPORT.get(name, ()))
        hits = sorted(m for m in imports_of(path) if _outside(m, allowed))
        if hits:
            bad[name] = hits
    assert bad == {}


def test_the_layers_check_sees_a_forbidden_import(tmp_path):
    """The check above on a file that goes around the door (so it cannot pass for want of reading imports)."""
    page = REPO / "dashboards" / "pages_library.py"
    found = imports_of(page)
    assert "tracekit.api" in found and not any(
        _outside(m, DASHBOARD_MAY_IMPORT + ("tracekit.dashboards",)) for m in found
    )
    odd = tmp_path / "page.py"
    odd.write_text("from tracekit.store.schema import LaunchRow\nfrom tracekit.analysis import timeline\n")
    assert sorted(m for m in imports_of(odd) if _outside(m, DASHBOARD_MAY_IMPORT)) == [
        "tracekit.analysis",
        "tracekit.analysis.timeline",
        "tracekit.store.schema",
        "tracekit.store.schema.LaunchRow",
    ]


def test_errors_and_the_result_types_import_nothing_above_them():
    """errors.py is the ground floor (the store words a driver's error itself); the engine's result type knows no
    display (the notebook's is mixed in by `api.LaunchResult`)."""
    assert not [m for m in imports_of(REPO / "tracekit/errors.py") if m.startswith("tracekit")]
    assert not [
        m
        for m in imports_of(REPO / "tracekit/analysis/types.py")
        if m.startswith(("tracekit.notebook", "tracekit.figures", "tracekit.present"))
    ]


def test_the_store_imports_no_analysis_and_no_renderer():
    """The store sits below the analysis (the catalog's metric names come from `tracekit.counters`, beside it)."""
    forbidden = ("tracekit.analysis", "tracekit.api", "tracekit.reports", "tracekit.dashboards", "tracekit.cli")
    forbidden += ("tracekit.present", "tracekit.figures", "tracekit.format", "tracekit.ingest")
    assert offending("tracekit/store", forbidden) == {}


# ---- the CLI, present/, importers/ and the door ----------------------------------------------------------------

# The CLI parses, asks the door and prints what `tracekit.present` words: it computes nothing itself. Of the
# analysis it names types only (classes, for its signatures); of the store, the `Store` it opens and the URL rules.
CLI_MAY_IMPORT = ("tracekit.api", "tracekit.present", "tracekit.format", "tracekit.errors", "tracekit.cli")
CLI_MAY_IMPORT += ("tracekit.selection", "tracekit.ingest", "tracekit.scratch", "tracekit.steps", "tracekit.reports")
CLI_MAY_IMPORT += ("tracekit.ceilings", "tracekit.dashboards", "tracekit.store.engine")  # calibrate, serve
CLI_MAY_IMPORT += ("tracekit.allocator",)  # the process's own setting, as scratch's signal handlers


def _cli_outside(module: str) -> bool:
    if module == "tracekit.store.Store":
        return False
    if module.startswith("tracekit.analysis."):  # a type (a class name) for a signature, not a function
        return not module.rsplit(".", 1)[-1][:1].isupper()
    return _outside(module, CLI_MAY_IMPORT)


def test_the_cli_goes_through_the_api():
    bad = {}
    for path in sorted((REPO / "tracekit/cli").rglob("*.py")):
        hits = sorted(m for m in imports_of(path) if _cli_outside(m) and not _is_package_of_a_type(m, path))
        if hits:
            bad[str(path.relative_to(REPO))] = hits
    assert bad == {}


def _is_package_of_a_type(module: str, path: Path) -> bool:
    """`from tracekit.analysis.types import LaunchAnalysis` records the module too: allowed when every name taken
    from it is a type (and from `tracekit.store`, its `Store`)."""
    names = [m.rsplit(".", 1)[-1] for m in imports_of(path) if m.startswith(module + ".")]
    if module == "tracekit.store":
        return names == ["Store"]
    return module.startswith("tracekit.analysis") and bool(names) and all(n[:1].isupper() for n in names)


def test_the_cli_check_sees_a_function_taken_from_the_analysis(tmp_path):
    odd = tmp_path / "command.py"
    odd.write_text("from tracekit.analysis.comparison import compare_results\nfrom tracekit.store.regions import r\n")
    assert sorted(m for m in imports_of(odd) if _cli_outside(m) and not _is_package_of_a_type(m, odd)) == [
        "tracekit.analysis.comparison",
        "tracekit.analysis.comparison.compare_results",
        "tracekit.store.regions",
        "tracekit.store.regions.r",
    ]


def test_present_words_without_reading_or_rendering():
    """`tracekit.present` decides and words what a view shows from results already computed: no store, no door,
    no renderer (plotly's dicts are built by `tracekit.figures`)."""
    forbidden = ("tracekit.store", "tracekit.stored", "tracekit.api", "tracekit.cli", "tracekit.reports")
    forbidden += ("tracekit.dashboards", "dashboards", "dash", "typer", "rich", "sqlalchemy", "tracekit.ingest")
    assert offending("tracekit/present", forbidden) == {}


def test_the_readers_import_no_analysis_store_or_view():
    """A reader only produces the common structure (`ParsedImport`): it never analyses, stores or shows."""
    forbidden = ("tracekit.analysis", "tracekit.store", "tracekit.stored", "tracekit.api", "tracekit.present")
    forbidden += ("tracekit.cli", "tracekit.reports", "tracekit.dashboards", "dashboards", "dash", "typer", "rich")
    forbidden += ("tracekit.figures", "plotly")
    assert offending("importers", forbidden) == {}


def test_the_door_and_what_it_delegates_to_import_no_view():
    """`tracekit.api` and `tracekit.stored` sit below every view: no CLI, report, dashboard or wording layer, except
    the words of the analysis's data (`tracekit.present.rules`, pure functions of results): `stored` words each
    result once, when computed, and hands out only worded results, so every view shows the same sentences."""
    forbidden = ("tracekit.cli", "tracekit.reports", "tracekit.dashboards", "dashboards", "tracekit.present")
    forbidden += ("dash", "typer", "rich", "tracekit.figures")
    bad = offending("tracekit/stored", forbidden + ("tracekit.api",))
    assert {path: [m for m in hits if not m.startswith("tracekit.present.rules")] for path, hits in bad.items()} == {
        path: [] for path in bad
    }
    assert not [m for m in imports_of(REPO / "tracekit/api.py") if m.startswith(forbidden)]
    # the words import no view and nothing above them
    above = ("tracekit.stored", "tracekit.api", "tracekit.present.launch", "tracekit.present.prediction")
    assert offending("tracekit/present/rules", above + ("tracekit.notebook",)) == {}


def _store_uses(path: Path) -> list[int]:
    """The lines of `path` where code (not a string or a comment) reads an object named `store` or `.store`."""
    import io
    import tokenize

    tokens = [t for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)]
    return [
        token.start[0]
        for index, token in enumerate(tokens)
        if token.type == tokenize.NAME
        and token.string == "store"
        and (index + 1 < len(tokens) and tokens[index + 1].string == ".")
        or (token.string == "store" and index and tokens[index - 1].string == ".")
    ]


def test_the_dashboard_never_sees_a_store():
    """The pages hold the door (`TraceAnalysis`): catalog, delete and upload go through its methods."""
    found = {str(p.relative_to(REPO)): _store_uses(p) for p in sorted((REPO / "dashboards").rglob("*.py"))}
    assert {path: lines for path, lines in found.items() if lines} == {}
    assert not any(m.endswith(".Store") or m.startswith("tracekit.store") for m in _dashboard_imports())


def _dashboard_imports() -> set[str]:
    return {m for path in (REPO / "dashboards").rglob("*.py") for m in imports_of(path)}


def test_the_store_check_sees_a_store_read(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('TEXT = "not in the store."\n\n\ndef f(store, cache):\n    return store.launches(), cache.store\n')
    assert _store_uses(page) == [5, 5]


def test_the_door_is_thin():
    """`tracekit.api` forwards, as HTA's `TraceAnalysis` does: under 300 lines, no `Any` in a signature, each
    function and method a docstring and at most three statements (the work is in `tracekit.stored` and the
    analysis)."""
    source = (REPO / "tracekit/api.py").read_text()
    assert len(source.splitlines()) < 300
    tree = ast.parse(source)
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    assert len(functions) > 30
    for function in functions:
        annotations = [a.annotation for a in (*function.args.args, *function.args.kwonlyargs) if a.annotation]
        annotations += [a.annotation for a in (function.args.vararg, function.args.kwarg) if a and a.annotation]
        annotations += [function.returns] if function.returns else []
        names = {n.id for a in annotations for n in ast.walk(a) if isinstance(n, ast.Name)}
        names |= {n.value for a in annotations for n in ast.walk(a) if isinstance(n, ast.Constant)}
        assert "Any" not in names and not any("Any" in str(n) for n in names), function.name
        body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        assert len(body) <= 3, function.name
