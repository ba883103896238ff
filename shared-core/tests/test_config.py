from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from shared_core.cli import UsageError
from shared_core.config import _convert, apply_overrides


@dataclass(frozen=True)
class Model:
    width: int = 32
    dropout: float = 0.1


@dataclass(frozen=True)
class Config:
    steps: int = 100
    lr: float = 1e-3
    arm: Literal["meld", "vanilla"] = "meld"
    amp: bool = False
    out: Path | None = None
    sizes: tuple[int, ...] = (1, 2)
    model: Model = field(default_factory=Model)

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps: expected >= 1, got {self.steps}")


def test_sets_are_converted_to_the_field_types_and_reach_nested_dataclasses():
    got = apply_overrides(
        Config(),
        sets=["steps=5", "lr=3e-4", "arm=vanilla", "amp=yes", "sizes=4,8", "model.width=64",
              "out=none"],
    )  # fmt: skip
    assert got == Config(5, 3e-4, "vanilla", True, None, (4, 8), Model(64, 0.1))


def test_a_file_then_the_sets_later_wins(tmp_path):
    (tmp_path / "c.toml").write_text("steps = 7\nsizes = [3]\n[model]\ndropout = 0.0\n")
    (tmp_path / "c.json").write_text('{"steps": 9, "model": {"width": 8}}')
    assert apply_overrides(Config(), tmp_path / "c.toml", ["steps=11"]) == Config(
        steps=11, sizes=(3,), model=Model(32, 0.0)
    )
    assert apply_overrides(Config(), tmp_path / "c.json").model == Model(8, 0.1)


@pytest.mark.parametrize(
    "sets, match",
    [
        (["stepz=3"], r"--set stepz: Config has no setting 'stepz'; expected one of \['amp'"),
        (["steps=3.5"], "--set steps: expected int, got '3.5'"),
        (["steps=many"], "--set steps: expected int, got 'many'"),
        (["amp=maybe"], "--set amp: expected true or false, got 'maybe'"),
        (["arm=other"], r"--set arm: expected one of \['meld', 'vanilla'\], got 'other'"),
        (["steps"], "--set: expected key=value, got 'steps'"),
        (["steps=0"], "steps: expected >= 1, got 0"),  # the dataclass's own check
        (["model.depth=2"], "--set model.depth: Model has no setting 'depth'"),
    ],
)
def test_bad_overrides_name_the_key_the_value_and_what_was_expected(sets, match):
    with pytest.raises(UsageError, match=match):
        apply_overrides(Config(), sets=sets)


def test_bad_config_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="--config: no file"):
        apply_overrides(Config(), tmp_path / "missing.json")
    (tmp_path / "c.yaml").write_text("steps: 3")
    with pytest.raises(UsageError, match="expected a .json or .toml file"):
        apply_overrides(Config(), tmp_path / "c.yaml")
    (tmp_path / "c.json").write_text("{steps: 3")
    with pytest.raises(UsageError, match="is not valid JSON"):
        apply_overrides(Config(), tmp_path / "c.json")
    (tmp_path / "d.json").write_text('{"steps": "3"}')  # a string in a file is not converted
    with pytest.raises(UsageError, match="steps: expected int"):
        apply_overrides(Config(), tmp_path / "d.json")
    with pytest.raises(TypeError, match="config: expected a dataclass instance"):
        apply_overrides(Config, sets=["steps=1"])


def test_convert_keeps_json_values_of_untyped_fields():
    from typing import Any

    assert _convert('{"a": 1}', Any, "k") == {"a": 1}
    assert _convert("plain", Any, "k") == "plain"
    assert _convert("[1, 2]", list[int], "k") == [1, 2]
