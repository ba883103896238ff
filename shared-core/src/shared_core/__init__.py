"""Thin shared layer of the ICLR 2026 method packages.

Importing this package is cheap: torch and JAX are imported only inside the helpers
that need them (`shared_core.device`, `shared_core.checkpoint`, `shared_core.distributed`).
"""

__version__ = "0.1.0"
