"""Shared Streamlit helpers for every page: friendly errors, model pickers, input display, charts and uploads
(what the app loads and caches: ``app_pages.loaders``).

- :func:`safe` — any exception as a friendly ``st.error`` (the traceback only in the server log); the page goes on.
- :func:`model_select`, :func:`model_names` — the pickers, the registry's models in its order.
- :func:`show_warnings`, :func:`md` — input-cap warnings; user text escaped wherever it is echoed.
- :func:`uploader` — every file upload, stating and applying the app's one limit (``MAX_UPLOAD_MB``).
- :func:`chart` — every chart: ``st.plotly_chart`` with the modebar's SVG/PNG download
  (``viz.export.chart_config``, the format chosen in the sidebar) and a CSV of its data beside it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

# before tokenizers is imported (it reads this once): no fork warnings
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st

from app_pages import state
from app_pages.preload import preload
from corpora.errors import LabError
from corpora.paths import DataMissingError
from models import DEFAULT_MODEL
from models.base import ModelLoadError
from models.errors import UnknownTextError
from models.listing import weights_location
from models.registry import available_models
from viz.contrast import readable_text
from viz.export import FORMATS, chart_config, figure_csv, file_stem
from viz.heatmap_svg import drawable, heatmap_svg
from viz.results import label_dir
from viz.text import InputError, escape_markdown
from viz.titles import plain_title, title_below_toolbar

log = logging.getLogger("embprobe.app")
if not log.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False

EXAMPLE_SENTENCE = "The bank raised interest rates, so we walked along the river bank instead."


# ---------------------------------------------------------------------------- errors


def friendly_message(exc: BaseException, action: str = "") -> str:
    """A one-paragraph message for the user; never a traceback."""
    prefix = f"Could not {action}: " if action else ""
    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, DataMissingError):
        return f"{prefix}a dataset is missing. {exc}"
    if isinstance(exc, ModelLoadError) and not isinstance(exc, UnknownTextError):  # that one names the text
        return f"{prefix}the model could not be loaded. {exc}"
    if isinstance(exc, LabError):  # every other error the lab reports names what is wrong in its message
        return f"{prefix}{exc}"
    if isinstance(exc, MemoryError):
        return f"{prefix}not enough memory. Try a shorter text or a smaller sample."
    if isinstance(exc, ImportError):
        return (
            f"{prefix}part of the project is not installed or not built yet ({exc}). "
            "Run: pip install -r requirements.txt"
        )
    if isinstance(exc, (ValueError, KeyError, IndexError, FileNotFoundError)):
        text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        return f"{prefix}{text}"
    return f"{prefix}an unexpected error occurred ({type(exc).__name__}). The details are in the server log."


@contextlib.contextmanager
def safe(
    action: str = "", *, kind: str = "error", names: Mapping[str, str] | None = None, without_data: str = ""
) -> Iterator[None]:
    """Run a block; on an exception show a friendly message and continue with the page.

    ``names``: what the user knows a path by (an upload's stored path → the file name it was uploaded
    as), put in the message in place of the path. ``without_data``: what works without the missing dataset,
    said after a ``DataMissingError``'s message (a newcomer without the data learns where to go instead).
    Streamlit's own control flow (st.stop, st.rerun) derives from BaseException and passes through.
    """
    try:
        yield
    except InputError as exc:  # the user's input: a hint, not an error
        st.warning(escape_markdown(str(exc)), icon="✍️")
    except Exception as exc:  # the point is to never show a traceback
        log.exception("app error while trying to %s", action or "run a page")
        msg = friendly_message(exc, action)
        for path, name in (names or {}).items():
            msg = msg.replace(path, name)
        if without_data and isinstance(exc, DataMissingError):
            msg += f" {without_data}"
        # Messages may quote user input or file paths: escaped, so they show exactly as written.
        (st.warning if kind == "warning" else st.error)(escape_markdown(msg), icon="⚠️")


def page(fn: Callable[[], None]) -> Callable[[], None]:
    """Decorator for a page's main function: the whole page runs inside :func:`safe`."""

    def wrapper() -> None:
        try:
            with safe("show this page"):
                fn()
        finally:  # also on st.rerun (after st.stop the stop pends: the changes wait for the next run)
            state.flush()

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---------------------------------------------------------------------------- models


