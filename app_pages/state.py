r"""A page's choices in the URL (``st.query_params``), so that a link restores the view.

Usage — bind a widget's key before the widget is created, and create the widget *without* its own
default (``value=`` / ``index=``): the bound value in ``st.session_state`` is its value::

    from app_pages import state

    names = model_names()
    model = st.selectbox("Model", names, key=state.bind("poly_model", "minilm", names, param="model"))
    layer = st.slider("Layer", 0, 6, key=state.bind("poly_layer", 6, lo=0, hi=6, param="layer"))
    word = st.text_input("Word", key=state.bind("poly_word", "bank", param="word"))

``bind(key, default, options=None, *, param=None, lo=None, hi=None, step=None, check=None) -> key``:

- on a session's first run of the page (``key`` not yet in ``st.session_state``) the widget's value
  is read from the URL parameter ``param`` (default: ``key``); a number outside ``lo``..``hi`` is taken
  to the nearest end (``?layer=99`` on a 7-layer model opens its top layer, as the slider would), one between
  a slider's ``step``\ s to the nearest step (``?cap=125`` with steps of 10 from 20: 130), and a whole number
  past the ends of whole-number ``options`` to the nearest end (``?sentence=99999``: the last); a value that
  cannot be read as the default's type, is not among ``options`` or fails ``check`` falls back to
  ``default`` — a bad link never breaks the page;
- after a change the current values are written back to the URL, so the address bar holds a link to what is
  on screen (defaults included: a link says everything it restores) — as one change at the run's end
  (``flush``, called by ``common.page`` and by a ``state.fragment``'s own reruns), so a change is one browser
  history entry; arriving by a page's bare address (its defaults) or a link writes nothing, so Back after a click in
  the sidebar leaves the page at once (a link the page must mend is rewritten, one entry); a parameter the address
  lacks stands for its default, and an emptied list is ``?layers=``;
- on a run the browser's Back or Forward started, the URL's value wins over the session's, so Back shows the
  view before the last change (only then: a widget's or ``st.rerun``'s run may carry a URL not yet updated);
  a parameter that address lacks, or cannot be read, is its default;
- a text longer than ``MAX_LINKED`` (a pasted page) is left out of the URL, so the link stays one the server
  accepts, and a toast says so once;
- a value in ``st.session_state`` that is no longer valid (the options changed: a model was removed)
  is reset to ``default`` rather than handed to the widget; a valid one is kept, also by a widget whose
  range changed (layer 4 stays layer 4 when the next model has it).

Values are encoded as text: ``str`` as is, ``bool`` as ``1``/``0``, ``int``/``float`` with ``repr``,
options by ``str(option)`` (so integer or tuple options round-trip), lists as repeated parameters
(``?layer=1&layer=3``, ``st.query_params.get_all``). ``default=None`` binds an optional value
(e.g. a segmented control with nothing selected): absent from the URL.

Streamlit clears the query string when the user switches pages, so parameters never leak from one
page to another; each page writes its own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import quote

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

__all__ = ["bind", "decode", "encode", "flush", "forget", "fragment"]


def encode(value: Any) -> str:
    """The URL text of one scalar value."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def decode(raw: str, like: Any) -> Any:
    """``raw`` read as the type of ``like``; ValueError when it cannot be."""
    if isinstance(like, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"not a yes/no value: {raw!r}")
    if isinstance(like, int):
        return int(raw)
    if isinstance(like, float):
        value = float(raw)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        return value
    return raw


def _valid(
    value: Any, default: Any, options: Sequence | None, lo: Any, hi: Any, check: Callable[[Any], bool] | None
) -> bool:
    items = value if isinstance(default, (list, tuple)) else [value]
    if isinstance(default, (list, tuple)) and not isinstance(value, (list, tuple)):
        return False
    for item in items:
        if options is not None and item not in options:
            return False
        try:
            if (lo is not None and item < lo) or (hi is not None and item > hi):
                return False
        except TypeError:
            return False
    try:
        return check is None or bool(check(value))
    except Exception:  # noqa: BLE001 — a check that cannot judge the value rejects it
        return False


