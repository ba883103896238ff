from pathlib import Path

import pytest

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


@pytest.fixture
def data_dir() -> Path:
    """Small real-format files shipped with the tests."""
    return Path(__file__).parent / "data"