def model_names(*, only_ready: bool = True, **capabilities: bool) -> list[str]:
    """Registered models whose weights are here (trained or installed) and whose spec has the given
    capabilities (``models.spec.ModelSpec``: ``has_attention``, ``contextual``, ``reinitialisable``),
    e.g. ``model_names(has_attention=True)``, ``model_names(contextual=False)``."""
    names = []
    for spec in available_models():
        if any(getattr(spec, capability) != wanted for capability, wanted in capabilities.items()):
            continue
        if only_ready and weights_location(spec) is None:
            continue
        names.append(spec.name)
    return names


def model_order(results: Iterable[str] = ()) -> tuple[str, ...]:
    """Registered models in the registry's order, then ``results``' others (a folder's model column) by name: each
    one's place gives its colour and marker (``viz.figures.model_styles``), the same on every chart it is on."""
    registered = tuple(spec.name for spec in available_models())
    return registered + tuple(sorted(set(results) - set(registered)))


def preferred(names: list[str], default: str = DEFAULT_MODEL) -> str:
    """The model a picker starts on: ``default`` (``models.DEFAULT_MODEL``) when it is offered, else the first."""
    return default if default in names else names[0]


def model_select(
    label: str,
    capabilities: dict[str, bool] | None = None,
    *,
    key: str,
    default: str | None = None,
    param: str | None = None,
    help: str | None = None,
) -> str | None:
    """A selectbox of ready models (with ``capabilities``, see :func:`model_names`); an info box (and None)
    when there is none. With ``param`` the choice is in the URL (``state.bind``) and a link restores it."""
    names = model_names(**(capabilities or {}))
    if not names:
        kinds = ", ".join(f"{'' if wanted else 'not '}{cap}" for cap, wanted in (capabilities or {}).items())
        st.info(
            f"No {'model (' + kinds + ')' if kinds else 'model'} is available yet. "
            "See the Models page for how to train one."
        )
        return None
    first = preferred(names, default or DEFAULT_MODEL)
    bound = {"key": state.bind(key, first, names, param=param)} if param else {"key": key, "index": names.index(first)}
    return st.selectbox(label, names, help=help, **bound)


# ---------------------------------------------------------------------------- display


def page_header(title: str, intro: str, *, draws: tuple[str, ...] = ()) -> None:
    """Title and introduction; the browser code of ``draws``, its first view's heavy elements, asked for now."""
    st.title(title)
    preload(*draws)
    st.markdown(intro)


def show_warnings(warnings: list[str]) -> None:
    for w in warnings:
        st.warning(w, icon="✂️")


def md(text: str) -> str:
    """Escape user text for use inside st.markdown/st.info strings."""
    return escape_markdown(text)


def code(text: str) -> str:
    """User text as inline code in st.markdown/st.info strings: verbatim between backticks, where Markdown's
    escapes are shown as typed ("gpt\\-small"); escaped plain text if it holds a backtick itself."""
    return f"`{text}`" if "`" not in text else md(text)


# ---------------------------------------------------------------------------- charts and exports

FIGURE_FORMAT_KEY = "fig_format"  # the sidebar's "Chart downloads" choice (app.py)
#: The largest upload (MB) of every uploader, stated beside it: the server's ``server.maxUploadSize``
#: (.streamlit/config.toml: Streamlit refuses a bigger file, naming it), or a lower ``$EMBPROBE_UPLOAD_MB``.
MAX_UPLOAD_MB = min(float(os.environ.get("EMBPROBE_UPLOAD_MB") or "inf"), float(st.get_option("server.maxUploadSize")))


def uploader(label: str, *, key: str, types: list[str] | None = None, help: str | None = None, container=None):
    """A file uploader that states the app's one limit in its label ("…; ≤ 10 MB)") and applies it."""
    limit = f"≤ {MAX_UPLOAD_MB:g} MB"
    label = f"{label[:-1]}; {limit})" if label.endswith(")") else f"{label} ({limit})"
    where = container or st
    return where.file_uploader(label, type=types, key=key, max_upload_size=max(int(MAX_UPLOAD_MB), 1), help=help)


def figure_format() -> str:
    """The image format of the charts' download button in this session: "svg" (default) or "png"."""
    fmt = st.session_state.get(FIGURE_FORMAT_KEY)
    return fmt if fmt in FORMATS else FORMATS[0]


#: The columns of an occurrence table (a neighbour list, corpus hits): whole sentences, cosines to four decimals
#: (0.8970, not 0.897 beside 0.8934).
OCCURRENCE_COLUMNS = {
    "context": st.column_config.TextColumn(width="large"),
    "cosine": st.column_config.NumberColumn(format="%.4f"),
}


