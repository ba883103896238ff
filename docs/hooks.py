"""mkdocs hook: serve the package READMEs' plots offline.

Package READMEs link their plots by absolute URL (they must work on PyPI), e.g.
``https://raw.githubusercontent.com/iclr2026-methods/methods/main/packages/<name>/assets/x.png``.
For the docs site those files are copied from the checkout and the links made relative, so
the site works with no network.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RAW = re.compile(
    r"https://raw\.githubusercontent\.com/iclr2026-methods/methods/main/([\w./-]+\.png)"
)


def on_files(files: Files, config: Any) -> Files:
    for png in sorted(ROOT.glob("packages/*/assets/*.png")) + sorted(
        ROOT.glob("shared-core/assets/*.png")
    ):
        rel = png.relative_to(ROOT).as_posix()
        files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    depth = page.file.src_uri.count("/")
    prefix = "../" * depth
    return RAW.sub(lambda m: prefix + m.group(1), markdown)
