"""One GPU check of mesa-layer's two CUDA paths (aimed at under 3 minutes on an H200).

Not yet run on a GPU when written: most of its time is expected in fla's first-call
autotuning (Triton compiles up to 48 configs per kernel), which no CPU could measure.
Timing starts no new shape after 100 s, and its JSON is written before the tests run.

(b) first, timing per (B, H, T, d): ours (torch), fla's Triton ``chunk_mesa_net`` and
fla's pure-PyTorch ``naive_mesa_net_CG`` on the GPU, forward and forward+backward, 30 CG
steps, bfloat16 q/k/v with float32 gates (what the layer passes), CUDA-synchronised wall
time per call, median of the repeats after warm-up (fla's full Triton autotuning happens
in the warm-up). Each shape also reports how far fla's outputs are from ours.
(a) then, in this process, the ``cuda``-marked tests (``tests/test_fla_path.py``,
``tests/test_chunk.py``): our torch op and fla's Triton kernels against ``reference.py``
in float32 and bfloat16, forward, gradients, initial state and packed sequences. For the
tests, kernels not yet tuned by the timing (float32, packed sequences) autotune over their
first config only: every config computes the same result up to rounding, and compiling
up to 48 configs per kernel would take minutes.

Needs torch with CUDA and Triton. Our sources are found from this file's place in the
repository; fla comes from ``--wheels DIR`` (every ``*.whl`` there is unpacked into a
temporary folder appended to ``sys.path``: flash-linear-attention, fla-core, einops, and
pytest if the machine has none) or from an installed ``fla``. Writes ``gpu_check.json``
(and the pytest log) to ``$OUT`` when set.

    python packages/mesa-layer/benchmarks/gpu_check.py --wheels DIR [--skip-tests] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
SOURCES = [PACKAGE / "src", ROOT / "shared-core" / "src"]
# (B, H, T, d). fla's kernels are compiled per (H, d, dtype), and each compile autotunes over
# up to 48 configs: every shape (and the cuda tests) uses H = 4, d = 64, so they compile once.
SHAPES = [(1, 4, 512, 64), (8, 4, 2048, 64), (4, 4, 8192, 64)]
QUICK_SHAPES = SHAPES[:2]
CG_STEPS = 30
BUDGET_S = 100.0  # timing starts no new shape after this much wall time
DRY_SHAPES = [(1, 2, 128, 16)]
DEVICE = "cuda"


def add_paths(wheels: str | None) -> None:
    """Our sources first on sys.path; the wheels' contents appended (installed ones win)."""
    paths = [str(p) for p in SOURCES]
    if wheels:
        found = sorted(Path(wheels).glob("*.whl"))
        if not found:
            raise SystemExit(f"--wheels: no *.whl files in {wheels}")
        target = tempfile.mkdtemp(prefix="mesa_gpu_check_")
        for whl in found:
            with zipfile.ZipFile(whl) as z:
                z.extractall(target)
        paths.append(target)
    sys.path[:0] = paths[: len(SOURCES)]
    sys.path.extend(paths[len(SOURCES) :])


def first_config_only() -> None:
    """Autotuning of kernels not tuned yet tries their first config only (see above)."""
    from triton.runtime.autotuner import Autotuner

    prune = Autotuner.prune_configs
    Autotuner.prune_configs = lambda self, kwargs: prune(self, kwargs)[:1]  # type: ignore[method-assign]


def run_tests(out: Path | None) -> dict[str, Any]:
    """The cuda-marked tests in this process (SHARED_CORE_DEVICE=cuda); returns the exit code."""
    import pytest

    os.environ["SHARED_CORE_DEVICE"] = "cuda"
    first_config_only()
    args = ["tests/test_fla_path.py", "tests/test_chunk.py", "-m", "cuda",
            "-p", "no:cacheprovider", "-q", "-rs"]  # fmt: skip
    if out is not None:
        args.append(f"--junitxml={out / 'gpu_check_tests.xml'}")
    start = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(PACKAGE)
    try:
        code = int(pytest.main(args))
    finally:
        os.chdir(cwd)
    return {"returncode": code, "wall_s": time.perf_counter() - start}


def load_naive() -> Any:
    from mesa_layer.torch.fla_path import fla_naive

    return fla_naive("mesa_net")


def cuda_time(fn: Callable[[], Any], warmup: int, repeats: int) -> list[float]:
    import torch

    sync = torch.cuda.synchronize if DEVICE == "cuda" else lambda: None
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return times


