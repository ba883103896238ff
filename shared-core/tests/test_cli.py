import json

import pytest

from shared_core.cli import Command, ReproduceArgs, UsageError, make_main, reproduce_command
from shared_core.report import Run

SCALES = {"micro": "m-config", "tiny": "t-config", "small": "s-config"}


def test_reproduce_defaults_and_options(tmp_path):
    seen = []
    main = make_main("demo", [reproduce_command(seen.append, SCALES, "demo run")], version="1.2.3")
    assert main(["reproduce"]) == 0
    assert seen[-1] == ReproduceArgs(config="t-config")
    argv = [
        "reproduce",
        "--scale",
        "small",
        "--seed",
        "7",
        "--threads",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    got = seen[-1]
    assert (got.scale, got.seed, got.threads, got.out, got.config) == (
        "small",
        7,
        2,
        tmp_path,
        "s-config",
    )


def test_threads_are_pinned_inside_the_run():
    import torch

    seen = []
    cmd = reproduce_command(lambda a: seen.append(torch.get_num_threads()), SCALES, "demo")
    before = torch.get_num_threads()
    assert make_main("demo", [cmd], version="0")(["reproduce", "--threads", "1"]) == 0
    assert seen == [1]
    assert torch.get_num_threads() == before


def test_version(capsys):
    main = make_main("demo", [reproduce_command(lambda a: None, SCALES, "demo")], version="1.2.3")
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == "demo 1.2.3"


def test_version_comes_from_the_installed_distribution(capsys):
    from importlib.metadata import version

    main = make_main("shared-core", [reproduce_command(lambda a: None, SCALES, "demo")])
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"shared-core {version('shared-core')}"


def test_usage_error_is_one_line_and_exit_2(capsys):
    def boom(args):
        raise UsageError("scale: expected tiny, got huge")

    main = make_main("demo", [reproduce_command(boom, SCALES, "demo")], version="0")
    assert main(["reproduce"]) == 2
    assert capsys.readouterr().err == "demo: error: scale: expected tiny, got huge\n"


def test_internal_error_keeps_its_traceback_and_marks_the_run_failed(tmp_path):
    def bug(args):
        Run("demo", {"a": 1}, out=args.out)
        raise ValueError("an internal bug")

    main = make_main("demo", [reproduce_command(bug, SCALES, "demo")], version="0")
    with pytest.raises(ValueError, match="internal bug"):
        main(["reproduce", "--out", str(tmp_path), "--seed", "3"])
    (folder,) = list((tmp_path / "demo").iterdir())
    assert folder.name.endswith("-failed")
    config = json.loads((folder / "config.json").read_text())
    assert config["status"] == "failed" and "internal bug" in config["run"]["failure"]
    assert config["run"]["seed"] == 3 and config["run"]["threads"] == 1


def test_missing_cuda_is_a_usage_error(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    main = make_main("demo", [reproduce_command(lambda a: None, SCALES, "demo")], version="0")
    assert main(["reproduce", "--device", "cuda"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--scale", "huge"],
        ["reproduce", "--scale", "paper"],  # not offered by this package
        ["reproduce", "--device", "tpu"],
        ["reproduce", "--threads", "0"],
        ["reproduce", "--seed", "-1"],
    ],
)
def test_bad_options_rejected_by_parser(argv):
    main = make_main("demo", [reproduce_command(lambda a: None, SCALES, "demo")], version="0")
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_help_shows_defaults(capsys):
    main = make_main("demo", [reproduce_command(lambda a: None, SCALES, "demo run")], version="0")
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    out = capsys.readouterr().out
    assert "(default: tiny)" in out and "(default: 1)" in out


def test_bad_scales_mapping():
    with pytest.raises(ValueError, match="scales"):
        reproduce_command(lambda a: None, {"huge": 1}, "demo")
    with pytest.raises(ValueError, match="default"):
        reproduce_command(lambda a: None, {"micro": 1}, "demo")


def test_extra_command():
    got = []
    cmd = Command(
        "audit",
        "audit a file",
        lambda ns: got.append(ns.path) or 3,
        lambda p: p.add_argument("path"),
    )
    main = make_main("demo", [cmd], version="0")
    assert main(["audit", "x.xyz"]) == 3
    assert got == ["x.xyz"]


def test_lazy_reproduce_command_imports_the_experiments_only_when_run(tmp_path, monkeypatch):
    import sys

    from shared_core.cli import lazy_reproduce_command

    (tmp_path / "demo_exp.py").write_text(
        "SCALES = {'micro': 'm', 'tiny': 't'}\n"
        "def reproduce(args):\n    return 7 if args.config == 't' else 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cmd = lazy_reproduce_command("demo_exp", "demo", scales=("micro", "tiny"))
    main = make_main("demo", [cmd], version="0")
    assert "demo_exp" not in sys.modules
    assert main(["reproduce"]) == 7
    assert "demo_exp" in sys.modules


def test_run_folder_is_named_by_timestamp_scale_and_name(tmp_path):
    made = []

    def run(args):
        with Run("demo", {}, out=args.out) as r:
            made.append(r.finish(print_tables=False))

    main = make_main("demo", [reproduce_command(run, SCALES, "demo")], version="0")
    assert main(["reproduce", "--scale", "micro", "--out", str(tmp_path)]) == 0
    assert (
        main(["reproduce", "--scale", "micro", "--out", str(tmp_path), "--name", "ablate-1"]) == 0
    )
    assert made[0].name.endswith("Z-micro") and made[1].name.endswith("Z-micro-ablate-1")
    assert json.loads((made[1] / "config.json").read_text())["run"]["name"] == "ablate-1"


def test_bad_run_name_is_a_usage_error(capsys):
    main = make_main("demo", [reproduce_command(lambda a: None, SCALES, "demo")], version="0")
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--name", "../escape"])
    assert e.value.code == 2
    assert "--name" in capsys.readouterr().err


def test_heartbeat_writes_at_least_every_interval_with_the_phase():
    from shared_core.cli import Heartbeat, phase

    now = [100.0]
    lines = []
    beat = Heartbeat(
        "reproduce --scale tiny", interval=30.0, clock=lambda: now[0], write=lines.append
    )
    with beat:
        beat._stop.set()  # the fake clock drives it here, not the thread
        for t, expect in [(110.0, None), (129.9, None), (130.0, "0 min 30 s"), (150.0, None)]:
            now[0] = t
            got = beat.tick()
            assert (got is None) if expect is None else (expect in got), (t, got)
        phase("fold 3 of 10")  # announced at once (clock 150)
        assert lines[-1] == "[reproduce --scale tiny] 0 min 50 s elapsed; phase: fold 3 of 10"
        now[0] = 179.0
        assert beat.tick() is None  # the announcement restarted the interval
        now[0] = 221.0
        assert beat.tick() == "[reproduce --scale tiny] 2 min 01 s elapsed; phase: fold 3 of 10"
    assert len(lines) == 3
    # the silence between two lines never exceeds the interval (plus the 1 s polling step)
    with pytest.raises(ValueError, match="interval"):
        Heartbeat("x", interval=0)


def test_phase_is_announced_at_once_inside_a_heartbeat_only(capsys):
    from shared_core.cli import Heartbeat, phase

    phase("outside any run")  # a library call: silent
    assert capsys.readouterr().err == ""
    with Heartbeat("demo", interval=3600):
        phase("fold 1 of 3")
        phase("epoch 5", announce=False)  # labels the next periodic line only
    err = capsys.readouterr().err
    assert "phase: fold 1 of 3" in err and "epoch 5" not in err


def test_heartbeat_thread_prints_during_a_long_run(capsys):
    import time

    from shared_core.cli import Heartbeat

    with Heartbeat("demo", interval=0.05):
        time.sleep(0.5)
    err = capsys.readouterr().err
    assert err.count("[demo]") >= 2


def test_package_options_reach_the_run_as_extra():
    seen = []

    def options(p):
        p.add_argument("--llm-oracle", action="store_true")
        p.add_argument("--rounds", type=int, default=3)

    main = make_main("demo", [reproduce_command(seen.append, SCALES, "demo", options=options)])
    assert main(["reproduce", "--llm-oracle", "--rounds", "5", "--scale", "micro"]) == 0
    assert seen[-1].extra == {"llm_oracle": True, "rounds": 5}
    assert seen[-1].scale == "micro"
    assert main(["reproduce"]) == 0 and seen[-1].extra == {"llm_oracle": False, "rounds": 3}
    plain = make_main("demo", [reproduce_command(seen.append, SCALES, "demo")])
    assert plain(["reproduce"]) == 0 and seen[-1].extra == {}


def test_lazy_scales_loads_only_on_lookup():
    from shared_core.cli import LazyScales

    calls = []

    def load():
        calls.append(1)
        return {"micro": "m", "tiny": "t", "small": "s", "paper": "p"}

    lazy = LazyScales(load)
    assert list(lazy) == ["micro", "tiny", "small", "paper"] and "tiny" in lazy and not calls
    assert lazy["small"] == "s" and calls == [1]
    with pytest.raises(KeyError):
        lazy["huge"]
    assert calls == [1]  # an unknown name never loads
