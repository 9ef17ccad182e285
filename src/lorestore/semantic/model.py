"""The local embedding model: wordllama's 256-dimension model, shipped inside its wheel and
loaded from the package folder with downloads disabled, so nothing reaches the network. The
model is loaded on first use (about half a second) and kept for the process."""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from lorestore.semantic.pooling import Pooler

MODEL_NAME = "wordllama/l2_supercat_256"
DIMENSIONS = 256
PACKAGE = "wordllama"
INSTALL_HINT = "pip install 'lorestore[semantic]'"

# Word boundaries inside identifiers: a tag such as `pg-local_tests` or `CamelCase` is
# embedded as words, which the model's tokenizer knows.
_SEPARATORS = re.compile(r"[-_/.:]+|(?<=[a-z])(?=[A-Z])")


def embedding_text(tags: tuple[str, ...] | list[str], value: str) -> str:
    """What a lesson's vector is made of: its tags as words, then its text. Not its key: two
    lessons with the same text and tags get the same vector, so recall keeps the same copy
    of a duplicate as the full-text order would (on evals/ the key added nothing measurable:
    recall MRR 0.968 either way, 0.963 from the text alone)."""
    if not tags:
        return value
    words = " ".join(_SEPARATORS.sub(" ", tag) for tag in tags)
    return f"{words}\n{value}"


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether hybrid retrieval can run in this process, and why not when it cannot."""

    installed: bool  # it can run: the extra is installed and switched on
    reason: str | None = None  # why retrieval is lexical only
    present: bool = False  # the extra is installed, switched on or not

    @property
    def version(self) -> str | None:
        """The wordllama package's version, read from its metadata on first use: a process
        with the extra switched off (a hook, a lexical store) never pays for the read."""
        return _package_version() if self.present else None

    @property
    def model(self) -> str | None:
        return MODEL_NAME if self.installed else None


def availability(enabled: bool = True) -> Availability:
    """Cheap (no import of the model, no read of package metadata): whether the extra is
    installed and switched on."""
    if importlib.util.find_spec(PACKAGE) is None:
        return Availability(False, f"the semantic extra is not installed ({INSTALL_HINT})")
    if not enabled:
        return Availability(False, "switched off (LORESTORE_SEMANTIC=off)", present=True)
    return Availability(True, present=True)


@functools.cache
def _package_version() -> str:
    import importlib.metadata  # on first use: a recall without the model reads no metadata

    return importlib.metadata.version(PACKAGE)


class Embedder:
    """Texts to unit vectors (float32, DIMENSIONS wide) with the bundled model, which is
    loaded once per process (every store of the process shares it) on first use."""

    def __init__(self, version: str) -> None:
        self.name = MODEL_NAME
        self.version = version

    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """One unit-length row per text: wordllama's ``embed(texts, norm=True)``, made
        without its padding (semantic/pooling.py)."""
        return _model().embed(texts)


_loaded: list[Pooler] = []
_loading = threading.Lock()


def _model() -> Pooler:
    if not _loaded:
        with _loading:
            if not _loaded:
                _loaded.append(_load())
    return _loaded[0]


def _load() -> Pooler:
    from lorestore.semantic.pooling import Pooler

    return Pooler.load(load_wordllama())


def load_wordllama() -> Any:
    """wordllama's own model (its ``embed`` is what ``Embedder.embed`` reproduces)."""
    from pathlib import Path

    import wordllama  # type: ignore[import-untyped]

    # wordllama looks for its bundled tokenizer under "tokenizer/" but ships it in
    # "tokenizers/": given its own folder as cache_dir it finds both files there, and with
    # downloads disabled a missing file is an error instead of a request to Hugging Face.
    folder = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(
        config="l2_supercat", dim=DIMENSIONS, cache_dir=folder, disable_download=True
    )
