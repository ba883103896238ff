"""Check that the numbers in README result tables are the numbers a run wrote (issue 46).

A table is checked when the line `<!-- results: results/<file>.json -->` stands above it (blank
lines between them are allowed); the path is relative to the README's folder. A table that
gathers the rows of several runs names their files, separated by spaces
(`<!-- results: results/a.json results/b.json -->`). Every number in
the table's body (not the header row) must occur among the numbers of those JSON files (values,
plus numbers inside its strings and keys) at the precision shown: ``0.523`` matches any value
in ``[0.5225, 0.5235]``, ``640`` any in ``[639.5, 640.5]``, ``1.2e-3`` any in
``[1.15e-3, 1.25e-3]``, ``1,234`` is 1234, and ``12.3%`` also matches a fraction 0.123.

Skipped: a row whose first cell says "paper", a column whose header says "paper", and a cell
that says "paper" (the paper's numbers are quoted, not measured). A number glued to letters
(``d3``, ``v1``, ``5k``) is a name, not a measurement, and is skipped; the suffixes ``x``/``×``,
``%``, ``s``, ``ms``, ``min`` and ``h`` are units and are checked.

Census (issue 67): besides checking, the script counts per README the marked tables and the
UNMARKED tables of measured numbers. A table is *measured* when a body cell outside the first
column, outside the paper's rows and columns, is a number (with an optional unit, ``±`` spread,
``[lo, hi]`` interval or parenthesised note: ``0.523``, ``**12.3%**``, ``1.9x [1.8-2.0]``, ``190
s``); API, install and settings tables (names, signatures, prose) are not. A table is *the
paper's* (exempt) when the line ``<!-- paper -->`` stands above it, or when every body row's
first cell, or the first column's header, says "paper". A table of configured inputs (sizes,
steps, flags: nothing a run measured) carries ``<!-- settings: why -->`` with the reason; it is
counted apart (``settings``) so a reviewer sees every one, and a marker without a reason counts
as no marker. Unmarked measured tables are printed as ``file:line`` with ``--list``. Run on
every README (no file given), the check fails where a README's count of unmarked measured
tables differs from its allowance in ``UNMARKED_ALLOWED`` (each with why: a run this machine
cannot make); more means a new table lacks its marker, fewer means the allowance must come down.
``--strict`` allows none.

    python .ci/check_readme_numbers.py              # every packages/*/README.md
    python .ci/check_readme_numbers.py --list       # ... and where the unmarked tables are
    python .ci/check_readme_numbers.py --strict     # ... and fail on an unmarked table
    python .ci/check_readme_numbers.py README.md... # the given files
    python .ci/check_readme_numbers.py --self-test  # a planted mismatch must fail
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# one results file, or several separated by spaces (a table that gathers the rows of several runs)
MARKER = re.compile(r"^\s*<!--\s*results:\s*(\S+?(?:\s+\S+?)*)\s*-->\s*$")
_UNIT = r"(?:%|×|x|ms|min|s|h)?"
# a number not glued to a word or a dot on the left; a sign only where it cannot be a range dash
NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−+]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][-+−]?\d+)?(?P<unit>" + _UNIT + r")(?![\w.])"
)
# inside a string: digits grouped by thousands ("B=20,000") read as one number
_JSON_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Shown:
    """A number as a README prints it: value, half-width of its rounding, percent or not."""

    text: str
    value: float
    half: float
    percent: bool

    def matches(self, v: float) -> bool:
        slack = self.half * (1 + 1e-9) + 1e-12
        if abs(v - self.value) <= slack:
            return True
        return self.percent and abs(100 * v - self.value) <= slack


def parse_numbers(cell: str) -> list[Shown]:
    """The numbers in one table cell, with the precision each is shown at."""
    out = []
    cell = cell.replace("**", "").replace("`", "")
    for m in NUMBER.finditer(cell):
        digits = m["int"].replace(",", "")
        frac = m["frac"] or ""
        sign = "-" if m["sign"] in ("-", "−") else ""
        decimals = len(frac) - 1 if frac else 0
        exp = int(m["exp"][1:].replace("−", "-")) if m["exp"] else 0
        value = float(f"{sign}{digits}{frac}") * 10.0**exp
        half = 0.5 * 10.0 ** (exp - decimals)
        out.append(Shown(m.group(0), value, half, m["unit"] == "%"))
    return out


def json_numbers(obj: object) -> list[float]:
    """Every number in a JSON document: values, and numbers written inside strings and keys."""
    found: list[float] = []

    def walk(o: object) -> None:
        if isinstance(o, bool) or o is None:
            return
        if isinstance(o, (int, float)):
            if math.isfinite(o):
                found.append(float(o))
        elif isinstance(o, str):
            found.extend(
                float(t.replace(",", "")) for t in _JSON_NUMBER.findall(o) if t not in ("+", "-")
            )
        elif isinstance(o, dict):
            for k, v in o.items():
                walk(str(k))
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(obj)
    return found


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", s)]


def _is_delimiter_row(cells: list[str]) -> bool:
    """GitHub's table delimiter row: every cell hyphens with optional colons (``---``, ``--:``)."""
    return all(re.fullmatch(r":?-+:?", c) for c in cells) and bool(cells)


