"""Run one candidate in a child process with a time limit, inside a fresh temporary directory.

The paper executes generated code in a sandbox with a 300 s limit; a failing candidate is
recorded and the search goes on. Here the child is a fork of the search process (Linux/macOS;
elsewhere `spawn`, which needs picklable functions), its working directory and ``TMPDIR`` are a
temporary directory that is deleted afterwards, and its result comes back through a pipe. A
hang is killed at the limit, a crash (exception, signal, ``os._exit``) is reported, and the
caller rejects non-finite results.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mathmo._checks import nonneg_float


@dataclass(frozen=True)
class SandboxResult:
    """``ok`` with ``value``, or not ok with a one-line ``error``; ``wall_s`` includes the fork."""

    ok: bool
    value: Any = None
    error: str = ""
    wall_s: float = 0.0


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], workdir: str) -> None:
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    try:
        value = fn(*args)
        conn.send((True, value, ""))
    except BaseException as e:
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        conn.send((False, None, last))
    finally:
        conn.close()


def _context() -> Any:
    return mp.get_context("fork" if sys.platform != "win32" else "spawn")


def run_sandboxed(
    fn: Callable[..., Any], args: tuple[Any, ...] = (), time_limit: float = 300.0
) -> SandboxResult:
    """``fn(*args)`` in a child process in a temporary directory, killed after ``time_limit`` s."""
    limit = nonneg_float("time_limit", time_limit)
    if limit <= 0:
        raise ValueError(f"time_limit: expected > 0 seconds, got {time_limit}")
    start = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="mathmo-sandbox-")
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, workdir), daemon=True)
    try:
        proc.start()
        child.close()
        if parent.poll(limit):
            try:
                ok, value, error = parent.recv()
            except EOFError:
                proc.join(5.0)
                ok, value, error = False, None, f"crashed (exit code {proc.exitcode})"
        else:
            ok, value, error = False, None, f"timed out after {limit:g} s"
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5.0)
        parent.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return SandboxResult(ok, value, error, time.perf_counter() - start)


def run_inline(fn: Callable[..., Any], args: tuple[Any, ...] = ()) -> SandboxResult:
    """The same contract in-process (no isolation, no time limit): for trusted operators only."""
    start = time.perf_counter()
    try:
        value = fn(*args)
    except Exception as e:
        return SandboxResult(False, None, f"{type(e).__name__}: {e}", time.perf_counter() - start)
    return SandboxResult(True, value, "", time.perf_counter() - start)
