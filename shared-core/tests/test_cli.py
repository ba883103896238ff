import pytest

from shared_core.cli import Command, ReproduceArgs, make_main, reproduce_command


def test_reproduce_defaults_and_options(tmp_path):
    seen = []
    main = make_main("demo", "1.2.3", [reproduce_command(seen.append)])
    assert main(["reproduce"]) == 0
    assert seen[-1] == ReproduceArgs()
    assert main(["reproduce", "--scale", "small", "--seed", "7", "--out", str(tmp_path)]) == 0
    assert seen[-1].scale == "small" and seen[-1].seed == 7 and seen[-1].out == tmp_path


def test_version(capsys):
    main = make_main("demo", "1.2.3", [reproduce_command(lambda a: None)])
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == "demo 1.2.3"


def test_user_error_is_one_line_and_exit_2(capsys):
    def boom(args):
        raise ValueError("scale: expected tiny, got huge")

    main = make_main("demo", "0", [reproduce_command(boom)])
    assert main(["reproduce"]) == 2
    err = capsys.readouterr().err
    assert err == "demo: error: scale: expected tiny, got huge\n"


def test_bad_scale_rejected_by_parser():
    main = make_main("demo", "0", [reproduce_command(lambda a: None)])
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--scale", "huge"])
    assert e.value.code == 2


def test_extra_command():
    got = []
    cmd = Command(
        "audit",
        "audit a file",
        lambda ns: got.append(ns.path) or 3,
        lambda p: p.add_argument("path"),
    )
    main = make_main("demo", "0", [cmd])
    assert main(["audit", "x.xyz"]) == 3
    assert got == ["x.xyz"]
