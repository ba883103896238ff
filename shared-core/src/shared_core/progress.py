"""Progress every long command prints: its phase list, the phase it is in, a heartbeat with an ETA.

One helper for all twenty packages, so a run reads the same everywhere (stderr):

    [reproduce --scale tiny] phases: load data -> train vanilla -> train MELD -> evaluate; estimated ~3 min
    [reproduce --scale tiny] 0 min 04 s elapsed; phase 2/4: train vanilla; ETA ~2 min 50 s
    [reproduce --scale tiny] 0 min 34 s elapsed; phase 2/4: train vanilla; ETA ~2 min 20 s

- `plan(phases, estimate_s)` announces the list and the estimated cost (a package states it per
  scale); `phase(name)` names the current one (printed at once); the `Heartbeat` every command
  runs inside prints a line at least every 15 s. The ETA is the estimate minus the elapsed time
  while the run is within its estimate, else the pace so far times the phases left; a phase
  outside the plan (an epoch, a fold) labels the line without an index.
- `progress(iterable, desc)`: a tqdm bar (the one progress-bar library of the project).
- Only rank 0 of a distributed run prints; outside a heartbeat (a library call) nothing is.
  `.ci/check_progress.py` fails a ``reproduce`` that never names a phase or is silent for 30 s.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass
class _State:
    phase: str = ""
    phases: list[str] = field(default_factory=list)
    estimate_s: float | None = None


_STATE = _State()
_ACTIVE: list[Heartbeat] = []


def plan(phases: Sequence[str], estimate_s: float | None = None) -> None:
    """Announce the phases a command will go through and (optionally) its estimated seconds.

    Call it once at the start of a run; later `phase` calls with these names are numbered
    (``phase 2/4: ...``) and give the ETA its shape.
    """
    names = [str(p) for p in phases]
    if not names or any(not n.strip() for n in names):
        raise ValueError(f"phases: expected one or more non-empty names, got {list(phases)}")
    if estimate_s is not None and not estimate_s > 0:
        raise ValueError(f"estimate_s: expected seconds > 0 or None, got {estimate_s}")
    _STATE.phases, _STATE.estimate_s = names, estimate_s
    if _ACTIVE:
        cost = f"; estimated ~{_duration(estimate_s)}" if estimate_s else ""
        _ACTIVE[-1].write(f"[{_ACTIVE[-1].label}] phases: {' -> '.join(names)}{cost}")


def phase(name: str, announce: bool = True) -> None:
    """Name what the run is doing now (a fold, a method, an epoch).

    With `announce`, the running `Heartbeat` prints it at once; without, it only labels the
    next periodic line (for frequent updates such as epochs). Outside a heartbeat (a library
    call) nothing is printed.
    """
    _STATE.phase = name
    if announce and _ACTIVE:
        _ACTIVE[-1].announce()


def _duration(seconds: float) -> str:
    minutes, s = divmod(round(seconds), 60)
    return f"{minutes} min {s:02d} s" if minutes else f"{s} s"


def _phase_label() -> str:
    """``phase 2/4: train`` for a planned phase, ``phase: epoch 3`` for another."""
    name = _STATE.phase
    if name in _STATE.phases:
        return f"phase {_STATE.phases.index(name) + 1}/{len(_STATE.phases)}: {name}"
    return f"phase: {name}"


def _eta(elapsed: float) -> float | None:
    """Seconds left, from the plan: the estimate minus `elapsed` while that is positive, else
    the pace so far (seconds per finished phase) times the phases left; None when neither is
    known (no plan, or over the estimate in the first planned phase)."""
    if _STATE.estimate_s is not None and _STATE.estimate_s > elapsed:
        return _STATE.estimate_s - elapsed
    done = _STATE.phases.index(_STATE.phase) if _STATE.phase in _STATE.phases else 0
    return elapsed / done * (len(_STATE.phases) - done) if done > 0 else None


class Heartbeat:
    """A line on stderr at least every `interval` seconds while a command runs.

    Every command of `shared_core.cli` runs inside one, so no phase of any package stays
    silent for long (every 15 s by default, so a loaded machine still prints within the 30 s
    that `.ci/check_progress.py` allows): ``[<label>] 2 min 30 s elapsed; phase 2/4: <name>; ETA ~1 min 10 s``.
    `tick` is the clock-driven step (tested with a fake clock); the thread calls it.
    """

    def __init__(
        self,
        label: str,
        interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval: expected seconds > 0, got {interval}")
        self.label, self.interval, self.clock = label, interval, clock
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.start = self.last = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> str | None:
        """Write (and return) the heartbeat line if `interval` has passed since the last one."""
        if self.clock() - self.last < self.interval:
            return None
        return self.announce()

    def announce(self) -> str:
        """Write (and return) the line now; the next periodic one comes `interval` later."""
        now = self.last = self.clock()
        elapsed = now - self.start
        minutes, seconds = divmod(int(elapsed), 60)
        line = f"[{self.label}] {minutes} min {seconds:02d} s elapsed"
        if _STATE.phase:
            line += f"; {_phase_label()}"
        left = _eta(elapsed)
        if left is not None:
            line += f"; ETA ~{_duration(left)}"
        self.write(line)
        return line

    def __enter__(self) -> Heartbeat:
        self.start = self.last = self.clock()
        _STATE.phase, _STATE.phases, _STATE.estimate_s = "", [], None
        if os.environ.get("RANK", "0") == "0":
            _ACTIVE.append(self)
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(min(1.0, self.interval)):
            self.tick()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            _ACTIVE.remove(self)


def progress(
    iterable: Iterable[T], desc: str = "", total: int | None = None, enabled: bool = True
) -> Iterable[T]:
    """A tqdm progress bar on stderr labelled with its phase (pass ``enabled=is_main()``)."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable, desc=desc, total=total, disable=not enabled, dynamic_ncols=True, leave=False
    )
