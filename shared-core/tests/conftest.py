from pathlib import Path

import pytest


@pytest.fixture
def data_dir() -> Path:
    """Small real-format files shipped with the tests."""
    return Path(__file__).parent / "data"
