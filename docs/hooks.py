"""mkdocs hook: package pages with their images, one API entry per object, and a formula each.

- Images: a README links its images relatively (``![plot](docs/plot.png)``, a file inside the
  package, so the link works on GitHub and in a clone). Every image a member's README links is
  copied into the site and the link rewritten for the page; a missing file fails the build.
  Absolute links to the monorepo's raw files are served the same way, from the checkout.
- API reference: ``::: <package>`` on a package page becomes the package's docstring and one
  block per public submodule, so a name re-exported at the top level is listed once, under
  the module that defines it.
- Code spans in tables keep their ``\\|`` escapes in Python-Markdown; the ``\\`` is dropped.
- Lists, as GitHub (CommonMark) reads them: an item continues at the item's text indent (2
  spaces after ``- ``), where Python-Markdown needs 4, so a 2-space continuation after a blank
  line ended the list and showed the rest as text (such lines are shifted to 4); and a list
  may start right after a paragraph line (a blank line is put before it).
- ``$$...$$`` inside a paragraph (GitHub renders it as display maths, arithmatex only as a block
  of its own) becomes a block of its own: without this, ``$`` signs leaked around the formula.
- The 404 page: mkdocs writes its links and assets as absolute paths under `site_url`'s path
  (``/methods/...``), which break wherever else the site is served (a custom domain's root, a
  preview folder, a local server, a file). They are made relative to a ``<base>`` that a
  first inline script sets from the address (and the tags that load files are written by
  script after it, out of the preload scanner's sight): the folder of ``404.html`` when it is opened
  directly; else the part of the path before the first of the site's top-level folders
  (``packages/``, ``assets/``, ...); else `site_url`'s path when the address is under it; else
  ``/``.
- Plots: an image a README shows from its package's ``results/`` folder (the plots of a
  committed run, kept by ``.ci/keep_run.py``) spans the text column and links to the full-size
  file (click to enlarge). A package page without such a plot fails the build, save the pages
  listed in ``PAGE_WITHOUT_PLOT`` (each with why); a listed page that gains one fails too.
- Formulas: a package page (``docs/packages/<name>.md``, shared-core's aside) with no LaTeX
  formula in its README part (above "API reference") fails the build, save the pages listed
  in ``README_WITHOUT_FORMULA``; KaTeX renders them offline (``docs/katex``).
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RAW = "https://raw.githubusercontent.com/iclr2026-methods/methods/main/"
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
API = re.compile(r"(?m)^::: ([A-Za-z_]\w*)[ \t]*$")
SNIPPET = re.compile(r'(?m)^--8<-- "([\w./-]+/README\.md)"[ \t]*$')
_missing_formula: list[str] = []
_missing_plot: list[str] = []


def _members() -> dict[str, Path]:
    """Package page name -> member folder (relative to the checkout)."""
    found = {}
    for path in [ROOT / "shared-core", *sorted((ROOT / "packages").glob("*/"))]:
        if (path / "pyproject.toml").exists():
            name = tomllib.loads((path / "pyproject.toml").read_text())["project"]["name"]
            found[name] = path.relative_to(ROOT)
    return found


MEMBERS = _members()


def _target(member: Path, link: str) -> str | None:
    """The checkout-relative path of an image link in `member`'s README, or None (external)."""
    if link.startswith(RAW):
        return link[len(RAW) :]
    if re.match(r"^[a-z]+:|^/|^#", link):
        return None
    return posixpath.normpath((member / link).as_posix())


def on_pre_build(config: Any) -> None:
    _missing_formula.clear()
    _missing_plot.clear()


def on_files(files: Files, config: Any) -> Files:
    seen = set()
    for member in MEMBERS.values():
        readme = ROOT / member / "README.md"
        if not readme.exists():
            continue
        for m in IMAGE.finditer(readme.read_text()):
            rel = _target(member, m.group(2))
            if rel is None or rel in seen:
                continue
            if not (ROOT / rel).is_file():
                raise PluginError(f"{readme.relative_to(ROOT)}: image {m.group(2)!r} not found")
            seen.add(rel)
            files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


DISPLAY_LINE = re.compile(r"^([ \t]*)\$\$[^$]+\$\$[ \t]*$")
INLINE_DISPLAY = re.compile(r"\$\$([^$\n]+)\$\$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")


