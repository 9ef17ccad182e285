"""wordllama's embed (tokenize, average the token rows, normalise) done for a batch of texts
at once, with vectors equal to its ``embed(texts, norm=True)``
(tests/storage/test_embedding_pooling.py holds them to it). wordllama tokenizes each text as
one word of several hundred characters, pads a batch to its longest text and sums the padded
rows; here each distinct word of a batch is tokenized once and a text's rows are summed without
padding, about four times faster on a page of lessons (docs/benchmarks.md, "Reindex").

Why words: the tokenizer (a BPE over the normalised text, no pre-tokenizer) has no token with a
"▁" (a space) after another character, so none of its merges crosses the start of a word
(``▁+[^▁]*``), and a text's tokens are its words' tokens in turn. The normaliser (a "▁" before
each stretch of text, "▁" for each space) and the split at special tokens are done here;
``Pooler.load`` refuses a tokenizer for which any of this would not hold."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SPACE = "▁"  # what the normaliser makes of a space, and puts before each stretch of text
_WORD = re.compile(f"{SPACE}+[^{SPACE}]*")  # a normalised stretch starts with one
# The normaliser this module does itself, as the tokenizer states it.
_NORMALISER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
    ],
}


class Pooler:
    """The model's tokenizer and embedding table, and its embed without padding."""

    def __init__(self, tokenizer: Any, embedding: NDArray[np.float32]) -> None:
        self._bpe = tokenizer.model  # words to tokens, as the whole tokenizer's last step
        self._embedding = embedding
        added = tokenizer.get_added_tokens_decoder()
        self._special = {token.content: [i] for i, token in added.items()}
        longest_first = sorted(self._special, key=len, reverse=True)  # as the tokenizer does
        self._split = re.compile("(" + ("|".join(map(re.escape, longest_first)) or "(?!)") + ")")

    @classmethod
    def load(cls, tokenizer: Any, embedding: NDArray[np.float32]) -> Pooler:
        """From the model's tokenizer and embedding table; an error if the tokenizer is not
        one this module reproduces exactly."""
        problem = _unsupported(tokenizer)
        if problem is not None:
            raise RuntimeError(f"the model's tokenizer is not supported: {problem}")
        return cls(tokenizer, embedding)

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """One unit-length row per text, as wordllama's ``embed(texts, norm=True)``."""
        import numpy as np

        words = [self._text_words(text) for text in texts]
        ids_of = dict(self._special)
        tokenize = self._bpe.tokenize
        for word in {w for text in words for w in text if w not in ids_of}:
            ids_of[word] = [token.id for token in tokenize(word)]
        ids: list[int] = []
        ends: list[int] = []
        lengths: list[int] = []
        for text in words:
            start = len(ids)
            for word in text:
                ids += ids_of[word]
            ends.append(len(ids))
            lengths.append(max(len(ids) - start, 1))
        table = self._embedding
        # Few numpy calls: each costs microseconds of dispatch, more when a write's other work
        # has left the processor's caches cold (a text of five words took 0.14 ms in a write).
        flat = np.array(ids, dtype=np.intp)
        sums = np.empty((len(texts), table.shape[1]), dtype=np.float32)
        start = 0
        # Text by text: a page's token rows at once would be hundreds of megabytes, and the
        # rows of one text sum in the order wordllama's padded batch sums them. Indices past
        # the table are clipped to it, as wordllama does.
        for row, end in enumerate(ends):
            table.take(flat[start:end], axis=0, mode="clip").sum(axis=0, out=sums[row])
            start = end
        sums /= np.array(lengths, dtype=np.float32)[:, np.newaxis]
        sums /= np.sqrt(np.add.reduce(sums * sums, axis=1, keepdims=True))  # np.linalg.norm's
        return sums

    def _text_words(self, text: str) -> list[str]:
        """The text's words as the tokenizer sees them, normalised, and its special tokens
        (matched in the raw text first, each stretch between them normalised apart). A
        normalised word starts with "▁", so it never reads as a special token."""
        found: list[str] = []
        for i, part in enumerate(self._split.split(text)):
            if i % 2:
                found.append(part)
            elif part:
                found += _WORD.findall(SPACE + part.replace(" ", SPACE))
        return found


def _unsupported(tokenizer: Any) -> str | None:
    """Why this module could not reproduce the tokenizer's ids, or None."""
    if tokenizer.pre_tokenizer is not None:
        return "it has a pre-tokenizer"
    normaliser = tokenizer.normalizer
    if normaliser is None or json.loads(normaliser.__getstate__()) != _NORMALISER:
        return "its normaliser is not a prepended and a replaced '▁'"
    bpe = tokenizer.model
    affixes = bpe.continuing_subword_prefix or bpe.end_of_word_suffix
    if type(bpe).__name__ != "BPE" or bpe.dropout or affixes:
        return "its model is not a plain BPE"
    # A "▁" after another character: one left once the token's leading ones are stripped.
    across = [t for t in tokenizer.get_vocab() if SPACE in t.lstrip(SPACE)]
    if across:
        return f"tokens join a word to the next one ({across[:3]})"
    added = tokenizer.get_added_tokens_decoder().values()
    if any(t.normalized or t.lstrip or t.rstrip or t.single_word for t in added):
        return "a special token is matched in another way than as it is written"
    return None
