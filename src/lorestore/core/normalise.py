"""Value normalisation and its digest: the identity of a value for recurrence and tombstones.

Two values that differ only in case, spacing, Unicode form, invisible characters, dash
variants, repeated or trailing punctuation are the same lesson; the digest of the normalised
text is what recurrence counts and what a tombstone remembers (never the text itself).

``normalise_value`` is, in this order:

1. every default-ignorable code point removed (``_IGNORABLE``: zero-width characters, the
   soft hyphen, bidirectional controls, variation selectors, tags, ...), and every blank
   glyph that is neither (U+2800 BRAILLE PATTERN BLANK, ``_BLANKS``) made a space;
2. NFKC, case-folded, NFKC again; every run of whitespace (``str.isspace``) collapsed to
   one space, leading and trailing whitespace removed;
3. every dash (Unicode category Pd, written out in ``_DASHES``) made ``-``: NFKC leaves
   most of them as they are (U+2011 NON-BREAKING HYPHEN becomes U+2010, not ``-``);
4. the confusables skeleton (UTS #39, ``core/confusables.py``): each non-ASCII character
   that looks like another made its prototype (U+0435 CYRILLIC SMALL LETTER IE -> ``e``),
   ASCII kept as is;
5. markdown markup removed: code spans (`` `x` ``), ``*`` emphasis (``*x*``, ``**x**``,
   ``***x***``) and ``_`` emphasis of several words (``_use tabs_``; a single ``_x_`` is
   kept, as ``__init__`` is a name, not emphasis);
6. every run of one sentence mark (``!``, ``?``, ``.``, ``,``, ``;``) collapsed to one
   (``!!`` -> ``!``, ``...`` and NFKC's ``…`` -> ``.``, ``?!`` is kept): a repeated mark
   of prose is emphasis or a typo. Runs of other marks are kept, as they carry meaning in
   code and commands: ``--force`` is not ``-force``, nor ``==`` ``=``, ``&&`` ``&``,
   ``::`` ``:``, ``__init__`` ``_init_``;
7. trailing punctuation, symbols and spaces (categories P*, S*, and the space) removed
   (``events.``, ``events !!``, ``events`` with a closing backtick -> ``events``), unless
   nothing else is left (``!!!`` stays ``!``); steps 5-7 (and for non-ASCII text 1-7)
   repeated until nothing changes, so that a normal form is its own normal form.

Older stores hold older digests: of steps 1-3 and 6-7 without the blank glyphs, the
skeleton and the markup (before those came in); of steps 1-2 alone (before dashes, runs and trailing
marks were folded); and of step 2 alone (before default-ignorable characters were removed).
``value_digests`` gives every digest a store may hold for a value, so recurrence,
tombstones, import and migrate still recognise those rows, and a tombstone recorded under an
older normalisation still refuses the value it was recorded for.

``near_digest`` is looser: the normal form with every mark (anything but letters, digits and
spaces) made a space. Two values with one near digest differ only in punctuation and
symbols, which in code can matter (``a == b``, ``a = b``): a tombstone does not refuse by
it, but a value that is near one it holds is held for review (``core/tombstones.py``).
Categories are those of the running Python's Unicode database, as NFKC and case folding are.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from lorestore.core.confusables import skeleton

# Unicode's default-ignorable code points (DerivedCoreProperties.txt): characters that
# render as nothing, such as zero-width spaces and joiners, the soft hyphen, bidirectional
# controls, variation selectors, fillers and tags. A value that differs from another only by
# them reads the same, so they are not part of its identity: a rejected value cannot come
# back with one inside. The list is written out (not derived from ``unicodedata``) so that a
# digest does not change with the Python that computes it.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)

# Every character of category Pd (dash punctuation) in Unicode 14.0 but ``-`` itself,
# written out for the same reason as the ignorables.
_DASHES = (
    "\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2e17\u2e1a\u2e3a\u2e3b"
    "\u2e40\u2e5d\u301c\u3030\u30a0\ufe31\ufe32\ufe58\ufe63\uff0d\U00010ead"
)
_DASH_TO_HYPHEN = str.maketrans(dict.fromkeys(_DASHES, "-"))
_DASH = re.compile(f"[{_DASHES}]")

# The 32 ASCII characters of categories P* and S*: all of ASCII's punctuation and symbols.
_ASCII_MARKS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ASCII_TRAILING = _ASCII_MARKS + " "
# Step 6's marks (NFKC has made their full-width and compatibility forms these) and their
# runs. Whether ASCII text holds one is a cheaper test with each mark made the byte 0x01 (a
# table lookup per byte, one substring search) than a regex or five searches would be.
_SENTENCE_RUNS = tuple((mark * 2, mark) for mark in "!?.,;")
_SENTENCE_RUN = re.compile(r"([!?.,;])\1+")
_SENTENCE_MARKS_AS_ONE = bytes.maketrans(b"!?.,;", b"\x01" * 5)


# Blank glyphs that are not default-ignorable: they show as a space and stand for one.
_BLANKS = str.maketrans({"\u2800": " "})
_BLANKS_AS_IGNORABLE = str.maketrans({"\u2800": "\u200b"})
# Step 5: markdown code spans, "*" emphasis, and "_" emphasis of several words. Each opens
# before a non-space and closes after one, not inside a word, as CommonMark's delimiter runs
# (the character before an opening run is checked in ``_inner``: a pattern that starts with
# its delimiter is searched for many times faster than one that starts with a look-behind).
_MARKUP = (
    ("`", re.compile(r"(`+)(?=\S)(.+?)(?<=\S)\1(?!`)")),
    ("*", re.compile(r"(\*{1,3})(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])")),
    ("_", re.compile(r"(_{1,3})([^\s_][^_]*)\1(?![\w_])")),
)
_NEAR_MARKS = re.compile(r"[^\w ]|_")
_SETTLE_ROUNDS = 4


def normalise_value(value: str) -> str:
    """The value as its identity: see the module docstring for the seven steps."""
    if value.isascii():  # every import's path, inlined
        text = " ".join(value.lower().split())
        if _has_markup(text):
            return _settled(text)
        if b"\x01\x01" in text.encode().translate(_SENTENCE_MARKS_AS_ONE):
            text = _runs_collapsed(text)
        return text.rstrip(_ASCII_TRAILING) or text
    text = value
    for _ in range(_SETTLE_ROUNDS):
        normal = _normalised_unicode(text)
        if normal == text:
            break
        text = normal
    return text


def _normalised_unicode(value: str) -> str:
    """Steps 1-7 once, for any text."""
    text = _folded(_IGNORABLE.sub("", value).translate(_BLANKS))
    # Dashes, runs and trailing marks before the skeleton as well, which makes some of them
    # letters (U+2014 EM DASH a katakana mark, U+00D7 MULTIPLICATION SIGN an "x").
    return _settled(skeleton(_marks_folded(text)))


def _settled(text: str) -> str:
    """Steps 5-7 (3 included), repeated until nothing changes (removing markup can expose a
    trailing mark, and removing a trailing mark another pair of markup). Text without markup
    takes one round: steps 3, 6 and 7 are idempotent."""
    for _ in range(_SETTLE_ROUNDS):
        unmarked = _unmarked(text)
        stripped = _marks_folded(unmarked)
        if unmarked == text or stripped == text or not _has_markup(stripped):
            return stripped
        text = stripped
    return text


def _has_markup(text: str) -> bool:
    return "`" in text or "*" in text or "_" in text


def _unmarked(text: str) -> str:
    """Step 5: each pattern only over text holding its delimiter (a function for the
    replacement: several times faster than the template ``\\2``)."""
    for char, pattern in _MARKUP:
        if char in text:
            text = pattern.sub(_inner, text)
    return text


def _inner(markup: re.Match[str]) -> str:
    opening, inner = markup[1], markup[2]
    start = markup.start()
    before = markup.string[start - 1] if start else " "
    if opening[0] != "`" and (before.isalnum() or before in "_*"):
        return markup[0]  # inside a word: a name (snake_case, a*b), not emphasis
    if opening[0] == "_" and (inner[-1].isspace() or " " not in inner):
        return markup[0]  # "_" emphasis is of several words, and closes after a non-space
    return inner


def first_invisible(text: str) -> str | None:
    """The first default-ignorable character or blank glyph of ``text``, if any."""
    if text.isascii():
        return None
    found = _IGNORABLE.search(text.translate(_BLANKS_AS_IGNORABLE))
    return found[0] if found else None


def is_blank(value: str) -> bool:
    """Whether the value shows nothing: only whitespace, default-ignorable characters and
    blank glyphs (U+2800)."""
    return not _visible(value).translate(_BLANKS).strip()


def value_digest(value: str) -> str:
    """Hex SHA-256 of the normalised value."""
    return _sha256(normalise_value(value))


def near_digest(value: str) -> str | None:
    """Hex SHA-256 of the normal form with every mark made a space (see the module
    docstring); None for a value of marks only, which is near nothing."""
    loose = " ".join(_NEAR_MARKS.sub(" ", normalise_value(value)).split())
    return _sha256(loose) if loose else None


def key_skeleton(key: str) -> str:
    """What a key looks like: invisible characters removed, NFKC, case-folded, its
    confusables skeleton. Two keys of a scope with one skeleton are look-alikes."""
    return skeleton(_folded(_visible(key).translate(_BLANKS)))


def value_digests(value: str) -> tuple[str, ...]:
    """Every digest a store may hold for this value, de-duplicated, today's first: its
    digest; the digest of steps 1-3 and 6-7 without blank glyphs, skeleton and markup (the
    normalisation before those came in); the digest of steps 1-2 only (stores written before
    dashes, runs and trailing punctuation were folded); and for a value with
    default-ignorable characters the digest of step 2 only (stores written before those were
    removed). Looking a value up (is it rejected? is it the lesson's current value?) matches
    any of these."""
    folded = _folded(_visible(value))
    marked = _marks_folded(folded)
    if not value.isascii():
        normal = normalise_value(value)
    elif not _has_markup(folded):  # normalise_value's ASCII path, on folded text
        normal = marked
    else:
        normal = _settled(folded)
    texts = [normal]
    for older in (marked, folded):
        if older not in texts:
            texts.append(older)
    digests = [_sha256(text) for text in texts]
    kept = digest_with_ignorables(value)
    if kept is not None and kept not in digests:
        digests.append(kept)
    return tuple(digests)


def digest_with_ignorables(value: str) -> str | None:
    """For a value with default-ignorable characters, its digest as stores written before
    they were removed hold it (step 2 only); else None."""
    if value.isascii() or _IGNORABLE.search(value) is None:
        return None
    return _sha256(_folded(value))


def _visible(value: str) -> str:
    return value if value.isascii() else _IGNORABLE.sub("", value)


def _folded(value: str) -> str:
    """Step 2."""
    if value.isascii():  # NFKC leaves ASCII as it is, and casefold is lower for it
        return " ".join(value.lower().split())
    text = unicodedata.normalize("NFKC", value).casefold()
    # casefold can produce sequences that NFKC would compose differently; normalise again.
    text = unicodedata.normalize("NFKC", text)
    # str.split() splits on exactly the characters a regex's \s matches (str.isspace), and
    # faster: every write and every imported lesson computes this.
    return " ".join(text.split())


def _marks_folded(text: str) -> str:
    """Steps 3, 6 and 7, on the text of step 2 (or of steps 2-5)."""
    if text.isascii():  # the only ASCII dash is "-", and every mark is one of _ASCII_MARKS
        if b"\x01\x01" in text.encode().translate(_SENTENCE_MARKS_AS_ONE):
            text = _runs_collapsed(text)
        return text.rstrip(_ASCII_TRAILING) or text
    return _marks_folded_unicode(text)


def _marks_folded_unicode(text: str) -> str:
    """Steps 3, 6 and 7 for any text (``_marks_folded`` takes a faster way through ASCII)."""
    if _DASH.search(text):
        text = text.translate(_DASH_TO_HYPHEN)
    text = _SENTENCE_RUN.sub(_first, text)
    end = len(text)
    while end and _is_trailing(text[end - 1]):
        end -= 1
    return text[:end] if end else text


def _runs_collapsed(text: str) -> str:
    """Step 6: ``_SENTENCE_RUN.sub(_first, text)``, by ``str.replace``."""
    for run, mark in _SENTENCE_RUNS:
        while run in text:
            text = text.replace(run, mark)
    return text


def _first(run: re.Match[str]) -> str:
    return run[1]


def _is_trailing(char: str) -> bool:
    return char == " " or unicodedata.category(char)[0] in "PS"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
