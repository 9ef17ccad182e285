"""The local embedding model: wordllama's 256-dimension model, shipped inside its wheel and
read from the files in its package folder (or, should they move, by wordllama's own loader with
downloads disabled), so nothing reaches the network. The model is loaded on first use (about a
fifth of a second) and kept for the process."""

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

CONFIG = "l2_supercat"  # wordllama's name for the model it bundles
DIMENSIONS = 256
MODEL_NAME = f"wordllama/{CONFIG}_{DIMENSIONS}"
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

    def __init__(self, version: str | None = None) -> None:
        self.name = MODEL_NAME
        self._version = version

    @property
    def version(self) -> str:
        """The model's version (given, or the wordllama package's, read from its metadata
        on first use: opening a store reads none, so a command that embeds nothing and
        compares no vector never pays for the search of the installed distributions)."""
        if self._version is None:
            self._version = _package_version()
        return self._version

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

    parts = bundled_parts()
    if parts is None:  # a wordllama that keeps its files elsewhere: its own loader finds them
        model = load_wordllama()
        parts = model.tokenizer, model.embedding
    return Pooler.load(*parts)


def bundled_parts() -> tuple[Any, NDArray[np.float32]] | None:
    """The bundled model's tokenizer and embedding table, read from the files in wordllama's
    package folder as its loader reads them (``WordLlama.load`` then ``WordLlamaInference``),
    or None when they are not there. Without importing wordllama: its package imports
    ``requests`` and its download code, half of its 0.3 s of load (docs/benchmarks.md)."""
    from pathlib import Path

    spec = importlib.util.find_spec(PACKAGE)
    folders = spec.submodule_search_locations if spec else None
    if not folders:
        return None
    root = Path(next(iter(folders)))
    tokenizer_file = root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
    weights_file = root / "weights" / f"{CONFIG}_{DIMENSIONS}.safetensors"
    if not (tokenizer_file.is_file() and weights_file.is_file()):
        return None
    import numpy as np
    from safetensors import safe_open
    from tokenizers import Tokenizer

    with safe_open(str(weights_file), framework="np", device="cpu") as weights:
        table = weights.get_tensor("embedding.weight")
    return Tokenizer.from_file(str(tokenizer_file)), np.ascontiguousarray(table, np.float32)


def load_wordllama() -> Any:
    """wordllama's own model, by its own loader (its ``embed`` is what ``Embedder.embed``
    reproduces)."""
    from pathlib import Path

    import wordllama  # type: ignore[import-untyped]

    # wordllama looks for its bundled tokenizer under "tokenizer/" but ships it in
    # "tokenizers/": given its own folder as cache_dir it finds both files there, and with
    # downloads disabled a missing file is an error instead of a request to Hugging Face.
    folder = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(
        config=CONFIG, dim=DIMENSIONS, cache_dir=folder, disable_download=True
    )
