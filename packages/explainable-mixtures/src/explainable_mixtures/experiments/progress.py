"""Progress lines for long reproductions: the phase on every change and every 30 s.

shared_core's ``progress`` is a tqdm bar that only moves when an item finishes; one EMM fit
can take minutes at the larger scales, so a background thread repeats the current phase
instead (a candidate for shared-core).
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

EVERY_S = 30.0


class Heartbeat:
    """``with Heartbeat("prog") as beat: beat.phase("fitting ...")``: one stderr line per phase
    change, and the current phase again every `every` seconds while it lasts."""

    def __init__(self, prog: str, every: float = EVERY_S) -> None:
        self.prog = prog
        self.every = every
        self._phase = "starting"
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _say(self, text: str) -> None:
        print(f"[{self.prog} {time.monotonic() - self._start:7.1f} s] {text}", file=sys.stderr,
              flush=True)  # fmt: skip

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._say(f"{self._phase} (still running)")

    def phase(self, text: str) -> None:
        self._phase = text
        self._say(text)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._say("done" if kind is None else f"stopped: {kind.__name__}")