def _display_blocks(markdown: str) -> str:
    """``$$...$$`` on a line of a paragraph becomes a block of its own (blank lines around it, at
    its indentation, so it stays in its list item); ``$$...$$`` amid text becomes inline
    ``$\\displaystyle ...$``. Fenced code is left alone."""
    lines = markdown.split("\n")
    out: list[str] = []
    fenced = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        if fenced:
            out.append(line)
            continue
        m = DISPLAY_LINE.match(line)
        if m:
            if out and out[-1].strip():
                out.append("")
            out.append(line)
            if i + 1 < len(lines) and lines[i + 1].strip():
                out.append("")
            continue
        out.append(INLINE_DISPLAY.sub(lambda d: f"$\\displaystyle {d.group(1).strip()}$", line))
    return "\n".join(out)


LIST_ITEM = re.compile(r"^(?:[-*+]|\d+[.)]) +")


def _list_indent(markdown: str) -> str:
    """Lines that continue a top-level list item at its text indent (under 4) get 4. A
    top-level item right after a text line gets a blank line before it, once any blank line
    came before (GitHub starts a list after a paragraph line, and an item after a loose
    continuation block; Python-Markdown reads both as lazy text lines)."""
    out: list[str] = []
    shift = 0
    fenced = False
    loose = False  # a blank line since the current item began
    for line in markdown.split("\n"):
        item = None if fenced else LIST_ITEM.match(line)
        if item:
            if loose and out and out[-1].strip():
                out.append("")
            shift = max(0, 4 - len(item.group(0)))
            loose = False
        elif not line.strip():
            loose = True
        elif shift and line.strip():
            indent = len(line) - len(line.lstrip(" "))
            if indent == 0 and not fenced:
                shift = 0
            elif indent > 0:
                line = " " * shift + line
        if FENCE.match(line):
            fenced = not fenced
        out.append(line)
    return "\n".join(out)


def _page_member(page: Any) -> Path | None:
    m = re.fullmatch(r"packages/([\w-]+)\.md", page.file.src_uri)
    return MEMBERS.get(m.group(1)) if m else None


def _api_blocks(module: str, folder: Path) -> list[str]:
    """A package's docstring, then each public submodule (its own objects only), recursively:
    every package is listed without members, so its re-exports are not listed again."""
    blocks = [f"::: {module}\n    options:\n      members: false\n      show_submodules: false"]
    for path in sorted(folder.iterdir()):
        if path.name.startswith("_"):
            continue
        if path.suffix == ".py" and path.is_file():
            blocks.append(f"::: {module}.{path.stem}")
        elif (path / "__init__.py").exists():
            blocks += _api_blocks(f"{module}.{path.name}", path)
    return blocks


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    member = _page_member(page)
    if member is None:
        return markdown
    here = posixpath.dirname(page.file.src_uri)
    # the README is included here rather than by pymdownx.snippets (which runs later), so
    # its image links can be rewritten for the page
    markdown = SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text(), markdown)

    def image(m: re.Match[str]) -> str:
        rel = _target(member, m.group(2))
        return m.group(0) if rel is None else m.group(1) + posixpath.relpath(rel, here) + m.group(3)

    markdown = _list_indent(_display_blocks(IMAGE.sub(image, markdown)))
    return API.sub(
        lambda m: "\n\n".join(_api_blocks(m.group(1), ROOT / member / "src" / m.group(1))),
        markdown,
    )


# package pages whose README part (above "API reference") has no formula yet, each with why;
# listed here, a page still needs a formula in its docstrings, and a listed page whose README
# gains one fails the build until it is taken off the list
README_WITHOUT_FORMULA: dict[str, str] = {}


# package pages whose README shows no plot of a committed run yet, each with why; a listed page
# that gains one fails the build until it is taken off the list
PAGE_WITHOUT_PLOT: dict[str, str] = {}

# an <img> of a package's results folder, as the README part renders it (not already in a link)
PLOT = re.compile(r'(?<!">)<img\b[^>]*\ssrc="(?P<src>(?:[^"]*/)?results/[^"]+\.png)"[^>]*>')


