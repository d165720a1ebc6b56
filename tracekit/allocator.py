"""polars' allocator (jemalloc) keeps the pages it freed a while before returning them (polars sets 0.5 s, more once
freed), so a process that parses a large trace and then replays it holds the parse's pages through the replay: one
home for the setting that returns them at once, for the CLI's process and the job's local workers. Measured on a
1M-kernel Kineto trace (513 MB), `tracekit step`'s default path: peak 1.17 GB kept, 965 MB returned at once, for
16% more time (`benchmarks/bench_steps_memory.py`)."""

from __future__ import annotations

import os

MALLOC_VARIABLE = "_RJEM_MALLOC_CONF"  # jemalloc's, as polars' build names it (polars appends it to its own; last wins)
RETURN_FREED_PAGES = "dirty_decay_ms:0,muzzy_decay_ms:0"


def return_freed_pages() -> None:
    """Ask this process's polars to return freed pages at once; to take effect, before polars loads here (its
    allocator reads the setting once). A setting the user made is kept."""
    os.environ.setdefault(MALLOC_VARIABLE, RETURN_FREED_PAGES)
