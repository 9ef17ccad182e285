"""No network at run time: the suite runs with every connect to another machine refused
(tests/offline.py), shown here to refuse one while loopback works, and the semantic extra's
model loads and embeds under it, from the files inside its wheel."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.offline import NetworkBlockedError

from lorestore.semantic import model


def test_the_network_is_blocked_but_loopback_is_not() -> None:
    with pytest.raises(NetworkBlockedError), socket.create_connection(("192.0.2.1", 443), 1):
        pass  # TEST-NET-1: never reached
    with socket.socket() as server:  # the control: this machine is reachable
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), 1):
            pass


def test_the_bundled_model_loads_and_embeds_offline() -> None:
    state = model.availability()
    assert state.installed and state.model == model.MODEL_NAME
    vectors = model.Embedder(state.version or "").embed(["postgresql", "Postgres", "Excel"])
    assert vectors.shape == (3, model.DIMENSIONS)
    near, far = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert near > 0.5 > far  # a real model, not a stand-in: the synonyms are close


def test_without_downloads_a_missing_model_file_is_an_error_not_a_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Loading never falls back to Hugging Face: with the bundled files missing where the
    model is read from (semantic/model.py, bundled_parts), wordllama's own loader is tried,
    pointed at the same folder, and fails here (downloads disabled) instead of fetching."""
    import importlib.util

    import wordllama

    folder = tmp_path / "wordllama"
    folder.mkdir()
    found = importlib.util.find_spec("wordllama")
    assert found is not None and model.bundled_parts() is not None  # the control: files there
    elsewhere = SimpleNamespace(submodule_search_locations=[str(folder)])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: elsewhere)
    assert model.bundled_parts() is None
    monkeypatch.setattr(wordllama, "__file__", str(folder / "__init__.py"))
    with pytest.raises(FileNotFoundError, match="downloads are disabled"):
        model._load()
