"""Run every Python block of every README, as pasted (issue 67).

Each README's ```` ```python ```` blocks run in order in one fresh namespace (a block may use what
an earlier block of the same README defined), in a fresh interpreter whose working directory is
an empty temporary folder, one thread. A block that needs a GPU, a download or a long run is
marked on the line before its fence with ``<!-- illustrative: <why> -->`` and is skipped (the
reason is required). The check prints, per README, how many blocks ran and were skipped and the
CPU time taken, and fails on the first error of each README with the block's line.

    python .ci/check_readme_code.py               # README.md, shared-core/, packages/*/
    python .ci/check_readme_code.py README.md...  # the given files
    python .ci/check_readme_code.py --self-test   # a broken block must fail, a marked one skip
    python .ci/check_readme_code.py --help        # this text
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ILLUSTRATIVE = re.compile(r"^\s*<!--\s*illustrative:\s*(\S.*?)\s*-->\s*$")
_BARE = re.compile(r"^\s*<!--\s*illustrative\s*:?\s*-->\s*$")
TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """One fenced Python block: the line its code starts on, the code, why it is skipped."""

    line: int
    code: str
    skip: str | None


def python_blocks(text: str) -> list[Block]:
    """The ```` ```python ```` blocks of a Markdown text, in order.

    Raises:
        ValueError: an ``illustrative`` marker without a reason, or an unclosed block.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,})python\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence = len(m[1]), m[2]
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        if _BARE.match(before):
            raise ValueError(
                f"line {i}: `<!-- illustrative: ... -->` needs a reason after the colon"
            )
        reason = ILLUSTRATIVE.match(before)
        start = i + 1
        j = start
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: ```python block is never closed")
        code = "\n".join(line[indent:] for line in lines[start:j])
        blocks.append(Block(start + 1, code, reason[1] if reason else None))
        i = j + 1
    return blocks


def run_blocks(blocks: list[Block], name: str) -> None:
    """Exec the blocks in order in one namespace (in this process); raise on the first error."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks:
        if block.skip is None:
            exec(compile(block.code, f"{name}:{block.line}", "exec"), namespace)


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_readme(readme: Path) -> tuple[int, int, float, str | None]:
    """(ran, skipped, CPU seconds, error or None) for one README, run in a fresh interpreter."""
    blocks = python_blocks(readme.read_text(encoding="utf-8"))
    ran = sum(b.skip is None for b in blocks)
    if not ran:
        return 0, len(blocks), 0.0, None
    name = str(readme.relative_to(ROOT)) if readme.is_relative_to(ROOT) else str(readme)
    payload = json.dumps({"name": name, "blocks": [b.__dict__ for b in blocks]})
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    started = _child_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--run-one"],
                input=payload, text=True, capture_output=True, cwd=tmp, env=env, timeout=TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return ran, len(blocks) - ran, _child_cpu() - started, f"over {TIMEOUT_S} s"
    seconds = _child_cpu() - started
    if done.returncode != 0:
        return ran, len(blocks) - ran, seconds, (done.stderr or done.stdout).strip()[-3000:]
    return ran, len(blocks) - ran, seconds, None


def _run_one() -> int:
    payload = json.loads(sys.stdin.read())
    run_blocks([Block(**b) for b in payload["blocks"]], payload["name"])
    return 0


def self_test() -> None:
    """Blocks share a namespace; an error fails naming its line; a marked block is skipped."""
    with tempfile.TemporaryDirectory() as tmp:
        readme = Path(tmp) / "README.md"
        good = (
            "# x\n\n```python\nx = 2\n```\n\ntext\n\n<!-- illustrative: needs a GPU -->\n"
            "```python\nimport torch; torch.ones(1).cuda()\n```\n\n```python\nassert x == 2\n```\n"
        )
        readme.write_text(good)
        ran, skipped, _, error = check_readme(readme)
        assert (ran, skipped, error) == (2, 1, None), (ran, skipped, error)
        readme.write_text(good.replace("assert x == 2", "assert y == 2"))
        ran, skipped, _, error = check_readme(readme)
        assert error is not None and "NameError" in error and "README.md:15" in error, error
        readme.write_text(good.replace("illustrative: needs a GPU", "illustrative"))
        try:
            check_readme(readme)
        except ValueError as e:
            assert "reason" in str(e)
        else:
            raise AssertionError("a marker without a reason passed")
    print("check_readme_code self-test: a broken block fails at its line, a marked one is skipped")


def main(argv: list[str]) -> int:
    if argv == ["--run-one"]:
        return _run_one()
    if argv == ["--self-test"]:
        self_test()
        return 0
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    options = [a for a in argv if a.startswith("-")]
    if options:
        print(f"check_readme_code: unknown option(s) {options}; see --help", file=sys.stderr)
        return 2
    readmes = [Path(a).resolve() for a in argv] or [
        ROOT / "README.md",
        ROOT / "shared-core" / "README.md",
        *sorted(ROOT.glob("packages/*/README.md")),
    ]
    total_ran = total_skipped = 0
    total_cpu = 0.0
    failed = []
    started = time.monotonic()
    for readme in readmes:
        name = readme.relative_to(ROOT) if readme.is_relative_to(ROOT) else readme
        try:
            ran, skipped, seconds, error = check_readme(readme)
        except ValueError as e:
            ran, skipped, seconds, error = 0, 0, 0.0, str(e)
        total_ran, total_skipped = total_ran + ran, total_skipped + skipped
        total_cpu += seconds
        status = "ok" if error is None else "FAILED"
        print(f"{name}: {ran} ran, {skipped} skipped (illustrative), {seconds:.1f} CPU-s, {status}")
        if error is not None:
            failed.append(name)
            print(error, file=sys.stderr)
    print(
        f"check_readme_code: {total_ran} block(s) ran, {total_skipped} skipped, "
        f"{len(failed)} README(s) failed, {total_cpu:.0f} CPU-s, "
        f"{time.monotonic() - started:.0f} s wall"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
