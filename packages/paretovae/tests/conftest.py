"""One torch thread for the whole session (the tests run many tiny ops on a shared CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    from shared_core.device import limit_threads

    with limit_threads(1):
        yield
