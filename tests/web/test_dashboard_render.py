"""The dashboard's markdown renderer on hostile text: whatever an agent writes, the HTML has
no element or attribute that runs or loads anything (parsed, not grepped), and a link leads
only to http, https or mailto; beside controls that render as markdown should."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from lorestore.web.render import markdown, side_by_side

SAFE_TAGS = {
    "p", "a", "em", "strong", "code", "pre", "ul", "ol", "li", "blockquote", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "br",
}  # fmt: skip
FRAGMENTS = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))", "[x](data:text/html,<b>)", "![p](https://t.invalid/p.png)",
    "![p](javascript:alert(1))", "<a href='javascript:1'>a</a>", "<iframe src=//x>", "**b**",
    "`code`", "[ok](https://example.com)", "<style>*{}</style>", "&lt;", "\n\n", "# h\n",
    "<svg onload=alert(1)>", "[m](mailto:a@b.c)", "[r](/relative)", "<!-- c -->", "\t  ",
    "[x]( javascript:alert(1))", "[x](vbscript:x)", "<details open ontoggle=alert(1)>",
]  # fmt: skip


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parsed(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(str(markdown(text)))
    return parser.tags


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=12))
def test_no_rendered_element_runs_or_loads_anything(parts: list[str]) -> None:
    for tag, attrs in parsed(" ".join(parts)):
        assert tag in SAFE_TAGS, tag
        assert not any(name.startswith("on") or name in ("src", "style") for name in attrs)
        if tag == "a":
            href = str(attrs.get("href") or "")
            assert href.startswith(("http://", "https://", "mailto:")), href
            assert attrs.get("rel") == "nofollow noopener noreferrer"


def test_markdown_still_renders_as_markdown() -> None:
    tags = parsed("# Title\n\n**bold** and [docs](https://example.com) and `x`")
    assert [t for t, _ in tags] == ["h1", "p", "strong", "a", "code"]
    assert str(markdown("<b>x</b>")) == "<p>&lt;b&gt;x&lt;/b&gt;</p>\n"
    image = str(markdown("![pixel](https://t.invalid/p.png)"))
    assert image == (
        '<p><a href="https://t.invalid/p.png" rel="nofollow noopener noreferrer">'
        "[image: pixel]</a></p>\n"
    )


def test_side_by_side_pairs_changed_lines() -> None:
    rows = side_by_side("a\nb\nc", "a\nB\nc\nd")
    assert [(r.kind, r.old, r.new) for r in rows] == [
        ("equal", "a", "a"),
        ("replace", "b", "B"),
        ("equal", "c", "c"),
        ("insert", None, "d"),
    ]