def _from_url(raw: list[str], default: Any, options: Sequence | None) -> Any:
    """The value the URL's texts stand for; ValueError when they stand for none."""
    if options is not None:
        by_text = {encode(o): o for o in options}
        items = [by_text[r] if r in by_text else _nearest_end(r, options) for r in raw]
    else:
        like = (
            default[0]
            if isinstance(default, (list, tuple)) and default
            else ("" if isinstance(default, (list, tuple)) or default is None else default)
        )
        items = [decode(r, like) for r in raw]
    if isinstance(default, (list, tuple)):
        return type(default)(dict.fromkeys(items))  # once each (two items past the same end are one)
    if len(items) != 1:
        raise ValueError("one value expected")
    return items[0]


def _in_range(value: Any, lo: Any, hi: Any, step: Any = None) -> Any:
    """A number from the URL on a slider's grid (``lo`` + a multiple of ``step``, the nearest) and taken into
    ``lo``..``hi`` (a link made on a model with more layers, a cap typed by hand): a slider shows the nearest
    value it can hold, and the page must use that one, not the URL's. Anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if step:
        base = lo if lo is not None else 0
        value = type(value)(round(base + math.floor((value - base) / step + 0.5) * step, 10))  # half up, as shown
    if lo is not None and value < lo:
        return lo
    return hi if hi is not None and value > hi else value


def _nearest_end(raw: str, options: Sequence) -> Any:
    """A whole number past the ends of whole-number options (a layer, a sentence, a token index) is the nearest
    end, as for a slider; anything else that is not an option is refused (ValueError)."""
    numbers = [o for o in options if isinstance(o, int) and not isinstance(o, bool)]
    if numbers and len(numbers) == len(options):
        value = int(raw)  # ValueError when it is not a whole number
        if value < min(numbers):
            return min(numbers)
        if value > max(numbers):
            return max(numbers)
    raise ValueError(f"not an option: {raw!r}")


def bind(
    key: str,
    default: Any,
    options: Iterable | None = None,
    *,
    param: str | None = None,
    lo: Any = None,
    hi: Any = None,
    step: Any = None,
    check: Callable[[Any], bool] | None = None,
) -> str:
    """Seed ``st.session_state[key]`` from the URL (first run) or keep it (later runs), then write
    it back to the URL. Returns ``key``, to pass as the widget's ``key=``."""
    param = param or key
    opts = list(options) if options is not None else None
    raw = st.query_params.get_all(param)
    if key not in st.session_state:
        value = _read(raw, default, opts, lo, hi, step, check)
        st.session_state[key] = default if value is _UNREAD else value
    elif _history_navigation():  # Back / Forward: the address the browser went to is the view to show, a
        url = _read(raw, default, opts, lo, hi, step, check)  # parameter it lacks (or cannot read) its default,
        if not (url is _UNREAD and param in st.session_state.get(_UNLINKED, ())):  # but a text no link carries
            st.session_state[key] = default if url is _UNREAD else url
    elif not (st.session_state[key] is None and default is None) and not _valid(
        st.session_state[key], default, opts, lo, hi, check
    ):
        st.session_state[key] = default
    else:
        # Given again, so that a widget whose range or options changed (a model with another number of
        # layers) takes it: Streamlit builds such a widget anew and would otherwise start it at its minimum,
        # while the URL written below still said the old value.
        st.session_state[key] = st.session_state[key]
    _write(param, st.session_state[key], default)
    return key


_UNREAD = object()  # a parameter the URL lacks or gives a value that does not fit


def _read(raw: list[str], default: Any, opts: list | None, lo: Any, hi: Any, step: Any, check) -> Any:
    """The URL's value of a parameter (read as ``default``'s type), or ``_UNREAD``."""
    if not raw:
        return _UNREAD
    if raw == [""] and isinstance(default, (list, tuple)):  # an emptied list choice, said as ``?layers=``
        return type(default)()
    try:
        candidate = _in_range(_from_url(raw, default, opts), lo, hi, step)
    except (ValueError, TypeError, OverflowError):
        return _UNREAD
    return candidate if _valid(candidate, default, opts, lo, hi, check) else _UNREAD