def _plot_links(html: str) -> tuple[str, int]:
    """Each results-folder plot as a full-column image inside a link to the full-size file."""

    def link(m: re.Match[str]) -> str:
        img = m.group(0).replace("<img ", '<img class="run-plot" ', 1)
        return f'<a class="run-plot-link" href="{m.group("src")}" title="full size">{img}</a>'

    return PLOT.subn(link, html)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    html = re.sub(r"<code>[^<]*</code>", lambda m: m.group(0).replace("\\|", "|"), html)
    m = re.fullmatch(r"packages/([\w-]+)\.md", page.file.src_uri)
    if m and m.group(1) != "shared-core":
        html, plots = _plot_links(html)
        name = m.group(1)
        if not plots and name not in PAGE_WITHOUT_PLOT:
            _missing_plot.append(f"{page.file.src_uri} shows no plot of a committed run")
        elif plots and name in PAGE_WITHOUT_PLOT:
            _missing_plot.append(
                f"{page.file.src_uri} shows a plot now: take {name!r} off PAGE_WITHOUT_PLOT"
                " in docs/hooks.py"
            )
        readme = html.split('id="api-reference"', 1)[0]
        if 'class="arithmatex"' not in html:
            _missing_formula.append(f"{page.file.src_uri} has no formula")
        elif 'class="arithmatex"' not in readme and m.group(1) not in README_WITHOUT_FORMULA:
            _missing_formula.append(f"{page.file.src_uri} has no formula above its API reference")
        elif 'class="arithmatex"' in readme and m.group(1) in README_WITHOUT_FORMULA:
            _missing_formula.append(
                f"{page.file.src_uri} has a formula now: take {m.group(1)!r} off"
                " README_WITHOUT_FORMULA in docs/hooks.py"
            )
    return html


_BASE_SCRIPT = """<script>(function () {
  var path = location.pathname, site = %(site)s, tops = %(tops)s, base = "/";
  if (/\\/404\\.html$/.test(path)) {
    base = path.slice(0, path.length - "404.html".length);
  } else {
    var hits = tops.map(function (t) { return path.indexOf("/" + t + "/"); })
      .filter(function (i) { return i >= 0; });
    if (hits.length) base = path.slice(0, Math.min.apply(null, hits) + 1);
    else if (path.indexOf(site) === 0) base = site;
  }
  document.write('<base href="' + base + '">');
})();</script>"""
_CONFIG_SCRIPT = """<script>(function () {
  var c = document.getElementById("__config"), cfg = JSON.parse(c.textContent);
  cfg.base = document.baseURI;
  c.textContent = JSON.stringify(cfg);
})();</script>"""


def _top_folders(site_dir: str) -> list[str]:
    """The site's top-level folders (``assets``, ``packages``, ...): where a base path ends."""
    return sorted(p.name for p in Path(site_dir).iterdir() if p.is_dir())


def _js_string(text: str) -> str:
    """`text` as a JavaScript string literal that cannot end the ``<script>`` it stands in."""
    return json.dumps(text).replace("</", "<\\/")


def error_page(html: str, site_path: str, tops: list[str]) -> str:
    """The 404 page with its links relative to a ``<base>`` set from the address (module doc)."""
    # "/methods/assets/x.css" -> "assets/x.css", "/methods/" -> "" (the base itself)
    html = re.sub(r'(\s(?:href|src)=")' + re.escape(site_path) + "(?!/)", r"\1", html)
    # the browser's preload scanner fetches the URLs it sees in the markup before any script
    # runs (against the address, not the <base>): the tags that load a file are written by
    # script instead, after the <base> is set
    html = re.sub(
        r'<link\b[^>]*\shref="(?![a-z]+:|/|#)[^"]*"[^>]*>'
        r'|<script\b[^>]*\ssrc="(?![a-z]+:|/)[^"]*"[^>]*>\s*</script>',
        lambda m: "<script>document.write(" + _js_string(m.group(0)) + ")</script>",
        html,
    )
    script = _BASE_SCRIPT % {"site": json.dumps(site_path), "tops": json.dumps(tops)}
    html = re.sub(r"<head>", lambda _: "<head>" + script, html, count=1)
    return re.sub(
        r'(<script id="__config"[^>]*>.*?</script>)',
        lambda m: m.group(1) + _CONFIG_SCRIPT,
        html,
        count=1,
        flags=re.S,
    )


def on_post_build(config: Any) -> None:
    page = Path(config["site_dir"]) / "404.html"
    if page.exists():
        site_path = urlsplit(config.get("site_url") or "/").path or "/"
        page.write_text(error_page(page.read_text(), site_path, _top_folders(config["site_dir"])))
    if _missing_plot:
        problems = "; ".join(sorted(_missing_plot))
        _missing_plot.clear()
        raise PluginError(
            f"docs: {problems} (keep a run with .ci/keep_run.py and show its plots in the README:"
            " ![what it shows](results/<name>/<plot>.png))"
        )
    if _missing_formula:
        problems = "; ".join(sorted(_missing_formula))
        _missing_formula.clear()
        raise PluginError(
            f"docs: {problems} (write the method's maths in LaTeX, $...$ or $$...$$, in the README)"
        )
