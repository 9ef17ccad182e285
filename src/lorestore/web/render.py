"""How the dashboard turns results into HTML: the Jinja2 environment (autoescaped), a lesson's
markdown rendered safely, line diffs between versions, and the SVG chart of activity per day.

Markdown is rendered by markdown-it-py with raw HTML off (``<script>`` shows as text), links
only to http, https and mailto (a ``javascript:`` link stays text), and no image fetched from
anywhere: an image becomes a link to where it points, or its alt text."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

TEMPLATES = Path(__file__).parent / "templates"
SAFE_SCHEMES = ("http://", "https://", "mailto:")


def safe_link(url: str) -> bool:
    """Whether a link may be followed from a lesson: http, https or mailto only."""
    return url.strip().lower().startswith(SAFE_SCHEMES)


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image is never loaded (a remote one would tell its host who reads the lesson and
    when): it is shown as a link to its source, or as its alt text when that is no web link."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    label = escape(f"[image: {alt}]")
    if safe_link(src):
        return f'<a href="{escape(src)}" rel="nofollow noopener noreferrer">{label}</a>'
    return str(label)


def _link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


@cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    md.add_render_rule("link_open", _link_open)
    return md


def markdown(text: str) -> Markup:
    """A lesson's value as HTML that runs nothing and loads nothing."""
    return Markup(_markdown().render(text))  # noqa: S704 - raw HTML is off, links are checked


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One row of a side-by-side diff: ``kind`` is equal, delete, insert or replace."""

    kind: str
    old: str | None
    new: str | None


def side_by_side(old: str, new: str) -> list[DiffRow]:
    """The lines of two values aligned, each change marked (the versions' diff)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        left, right = a[i1:i2], b[j1:j2]
        for n in range(max(len(left), len(right))):
            rows.append(
                DiffRow(
                    tag,
                    left[n] if n < len(left) else None,
                    right[n] if n < len(right) else None,
                )
            )
    return rows


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    css: str
    counts: Sequence[int]


def day_chart(days: Sequence[str], series: Sequence[Series], *, width: int = 720) -> Markup:
    """A grouped bar chart (SVG, no script): one group of bars per day, one bar per series."""
    height, top, bottom, left = 180, 10, 30, 36
    plot_h = height - top - bottom
    peak = max([1, *(c for s in series for c in s.counts)])
    group = (width - left) / max(1, len(days))
    bar = max(1.0, (group - 4) / max(1, len(series)))
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img" aria-label="activity per day" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="0" y="{top + 8}" class="axis">{peak}</text>',
        f'<text x="0" y="{top + plot_h}" class="axis">0</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width}" y2="{top + plot_h}" class="base"/>',
    ]
    for d, day in enumerate(days):
        x0 = left + d * group + 2
        for s, one in enumerate(series):
            value = one.counts[d]
            h = plot_h * value / peak
            parts.append(
                f'<rect class="{one.css}" x="{x0 + s * bar:.1f}" y="{top + plot_h - h:.1f}" '
                f'width="{bar - 1:.1f}" height="{h:.1f}"><title>{escape(day)} '
                f"{escape(one.name)}: {value}</title></rect>"
            )
        if len(days) <= 16 or d % 2 == 0:
            parts.append(
                f'<text x="{x0:.1f}" y="{height - 12}" class="axis">{escape(day[5:])}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every text inside is escaped above


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
