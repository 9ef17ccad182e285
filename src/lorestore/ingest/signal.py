"""The signal filter: whether a review comment is worth keeping as a lesson, decided on its text
and author alone (deterministic: the same comment always gets the same answer). A comment with
a secret is refused outright; bot noise, a bare code block and a comment too short once quotes
and code are stripped are ignored. Each answer is a reason ``lorestore webhook stats`` counts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lorestore.core.secrets import find_secret

MIN_SIGNAL_CHARS = 20
_FENCE = re.compile(r"(?ms)^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)")
_INDENTED_CODE = re.compile(r"(?m)^(?: {4}|\t).*$")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_QUOTE = re.compile(r"(?m)^[ \t]*>.*$")
_SPACE = re.compile(r"\s+")
# A CI bot's status line: a check's name and its verdict, nothing a person would learn from. A
# comment is CI status only when every line of it is one (a person's "tests failed because..."
# goes on to say why).
_CI_STATUS = re.compile(
    r"(?i)^\W*(?:ci|build|checks?|tests?|pipeline|workflow|coverage|codecov|lint)\b.{0,80}"
    r"\b(?:passed|failed|failing|succeeded|success|successful|failure|green|red|pending|"
    r"cancelled|errored|report)\b.{0,30}$"
)
# The opening of a dependency bot's pull request or comment (Dependabot, Renovate, pyup).
_DEPENDENCY_BOT = re.compile(
    r"(?im)^\W*(?:bumps \[?[\w@./-]+\]?(?:\([^)]*\))? from \S+ to \S+|dependabot |"
    r"this pr contains the following updates|renovate |@dependabot |"
    r"this pr (?:updates|pins) )"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Keep the comment (``reason`` None), ignore it, or refuse it (a secret: ``secret`` names
    the pattern, and nothing of the comment is kept)."""

    reason: str | None = None
    secret: str | None = None

    @property
    def kept(self) -> bool:
        return self.reason is None


def prose(body: str) -> str:
    """The comment with quotes and code (fenced, indented, inline) taken out, spaces folded."""
    text = _FENCE.sub(" ", body)
    text = _QUOTE.sub(" ", text)
    text = _INDENTED_CODE.sub(" ", text)
    text = _INLINE_CODE.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


def judge(body: str, *, author_type: str | None, sender_type: str | None) -> Verdict:
    """The filter's verdict on one comment, in a fixed order: a secret first (refused and
    audited whoever wrote it), then bot noise, then a bare code block, then too little prose."""
    pattern = find_secret(body)
    if pattern is not None:
        return Verdict(reason=f"secret:{pattern}", secret=pattern)
    if "Bot" in (author_type, sender_type):
        return Verdict(reason="bot")
    if _DEPENDENCY_BOT.search(body):
        return Verdict(reason="dependency_bot")
    lines = [line for line in body.splitlines() if line.strip()]
    if lines and all(_CI_STATUS.match(line.strip()) for line in lines):
        return Verdict(reason="ci_status")
    text = prose(body)
    if not text and body.strip():
        return Verdict(reason="code_only")
    if len(text) < MIN_SIGNAL_CHARS:
        return Verdict(reason="too_short")
    return Verdict()
