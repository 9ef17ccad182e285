"""The vectors lorestore keeps are wordllama's own: ``Embedder.embed`` (semantic/pooling.py,
which tokenizes a word once per batch and averages without padding) against wordllama's
``embed(texts, norm=True)`` on the eval set's lessons and on texts that test each step it
reproduces (spaces, special tokens, characters the vocabulary lacks); and the tokenizer's
properties the pooling relies on, which a new wordllama could change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from lorestore.semantic import model, pooling
from lorestore.semantic.model import Embedder, availability, embedding_text, load_wordllama

LESSONS = Path(__file__).resolve().parents[2] / "evals" / "lessons.jsonl"
# Each is a case the pooling handles by a rule of its own.
EDGES = [
    "postgres",
    " ",  # a space alone: one "▁▁" token
    "  two  spaces   and three ",  # runs of "▁", which merge into one token
    "trailing\n\nnewlines\n",
    "tab\tinside and\r\nCRLF",
    "ünïcödé, 日本語 and an emoji 🎉 (byte fallback)",
    "\x00\x01 control characters",
    "a family 👩‍👩‍👧 joined by zero-width joiners",
    "the tokenizer's own ▁ in the text ▁▁ twice",
    "x" * 700,  # one word of 700 characters
    "CamelCase_with-dashes/and.dots:colons",
    "a<s>b",  # special tokens are matched in the raw text, each side normalised apart
    "a </s> b",
    "<unk>x",
    " <s> ",
    "<s>",
    "x<s><s>y",
    "</s",
    "<<s>>",
    "strike <s>this</s> out",
]


@pytest.fixture(scope="module")
def reference() -> object:
    return load_wordllama()


def _lessons() -> list[str]:
    rows = [json.loads(line) for line in LESSONS.read_text(encoding="utf-8").splitlines()]
    return [embedding_text(row.get("tags", []), row["value"]) for row in rows]


def test_vectors_equal_wordllamas_own_embed(reference: object) -> None:
    texts = _lessons() + EDGES
    assert len(texts) > 400
    ours = Embedder(availability().version or "").embed(texts)
    theirs = reference.embed(texts, norm=True, batch_size=16)  # type: ignore[attr-defined]
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    assert np.allclose(ours, theirs, rtol=0, atol=1e-5)


def test_each_edge_case_on_its_own_and_in_one_batch(reference: object) -> None:
    """A batch shares each word's tokens between its texts; alone, a text shares nothing."""
    embedder = Embedder(availability().version or "")
    batch = embedder.embed(EDGES)
    for text, row in zip(EDGES, batch, strict=True):
        theirs = reference.embed([text], norm=True)[0]  # type: ignore[attr-defined]
        assert np.allclose(embedder.embed([text])[0], theirs, rtol=0, atol=1e-5), text
        assert np.allclose(row, theirs, rtol=0, atol=1e-5), text


def test_the_tokenizer_is_one_the_pooling_reproduces(reference: object) -> None:
    tokenizer = reference.tokenizer  # type: ignore[attr-defined]
    assert pooling._unsupported(tokenizer) is None
    # The premise itself, beside the check: no token holds a "▁" after another character
    # (those that hold one are runs of "▁" alone), so no merge crosses the start of a word.
    inner = [t for t in tokenizer.get_vocab() if "▁" in t[1:]]
    assert inner and all(set(t) == {"▁"} for t in inner)


def test_a_tokenizer_it_would_not_reproduce_is_refused(reference: object) -> None:
    from tokenizers import pre_tokenizers

    changed = Tokenizer.from_str(reference.tokenizer.to_str())  # type: ignore[attr-defined]
    changed.pre_tokenizer = pre_tokenizers.Whitespace()
    assert pooling._unsupported(changed) == "it has a pre-tokenizer"
    config = json.loads(reference.tokenizer.to_str())  # type: ignore[attr-defined]
    config["model"]["vocab"]["s▁the"] = len(config["model"]["vocab"])  # across two words
    problem = pooling._unsupported(Tokenizer.from_str(json.dumps(config)))
    assert problem is not None and problem.startswith("tokens join a word to the next one")


def test_the_model_is_read_from_its_files_as_wordllama_reads_them(reference: object) -> None:
    """The table and the tokenizer come from the files in wordllama's package folder, without
    its loader (whose import brings requests and its download code): the same table, the same
    tokenizer; and the process that embeds never imports wordllama's package."""
    parts = model.bundled_parts()
    assert parts is not None
    tokenizer, table = parts
    assert table.dtype == np.float32 and table.flags.c_contiguous
    assert np.array_equal(table, reference.embedding)  # type: ignore[attr-defined]
    theirs = reference.tokenizer.to_str()  # type: ignore[attr-defined]
    # wordllama's inference sets padding on its copy; the pooling never pads.
    assert json.loads(tokenizer.to_str())["model"] == json.loads(theirs)["model"]
    added = Tokenizer.from_str(theirs).get_added_tokens_decoder()
    assert tokenizer.get_added_tokens_decoder() == added
    script = (
        "import sys\n"
        "from lorestore.semantic.model import Embedder\n"
        "assert Embedder('x').embed(['postgres']).shape == (1, 256)\n"
        "print(sorted(m for m in ('wordllama', 'requests', 'urllib3') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_wordllama_that_keeps_its_files_elsewhere_is_loaded_by_its_own_loader(
    reference: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model, "bundled_parts", lambda: None)  # as if the files had moved
    pooler = model._load()
    texts = EDGES[:6]
    theirs = reference.embed(texts, norm=True)  # type: ignore[attr-defined]
    assert np.allclose(pooler.embed(texts), theirs, rtol=0, atol=1e-5)
