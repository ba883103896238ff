import sys

import numpy as np
import pytest
import torch

from shared_core.testing import assert_close, relative_rms_error


def test_passes_within_ratio_and_returns_it():
    ref = torch.randn(100, dtype=torch.float64)
    fast = ref + 1e-6 * torch.randn(100, dtype=torch.float64)
    rel = assert_close("x", ref, fast.float(), ratio=1e-5)
    assert 0 < rel < 1e-5


def test_fails_beyond_ratio_and_says_both_numbers():
    ref = np.ones(10)
    with pytest.raises(AssertionError, match=r"x: relative RMS error 1\.000e-01 exceeds 1\.0e-02"):
        assert_close("x", ref, ref * 1.1, ratio=1e-2)


def test_scale_invariant():
    ref = np.random.default_rng(0).normal(size=50)
    fast = ref * (1 + 1e-3)
    a = assert_close("a", ref, fast, ratio=2e-3)
    b = assert_close("b", ref * 1e6, fast * 1e6, ratio=2e-3)
    assert a == pytest.approx(b, rel=1e-9)


def test_bfloat16_needs_a_looser_ratio():
    ref = torch.randn(1000, dtype=torch.float64)
    low = ref.bfloat16()
    assert_close("bf16", ref, low, ratio=1e-2)
    with pytest.raises(AssertionError):
        assert_close("bf16", ref, low, ratio=1e-4)


def test_nan_in_fast_fails_but_matching_nan_passes():
    ref = np.array([1.0, 2.0, np.nan])
    assert_close("nan", ref, ref.copy(), ratio=1e-12)
    with pytest.raises(AssertionError, match="not finite"):
        assert_close("nan", np.array([1.0, 2.0]), np.array([1.0, np.nan]), ratio=1.0)


def test_zero_reference_needs_atol():
    with pytest.raises(AssertionError):
        assert_close("zero", np.zeros(3), np.full(3, 1e-9), ratio=0.1)
    assert_close("zero", np.zeros(3), np.full(3, 1e-9), ratio=0.1, atol=1e-8)


def test_shape_mismatch_and_bad_ratio():
    with pytest.raises(AssertionError, match="shape"):
        assert_close("s", np.zeros(3), np.zeros(4), ratio=0.1)
    with pytest.raises(ValueError, match="ratio"):
        assert_close("s", np.zeros(3), np.zeros(3), ratio=0)
    with pytest.raises(ValueError, match="fast: shape"):
        relative_rms_error(np.zeros(3), np.zeros(4))


def _check(x: float) -> float:
    if x != x:
        raise ValueError(f"x: expected a finite number, got {x}")
    if x < 0:
        raise RuntimeError("deep inside: broadcast failed")
    return x


def test_assert_bad_input_passes_only_for_the_promised_error():
    from shared_core.testing import assert_bad_input

    assert "x:" in assert_bad_input(lambda: _check(float("nan")), ValueError, "x", "nan")
    with pytest.raises(AssertionError, match="returned 1.0"):  # silent
        assert_bad_input(lambda: _check(1.0), ValueError, "x")
    with pytest.raises(AssertionError, match="got RuntimeError"):  # ugly
        assert_bad_input(lambda: _check(-1.0), ValueError, "x")
    with pytest.raises(AssertionError, match="does not name 'y'"):
        assert_bad_input(lambda: _check(float("nan")), ValueError, "y")
    with pytest.raises(AssertionError, match="does not name 'x_max'"):  # whole words only
        assert_bad_input(lambda: _check(float("nan")), ValueError, "x_max")
    with pytest.raises(AssertionError, match="value '7'"):
        assert_bad_input(lambda: _check(float("nan")), ValueError, "x", "7")


def test_assert_fresh_import_is_callable():
    from shared_core.testing import assert_fresh_import_is_callable

    assert_fresh_import_is_callable("shared_core.lazy", ["lazy_exports"])
    with pytest.raises(AssertionError, match="not callables"):
        assert_fresh_import_is_callable("os", ["path"])  # a module


