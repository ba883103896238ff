import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from torch import nn

from shared_core.hub import (
    Pretrained,
    config_from_json,
    config_to_json,
    file_sha256,
    load_flax,
    load_folder,
    save_flax,
)


@dataclass(frozen=True)
class Block:
    width: int = 8
    act: str = "tanh"


@dataclass(frozen=True)
class NetConfig:
    n_in: int = 3
    blocks: tuple[Block, ...] = (Block(), Block(width=5))
    scale: float = 0.5
    note: str | None = None
    path: Path = Path("x/y")
    extra: dict[str, list[int]] = field(default_factory=lambda: {"a": [1, 2]})


class Net(nn.Module, Pretrained):
    distribution = "shared-core"

    def __init__(self, config: NetConfig) -> None:
        super().__init__()
        self.config = config
        widths = [config.n_in] + [b.width for b in config.blocks]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(widths))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x * self.config.scale


class Other(nn.Module, Pretrained):
    distribution = "shared-core"

    def __init__(self, config: NetConfig) -> None:
        super().__init__()
        self.lin = nn.Linear(config.n_in, 1)


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    net = Net(NetConfig(note="n"))
    data = tmp_path / "train.csv"
    data.write_text("a,b\n1,2\n")
    out = net.save_pretrained(
        tmp_path / "ckpt",
        metrics={"loss": 0.125, "acc": 0.75},
        command=["pkg", "train", "--data", "train.csv"],
        data=[data],
    )
    return net, out, data


def test_torch_roundtrip_is_bit_identical(saved):
    net, out, _ = saved
    x = torch.randn(4, 3)
    loaded = Net.from_pretrained(out)
    assert loaded.config == net.config
    assert isinstance(loaded.config.blocks, tuple) and isinstance(loaded.config.blocks[1], Block)
    assert torch.equal(loaded(x), net(x))
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "config.json",
        "model.safetensors",
        "provenance.json",
    ]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_provenance_and_model_card(saved):
    _, out, data = saved
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["package"] == "shared-core" and prov["class"].endswith(".Net")
    assert prov["command"] == ["pkg", "train", "--data", "train.csv"]
    assert prov["data"][0]["sha256"] == file_sha256(data)
    assert prov["metrics"] == {"loss": 0.125, "acc": 0.75}
    card = (out / "README.md").read_text()
    assert "pkg train --data train.csv" in card
    assert file_sha256(data) in card
    assert "| loss | 0.125 |" in card
    assert "library_name: shared-core" in card


def test_resave_replaces_a_checkpoint_but_not_other_folders(saved, tmp_path):
    net, out, _ = saved
    net.save_pretrained(out, command="again")
    assert json.loads((out / "provenance.json").read_text())["command"] == ["again"]
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a checkpoint"):
        net.save_pretrained(busy)
    assert (busy / "notes.txt").read_text() == "mine"