def _is_separator(cells: list[str]) -> bool:
    return all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c) and any(cells)


PAPER_MARKER = re.compile(r"^\s*<!--\s*paper\b.*-->\s*$")
SETTINGS_MARKER = re.compile(r"^\s*<!--\s*settings:\s*\w.*-->\s*$")
# a cell that is a measurement: a number, a unit, then at most a spread, interval or note
MEASURED_CELL = re.compile(
    r"^[~≈<>]?\s*[-−+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+−]?\d+)?\s*(?:%|×|x|ms|min|s|h)?"
    r"(?:\s*(?:±\s*\S+|\[[^\]]*\]|\([^)]*\)))*\s*$"
)


@dataclass(frozen=True)
class Table:
    """A Markdown table of a README: its first line (1-based), marked, the paper's, measured,
    and marked as settings (configured inputs)."""

    line: int
    marked: bool
    paper: bool
    measured: bool
    settings: bool = False


def tables(readme_text: str) -> list[Table]:
    """Every table (a ``|`` line followed by a separator row) with how it is marked."""
    lines = readme_text.splitlines()
    found: list[Table] = []
    i = 0
    while i < len(lines):
        if not (
            lines[i].lstrip().startswith("|")
            and i + 1 < len(lines)
            and _is_delimiter_row(_cells(lines[i + 1]))
        ):
            i += 1
            continue
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        above = lines[k] if k >= 0 else ""
        header = _cells(lines[i])
        paper_cols = {c for c, h in enumerate(header) if "paper" in h.lower()}
        j = i + 2
        rows = []
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            rows.append(_cells(lines[j]))
            j += 1
        paper = bool(PAPER_MARKER.match(above)) or 0 in paper_cols
        paper = paper or (bool(rows) and all(r and "paper" in r[0].lower() for r in rows))
        measured = any(
            MEASURED_CELL.match(cell.replace("**", "").replace("`", "").strip())
            for r in rows
            if not (r and "paper" in r[0].lower())
            for c, cell in enumerate(r)
            if c > 0 and c not in paper_cols and "paper" not in cell.lower()
        )
        settings = bool(SETTINGS_MARKER.match(above))
        found.append(Table(i + 1, bool(MARKER.match(above)), paper, measured, settings))
        i = j
    return found


def census(readme: Path) -> tuple[int, list[int]]:
    """(marked tables, first lines of the unmarked measured tables that are not the paper's
    and not marked as settings)."""
    found = tables(readme.read_text(encoding="utf-8"))
    unmarked = [t.line for t in found if t.measured and not (t.marked or t.paper or t.settings)]
    return sum(t.marked for t in found), unmarked


def settings_tables(readme: Path) -> list[int]:
    """First lines of the tables marked ``<!-- settings: why -->``."""
    return [t.line for t in tables(readme.read_text(encoding="utf-8")) if t.settings]