def test_cli_contract_helpers(tmp_path, capsys):
    from shared_core.cli import make_main, reproduce_command
    from shared_core.report import Run
    from shared_core.testing import (
        assert_bad_scale_is_a_usage_error,
        assert_import_is_light,
        run_micro,
    )

    def run(args):
        rep = Run("demo", {}, out=args.out)
        rep.add_row(method="x", v=1.0)
        rep.plot("p", {"x": ([0, 1], [1.0, 2.0])}, xlabel="a", ylabel="b")
        rep.finish()

    main = make_main("demo", [reproduce_command(run, {"micro": 1, "tiny": 2}, "demo")], version="0")
    assert_bad_scale_is_a_usage_error(main, capsys)
    folder = run_micro(main, "demo", tmp_path / "a")
    assert folder.name.endswith("-micro")
    with pytest.raises(AssertionError, match="PNG"):
        run_micro(main, "demo", tmp_path / "b", plots=2)
    assert_import_is_light("shared_core.cli")
    with pytest.raises(AssertionError, match="imported"):
        assert_import_is_light("shared_core.cli", heavy=("argparse",))


def test_usage_error_contract(capsys):
    """One `demo: error:` line and exit 2 pass (argparse's own exit too); a wrong exit code, a
    second error line, another program's prefix and a traceback each fail."""
    from shared_core.testing import assert_usage_error

    def cli(argv):
        kind = argv[0]
        if kind == "argparse":
            print("usage: demo [-h]\ndemo: error: unrecognized arguments: --x", file=sys.stderr)
            raise SystemExit(2)
        if kind == "traceback":
            print("Traceback (most recent call last):", file=sys.stderr)
        if kind == "twice":
            print("demo: error: first", file=sys.stderr)
        prefix = "other" if kind == "prefix" else "demo"
        print(f"{prefix}: error: --n: expected > 0, got -1", file=sys.stderr)
        return 1 if kind == "exit1" else 2

    assert (
        assert_usage_error(cli, ["ok"], capsys, "demo") == "demo: error: --n: expected > 0, got -1"
    )
    assert "unrecognized" in assert_usage_error(cli, ["argparse"], capsys, "demo")
    for kind in ("exit1", "twice", "prefix", "traceback"):
        with pytest.raises(AssertionError):
            assert_usage_error(cli, [kind], capsys, "demo")


def test_missing_extra_contract(tmp_path, capsys, monkeypatch):
    from shared_core.cli import make_main, reproduce_command
    from shared_core.data import require_extra
    from shared_core.testing import assert_missing_extra_is_one_line

    def needs_json(args):  # `json` stands in for an extra's module
        require_extra("demo", "data", "json", "the demo data")

    def two_lines(args):  # the right command, but over two lines
        import importlib.util

        if importlib.util.find_spec("json") is None:
            raise FileNotFoundError(
                "missing:\n`uv sync --package demo --extra data`; `pip install`"
            )

    def main_of(fn):
        return make_main(
            "demo", [reproduce_command(fn, {"micro": 1, "tiny": 2}, "demo")], version="0"
        )

    with monkeypatch.context() as m:
        line = assert_missing_extra_is_one_line(
            main_of(needs_json), "json", "demo", "data", monkeypatch=m, capsys=capsys, out=tmp_path
        )
    assert "the demo data needs the 'data' extra of demo" in line
    with monkeypatch.context() as m, pytest.raises(AssertionError, match="expected exit 2"):
        assert_missing_extra_is_one_line(
            main_of(needs_json), "json", "demo", "other", monkeypatch=m, capsys=capsys, out=tmp_path
        )
    with monkeypatch.context() as m, pytest.raises(AssertionError, match="2 lines"):
        assert_missing_extra_is_one_line(
            main_of(two_lines), "json", "demo", "data", monkeypatch=m, capsys=capsys, out=tmp_path
        )


