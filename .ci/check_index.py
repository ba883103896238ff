"""The home page's table of packages (docs/index.md) against the packages (issue 67).

Fails when a package has no row, a row names no package, or a row's "commands" cell differs
from the commands its CLI lists (``<package> --help``, in that order). Needs every package
installed (the ``micro`` session).

    python .ci/check_index.py              # every package
    python .ci/check_index.py --self-test  # a planted missing command must fail
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "docs" / "index.md"
ROW = re.compile(r"^\| \[(?P<name>[\w-]+)\]\(packages/(?P=name)\.md\) \|")


def index_commands(text: str) -> dict[str, list[str]]:
    """Package -> the commands its row of the home page's table lists."""
    lines = text.splitlines()
    header = next((line for line in lines if line.startswith("| package |")), None)
    if header is None:
        raise ValueError(f"{INDEX}: no table whose first column is 'package'")
    column = [c.strip() for c in header.strip("|").split("|")].index("commands")
    rows = {}
    for line in lines:
        m = ROW.match(line)
        if m:
            cell = [c.strip() for c in line.strip().strip("|").split("|")][column]
            rows[m["name"]] = [c.strip(" `") for c in cell.split(",") if c.strip()]
    return rows


def help_commands(help_text: str) -> list[str]:
    """The commands an ``argparse`` help lists under its ``COMMAND`` positional."""
    section = re.search(r"(?ms)^  COMMAND\n(.*?)(?=^\S|\Z)", help_text)
    if section is None:
        return []
    return re.findall(r"(?m)^    ([a-z][\w-]*)", section.group(1))


def problems(rows: dict[str, list[str]], actual: dict[str, list[str]]) -> list[str]:
    out = [f"{n}: no row in {INDEX.name}'s table" for n in sorted(set(actual) - set(rows))]
    out += [f"{n}: a row for no package" for n in sorted(set(rows) - set(actual))]
    for name in sorted(set(rows) & set(actual)):
        if rows[name] != actual[name]:
            out.append(f"{name}: the table says {rows[name]}, `{name} --help` lists {actual[name]}")
    return out


def packages() -> list[str]:
    return sorted(
        tomllib.loads((p / "pyproject.toml").read_text())["project"]["name"]
        for p in (ROOT / "packages").glob("*/")
        if (p / "pyproject.toml").exists()
    )


def self_test() -> None:
    table = (
        "| package | paper | commands |\n| --- | --- | --- |\n"
        "| [pkg](packages/pkg.md) | P | reproduce, `audit` |\n"
    )
    help_text = "positional arguments:\n  COMMAND\n    reproduce\n              Run.\n    audit"
    help_text += "     Check.\n\noptions:\n  -h, --help  show\n"
    assert help_commands(help_text) == ["reproduce", "audit"], help_commands(help_text)
    rows = index_commands(table)
    assert problems(rows, {"pkg": ["reproduce", "audit"]}) == []
    bad = problems(rows, {"pkg": ["reproduce", "audit", "train"]})
    assert len(bad) == 1 and "train" in bad[0], bad
    assert "no row" in problems(rows, {"pkg": ["reproduce", "audit"], "other": []})[0]
    print("check_index self-test: a command missing from the table fails")


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        self_test()
        return 0
    actual = {}
    for name in packages():
        out = subprocess.run([name, "--help"], capture_output=True, text=True, check=True).stdout
        actual[name] = help_commands(out)
    found = problems(index_commands(INDEX.read_text(encoding="utf-8")), actual)
    for p in found:
        print(f"check_index: {p}", file=sys.stderr)
    print(f"check_index: {len(actual)} packages, {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
