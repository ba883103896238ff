"""One torch thread for the whole session (the tests run many tiny ops on a shared CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# shared-core's plugin (fixture `device`, markers `cuda` and `slow`): `pytest tests` works on an
# installed wheel too, with or without `-p shared_core.pytest_plugin`
pytest_plugins = ["shared_core.pytest_plugin"]


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    from shared_core.device import limit_threads

    with limit_threads(1):
        yield
