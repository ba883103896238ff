"""Every workspace package's public names resolve to the same objects whatever is imported
before them (`shared_core.lazy.lazy_exports` must never let a submodule shadow an export).

For each package, two fresh interpreters: one imports every submodule first (the worst case:
Python binds each submodule as an attribute of its package) and then reads the names; the other
reads the names in reverse ``__all__`` order with nothing preloaded. Each prints what every name
resolved to; the two listings must agree and no name may resolve to a module. The first also
runs `shared_core.testing.shadowed_exports`: no exported name may also be a submodule's name,
nor be bound to a module once the submodules are loaded (read before any lazy ``__getattr__``
can rebind it: ``from crome.augment import X; from crome import augment`` gave the module).
Submodules that need an extra which is not installed are skipped. Run in the root environment (nox -s micro);
``python .ci/check_exports.py crome orient_bias`` checks only those.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import importlib, json, sys, types
name, preload = sys.argv[1], sys.argv[2] == "1"
pkg = importlib.import_module(name)
problems = []
if preload:
    from shared_core.testing import shadowed_exports

    problems = shadowed_exports(name)  # imports every submodule first
names = list(getattr(pkg, "__all__", []))
out = {}
for n in (names if preload else names[::-1]):
    obj = getattr(pkg, n)
    kind = "module" if isinstance(obj, types.ModuleType) else type(obj).__name__
    out[n] = f"{kind}:{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)[:40]))}"
print(json.dumps({"names": out, "problems": problems}))
"""


def import_names() -> list[str]:
    names = []
    for path in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        src = path.parent / "src"
        names += [p.name for p in src.iterdir() if (p / "__init__.py").exists()]
    return names


def probe(name: str, preload: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE, name, preload], capture_output=True, text=True
    )


def main(names: list[str]) -> int:
    failures = []
    with ThreadPoolExecutor(max_workers=2) as pool:  # two probes at a time: 2 cores
        jobs = {(n, p): pool.submit(probe, n, p) for n in names for p in ("1", "0")}
    for name in names:
        listings = []
        for preload in ("1", "0"):
            res = jobs[name, preload].result()
            if res.returncode != 0:
                failures.append(f"{name}: probe failed:\n{res.stderr[-2000:]}")
                break
            listing = json.loads(res.stdout.strip().splitlines()[-1])
            listings.append(listing["names"])
            failures += [f"{name}: {p}" for p in listing["problems"]]
        else:
            first, second = listings
            modules = sorted(n for n, v in first.items() if v.startswith("module:"))
            modules += sorted(n for n, v in second.items() if v.startswith("module:"))
            if modules:
                failures.append(f"{name}: exports resolving to a submodule: {sorted(set(modules))}")
            differ = sorted(n for n in first if first[n] != second.get(n))
            if differ:
                failures.append(f"{name}: names that depend on import order: {differ}")
            if not modules and not differ and not any(f.startswith(f"{name}:") for f in failures):
                print(f"{name}: {len(first)} exports, order-independent", flush=True)
    for f in failures:
        print("check_exports:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or import_names()))
