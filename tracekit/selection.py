"""What a command-line reference means: a file (imported on the way), an import id, or a launch id.

`7` or `import:7` is import 7, `launch:12` is launch 12, anything else is a path to a profiler file.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit.errors import NotFoundError, TracekitError
from tracekit.ingest import ingest
from tracekit.store import Store

_REF = re.compile(r"^(?:(import|launch):)?(\d+)$")


def named_import(reference: str) -> int | None:
    """The import `reference` names (`7`, `import:7`), or None (a launch id, a file)."""
    match = _REF.match(reference.strip())
    if match is None or Path(reference).exists() or match.group(1) == "launch":
        return None
    return int(match.group(2))


def resolve_launches(store: Store, reference: str, kernel: str | None = None) -> pl.DataFrame:
    """The stored launches `reference` names, optionally only those whose kernel name contains `kernel`."""
    match = _REF.match(reference.strip())
    if match and not Path(reference).exists():
        kind, number = match.group(1) or "import", int(match.group(2))
        if kind == "launch":
            launches = store.launches(launch_ids=[number])
            if launches.height == 0:
                raise NotFoundError(f"no launch with id {number} in {store.url}")
        else:
            store.get_import(number)  # raises NotFoundError with the store named
            launches = store.launches(import_id=number)
    else:
        result, _ = ingest(store, reference)
        launches = store.launches(import_id=result.import_id)
    if kernel:
        launches = launches.filter(pl.col("kernel_name").str.contains(kernel, literal=True))
        if launches.height == 0:
            raise TracekitError(f"{reference}: no launch of a kernel whose name contains {kernel!r}")
    return launches
