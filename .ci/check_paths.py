"""Fail on absolute paths of a developer's machine in tracked text files (issue 67), and on
merge-conflict markers left in them (a line starting ``<<<<<<< `` or ``>>>>>>> ``).

A README command must be the one a user types, and a test or script must not depend on one
machine's folders. Every tracked text file (``git ls-files``; binary files and ``uv.lock`` are
skipped) is searched for a path that starts with one of the four folders named in ``LOCAL``:
work, tmp, root or home (not glued to a word on its left: ``.nox/docs/tmp/x`` is a relative
path and passes).

An example that says so is allowed: a line that carries the marker ``paths: example`` (as a
comment: ``# paths: example`` in code, ``<!-- paths: example -->`` in Markdown), and every line of
the fenced Markdown block right after a line that is that marker alone. Tests write under
pytest's ``tmp_path``, never a literal path under tmp.

    python .ci/check_paths.py              # every tracked text file
    python .ci/check_paths.py FILE...      # the given files
    python .ci/check_paths.py --self-test  # a planted path must fail, a marked example pass
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL = re.compile(r"(?<![\w.~-])/(?:work|tmp|root|home)/")
ALLOW = "paths: example"
_SKIP = {"uv.lock"}
CONFLICT = re.compile(r"^(?:<{7}|>{7}) ")  # not "=======" alone: a Markdown heading rule


def _fence(line: str) -> str | None:
    """The fence (```` ``` ```` or ``~~~`` run) a line opens or closes, else None."""
    m = re.match(r"\s*(`{3,}|~{3,})", line)
    return m[1] if m else None


def check_text(name: str, text: str) -> list[str]:
    """``name:line: ...`` for each machine-local path outside a marked example."""
    problems: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() in (f"<!-- {ALLOW} -->", f"# {ALLOW}") and i + 1 < len(lines):
            fence = _fence(lines[i + 1])
            if fence is not None:  # skip the marked block, closing fence included
                i += 2
                while i < len(lines) and not lines[i].strip().startswith(fence):
                    i += 1
                i += 1
                continue
        if CONFLICT.match(line):
            problems.append(f"{name}:{i + 1}: a merge-conflict marker {line[:7]!r} was committed")
        if ALLOW not in line:
            for m in LOCAL.finditer(line):
                problems.append(
                    f"{name}:{i + 1}: machine-local path {line[m.start() :].split()[0]!r} "
                    f"(write the command a user types, use tmp_path in tests, or mark an "
                    f"example with `{ALLOW}`)"
                )
        i += 1
    return problems


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    return [ROOT / p for p in out.split("\0") if p and Path(p).name not in _SKIP]


def check_file(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):  # deleted in the work tree, or a submodule
        return []
    if b"\0" in data[:8192]:
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    return check_text(name, text)


def self_test() -> None:
    """A planted path fails with its line; relative paths and marked examples pass."""
    planted = "# x\n\nRun `/work/wt/heavy pkg reproduce` first.\n"  # paths: example
    bad = check_text("README.md", planted)
    assert len(bad) == 1 and "README.md:3:" in bad[0] and "wt/heavy" in bad[0], bad
    assert len(check_text("t.py", 'out = "/tmp/x"\nhome = "/home/me/y"\n')) == 2  # paths: example
    fine = (
        "See `.nox/docs/tmp/screenshots/` and `runs/tmp/x`.\n"
        "cache under /root/.cache  <!-- paths: example -->\n"
        "<!-- paths: example -->\n```bash\nls /home/alice/data\n```\n"
        "done\n"
    )
    assert check_text("README.md", fine) == [], check_text("README.md", fine)
    # the marker exempts only the block right after it
    after = fine + "```bash\nls /home/alice/data\n```\n"  # paths: example
    assert len(check_text("README.md", after)) == 1
    marked = "| a |\n<<<<<<< HEAD\n| b |\n=======\n| c |\n>>>>>>> branch\n"
    assert len(check_text("docs/index.md", marked)) == 2, check_text("docs/index.md", marked)
    assert check_text("a.md", "title\n=======\n\n<< not a marker\n") == []
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "w.bin"
        binary.write_bytes(b"\0/work/x")
        assert check_file(binary) == []
    print(
        "check_paths self-test: a planted path and conflict markers fail, relative paths and "
        "marked examples pass"
    )


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        self_test()
        return 0
    files = [Path(a).resolve() for a in argv] or tracked_files()
    problems = [p for f in files for p in check_file(f)]
    for p in problems:
        print(p, file=sys.stderr)
    print(
        f"check_paths: {len(files)} file(s), {len(problems)} machine-local path(s) or conflict marker(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
