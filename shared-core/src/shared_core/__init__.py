"""Thin shared layer of the ICLR 2026 method packages.

Importing this package is cheap: torch and JAX are imported only inside the helpers
that need them (`shared_core.device`, `shared_core.checkpoint`, `shared_core.train`, ...).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("shared-core")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