def check_readme(readme: Path) -> list[str]:
    """Problems in one README: ``file:line: ...`` for each number not in its results file."""
    problems: list[str] = []
    lines = readme.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        i += 1
        if not m:
            continue
        marker_line = i
        names = m[1].split()
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j >= len(lines) or not lines[j].lstrip().startswith("|"):
            problems.append(f"{readme}:{marker_line}: results marker is not followed by a table")
            continue
        pool: list[float] = []
        unread = []
        for name in names:
            results = readme.parent / name
            if not results.is_file():
                unread.append(f"{readme}:{marker_line}: results file {name} not found")
                continue
            try:
                pool += json_numbers(json.loads(results.read_text(encoding="utf-8")))
            except json.JSONDecodeError as e:
                unread.append(f"{readme}:{marker_line}: results file {name} is not JSON: {e}")
        if unread:
            problems += unread
            continue
        header = _cells(lines[j])
        paper_cols = {k for k, h in enumerate(header) if "paper" in h.lower()}
        j += 1
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            cells = _cells(lines[j])
            j += 1
            if _is_separator(cells) or (cells and "paper" in cells[0].lower()):
                continue
            for k, cell in enumerate(cells):
                if k in paper_cols or "paper" in cell.lower():
                    continue
                for shown in parse_numbers(cell):
                    if not any(shown.matches(v) for v in pool):
                        problems.append(
                            f"{readme}:{j}: {shown.text!r} (column {k + 1}: {cell!r}) is not in "
                            f"{' or '.join(names)} at the precision shown"
                        )
        i = j
    return problems