def _history_navigation() -> bool:
    """Whether this run was started by the browser's Back or Forward. Only then does the URL win over the session:
    a run started by a widget, or by ``st.rerun``, may carry the URL from before the last run's changes were sent."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx is not None and ctx.is_history_navigation)


# Every write of ``st.query_params`` is one browser history entry (Streamlit's frontend pushes each): a page that
# wrote its 12 parameters one by one took 12 presses of Back to leave. So a run's writes are kept here and sent
# at its end as one change (``flush``, called by ``common.page`` after the page's script).
_PENDING = "_url_pending"


_DEFAULTS = "_url_defaults"  # each bound parameter's default, as URL text: what its absence from the URL means


def _texts(value: Any) -> list[str] | None:
    """A value as the URL's texts (None: absent; an empty list: one empty text, ``?layers=``, since an absent
    parameter stands for its default)."""
    if value is None:
        return None
    return ([encode(v) for v in value] or [""]) if isinstance(value, (list, tuple)) else [encode(value)]


#: The most a link carries for one parameter (its percent-encoded text): Streamlit's server refuses an address past
#: ~64 KB (HTTP 400: a reload lost the whole view), and a pasted text of a few thousand words is over it.
MAX_LINKED = 2_000
_UNLINKED = "_url_unlinked"  # the parameters a link leaves out, as last said


def _write(param: str, value: Any, default: Any) -> None:
    texts = _texts(value)
    too_long = bool(texts) and sum(len(quote(t, safe="")) for t in texts) > MAX_LINKED
    st.session_state.setdefault(_PENDING, {})[param] = None if too_long else texts  # absent: a link names the rest
    st.session_state.setdefault(_DEFAULTS, {})[param] = _texts(default)
    unlinked = st.session_state.setdefault(_UNLINKED, set())
    if too_long and param not in unlinked:
        st.toast(
            f"This text is too long for the page's link ({param}: {sum(map(len, texts)):,} characters), so a "
            "link to this view restores the other choices and the default text."
        )
    (unlinked.add if too_long else unlinked.discard)(param)


def forget(param: str) -> None:
    """Drop a parameter from the URL (a control that is not shown in the current view)."""
    st.session_state.setdefault(_PENDING, {})[param] = None


def fragment(fn: Callable | None = None, **options: Any) -> Any:
    """``st.fragment`` (with its ``options``) whose own reruns send their URL changes: a fragment rerun runs only
    the fragment, not the page whose end calls ``flush``. In a full run the page flushes once, at its end."""

    def decorate(body: Callable) -> Callable:
        @functools.wraps(body)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return body(*args, **kwargs)
            finally:
                ctx = get_script_run_ctx(suppress_warning=True)
                if ctx is not None and ctx.fragment_ids_this_run:  # a rerun of fragments alone
                    flush()

        return st.fragment(run, **options)

    return decorate if fn is None else decorate(fn)


def flush() -> None:
    """Send this run's URL changes as one (one history entry), and only when the view differs from what the address
    names — a parameter it lacks stands for its default — so arriving by a page's bare address or a link writes
    nothing (such a write was a history entry of its own: after a click in the sidebar, Back showed the same page
    again), and a run Back or Forward started writes nothing. A link the page must mend (a value it cannot show, one
    spelled otherwise, an old absolute folder) is rewritten: one entry, so that the address says what is shown. A
    change writes the choices of what ran (the page's, defaults included; a fragment's own)."""
    pending = st.session_state.pop(_PENDING, None)
    if not pending or _history_navigation():
        return
    current = {k: st.query_params.get_all(k) for k in st.query_params}
    implied = {**{k: v for k, v in st.session_state.get(_DEFAULTS, {}).items() if v}, **current}  # absent: default
    if all((implied.get(k) == v) if v else (k not in current) for k, v in pending.items()):
        return  # the view is the one the address names (a run without a change: no history entry)
    wanted = {k: v for k, v in {**current, **pending}.items() if v}  # None or []: absent
    st.query_params.from_dict({k: v if len(v) > 1 else v[0] for k, v in wanted.items()})
