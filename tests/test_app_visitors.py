"""The Models page as a visitor of a served app reaches it: what a typed path may tell, who may register a model
for every session, and names shown as typed (never Markdown)."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit import config

from tests.test_app import assert_ok, open_page, texts
from tests.test_app_bugs30 import _add


@pytest.fixture()
def registry(tmp_path, monkeypatch):
    file = tmp_path / "embprobe.toml"
    monkeypatch.setenv("EMBPROBE_MODELS", str(file))
    return file


@pytest.fixture()
def served_on(monkeypatch):
    """Set the app's ``server.address`` for the test (``make app ADDRESS=…``); restored after."""
    before = config.get_option("server.address")
    yield lambda address: config.set_option("server.address", address)
    config.set_option("server.address", before)


def test_a_typed_path_is_not_quoted_back(registry, tmp_path):
    """The form quoted a file's first 60 bytes: any file the server could read (``/etc/passwd``, a hub token) was
    shown to whoever typed its path."""
    secret = tmp_path / "token"
    secret.write_text("hf_SECRETTOKENVALUE\n")
    error = _add(open_page("models"), "leak", str(secret))
    assert "Cannot tell the format of" in error and "SECRET" not in error and not registry.exists()


def test_the_register_form_is_offered_on_the_network_only_when_asked(registry, served_on, monkeypatch):
    """``make app ADDRESS=0.0.0.0`` offered every visitor a form that reads the server's paths and registers a
    model for every session."""
    served_on("0.0.0.0")
    monkeypatch.delenv("EMBPROBE_APP_REGISTER", raising=False)
    at = open_page("models")
    assert_ok(at)
    assert "served on the network" in texts(at.info) and "EMBPROBE_APP_REGISTER=1" in texts(at.info)
    assert "models_add_ref" not in {w.key for w in at.text_input} and "models_remove" not in {b.key for b in at.button}
    monkeypatch.setenv("EMBPROBE_APP_REGISTER", "1")
    assert "models_add_ref" in {w.key for w in open_page("models").text_input}
    served_on("localhost")
    monkeypatch.delenv("EMBPROBE_APP_REGISTER")
    assert "models_add_ref" in {w.key for w in open_page("models").text_input}


def test_a_registered_path_is_shown_as_typed(registry, tmp_path):
    """A path with Markdown in it (``*``, ``_``) drew italics in the "Added" line, and in the model's description
    every session reads."""
    folder = tmp_path / "a*b*c"
    folder.mkdir()
    rows = "".join(
        f"{w} {' '.join(map(str, np.round(np.random.default_rng(i).normal(size=4), 3)))}\n"
        for i, w in enumerate(["the", "bank", "river", "money", "play", "game"])
    )
    (folder / "vectors.txt").write_text(rows)
    at = open_page("models")
    assert _add(at, "mine", str(folder / "vectors.txt")) == ""
    added = "\n".join(str(e.value) for e in at.success)
    assert f"`{folder / 'vectors.txt'}`" in added  # verbatim in code, not "a<em>b</em>c"
    at = open_page("models")
    at.selectbox(key="models_pick").set_value("mine").run()
    caption = "\n".join(str(e.value) for e in at.caption)
    assert r"a\*b\*c" in caption