def self_test() -> None:
    """A table that matches passes; a planted mismatch (one digit off) fails, naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "results").mkdir()
        (d / "results" / "tiny.json").write_text(
            json.dumps(
                {
                    "acc": 0.52349,
                    "loss": [1.25, 2.0],
                    "n": 640,
                    "lr": 0.0012,
                    "f": 0.5,
                    "setting": "B=20,000",
                }
            )
        )
        good = (
            "# x\n\n<!-- results: results/tiny.json -->\n\n| run (640 rows) | acc | loss | paper |\n"
            "|---|--:|--:|--:|\n| ours | **0.523** | 1.25 ± 2.0 | 0.91 |\n| B=20,000 | 0.5 | 2.0 | 1 |\n"
            "| paper | 0.99 | 7.7 | 0.99 |\n| lr | 1.2e-3 | 50% | n/a |\n"
        )
        (d / "README.md").write_text(good)
        assert check_readme(d / "README.md") == [], check_readme(d / "README.md")
        (d / "README.md").write_text(good.replace("**0.523**", "0.524"))
        bad = check_readme(d / "README.md")
        assert len(bad) == 1 and "'0.524'" in bad[0] and ":7:" in bad[0], bad
        (d / "README.md").write_text(good.replace("results/tiny.json", "results/none.json"))
        assert "not found" in check_readme(d / "README.md")[0]
        # two files: a number from either passes; a missing second file fails
        (d / "results" / "small.json").write_text(json.dumps({"acc": 0.61}))
        two = good.replace("results/tiny.json", "results/tiny.json results/small.json")
        (d / "README.md").write_text(two.replace("**0.523**", "0.61"))
        assert check_readme(d / "README.md") == [], check_readme(d / "README.md")
        (d / "README.md").write_text(two.replace("**0.523**", "0.62"))
        assert "tiny.json or results/small.json" in check_readme(d / "README.md")[0]
        (d / "README.md").write_text(two.replace("small.json", "none.json"))
        assert "none.json not found" in check_readme(d / "README.md")[0]
        # census: the marked table, an unmarked measured one, an API table, a paper table
        (d / "README.md").write_text(
            good + "\n| arm | loss |\n|---|---|\n| ours | 1.9x [1.8-2.0] |\n"
            "\n| name | what |\n|---|---|\n| `f(x, eps=1e-3)` | the op, 3 ways |\n"
            "\n<!-- paper -->\n| model | acc |\n|---|---|\n| big | 0.91 |\n"
            "\n| source | acc |\n|---|---|\n| paper, Table 2 | 0.91 |\n"
            "\n<!-- settings: the scales' sizes -->\n| scale | steps |\n|---|---|\n| tiny | 300 |\n"
            "\n<!-- settings -->\n| scale | steps |\n|---|---|\n| tiny | 300 |\n"
        )
        assert census(d / "README.md") == (1, [12, 35]), census(d / "README.md")
        assert settings_tables(d / "README.md") == [30], settings_tables(d / "README.md")
    UNMARKED_ALLOWED["pkg"] = (1, "why")
    try:
        assert allowance_problems({"pkg": 1, "other": 0}) == []
        assert "2 unmarked" in allowance_problems({"pkg": 2})[0]
        assert "lower its count" in allowance_problems({"pkg": 0})[0]
        assert "0 allowed" in allowance_problems({"other": 1})[0]
    finally:
        del UNMARKED_ALLOWED["pkg"]
    print(
        "check_readme_numbers self-test: a planted mismatch fails, the true table passes, "
        "the census counts marked and unmarked measured tables"
    )


# The unmarked tables of measured numbers still allowed per README, each count with why (issue
# 67's ratchet): a README with more fails (mark the new table), one with fewer fails too (lower
# the count here), so the number only goes down; `--strict` allows none. Empty since round 15:
# every measured table of every README is marked, so an unmarked one fails the plain run too.
UNMARKED_ALLOWED: dict[str, tuple[int, str]] = {}


def allowance_problems(counts: dict[str, int]) -> list[str]:
    """README name -> unmarked count, against `UNMARKED_ALLOWED`: one line per mismatch."""
    problems = []
    for name, n in counts.items():
        allowed = UNMARKED_ALLOWED.get(name, (0, ""))[0]
        if n > allowed:
            problems.append(
                f"{name}: {n} unmarked measured table(s), {allowed} allowed: put a results marker "
                "above the new one (`--list` names them)"
            )
        elif n < allowed:
            problems.append(
                f"{name}: {n} unmarked measured table(s), {allowed} allowed: lower its count in "
                "UNMARKED_ALLOWED (.ci/check_readme_numbers.py)"
            )
    return problems


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        self_test()
        return 0
    flags = {a for a in argv if a in ("--list", "--strict")}
    readmes = [Path(a) for a in argv if a not in flags] or sorted(ROOT.glob("packages/*/README.md"))
    problems = [p for r in readmes for p in check_readme(r)]
    for p in problems:
        print(p, file=sys.stderr)
    marked = unmarked = settings = 0
    counts: dict[str, int] = {}
    for r in readmes:
        n_marked, lines = census(r)
        set_lines = settings_tables(r)
        marked, unmarked = marked + n_marked, unmarked + len(lines)
        settings += len(set_lines)
        name = r.parent.name if r.name == "README.md" else str(r)
        counts[name] = len(lines)
        print(
            f"  {name}: {n_marked} marked, {len(lines)} unmarked measured, "
            f"{len(set_lines)} settings table(s)"
        )
        if "--list" in flags:
            for line in lines:
                print(f"    {r}:{line}: a table of measured numbers without a results marker")
            for line in set_lines:
                print(f"    {r}:{line}: marked as settings (configured inputs)")
    print(
        f"check_readme_numbers: {marked} marked table(s) in {len(readmes)} README(s), "
        f"{unmarked} unmarked table(s) of measured numbers, {settings} settings table(s), "
        f"{len(problems)} number(s) not found"
    )
    if "--strict" in flags and unmarked:
        print(f"check_readme_numbers: --strict: {unmarked} unmarked measured table(s)")
        return 1
    over = [] if argv and not flags.issuperset(argv) else allowance_problems(counts)
    for line in over:
        print(f"check_readme_numbers: {line}", file=sys.stderr)
    return 1 if problems or over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
