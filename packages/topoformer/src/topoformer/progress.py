"""Progress lines on stderr for long runs: at most one every `EVERY_S` seconds, plus phases.

`shared_core.cli.progress` draws a tqdm bar, which a log file or a piped run shows as one
line at the end; `topoformer reproduce` prints plain lines instead, so a run that takes
minutes says where it is (fold, method, epoch, graphs featurised) at least every 20 s.
"""

from __future__ import annotations

import sys
import time

EVERY_S = 20.0
_start_wall = time.perf_counter()
_start_cpu = time.process_time()
_last = _start_wall  # quiet for the first EVERY_S seconds (short library calls)


def beat(message: str, *, phase: bool = False) -> None:
    """Print ``[topoformer 123 s wall, 45 s CPU] message`` if `phase` or `EVERY_S` passed."""
    global _last
    now = time.perf_counter()
    if not phase and now - _last < EVERY_S:
        return
    _last = now
    wall, cpu = now - _start_wall, time.process_time() - _start_cpu
    print(f"[topoformer {wall:.0f} s wall, {cpu:.0f} s CPU] {message}", file=sys.stderr, flush=True)
