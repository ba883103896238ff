"""Run a command and fail if it is silent or never says what it is doing: no output at all, a
gap between two output lines (stdout and stderr together) longer than ``--max-gap`` seconds, or
no line naming a phase (``phase 2/4: ...`` or ``phase: ...``, as `shared_core.progress` prints).

Every command prints a heartbeat every 15 s (`shared_core.progress.Heartbeat`); the gap allowed
here is 30 s, the project's rule, so a loaded CI machine has a margin. The command's output is
passed through.

    python .ci/check_progress.py [--max-gap S] -- <command> [args...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time

PHASE = re.compile(rb"\bphase(?: \d+/\d+)?: \S")


def watch(cmd: list[str]) -> tuple[int, int, float, bool]:
    """Run `cmd`; return (exit status, lines printed, longest silence in seconds, whether a
    line named a phase)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    assert proc.stdout is not None
    state = {"last": time.monotonic(), "lines": 0, "gap": 0.0, "phase": False}
    tail = b""
    lock = threading.Lock()

    def pump() -> None:  # any bytes count: a progress bar redraws with "\r", not "\n"
        assert proc.stdout is not None
        nonlocal tail
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            seen, tail = tail + chunk, chunk[-200:]
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            with lock:
                now = time.monotonic()
                state["gap"] = max(state["gap"], now - state["last"])
                state["last"] = now
                state["lines"] += chunk.count(b"\n") + chunk.count(b"\r")
                state["phase"] = state["phase"] or bool(PHASE.search(seen))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    status = proc.wait()
    reader.join()
    with lock:
        gap = max(state["gap"], time.monotonic() - state["last"])
        return status, int(state["lines"]), gap, bool(state["phase"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-gap", type=float, default=30.0)
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("cmd: expected a command after --")
    status, lines, gap, named = watch(cmd)
    name = " ".join(cmd[:3])
    if status != 0:
        return status
    if lines == 0:
        print(f"check_progress: `{name}` printed nothing", file=sys.stderr)
        return 1
    if not named:
        print(f"check_progress: `{name}` never named a phase (shared_core.progress.phase)",
              file=sys.stderr)  # fmt: skip
        return 1
    if gap > args.max_gap:
        print(
            f"check_progress: `{name}` was silent for {gap:.0f} s (allowed {args.max_gap:.0f} s)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
