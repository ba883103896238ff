import importlib.util
import random

import numpy as np
import pytest
import torch

from shared_core.device import (
    environment,
    resolve_device,
    seed_everything,
)


def test_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


def test_env_overrides_auto(monkeypatch):
    monkeypatch.setenv("SHARED_CORE_DEVICE", "cpu")
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the error raised where no GPU is present"
)
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "CUDA:1"])
def test_cuda_absent_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device(spec)


@pytest.mark.parametrize("spec", ["gpu", "tpu:0", ""])
def test_unknown_device(spec):
    with pytest.raises(ValueError, match="expected 'auto', 'cpu'"):
        resolve_device(spec)


def test_device_type_error():
    with pytest.raises(TypeError, match="device"):
        resolve_device(0)  # type: ignore[arg-type]


@pytest.mark.cuda
def test_cuda_device():
    assert resolve_device("cuda:0").type == "cuda"


def test_seed_everything_is_deterministic():
    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(()))

    seed_everything(3)
    a = draw()
    seed_everything(3)
    assert draw() == a
    seed_everything(4)
    assert draw() != a


def test_seed_returns_jax_key_only_with_jax():
    key = seed_everything(0)
    if importlib.util.find_spec("jax") is None:
        assert key is None
    else:
        assert key is not None


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_bad_seed(bad):
    with pytest.raises(ValueError, match="seed"):
        seed_everything(bad)


def test_environment_has_versions():
    env = environment()
    assert env["versions"]["numpy"] == np.__version__
    assert "python" in env


def test_limit_threads_pins_and_restores():
    import os

    import torch
    from threadpoolctl import threadpool_info

    from shared_core.device import limit_threads

    before = torch.get_num_threads()
    env_before = os.environ.get("OMP_NUM_THREADS")
    with limit_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1"
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert torch.get_num_threads() == before
    assert os.environ.get("OMP_NUM_THREADS") == env_before


def test_limit_threads_bad_input():
    import pytest

    from shared_core.device import limit_threads

    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threads"), limit_threads(bad):  # type: ignore[arg-type]
            pass
