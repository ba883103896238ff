"""Check every package's anatomy (docs/contributing.md), run by `nox -s lint`.

Also derives what is otherwise hand-kept: each package's CI workflow (its path filters are
the package, its workspace dependencies, transitively, and the shared files) and the list
of source folders the API reference reads. ``python .ci/check_layout.py --write``
rewrites the workflows and that list; without it, a stale one is an error.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_PATHS = ["uv.lock", "pyproject.toml", "noxfile.py", ".github/workflows/_tests.yml"]
WORKFLOW = """name: {name}
# Written by .ci/check_layout.py --write from the workspace dependencies: do not edit by hand.
on:
  push:
    branches: [main]
    paths: [{paths}]
  pull_request:
    paths: [{paths}]

jobs:
  tests:
    uses: ./.github/workflows/_tests.yml
    with:
      package: {name}
"""


def members() -> dict[str, Path]:
    """Workspace members by distribution name: shared-core and every packages/<dir>."""
    out = {}
    for path in [ROOT / "shared-core", *sorted((ROOT / "packages").glob("*/"))]:
        if (path / "pyproject.toml").exists():
            out[_meta(path)["project"]["name"]] = path
    return out


def _meta(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text())


def import_name(path: Path) -> str:
    """The import package of a member: the folder its wheel ships (``src/<import>``)."""
    wheel = _meta(path).get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {})
    packages = wheel.get("wheel", {}).get("packages", [])
    if len(packages) != 1:
        raise SystemExit(f"layout: {path}: expected one [tool.hatch.build.targets.wheel] package")
    return packages[0].rsplit("/", 1)[-1]


def _requirement_name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def workspace_deps(name: str, found: dict[str, Path]) -> list[str]:
    """Members `name` depends on (runtime and optional), transitively, itself excluded."""
    seen: list[str] = []
    todo = [name]
    while todo:
        meta = _meta(found[todo.pop()])["project"]
        reqs = list(meta.get("dependencies", []))
        for extra in meta.get("optional-dependencies", {}).values():
            reqs += extra
        for dep in map(_requirement_name, reqs):
            if dep in found and dep != name and dep not in seen:
                seen.append(dep)
                todo.append(dep)
    return sorted(seen)


def workflow_text(name: str, found: dict[str, Path]) -> str:
    deps = [name, *workspace_deps(name, found)]
    if "shared-core" not in deps:  # every package needs it, even when only the test group names it
        deps.append("shared-core")
    paths = [f"{found[n].relative_to(ROOT).as_posix()}/**" for n in deps]
    paths += [*SHARED_PATHS, f".github/workflows/{name}.yml"]
    return WORKFLOW.format(name=name, paths=", ".join(f'"{p}"' for p in dict.fromkeys(paths)))


def mkdocs_paths(found: dict[str, Path]) -> str:
    srcs = ", ".join(f"{p.relative_to(ROOT).as_posix()}/src" for p in found.values())
    return f"          paths: [{srcs}]"


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def _admits(spec: str, version: str) -> bool:
    """Whether a plain specifier list such as ``>=0.2.1,<0.3`` admits `version`."""
    ops = {
        ">=": lambda a, b: a >= b,
        "<=": lambda a, b: a <= b,
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        ">": lambda a, b: a > b,
        "<": lambda a, b: a < b,
    }
    v = _version_tuple(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op = next(o for o in ops if clause.startswith(o))
        b = _version_tuple(clause[len(op) :])
        n = max(len(v), len(b))
        if not ops[op](v + (0,) * (n - len(v)), b + (0,) * (n - len(b))):
            return False
    return True


def pin_problems(name: str, pkg: Path, found: dict[str, Path]) -> list[str]:
    """Every requirement on a workspace member must admit that member's current version, or
    `pip install` resolves to an older release than the one the code is written against."""
    meta = _meta(pkg)["project"]
    reqs = list(meta.get("dependencies", []))
    for extra in meta.get("optional-dependencies", {}).values():
        reqs += extra
    out = []
    for req in reqs:
        dep = _requirement_name(req)
        if dep not in found or dep == name:
            continue
        spec = re.sub(r"^[A-Za-z0-9_.\-]+(\[[^\]]*\])?", "", req.split(";")[0]).strip()
        version = _meta(found[dep])["project"]["version"]
        if spec and not _admits(spec, version):
            out.append(f"{name}: {req!r} excludes the workspace's {dep} {version}")
    return out


def problems_of(name: str, pkg: Path, found: dict[str, Path]) -> list[str]:
    meta = _meta(pkg)["project"]
    imp = import_name(pkg)
    need = [
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "tests",
        "benchmarks",
        f"src/{imp}/__init__.py",
        f"src/{imp}/py.typed",
        f"src/{imp}/reference.py",
        f"src/{imp}/experiments/__init__.py",
    ]
    out = [f"{name}: missing {rel}" for rel in need if not (pkg / rel).exists()]
    if pkg.name != name:
        out.append(f"{name}: folder packages/{pkg.name} must be named after the distribution")
    if name not in meta.get("scripts", {}):
        out.append(f"{name}: no console script named {name!r}")
    if (pkg / "LICENSE").exists() and (pkg / "LICENSE").read_text() != (
        ROOT / "LICENSE"
    ).read_text():
        out.append(f"{name}: LICENSE differs from the root LICENSE")
    if "version" not in meta or "version" in meta.get("dynamic", []):
        out.append(f"{name}: the version must be static in pyproject.toml")
    init = (pkg / "src" / imp / "__init__.py").read_text() if (pkg / "src" / imp).exists() else ""
    if re.search(r"^__version__\s*=\s*['\"]", init, re.M):
        out.append(f"{name}: __version__ is a literal in __init__.py; read importlib.metadata")
    for field in ("license-files", "authors", "keywords", "classifiers", "urls"):
        if field not in meta:
            out.append(f"{name}: pyproject has no [project] {field}")
    for req in meta.get("dependencies", []):
        if _requirement_name(req) == "shared-core" and "<" not in req:
            out.append(f"{name}: the shared-core dependency needs a version range, got {req!r}")
    wf = ROOT / ".github" / "workflows" / f"{name}.yml"
    if not wf.exists() or wf.read_text() != workflow_text(name, found):
        out.append(f"{name}: .github/workflows/{name}.yml is missing or stale (run --write)")
    if not (ROOT / "docs" / "packages" / f"{name}.md").exists():
        out.append(f"{name}: no docs/packages/{name}.md")
    if f"/packages/{pkg.name})" not in (ROOT / "README.md").read_text():
        out.append(f"{name}: not in README's package table")
    out += pin_problems(name, pkg, found)
    root_deps = {_requirement_name(r) for r in _meta(ROOT)["project"].get("dependencies", [])}
    if name not in root_deps:
        out.append(f"{name}: the root pyproject must depend on it (with its reproduce extras)")
    return out


def readme_versions(text: str, found: dict[str, Path]) -> str:
    """README's package table with each row's version column read from the member's pyproject
    (the third column of a row that links ``tree/main/<folder>``): it cannot go stale."""

    def row(m: re.Match[str]) -> str:
        folder = m.group(2)
        name = next((n for n, p in found.items() if p.relative_to(ROOT).as_posix() == folder), None)
        if name is None:
            return m.group(0)
        return f"{m.group(1)}{_meta(found[name])['project']['version']}{m.group(4)}"

    pattern = r"(?m)^(\| \[[^\]]+\]\([^)]*/tree/main/([\w./-]+)\) \| [^|]* \| )([^|]+)( \| .*)$"
    return re.sub(pattern, row, text)


def main(argv: list[str]) -> int:
    found = members()
    mkdocs = ROOT / "mkdocs.yml"
    text = mkdocs.read_text()
    wanted = re.sub(r"(?m)^          paths: \[.*\]$", mkdocs_paths(found), text)
    readme = ROOT / "README.md"
    readme_wanted = readme_versions(readme.read_text(), found)
    if "--write" in argv:
        for name in found:
            (ROOT / ".github" / "workflows" / f"{name}.yml").write_text(workflow_text(name, found))
        mkdocs.write_text(wanted)
        readme.write_text(readme_wanted)
    problems = [
        p
        for name, pkg in found.items()
        if name != "shared-core"
        for p in problems_of(name, pkg, found)
    ]
    wf = ROOT / ".github" / "workflows" / "shared-core.yml"
    if not wf.exists() or wf.read_text() != workflow_text("shared-core", found):
        problems.append(
            "shared-core: .github/workflows/shared-core.yml is missing or stale (run --write)"
        )
    if wanted != mkdocs.read_text():
        problems.append("mkdocs.yml: the mkdocstrings paths are stale (run --write)")
    if readme_wanted != readme.read_text():
        problems.append("README.md: the package table's versions are stale (run --write)")
    known = {p.name for p in (ROOT / ".github" / "workflows").glob("*.yml")}
    stale = known - {f"{n}.yml" for n in found} - {"_tests.yml", "quality.yml"}
    problems += [f"workflow {s} names no workspace member" for s in sorted(stale)]
    for p in problems:
        print(f"layout: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
