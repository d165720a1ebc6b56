"""What the store keeps for the door: its launch catalog, read again only when the launches change, and each
launch's analysis, keyed by engine version and by a digest of the launch's pairing context (`pairing_candidates`):
an import or a delete that changes the context recomputes it.

A result is kept worded (`tracekit.present.rules` words the analysis's data once, when it is computed: wording it at
every read cost 1-2 ms a launch, seconds for a library page of a few thousand launches), so the cache's version is
the engine's and a digest of the words and their number formatting: a changed sentence is never read stale."""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from tracekit.analysis.engine import ENGINE_VERSION
from tracekit.analysis.pairing import pairing_candidates
from tracekit.analysis.types import LaunchAnalysis, from_json_dict, to_cache_text
from tracekit.notebook import NotebookDisplay
from tracekit.present.rules.worded import worded
from tracekit.store import Store


class LaunchResult(NotebookDisplay, LaunchAnalysis):
    """A launch's analysis as the door hands it out: the engine's result, which in a notebook displays itself
    (`_repr_html_`) and gives its plotly figures (`.figure(name)`). The engine's type knows no display."""


def _words_version() -> str:
    """A digest of the code that words a result (`tracekit/present/rules/`, `tracekit/format.py`)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in [*sorted((root / "present" / "rules").glob("*.py")), root / "format.py"]:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# What a cached result was computed and worded by.
CACHE_VERSION = f"{ENGINE_VERSION}+{_words_version()}"

_FIELDS = tuple(f.name for f in LaunchAnalysis.__dataclass_fields__.values())


def handed_out(result: LaunchAnalysis) -> LaunchResult:
    """`result` as a `LaunchResult` (the same fields), worded by `tracekit.present.rules` (a no-op for a result
    computed or read from the cache here, which are worded already)."""
    result = worded(result)
    if isinstance(result, LaunchResult):
        return result
    return LaunchResult(**{name: getattr(result, name) for name in _FIELDS})


_CATALOGS: weakref.WeakKeyDictionary[Store, tuple[tuple[int, int], pl.DataFrame]] = weakref.WeakKeyDictionary()
_CATALOG_LOCK = threading.Lock()


def launch_catalog(store: Store) -> pl.DataFrame:
    """The store's launches (`Store.launches()`), read again only when its launches changed (one cheap query,
    `Store.launch_fingerprint`, where reading 100k launches takes about a second); kept per store object."""
    fingerprint = store.launch_fingerprint()
    with _CATALOG_LOCK:
        kept = _CATALOGS.get(store)
        if kept is not None and kept[0] == fingerprint:
            return kept[1]
        frame = store.launches()
        _CATALOGS[store] = (fingerprint, frame)
        return frame


def context_digests(context: Mapping[int, list[int]], overrides: Mapping[int, int]) -> dict[int, str]:
    """Each launch's context digest, computed once per distinct context (the launches of one kernel share theirs:
    a digest per launch hashed 100k launches' contexts of 7k ids each)."""
    by_context: dict[int, str] = {}
    digests = {}
    for launch_id, ids in context.items():
        key = id(ids)  # `pairing_candidates` gives the launches of one context the same list
        if key not in by_context:
            members = set(ids)
            relevant = sorted((k, v) for k, v in overrides.items() if k in members)
            by_context[key] = hashlib.sha256(json.dumps([ids, relevant]).encode()).hexdigest()
        digests[launch_id] = by_context[key]
    return digests


def cached_analyses(store: Store, digests: Mapping[int, str]) -> dict[int, LaunchAnalysis]:
    """The stored results of these launches that this engine computed in the same context (by digest)."""
    cached = store.cached_results(list(digests), CACHE_VERSION)
    return {
        launch_id: from_json_dict(LaunchResult, json.loads(text))
        for launch_id, (digest, text) in cached.items()
        if digests.get(launch_id) == digest
    }


def keep_analyses(store: Store, digests: Mapping[int, str], results: Mapping[int, LaunchAnalysis]) -> None:
    """Keep `results` in the store, worded, under the cache's version and each launch's context digest."""
    store.save_results(CACHE_VERSION, {i: (digests[i], to_cache_text(worded(r))) for i, r in results.items()})


def cached_result(store: Store, launch_id: int, pair: int | None = None) -> LaunchAnalysis | None:
    """The launch's analysis if the store holds it for the launch's current context, else None; nothing is
    computed (the dashboard draws a big launch's page first and asks `analyze_stored` for its verdict after)."""
    launch = store.launches(launch_ids=[launch_id])
    if launch.height == 0:
        return None
    overrides = {launch_id: pair} if pair is not None else {}
    context = pairing_candidates(launch_catalog(store), launch)
    found = cached_analyses(store, context_digests(context, overrides)).get(launch_id)
    return handed_out(found) if found is not None else None
