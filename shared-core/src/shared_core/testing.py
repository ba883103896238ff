"""The comparison every "fast path equals reference" test makes: relative RMS error.

``assert_close("o", ref, fast, ratio)`` passes when

    rms(fast - ref) <= ratio * rms(ref) + atol

and prints both numbers either way (run pytest with ``-s`` to see them), as
flash-linear-attention's ``assert_close`` does. One relative tolerance then reads the same
for every tensor, whatever its scale, and the same test runs in float64 (ratio ~1e-10),
float32 (~1e-5) and bfloat16 (~1e-2) against a float64 reference. An exact zero reference
needs `atol`. Non-finite values fail unless they sit where the reference has the same value.

It accepts torch tensors (any device, any dtype), NumPy arrays, JAX arrays and nested
lists; it imports no framework itself.

`assert_bad_input` is the other half of every package's contract: bad input raises a
`ValueError`/`TypeError` that names the argument (and, where given, the value). A package
lists its cases in one table and parametrises one test over it::

    CASES = {"nan query": (lambda: attention(nan_q), ValueError, "q"), ...}

    @pytest.mark.parametrize("case", CASES)
    def test_bad_input(case): assert_bad_input(*CASES[case])

The console-script contract (`assert_import_is_light`, `assert_bad_scale_is_a_usage_error`,
`assert_missing_extra_is_one_line`, `run_micro`, `assert_usage_error`,
`assert_help_states_the_committed_costs`, `assert_killed_train_resumes`) and the export checks
(`assert_fresh_import_is_callable`, `shadowed_exports`, `assert_exports_not_shadowed`) follow
below. The tiny causal LM for tests, ``model, tok = shared_core.models.tiny_lm(words, ...)`` (a random
`tiny_llama` over an in-memory `word_tokenizer`), lives in `shared_core.models`, since a
package's own tiny scales build it at run time too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def _as_float64(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor: leave the device, keep the values exactly
        x = x.detach().cpu()
        if x.is_complex():
            raise TypeError(f"{name}: complex tensors are not supported")
        x = x.double().numpy()
    arr = np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name}: expected a numeric array or tensor, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def relative_rms_error(ref: Any, fast: Any) -> tuple[float, float]:
    """``(rms(fast - ref), rms(ref))`` over the finite entries of `ref`, in float64."""
    r, f = _as_float64(ref, "ref"), _as_float64(fast, "fast")
    if r.shape != f.shape:
        raise ValueError(f"fast: shape {f.shape} differs from the reference's {r.shape}")
    if r.size == 0:
        return 0.0, 0.0
    keep = np.isfinite(r)
    diff = f[keep] - r[keep]
    base = r[keep]
    err = math.sqrt(float(np.mean(diff**2))) if diff.size else 0.0
    scale = math.sqrt(float(np.mean(base**2))) if base.size else 0.0
    return err, scale


def assert_close(name: str, ref: Any, fast: Any, ratio: float, atol: float = 0.0) -> float:
    """Assert ``rms(fast - ref) <= ratio * rms(ref) + atol``; return the relative error.

    Args:
        name: what is compared (printed and put in the failure message).
        ref: the reference values (compute them in float64).
        fast: the values under test, same shape.
        ratio: the largest allowed relative RMS error (> 0).
        atol: an absolute floor for references that are (close to) zero.
    """
    if not ratio > 0:
        raise ValueError(f"ratio: expected a relative tolerance > 0, got {ratio!r}")
    if not atol >= 0:
        raise ValueError(f"atol: expected >= 0, got {atol!r}")
    r, f = _as_float64(ref, "ref"), _as_float64(fast, "fast")
    if r.shape != f.shape:
        raise AssertionError(f"{name}: shape {f.shape} differs from the reference's {r.shape}")
    bad = ~np.isfinite(f) & ~(np.isnan(r) & np.isnan(f)) & ~(np.isinf(r) & (r == f))
    if bad.any():
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {f.size} values are not finite where the reference is "
            f"(first at index {np.unravel_index(int(np.argmax(bad)), f.shape)})"
        )
    err, scale = relative_rms_error(r, f)
    rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
    limit = ratio * scale + atol
    print(f"{name}: rms err {err:.3e}, rms ref {scale:.3e}, ratio {rel:.3e} (allowed {ratio:.1e})")
    if err > limit:
        raise AssertionError(
            f"{name}: relative RMS error {rel:.3e} exceeds {ratio:.1e} "
            f"(rms err {err:.3e}, rms ref {scale:.3e}, atol {atol:.1e})"
        )
    return rel


def assert_bad_input(
    call: Callable[[], object],
    error: type[Exception],
    argument: str,
    value: str | None = None,
) -> str:
    """Assert ``call()`` raises `error` whose message names `argument` (and `value`).

    Args:
        call: the bad call, with no arguments (a lambda around the public entry point).
        error: the expected exception class (`ValueError` or `TypeError`, or a subclass).
        argument: the argument's name as the message must spell it (a word, matched whole).
        value: text of the received value the message must contain, if any.

    Returns the message. A call that returns (silent garbage) or raises anything else (a raw
    error from deep inside, like a broadcasting ``RuntimeError``) fails.
    """
    try:
        result = call()
    except error as e:
        message = str(e)
    except Exception as e:  # an ugly error: not the type the contract promises
        raise AssertionError(
            f"expected {error.__name__} naming {argument!r}, got {type(e).__name__}: {e}"
        ) from e
    else:
        raise AssertionError(
            f"expected {error.__name__} naming {argument!r}, but the call returned {result!r:.200}"
        )
    if not re.search(rf"(?<![\w]){re.escape(argument)}(?![\w])", message):
        raise AssertionError(f"{error.__name__} does not name {argument!r}: {message}")
    if value is not None and value not in message:
        raise AssertionError(f"{error.__name__} does not show the value {value!r}: {message}")
    return message


def assert_fresh_import_is_callable(package: str, names: Sequence[str]) -> None:
    """Assert ``from <package> import <names>`` in a fresh interpreter gives callables, never a
    module: the check that an export named like its submodule is not shadowed by it
    (`shared_core.lazy.lazy_exports`), in the order `names` gives. A fresh interpreter, since
    the test process may have loaded the package already.
    """
    import subprocess
    import sys

    code = (
        f"import types; from {package} import {', '.join(names)}; "
        f"bad = [n for n, v in zip({list(names)!r}, [{', '.join(names)}]) "
        "if isinstance(v, types.ModuleType) or not callable(v)]; "
        "assert not bad, f'not callables: {bad}'"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"from {package} import {', '.join(names)}: {res.stderr[-2000:]}")


def shadowed_exports(package: str) -> list[str]:
    """Why `package`'s public names are not all what they name once every submodule is loaded
    (empty: they are). Python binds an imported submodule as an attribute of its package, so an
    ``__all__`` name that is also a submodule's name reads as the module whenever the submodule
    was imported first (``from crome.augment import AugmentConfig; from crome import augment``).
    Reported: each such name clash, then, with every submodule imported (those needing an absent
    extra, ImportError, skipped; a ``__main__`` module is never imported, since that runs the
    package's command line), each name bound to a module in the package namespace before
    any lazy ``__getattr__`` runs, and each name that reads as a module.
    """
    import contextlib
    import importlib
    import pkgutil
    import types

    pkg = importlib.import_module(package)
    names = [str(n) for n in getattr(pkg, "__all__", [])]
    paths = list(getattr(pkg, "__path__", []))
    subs = {info.name for info in pkgutil.iter_modules(paths)}
    problems = [
        f"{package}.{n}: exported name is also the submodule {package}.{n}"
        for n in names
        if n in subs
    ]
    for info in pkgutil.walk_packages(paths, package + ".", onerror=lambda _: None):
        if info.name.rsplit(".", 1)[-1] == "__main__":  # `python -m` entry: importing runs the CLI
            continue
        with contextlib.suppress(ImportError):
            importlib.import_module(info.name)
    bound = vars(pkg)
    problems += [
        f"{package}.{n}: bound to a module after its submodules were imported"
        for n in names
        if isinstance(bound.get(n), types.ModuleType)
    ]
    problems += [
        f"{package}.{n}: reads as a module"
        for n in names
        if isinstance(getattr(pkg, n), types.ModuleType)
    ]
    return problems


def assert_exports_not_shadowed(package: str) -> None:
    """Assert `shadowed_exports` finds nothing, in a fresh interpreter (the test process may
    have loaded the package already)."""
    import subprocess
    import sys

    code = (
        "from shared_core.testing import shadowed_exports\n"
        f"problems = shadowed_exports({package!r})\n"
        "assert not problems, '\\n'.join(problems)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"{package}: {res.stderr[-2000:]}")


# --- the console-script contract every package's test_cli.py checks -----------------------


def assert_import_is_light(module: str, heavy: Sequence[str] = ("torch",)) -> None:
    """Assert that in a fresh interpreter ``import <module>`` and, if it defines `main`,
    ``main(["--help"])`` and ``main(["reproduce", "--help"])`` load none of `heavy`: the check
    that ``<package> --help`` answers at once (the CLI imports its experiments only when run)."""
    import subprocess
    import sys

    code = (
        f"import contextlib, io, sys, {module} as m\n"
        "for argv in (['--help'], ['reproduce', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        getattr(m, 'main', lambda a: None)(argv)\n"
        f"loaded = [h for h in {list(heavy)!r} if h in sys.modules]\n"
        "assert not loaded, f'imported: {loaded}'"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"import {module}: {res.stderr[-2000:]}")


def assert_bad_scale_is_a_usage_error(main: Callable[[list[str]], int], capsys: Any) -> str:
    """Assert ``main(["reproduce", "--scale", "huge"])`` exits 2 with an error naming the
    scale (argparse's one-line usage error, no traceback); returns the error text."""
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    err = str(capsys.readouterr().err)
    if e.value.code != 2 or "scale" not in err or "Traceback" in err:
        raise AssertionError(f"expected exit 2 naming --scale, got {e.value.code}: {err}")
    return err


def assert_usage_error(
    main: Callable[[list[str]], int], argv: Sequence[str], capsys: Any, prog: str
) -> str:
    """Run ``main(argv)`` and assert a console script's bad-input contract: exit status 2
    (returned, or argparse's own ``SystemExit``), exactly one stderr line holding ``error:``,
    that line starting ``<prog>: error:``, and no traceback. Returns the line, for the caller
    to check that it names the argument, the value and what was expected."""
    capsys.readouterr()
    code: int | str | None
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    err = str(capsys.readouterr().err)
    lines = [line for line in err.splitlines() if "error:" in line]
    if code != 2 or len(lines) != 1 or not lines[0].startswith(f"{prog}: error:"):
        raise AssertionError(
            f"{' '.join(argv)}: expected exit 2 and one '{prog}: error:' line, "
            f"got exit {code!r} and stderr {err!r}"
        )
    if "Traceback" in err:
        raise AssertionError(f"{' '.join(argv)}: a traceback on stderr: {err}")
    return lines[0]


def assert_missing_extra_is_one_line(
    main: Callable[[list[str]], int],
    module: str,
    package: str,
    extra: str,
    *,
    monkeypatch: Any,
    capsys: Any,
    out: Any,
    argv: Sequence[str] | None = None,
) -> str:
    """Hide `module` (``importlib.util.find_spec`` reports it, and its submodules, missing: what
    `shared_core.data.require_extra` asks), run ``main(argv)`` (default ``reproduce --scale
    micro --out <out>``) and assert the contract of a missing extra: exit 2 and ONE line on
    stderr, no traceback, naming ``uv sync --package <package> --extra <extra>`` and a
    ``pip install`` line. Returns that line. `monkeypatch` and `capsys` are pytest's fixtures.
    """
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == module or name.startswith(module + "."):
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    args = ["reproduce", "--scale", "micro", "--out", str(out)] if argv is None else list(argv)
    status = main(args)
    err = str(capsys.readouterr().err).strip()
    lines = err.splitlines()
    uv = f"uv sync --package {package} --extra {extra}"
    if status != 2 or len(lines) != 1 or uv not in err or "pip install" not in err:
        raise AssertionError(
            f"without {module}: expected exit 2 and one stderr line naming `{uv}` and "
            f"`pip install`, got exit {status} and {len(lines)} lines: {err[-1000:]}"
        )
    return lines[0]


def run_micro(
    main: Callable[[list[str]], int], package: str, out: Any, *args: str, plots: int = 1
) -> Any:
    """Run ``<package> reproduce --scale micro --device cpu --out <out> [args]`` through `main`
    and assert the run's contract: exit 0, one run folder ``<out>/<package>/<stamp>-micro...``
    marked complete, with metrics.json (wall and CPU time, at least one table), report.md and
    at least `plots` PNGs. Returns the run folder (a `pathlib.Path`) for the package's own checks.
    """
    import json
    from pathlib import Path

    argv = ["reproduce", "--scale", "micro", "--device", "cpu", "--out", str(out), *args]
    status = main(argv)
    if status != 0:
        raise AssertionError(f"{package} {' '.join(argv)} exited {status}")
    runs = sorted((Path(out) / package).iterdir())
    if len(runs) != 1 or "-micro" not in runs[0].name:
        raise AssertionError(f"expected one <stamp>-micro run folder, got {[r.name for r in runs]}")
    run = runs[0]
    config = json.loads((run / "config.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    if config["status"] != "complete" or config["run"]["scale"] != "micro":
        raise AssertionError(f"config.json: {config['status']=}, {config['run']=}")
    if not metrics["tables"] or metrics["cpu_s"] <= 0 or metrics["elapsed_s"] <= 0:
        raise AssertionError(f"metrics.json: tables {list(metrics['tables'])}, times missing")
    if not (run / "report.md").read_text().startswith("# "):
        raise AssertionError("report.md: no title")
    pngs = sorted(run.glob("*.png"))
    if len(pngs) < plots or any(p.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n" for p in pngs):
        raise AssertionError(f"expected >= {plots} PNG plots, got {[p.name for p in pngs]}")
    return run


def _assert_costs_are_the_committed_runs(
    estimates: Any, results: Any, *, required: Sequence[str] = ("tiny",), rel: float = 0.25
) -> dict[str, float]:
    """Each scale's CPU-cost estimate (``ESTIMATE_S``, the figure ``--help`` and the heartbeat's
    ETA print) is within `rel` of the CPU time of the committed run ``results/<scale>.json``
    (its ``cpu_s`` plus ``cpu_children_s``, as `shared_core.report` writes them); issue 67.

    `estimates` maps scale -> CPU seconds; `results` is the package's results folder. A scale in
    `required` must have its run committed; another is compared where its file exists (micro
    never: seconds, and CI-sized). Returns {scale: measured CPU-s} for what was compared.
    Raises AssertionError naming the scale, both figures and the file.
    """
    import json
    from pathlib import Path

    folder = Path(results)
    measured: dict[str, float] = {}
    for scale, estimate in estimates.items():
        if scale == "micro":
            continue
        path = folder / f"{scale}.json"
        if not path.is_file():
            if scale in required:
                raise AssertionError(f"{scale}: no committed run {path} behind the estimate")
            continue
        run = json.loads(path.read_text(encoding="utf-8"))
        cpu = float(run["cpu_s"]) + float(run.get("cpu_children_s", 0.0))
        if abs(float(estimate) - cpu) > rel * cpu:
            raise AssertionError(
                f"{scale}: the estimate says {float(estimate):.0f} CPU-s, the committed run "
                f"{path.name} took {cpu:.0f} CPU-s (more than {rel:.0%} apart): update the estimate"
            )
        measured[scale] = cpu
    return measured


def assert_help_states_the_committed_costs(
    main: Callable[[list[str]], Any],
    estimates: Any,
    tests_dir: Any,
    shown: Sequence[str],
    *,
    required: Sequence[str] = ("tiny",),
    argv: Sequence[str] = ("reproduce", "--help"),
) -> dict[str, float]:
    """A package's cost test in one call (issue 67): `estimates` (``ESTIMATE_S``) are the CPU
    times of the committed runs in ``<tests_dir>/../results`` (every scale in `required`
    committed; `_assert_costs_are_the_committed_runs`), and ``main(argv)``'s help prints each
    phrase of `shown` (the package's cost figures formatted from `estimates`).

    Skips when ``results/`` is not beside the tests (a copied tests folder, an sdist). The help
    text is compared with its whitespace collapsed and argparse's line breaks after hyphens
    undone. Returns {scale: measured CPU-s}; raises AssertionError naming what differs.
    """
    import contextlib
    import io
    from pathlib import Path

    import pytest

    results = Path(tests_dir).resolve().parent / "results"
    if not results.is_dir():
        pytest.skip("results/ lives in the repository, not beside a copied tests folder")
    measured = _assert_costs_are_the_committed_runs(estimates, results, required=required)
    missing = set(required) - set(measured)
    assert not missing, f"no committed run compared for {sorted(missing)}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(list(argv))
    text = " ".join(out.getvalue().split()).replace("- ", "-")
    for phrase in shown:
        assert phrase in text, f"{' '.join(argv)} does not print {phrase!r}: {text}"
    return measured


def assert_text_lm_verbs(
    main: Callable[[list[str]], int],
    tmp: Any,
    capsys: Any,
    *,
    model_class: type,
    model_type: str,
    settings: Sequence[str],
    bad_setting: str,
    bad_error: str,
) -> None:
    """The `shared_core.textlm` verbs of a package's registered causal LM, end to end through
    its console script `main`: ``train`` (3 steps on a small corpus with the package's tiny
    `settings`, ``--set`` arguments) writes a folder that ``AutoModelForCausalLM`` loads as
    `model_class` with `model_type` in its summary, ``sample`` continues a prompt by exactly
    ``--max-new-tokens`` characters, a second ``train`` into the folder is refused without
    ``--resume``, and bad input is one error line: `bad_setting` (``--set key=value``) must
    print `bad_error`, an unknown setting, a folder ``train`` did not write.
    """
    import json
    from pathlib import Path

    from transformers import AutoModelForCausalLM

    corpus = Path(tmp) / "corpus.txt"
    corpus.write_text("to be or not to be, that is the question. " * 30, encoding="utf-8")
    out = Path(tmp) / "model"
    steps = ["--set", "train.steps=3", "--set", "train.batch_size=2", "--set", "train.seq_len=16"]
    train = ["train", "--data", str(corpus), "--out", str(out), *settings, *steps]
    if main(train) != 0:
        raise AssertionError(f"train exited non-zero: {capsys.readouterr().err[-2000:]}")
    if "3 steps, train loss" not in capsys.readouterr().out:
        raise AssertionError("train did not print its summary line")
    summary = json.loads((out / "train_summary.json").read_text())
    if summary["model_type"] != model_type:
        raise AssertionError(f"train_summary.json: model_type {summary['model_type']!r}")
    loaded = AutoModelForCausalLM.from_pretrained(out)
    if not isinstance(loaded, model_class):
        raise AssertionError(f"AutoModelForCausalLM loaded a {type(loaded).__name__}")
    sample = ["sample", "--checkpoint", str(out), "--prompt", "to be", "--max-new-tokens", "7"]
    if main(sample) != 0:
        raise AssertionError(f"sample exited non-zero: {capsys.readouterr().err[-2000:]}")
    printed = capsys.readouterr().out.rstrip("\n")
    if not (printed.startswith("to be") and len(printed) == 5 + 7):
        raise AssertionError(f"sample printed {printed!r}: expected the prompt and 7 characters")
    cases = [
        (train, "pass --resume"),
        (["train", "--data", str(corpus), "--out", str(out) + "2", "--set", bad_setting], bad_error),
        (["train", "--data", str(corpus), "--out", str(out) + "3", "--set", "model.nope=3"],
         "has no setting 'nope'"),
        (["sample", "--checkpoint", str(tmp), "--prompt", "x"],
         "checkpoint: expected a folder written by `train`"),
    ]  # fmt: skip
    for argv, expected in cases:
        status = main(argv)
        err = capsys.readouterr().err
        if status != 2 or expected not in err or "Traceback" in err:
            raise AssertionError(f"{argv[0]} {argv[-1]}: exit {status}, stderr {err[-1000:]!r}")


def assert_killed_train_resumes(
    train: Callable[..., int],
    trainer_class: type,
    tmp: Any,
    monkeypatch: Any,
    argv: Sequence[str],
    *,
    kill_after: int,
    checkpoints: Sequence[str],
) -> tuple[Any, Any]:
    """A ``train`` verb killed mid-run resumes to the weights of an uninterrupted run.

    `train(out, *argv)` runs the package's verb into `out` and returns its exit status. The
    uninterrupted run goes to ``tmp/whole``; the second run, into ``tmp/cut``, has
    ``trainer_class.training_step`` raise KeyboardInterrupt after `kill_after` micro-batches
    (exit 130) and must leave exactly the `checkpoints` folders; a rerun without ``--resume``
    is refused (exit 2); with ``--resume`` it finishes (exit 0) and its ``model.safetensors``
    equals the uninterrupted run's (rtol 1e-6, atol 1e-7). Returns the two output folders for
    the package's own checks (its training log, say).
    """
    from pathlib import Path

    import torch
    from safetensors.torch import load_file

    whole, cut = Path(tmp) / "whole", Path(tmp) / "cut"
    if train(whole, *argv) != 0:
        raise AssertionError("the uninterrupted train run failed")
    original = trainer_class.training_step  # type: ignore[attr-defined]
    calls = {"n": 0}

    def dies(self: Any, *a: Any, **k: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > kill_after:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(trainer_class, "training_step", dies)
    if (status := train(cut, *argv)) != 130:
        raise AssertionError(f"the killed run exited {status}, expected 130")
    kept = sorted(p.name for p in (cut / "checkpoints").iterdir())
    if kept != sorted(checkpoints):
        raise AssertionError(f"the killed run left checkpoints {kept}, expected {checkpoints}")
    if (status := train(cut, *argv)) != 2:
        raise AssertionError(f"a rerun into the folder without --resume exited {status}, not 2")
    monkeypatch.setattr(trainer_class, "training_step", original)
    if (status := train(cut, *argv, "--resume")) != 0:
        raise AssertionError(f"the --resume run exited {status}")
    expected, got = load_file(whole / "model.safetensors"), load_file(cut / "model.safetensors")
    if expected.keys() != got.keys():
        raise AssertionError("the resumed model has other weights than the uninterrupted one")
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=1e-6, atol=1e-7)
    return whole, cut
