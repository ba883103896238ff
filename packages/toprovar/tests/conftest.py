"""Loads shared-core's pytest plugin, so `pytest tests` works on an installed wheel."""

pytest_plugins = ["shared_core.pytest_plugin"]
