"""The README-number checker: a true table passes, a planted mismatch fails with file and line.

python -m pytest .ci/tests -p no:cacheprovider
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "check_readme_numbers", Path(__file__).resolve().parent.parent / "check_readme_numbers.py"
)
assert _SPEC is not None and _SPEC.loader is not None
crn = importlib.util.module_from_spec(_SPEC)
sys.modules["check_readme_numbers"] = crn  # dataclasses look their module up
_SPEC.loader.exec_module(crn)

TABLE = """# pkg

<!-- results: results/tiny.json -->
| method | NLL | acc | paper NLL |
|---|--:|--:|--:|
| ours (500 steps) | 1.234 | 52.3% | 0.98 |
| paper | 0.98 | 60.1% | 0.98 |
"""


def _write(tmp_path: Path, text: str, metrics: dict) -> Path:
    (tmp_path / "results").mkdir(exist_ok=True)
    (tmp_path / "results" / "tiny.json").write_text(json.dumps(metrics))
    readme = tmp_path / "README.md"
    readme.write_text(text)
    return readme


def test_true_table_passes(tmp_path: Path) -> None:
    readme = _write(tmp_path, TABLE, {"nll": 1.23449, "acc": 0.5231, "steps": 500})
    assert crn.check_readme(readme) == []
    assert crn.main([str(readme)]) == 0


def test_planted_mismatch_fails_naming_file_line_and_number(tmp_path: Path) -> None:
    readme = _write(
        tmp_path, TABLE.replace("1.234", "1.235"), {"nll": 1.23449, "acc": 0.5231, "steps": 500}
    )
    problems = crn.check_readme(readme)
    assert len(problems) == 1
    assert f"{readme}:6:" in problems[0] and "'1.235'" in problems[0]
    assert crn.main([str(readme)]) == 1


def test_precision_is_the_one_shown(tmp_path: Path) -> None:
    # 1.2 shown with one decimal matches 1.23449; 1.2346 shown with four does not
    readme = _write(
        tmp_path, TABLE.replace("1.234", "1.2346"), {"nll": 1.23449, "acc": 0.5231, "steps": 500}
    )
    assert len(crn.check_readme(readme)) == 1
    readme = _write(
        tmp_path, TABLE.replace("1.234", "1.2"), {"nll": 1.23449, "acc": 0.5231, "steps": 500}
    )
    assert crn.check_readme(readme) == []


def test_paper_rows_and_columns_are_skipped_but_labels_are_checked(tmp_path: Path) -> None:
    # the paper row/column hold numbers absent from the JSON: skipped; "500 steps" is checked
    readme = _write(tmp_path, TABLE, {"nll": 1.23449, "acc": 0.5231, "steps": 400})
    problems = crn.check_readme(readme)
    assert len(problems) == 1 and "'500'" in problems[0]


def test_missing_results_file_fails(tmp_path: Path) -> None:
    readme = _write(tmp_path, TABLE.replace("tiny.json", "small.json"), {"nll": 1.0})
    assert "not found" in crn.check_readme(readme)[0]


def test_self_test_runs() -> None:
    crn.self_test()


def test_census_counts_unmarked_measured_tables_and_exempts_the_papers(tmp_path: Path) -> None:
    text = (
        TABLE
        + "\n| arm | CPU s |\n|---|---|\n| ours | **190** |\n"  # measured, unmarked
        + "\n| name | what |\n|---|---|\n| `fit(x, n=500)` | 3 starts |\n"  # an API table
        + "\n<!-- paper -->\n| model | acc |\n|---|---|\n| big | 0.91 |\n"  # the paper's
    )
    readme = _write(tmp_path, text, {"nll": 1.23449, "acc": 0.5231, "steps": 500})
    assert crn.census(readme) == (1, [9])
    assert crn.main([str(readme)]) == 0  # not a failure yet
    assert crn.main([str(readme), "--strict"]) == 1
