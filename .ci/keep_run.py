"""Keep a finished run as a package's committed evidence (issue 67): its numbers and its plots.

    python .ci/keep_run.py runs/<package>/<timestamp> <name>

copies the run folder's ``metrics.json`` to ``packages/<package>/results/<name>.json`` and its
``report.md`` and PNG plots to ``packages/<package>/results/<name>/``. A README table then carries
``<!-- results: results/<name>.json -->`` and shows the plots as
``![what it shows](results/<name>/<plot>.png)``; the docs site copies those images onto the
package's page, so the page and its numbers come from the same run. A run that did not finish
(``config.json``'s status not ``complete``, or no ``metrics.json``) is refused, and so is a destination
that already holds another run's plots (``--replace`` removes them first).

The package is read from ``metrics.json`` (its ``package`` field, a distribution name) and found
among the members under ``packages/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def member(distribution: str) -> Path:
    """The folder under ``packages/`` whose pyproject names `distribution`."""
    for folder in sorted((ROOT / "packages").glob("*/")):
        toml = folder / "pyproject.toml"
        if toml.is_file() and tomllib.loads(toml.read_text())["project"]["name"] == distribution:
            return folder
    raise SystemExit(f"keep_run: no package under packages/ is named {distribution!r}")


def keep(run: Path, name: str, replace: bool = False) -> list[Path]:
    """Copy `run`'s metrics, report and plots under its package's ``results/``; the new paths."""
    metrics = run / "metrics.json"
    if not metrics.is_file():
        raise SystemExit(f"keep_run: {run} has no metrics.json (did the run finish?)")
    config = run / "config.json"
    status = json.loads(config.read_text()).get("status") if config.is_file() else None
    if status != "complete":
        raise SystemExit(f"keep_run: {run} is not complete (config.json's status: {status!r})")
    if not name or "/" in name or name.endswith(".json"):
        raise SystemExit(f"keep_run: name {name!r} must be a plain file stem such as 'tiny'")
    results = member(json.loads(metrics.read_text())["package"]) / "results"
    plots = results / name
    if plots.exists():
        if not replace:
            raise SystemExit(f"keep_run: {plots} exists; pass --replace to drop it first")
        shutil.rmtree(plots)
    plots.mkdir(parents=True)
    written = [results / f"{name}.json"]
    shutil.copyfile(metrics, written[0])
    for src in [*sorted(run.glob("*.png")), run / "report.md"]:
        if src.is_file():
            written.append(plots / src.name)
            shutil.copyfile(src, written[-1])
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a finished run folder, runs/<package>/<timestamp>")
    parser.add_argument("name", help="the results name: tiny, small, bench-sampling, ...")
    parser.add_argument("--replace", action="store_true", help="replace results/<name>/")
    args = parser.parse_args(argv)
    for path in keep(args.run, args.name, args.replace):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