def test_missing_folder_and_files(saved, tmp_path):
    _, out, _ = saved
    with pytest.raises(FileNotFoundError, match="no checkpoint folder at .*nope"):
        Net.from_pretrained(tmp_path / "nope")
    (out / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        Net.from_pretrained(out)
    (out / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        Net.from_pretrained(out)


def _edit_provenance(out, **kv):
    prov = json.loads((out / "provenance.json").read_text())
    prov.update(kv)
    (out / "provenance.json").write_text(json.dumps(prov))


def test_other_package_or_class_is_refused(saved):
    _, out, _ = saved
    with pytest.raises(
        ValueError,
        match=r"ckpt: written by package 'shared-core' for class .*\.Net; expected a shared-core Other",
    ):
        Other.from_pretrained(out)
    _edit_provenance(out, package="crome")
    with pytest.raises(
        ValueError, match=r"ckpt: written by package 'crome'.*expected a shared-core Net"
    ):
        Net.from_pretrained(out)


def test_newer_major_version_is_refused(saved):
    from importlib.metadata import version

    _, out, _ = saved
    major, minor = (int(v) for v in version("shared-core").split(".")[:2])
    newer = f"{major}.{minor + 1}.0" if major == 0 else f"{major + 1}.0.0"
    _edit_provenance(out, version=newer)
    with pytest.raises(ValueError, match=rf"ckpt: written by shared-core {newer}, a newer major"):
        Net.from_pretrained(out)
    _edit_provenance(out, version=f"{major}.{minor}.999")  # a newer patch loads
    Net.from_pretrained(out)


def test_truncated_or_corrupt_weights_are_refused(saved):
    _, out, _ = saved
    w = out / "model.safetensors"
    raw = w.read_bytes()
    w.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(
        ValueError, match=r"ckpt: model.safetensors has \d+ bytes.*truncated or corrupt"
    ):
        Net.from_pretrained(out)
    w.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(ValueError, match="ckpt: model.safetensors does not match its SHA-256"):
        Net.from_pretrained(out)


def test_truncated_weights_without_a_record_still_fail_clearly(saved):
    _, out, _ = saved
    _edit_provenance(out, files={})
    w = out / "model.safetensors"
    w.write_bytes(w.read_bytes()[:100])
    with pytest.raises(ValueError, match="ckpt: cannot load model.safetensors"):
        Net.from_pretrained(out)


def test_config_round_trip_and_errors():
    cfg = NetConfig(blocks=(Block(3, "relu"),), note=None, extra={"k": []})
    assert config_from_json(NetConfig, json.loads(json.dumps(config_to_json(cfg)))) == cfg
    assert config_from_json(NetConfig, {}) == NetConfig()  # older folders: defaults
    with pytest.raises(ValueError, match=r"config: unknown field\(s\) \['bogus'\]"):
        config_from_json(NetConfig, {"bogus": 1})
    with pytest.raises(ValueError, match=r"config.blocks\[0\].width: expected int"):
        config_from_json(NetConfig, {"blocks": [{"width": "8"}]})
    with pytest.raises(TypeError, match="config.extra.k: cannot store a set"):
        config_to_json(NetConfig(extra={"k": {1}}))  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="does not round-trip"):
        Net(NetConfig(blocks=[Block()])).save_pretrained("unused")  # type: ignore[arg-type]


def test_load_folder_reports_bad_config(saved):
    _, out, _ = saved
    (out / "config.json").write_text(json.dumps({"n_in": "three"}))
    _edit_provenance(out, files={})
    load_folder(out, Net, distribution="shared-core")  # the record itself is fine
    with pytest.raises(
        ValueError, match=r"ckpt: config.json does not match NetConfig: config.n_in"
    ):
        Net.from_pretrained(out)


@dataclass(frozen=True)
class MLPConfig:
    sizes: tuple[int, ...] = (3, 6, 2)


def test_flax_roundtrip_is_bit_identical(tmp_path):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    cfg = MLPConfig()
    keys = jax.random.split(jax.random.PRNGKey(0), len(cfg.sizes) - 1)
    params = {
        f"dense_{i}": {
            "kernel": jax.random.normal(k, (a, b)),
            "bias": jnp.arange(b, dtype=jnp.float32),
        }
        for i, (k, a, b) in enumerate(zip(keys, cfg.sizes, cfg.sizes[1:], strict=False))
    }

    def apply(p, x):
        for i in range(len(cfg.sizes) - 1):
            x = jnp.tanh(x @ p[f"dense_{i}"]["kernel"] + p[f"dense_{i}"]["bias"])
        return x

    out = save_flax(tmp_path / "f", params, cfg, command="pkg train", distribution="shared-core")
    loaded, cfg2 = load_flax(out, MLPConfig, distribution="shared-core")
    assert cfg2 == cfg
    x = jnp.ones((4, 3))
    assert bool((apply(loaded, x) == apply(params, x)).all())
    assert "pkg train" in (out / "README.md").read_text()
    w = out / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_flax(out, MLPConfig, distribution="shared-core")
    with pytest.raises(ValueError, match="expected a shared-core Block"):
        load_flax(out, Block, distribution="shared-core")


def test_import_pulls_in_no_framework():
    import subprocess
    import sys

    code = (
        "import sys, shared_core.hub\n"
        "bad = [m for m in ('torch', 'jax', 'flax') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_crash_mid_save_leaves_the_old_folder_or_none(saved, tmp_path):
    from shared_core.hub import save_folder

    net, out, _ = saved
    before = (out / "model.safetensors").read_bytes()

    def crash(tmp, provenance):
        (tmp / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    for target in (out, tmp_path / "fresh"):
        with pytest.raises(KeyboardInterrupt):
            save_folder(target, crash, owner=Net, config=net.config, distribution="shared-core")
    assert (out / "model.safetensors").read_bytes() == before
    assert not (tmp_path / "fresh").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    Net.from_pretrained(out)


def test_save_folder_can_name_its_config_file(tmp_path):
    """A folder whose config.json is someone else's (transformers, a peft adapter) keeps the
    package's config under another name, and load_folder reads it from there."""
    from shared_core.hub import save_folder

    def write(tmp, _provenance):
        (tmp / "weights.bin").write_bytes(b"w")

    out = save_folder(tmp_path / "f", write, owner=Net, config=NetConfig(scale=2.0),
                      distribution="shared-core", config_name="training_config.json")  # fmt: skip
    assert not (out / "config.json").exists()
    config, provenance = load_folder(out, Net, NetConfig, distribution="shared-core",
                                     config_name="training_config.json")  # fmt: skip
    assert config == NetConfig(scale=2.0) and "training_config.json" in provenance["files"]
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_folder(out, Net, distribution="shared-core")
