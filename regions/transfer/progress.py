"""The progress bar: rows, rows/s and the ETA, drawn by tqdm on stderr.

tqdm is an optional extra (``pip install -e '.[transfer]'``): without
it, or when stderr is not a terminal (unless forced), ``Progress`` draws
nothing and the tools still run.  ``update`` may be called from many
threads: one lock serialises them.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["Progress"]


class Progress:
    def __init__(self, total: int | None, desc: str, show: bool | None = None, file=None):
        file = file or sys.stderr
        if show is None:
            show = hasattr(file, "isatty") and file.isatty()
        self._bar = None
        self._lock = threading.Lock()
        if show:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total or None, desc=desc, unit=" rows", unit_scale=True,
                             file=file, smoothing=0.1, mininterval=0.2)

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def update(self, n: int) -> None:
        if self._bar is not None and n:
            with self._lock:
                self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