def download(label: str, data, file_name: str, *, key: str, mime: str = "text/csv") -> None:
    """A small download button that does not rerun the page; ``data`` may be a callable (made on click)."""
    st.download_button(
        label,
        data,
        file_name=file_name,
        mime=mime,
        key=key,
        on_click="ignore",
        type="tertiary",
        icon=":material/download:",
    )


def wrapping_row(key: str, count: int, min_rem: float = 27.0) -> list:
    """``count`` containers side by side while each can be ``min_rem`` wide, else stacked at the page's width.

    ``st.columns`` only shrinks its columns: at 1024 px Reproduce's two bar charts kept ~70 px of plot beside their
    labels. Here the row's flex items (the children of Streamlit's ``st-key-<key>`` element) grow from ``min_rem``
    and wrap; a style-only ``st.html`` takes no room on the page.
    """
    css_key = re.sub(r"[^A-Za-z0-9_-]", "-", key)  # as Streamlit writes a key into its class name
    st.html(f"<style>.st-key-{css_key} > div {{flex: 1 1 {min_rem}rem; min-width: min({min_rem}rem, 100%);}}</style>")
    row = st.container(horizontal=True, wrap=True, gap="medium", key=key)
    return [row.container() for _ in range(count)]


def chart(
    fig,
    name: str,
    *,
    key: str,
    data=None,
    data_label: str = "Data (CSV)",
    data_name: str | None = None,
    image_size: bool = True,
    container=None,
    **plotly_kwargs,
):
    """Draw ``fig`` with the app's modebar (download as SVG/PNG named ``name``; the title below it,
    ``viz.titles.title_below_toolbar``), a CSV of its data and, for a heatmap while SVG downloads are chosen, a
    vector SVG of the map (``viz.heatmap_svg``: plotly's own SVG of a heatmap is one embedded PNG).

    ``data``: bytes or a callable returning bytes (default: the figure's own points, ``viz.export.figure_csv``,
    made only when clicked); ``False`` for no data button; ``data_name``: its file's name when it is not the
    chart's data (default ``name``). ``image_size=False`` downloads the image at its on-screen size (tall grids).
    Returns what ``st.plotly_chart`` returns (the selection event when ``on_select`` is given)."""
    where = container or st
    config = chart_config(name, figure_format(), **({} if image_size else {"width": None, "height": None}))
    alt = plain_title(fig, fallback=name)  # the chart's accessible name: a screen reader heard only its tick labels
    event = where.plotly_chart(
        readable_text(title_below_toolbar(fig)), width="stretch", key=key, config=config, alt=alt, **plotly_kwargs
    )
    with container if container is not None else contextlib.nullcontext():
        if data is not False:
            download(
                data_label,
                data if data is not None else (lambda: figure_csv(fig)),
                f"{file_stem(data_name or name)}.csv",
                key=f"{key}__data",
            )
        if figure_format() == "svg" and drawable(fig):  # plotly's SVG of a heatmap embeds a PNG
            download(
                "Map (vector SVG)", lambda: heatmap_svg(fig), f"{file_stem(name)}.svg", key=f"{key}__svg",
                mime="image/svg+xml",
            )  # fmt: skip
    return event


def select_clicked_head(grid: str, layer_key: str, head_key: str) -> Callable[[], None]:
    """The ``on_select`` of a layers × heads heatmap (chart key ``grid``, tiles with (layer, head) customdata): the
    clicked tile's layer and head become the values of the widgets ``layer_key`` and ``head_key``."""

    def on_select() -> None:
        points = (st.session_state.get(grid) or {}).get("selection", {}).get("points", [])
        if points and "customdata" in points[0]:
            data = points[0]["customdata"]
            layer, head = (data["0"], data["1"]) if isinstance(data, dict) else data[:2]
            st.session_state[layer_key], st.session_state[head_key] = int(layer), int(head)

    return on_select


def folder_select(label: str, dirs: list[Path], key: str, param: str, **kwargs) -> str:
    """A results-folder picker bound to the URL parameter ``param``; returns the chosen folder's path. The URL names
    a folder of the project by its relative path (``docs/results/runs``), so a link works on another install; an
    older link's absolute path still opens it."""
    by_label = {label_dir(d): str(d) for d in dirs}
    labels = list(by_label)
    if key not in st.session_state and (raw := st.query_params.get(param)) in by_label.values():
        st.session_state[key] = next(name for name, path in by_label.items() if path == raw)  # bind writes the URL
    return by_label[st.selectbox(label, labels, key=state.bind(key, labels[0], labels, param=param), **kwargs)]