def test_shadowed_exports_finds_an_export_named_like_its_submodule(tmp_path, monkeypatch):
    """crome 0.x's case: `augment` (a function) in `augment.py`; importing the submodule first
    binds the module to the package attribute, so the package must not have such a name."""
    import sys

    from shared_core.testing import assert_exports_not_shadowed, shadowed_exports

    for name, module in (("shadowpkg2", "augment"), ("cleanpkg2", "augmentation")):
        root = tmp_path / name
        root.mkdir()
        (root / "__init__.py").write_text(
            "from shared_core.lazy import lazy_exports\n"
            "__all__ = ['AugmentConfig', 'augment']\n"
            f"__getattr__, __dir__ = lazy_exports(__name__, {{'augment': '{module}', "
            f"'AugmentConfig': '{module}'}})\n"
        )
        (root / f"{module}.py").write_text(
            "class AugmentConfig:\n    pass\n\ndef augment():\n    return 1\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    problems = shadowed_exports("shadowpkg2")
    assert any("exported name is also the submodule shadowpkg2.augment" in p for p in problems)
    assert any("bound to a module after its submodules were imported" in p for p in problems)
    with pytest.raises(AssertionError, match="shadowpkg2.augment"):
        assert_exports_not_shadowed("shadowpkg2")
    assert shadowed_exports("cleanpkg2") == []
    assert_exports_not_shadowed("cleanpkg2")
    for name in [m for m in sys.modules if m.startswith(("shadowpkg2", "cleanpkg2"))]:
        monkeypatch.delitem(sys.modules, name)


def test_shadowed_exports_never_imports_a_main_module(tmp_path, monkeypatch):
    """A package run with `python -m` has a `__main__.py` that calls its CLI on import: walking
    the submodules must not run it (dist2loss and nextquill have one)."""
    import sys

    from shared_core.testing import shadowed_exports

    root = tmp_path / "mainpkg3"
    root.mkdir()
    (root / "__init__.py").write_text("__all__ = ['f']\n\ndef f():\n    return 1\n")
    (root / "__main__.py").write_text("raise SystemExit('the CLI ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert shadowed_exports("mainpkg3") == []
    for name in [m for m in sys.modules if m.startswith("mainpkg3")]:
        monkeypatch.delitem(sys.modules, name)


def test_costs_match_the_committed_runs_within_the_tolerance(tmp_path) -> None:
    import json

    from shared_core.testing import _assert_costs_are_the_committed_runs

    (tmp_path / "tiny.json").write_text(json.dumps({"cpu_s": 90.0, "cpu_children_s": 10.0}))
    got = _assert_costs_are_the_committed_runs({"micro": 5, "tiny": 110, "small": 900}, tmp_path)
    assert got == {"tiny": 100.0}  # small has no committed run and is not required
    with pytest.raises(AssertionError, match=r"tiny: the estimate says 130 CPU-s.*100 CPU-s"):
        _assert_costs_are_the_committed_runs({"tiny": 130}, tmp_path)
    with pytest.raises(AssertionError, match="small: no committed run"):
        _assert_costs_are_the_committed_runs({"small": 900}, tmp_path, required=("small",))


def test_help_states_the_committed_costs(tmp_path) -> None:
    import argparse
    import json

    from shared_core.testing import assert_help_states_the_committed_costs

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "tiny.json").write_text(json.dumps({"cpu_s": 100.0}))
    tests = tmp_path / "tests"

    def main(argv: list[str]) -> None:
        p = argparse.ArgumentParser(prog="pkg")
        p.add_argument("--scale", help="micro, tiny: ~100 CPU-s with one thread")
        p.parse_args(argv)

    est = {"tiny": 100.0}
    got = assert_help_states_the_committed_costs(
        main, est, tests, ["tiny: ~100 CPU-s"], argv=["-h"]
    )
    assert got == {"tiny": 100.0}
    with pytest.raises(AssertionError, match="does not print 'tiny: ~90 CPU-s'"):
        assert_help_states_the_committed_costs(main, est, tests, ["tiny: ~90 CPU-s"], argv=["-h"])
    with pytest.raises(AssertionError, match="small: no committed run"):
        assert_help_states_the_committed_costs(
            main, {"tiny": 100.0, "small": 5.0}, tests, [], required=("tiny", "small"), argv=["-h"]
        )
    (tmp_path / "results" / "tiny.json").unlink()
    (tmp_path / "results").rmdir()
    with pytest.raises(pytest.skip.Exception):
        assert_help_states_the_committed_costs(main, est, tests, [], argv=["-h"])
