"""MkDocs hook: relative links from a page to repository files outside docs/ work in the site.

The pages link the way GitHub shows them, relative to the page's own file, so a figure or a
script the repository holds outside docs/ is named `../benchmarks/results/peers.png` or
`../../scripts/demo`. MkDocs knows only docs/, and a strict build fails such a link. This
hook copies each such file into the site under `_repo/<path in the repository>` and points
the link there, so one spelling works on GitHub and in the site.

Only existing files (not folders) inside the repository are taken; a Markdown file outside
docs/ is left alone (it would become a page of its own, outside the nav), as is a link
whose target is missing, so that the strict build still reports it. Fenced code blocks are
left as they are.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

PREFIX = '_repo'

# `](target)` or `](target "title")` of a Markdown link or image; the target has no spaces.
_LINK = re.compile(r'(\]\()([^)\s]+)((?:\s+"[^"]*")?\))')
_FENCE = re.compile(r'^\s*(`{3,}|~{3,})')
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')


def _repo_target(target: str, page: Page, docs_dir: str, repo: str) -> str | None:
  """The repository-relative path of `target` if it names a file outside docs/, else None."""
  if _SCHEME.match(target) or target.startswith(('#', '/')):
    return None
  path = target.split('#', 1)[0].split('?', 1)[0]
  if not path:
    return None
  page_dir = os.path.dirname(page.file.abs_src_path)
  full = os.path.normpath(os.path.join(page_dir, path))
  inside_docs = os.path.commonpath([full, docs_dir]) == docs_dir
  inside_repo = os.path.commonpath([full, repo]) == repo
  if inside_docs or not inside_repo or not os.path.isfile(full) or full.endswith('.md'):
    return None
  return os.path.relpath(full, repo).replace(os.sep, '/')


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
  """Points links to repository files outside docs/ at their copies under `_repo/`."""
  docs_dir = os.path.abspath(config['docs_dir'])
  repo = os.path.dirname(os.path.abspath(config['config_file_path']))
  page_dir = posixpath.dirname(page.file.src_uri)

  def rewrite(match: re.Match) -> str:
    relative = _repo_target(match.group(2), page, docs_dir, repo)
    if relative is None:
      return match.group(0)
    src_uri = f'{PREFIX}/{relative}'
    if files.get_file_from_path(src_uri) is None:
      files.append(File.generated(config, src_uri,
                                  abs_src_path=os.path.join(repo, *relative.split('/'))))
    anchor = match.group(2)[len(match.group(2).split('#', 1)[0]):]
    link = posixpath.relpath(src_uri, page_dir or '.') + anchor
    return match.group(1) + link + match.group(3)

  out, fence = [], None
  for line in markdown.splitlines(keepends=True):
    opened = _FENCE.match(line)
    if fence is None and opened:
      fence = opened.group(1)
    elif fence is not None and opened and opened.group(1).startswith(fence[0] * len(fence)):
      fence = None
    elif fence is None:
      line = _LINK.sub(rewrite, line)
    out.append(line)
  return ''.join(out)
