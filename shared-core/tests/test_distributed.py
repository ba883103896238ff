import torch

from shared_core.distributed import DistInfo, all_reduce_mean, init_distributed


def test_single_process_fallback(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    info = init_distributed("cpu")
    assert info == DistInfo(0, 1, 0, torch.device("cpu"))
    assert info.is_main and not info.enabled
    assert all_reduce_mean(3.0) == 3.0


def test_bad_environment(monkeypatch):
    import pytest

    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        init_distributed("cpu")
