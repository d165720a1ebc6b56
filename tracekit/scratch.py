"""Temporary files that never outlive their process for long.

Every temporary file or folder tracekit makes (an inflated gzip, an upload, the .ncu-rep reader's output) lives
in one folder per user, `$TMPDIR/tracekit-<uid>/`, named `<kind>-<pid>-<random>`. Context managers remove them
when the work ends, also on Ctrl-C and, in the CLI, on SIGTERM/SIGHUP (turned into a normal exit so that those
`finally` blocks run). What a SIGKILL leaves behind is removed by the next tracekit process that starts
(`remove_stale`): an entry whose process no longer runs is stale.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
from pathlib import Path

ENTRY = re.compile(r"^[a-z0-9-]+?-(\d+)-")


def scratch_dir() -> Path:
    """This user's folder for tracekit's temporary files (created private, refused if someone else owns it)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"tracekit-{uid}"
    with contextlib.suppress(FileExistsError):  # a file or link of that name: refused just below
        folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != uid):
        # a symlink or another user's folder in a shared /tmp: do not write there
        return Path(tempfile.mkdtemp(prefix=f"tracekit-{uid}-"))
    return folder


def prefix(kind: str) -> str:
    """`kind-<pid>-`: the name start that ties a temporary entry to the process that made it."""
    return f"{kind}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(folder: Path | None = None) -> list[Path]:
    """Remove entries left by processes that no longer run (killed with SIGKILL, or by a crash)."""
    folder = folder or scratch_dir()
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = ENTRY.match(entry.name)
        if not match or _alive(int(match.group(1))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
        except OSError:
            continue
    return removed


def remove_own(folder: Path | None = None) -> None:
    """Remove this process's own entries: on the way out, whatever a signal interrupted (even between a temporary
    file's creation and the code that would have removed it)."""
    folder = folder or scratch_dir()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = ENTRY.match(entry.name)
        if not match or int(match.group(1)) != os.getpid():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def exit_on_termination() -> None:
    """SIGTERM and SIGHUP end the process as an exception would, so temporary files are removed on the way out
    (only from the main thread, where Python delivers signals)."""

    def handler(signum: int, _frame) -> None:
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) in (signal.SIG_DFL, None):
            signal.signal(number, handler)
