"""MkDocs hook: write llms.txt (an index of the pages) and llms-full.txt (their Markdown,
snippets included) into the built site, for assistants that read documentation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_pages: list[tuple[str, str, str]] = []
# pymdownx.snippets runs after this hook sees the Markdown: include the files here too
_SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)


def on_pre_build(config: Any) -> None:
    _pages.clear()


def _include(root: Path, name: str) -> str:
    # "file.md:section" is the part between the file's "--8<-- [start:section]" and
    # "--8<-- [end:section]" lines, as pymdownx.snippets reads it.
    path, _, section = name.partition(":")
    text = (root / path).read_text(encoding="utf-8")
    if not section:
        return text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if f"--8<-- [start:{section}]" in line)
    end = next(i for i, line in enumerate(lines) if f"--8<-- [end:{section}]" in line)
    return "\n".join(lines[start + 1 : end]) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    root = Path(config["config_file_path"]).parent
    text = _SNIPPET.sub(lambda m: _include(root, m.group(1)), markdown)
    _pages.append((page.title or page.file.src_uri, page.file.dest_uri, text))
    return markdown


def on_post_build(config: Any) -> None:
    site = Path(config["site_dir"])
    index = [f"# {config['site_name']}", "", f"> {config.get('site_description') or ''}", ""]
    index += ["## Pages", ""]
    index += [f"- [{title}]({uri})" for title, uri, _ in _pages]
    (site / "llms.txt").write_text("\n".join(index) + "\n", encoding="utf-8")
    full = [f"# {title}\n\n{text.strip()}\n" for title, _, text in _pages]
    (site / "llms-full.txt").write_text("\n".join(full), encoding="utf-8")
