"""What a worker process needs of its parent: to start ignoring Ctrl-C, with its environment,
and to die with it."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import threading
import time
from collections.abc import Iterator


def die_with(parent: int) -> None:  # pragma: no cover - a worker
    """End this worker the moment its parent is gone (`kill -9` included): only the parent
    watches its memory and time. Linux kills it with the parent (`PR_SET_PDEATHSIG`); a
    thread that sees it adopted by another process ends it elsewhere, and closes the race
    of a parent that died before the first line ran."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    def orphaned() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL)
        os._exit(1)

    threading.Thread(target=orphaned, daemon=True).start()


#: How often a worker checks that its parent is alive, in seconds.
ORPHAN_POLL = 0.2


@contextlib.contextmanager
def no_ctrl_c() -> Iterator[None]:
    """Ctrl-C ignored while a worker starts, so that it starts ignoring it (an ignored signal
    stays ignored across exec, and Python then installs no handler): the parent decides, and
    a worker interrupted while it loads prints no traceback. Only the main thread may set a
    handler; elsewhere the worker ignores Ctrl-C once it runs (`_serve`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def environment(extra: dict[str, str]) -> Iterator[None]:
    """This process's environment with `extra` added, for the processes started meanwhile
    (a spawned worker inherits the environment it is started with)."""
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