def bench_shape(B: int, H: int, T: int, d: int, repeats: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from mesa_layer.torch import mesa_chunk

    naive = load_naive()
    gen = torch.Generator(device=DEVICE).manual_seed(0)

    def rnd(*s: int) -> torch.Tensor:
        return torch.randn(*s, device=DEVICE, generator=gen)

    x = {
        "q": F.normalize(rnd(B, T, H, d), dim=-1).bfloat16(),
        "k": F.normalize(rnd(B, T, H, d), dim=-1).bfloat16(),
        "v": rnd(B, T, H, d).bfloat16(),
        "g": F.logsigmoid(rnd(B, T, H) + 3.0),
        "beta": torch.sigmoid(rnd(B, T, H)),
        "Lambda": torch.rand(H, d, device=DEVICE, generator=gen) + 0.25,
    }
    names = ["q", "k", "v", "g", "beta", "Lambda"]

    def ours(t: dict[str, torch.Tensor], backend: str) -> torch.Tensor:
        return mesa_chunk(*(t[n] for n in names), max_cg_steps=CG_STEPS, backend=backend)[0]

    def fla_naive(t: dict[str, torch.Tensor]) -> torch.Tensor:
        args = (t["q"], t["k"], t["v"], t["g"], t["Lambda"], t["beta"])
        return naive.naive_mesa_net_CG(*args, chunk_size=64, max_CG_iteration=CG_STEPS)[0]

    ops: dict[str, Callable[[dict[str, torch.Tensor]], torch.Tensor]] = {
        "ours (torch)": lambda t: ours(t, "torch"),
        "fla Triton": lambda t: ours(t, "fla"),
        "fla naive": fla_naive,
    }
    if DEVICE == "cpu":  # the dry run: fla's Triton kernels need a GPU
        del ops["fla Triton"]
    row: dict[str, Any] = {"B": B, "H": H, "T": T, "d": d}
    with torch.no_grad():
        outs = {n: op(x).float() for n, op in ops.items()}
    base = outs["ours (torch)"]
    row["rel_rms_vs_ours"] = {
        n: float((o - base).norm() / base.norm()) for n, o in outs.items() if n != "ours (torch)"
    }
    w = rnd(B, T, H, d).bfloat16()
    for mode in ("forward", "forward+backward"):
        for n, op in ops.items():
            if mode == "forward":

                def fn(op: Any = op) -> Any:
                    with torch.no_grad():
                        return op(x)
            else:
                leaves = {k: t.clone().requires_grad_() for k, t in x.items()}

                def fn(op: Any = op, leaves: dict[str, torch.Tensor] = leaves) -> Any:
                    out = op(leaves)
                    return torch.autograd.grad((out * w).float().sum(), list(leaves.values()))

            try:
                times = cuda_time(fn, warmup=2, repeats=repeats)
                row[f"{mode} {n} ms"] = 1e3 * statistics.median(times)
            except torch.cuda.OutOfMemoryError:
                row[f"{mode} {n} ms"] = None
                torch.cuda.empty_cache()
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = ["ours (torch)", "fla Triton", "fla naive"]
    for mode in ("forward", "forward+backward"):
        print(f"\n{mode}, ms per call (median), bf16 q/k/v, {CG_STEPS} CG steps")
        print("| B | H | T | d | " + " | ".join(cols) + " | fla Triton / ours | fla naive / ours |")
        print("|---" * (len(cols) + 6) + "|")
        for r in rows:
            t = [r.get(f"{mode} {c} ms") for c in cols]
            cells = ["-" if v is None else f"{v:.3g}" for v in t]
            ratio = ["-" if t[0] is None or v is None else f"{v / t[0]:.2f}x" for v in (t[1], t[2])]
            print(
                f"| {r['B']} | {r['H']} | {r['T']} | {r['d']} | " + " | ".join(cells + ratio) + " |"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--wheels", help="folder of pure-Python wheels to unpack onto sys.path (fla)")
    p.add_argument("--skip-tests", action="store_true", help="timing only")
    p.add_argument("--quick", action="store_true", help="the first two shapes, 3 repeats")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="no GPU: time ours and fla naive at one tiny shape on the CPU (checks this script)",
    )
    a = p.parse_args()
    start = time.perf_counter()
    add_paths(a.wheels)
    import torch

    global DEVICE
    if a.cpu_dry_run:
        DEVICE = "cpu"
        a.skip_tests = True
    elif not torch.cuda.is_available():
        print(
            "gpu_check: no CUDA GPU (torch.cuda.is_available() is False); nothing checked "
            "(--cpu-dry-run exercises the script on a CPU)"
        )
        return 2
    if importlib.util.find_spec("fla") is None:
        print("gpu_check: flash-linear-attention not importable; pass --wheels DIR")
        return 2
    import fla
    import triton

    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    result: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else "none (CPU dry run)",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "fla": getattr(fla, "__version__", "?"),
    }
    print(json.dumps(result), flush=True)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    rows = []
    for shape in DRY_SHAPES if a.cpu_dry_run else QUICK_SHAPES if a.quick else SHAPES:
        if time.perf_counter() - start > BUDGET_S:
            print(f"skipping {shape}: past the {BUDGET_S:.0f} s budget", flush=True)
            continue
        rows.append(bench_shape(*shape, repeats=3 if a.quick else a.repeats))
        print(json.dumps(rows[-1]), flush=True)
    result["timing"] = rows
    result["timing_wall_s"] = time.perf_counter() - start
    print_table(rows)
    if out is not None:
        (out / "gpu_check.json").write_text(json.dumps(result, indent=1))
    if not a.skip_tests:
        print(f"\ncuda tests ({time.perf_counter() - start:.0f} s so far)", flush=True)
        result["tests"] = run_tests(out)
    result["wall_s"] = time.perf_counter() - start
    if out is not None:
        (out / "gpu_check.json").write_text(json.dumps(result, indent=1))
    tests_ok = a.skip_tests or result["tests"]["returncode"] == 0
    verdict = "skipped" if a.skip_tests else "passed" if tests_ok else "FAILED"
    print(f"\ngpu_check: tests {verdict}, {result['wall_s']:.0f} s")
    return 0 if tests_ok else 1


if __name__ == "__main__":
    sys.exit(main())
