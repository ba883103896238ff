"""Check that every package has the anatomy docs/contributing.md describes (run by `nox -s lint`)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def problems_of(pkg: Path) -> list[str]:
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    name = meta["name"]
    import_name = name.replace("-", "_")
    need = [
        "README.md",
        "CHANGELOG.md",
        "tests",
        "benchmarks",
        f"src/{import_name}/__init__.py",
        f"src/{import_name}/py.typed",
    ]
    out = [f"{name}: missing {rel}" for rel in need if not (pkg / rel).exists()]
    if name not in meta.get("scripts", {}):
        out.append(f"{name}: no console script named {name!r}")
    if not (ROOT / ".github" / "workflows" / f"{name}.yml").exists():
        out.append(f"{name}: no .github/workflows/{name}.yml")
    if not (ROOT / "docs" / "packages" / f"{name}.md").exists():
        out.append(f"{name}: no docs/packages/{name}.md")
    if f"packages/{pkg.name}" not in (ROOT / "README.md").read_text():
        out.append(f"{name}: not in README's package table")
    return out


def main() -> int:
    problems = [p for pkg in sorted((ROOT / "packages").glob("*/")) for p in problems_of(pkg)]
    for p in problems:
        print(f"layout: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
