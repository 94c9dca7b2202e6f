"""A chart's title: where it goes (below plotly's toolbar, with the top margin its lines need) and how it breaks
(``two_line_title``: a headline and a smaller second line, each wrapped evenly to a width).

plotly draws its toolbar (the modebar) over the top right of a chart; a title or a subplot's panel title placed at
plotly's default height runs under its buttons at some window width. ``title_below_toolbar`` moves them down; the
chart helper of the app (``app_pages.common.chart``) applies it to every figure, and a figure whose plot is sized
to its content (the attention grid's tiles) applies it itself and grows by the room it took. The pixel sizes were
measured in Chromium.
"""

from __future__ import annotations

import functools
import html
import re
import textwrap

import plotly.graph_objects as go

from viz.text import escape_html

#: plotly's toolbar (the modebar, top right) is 26 px tall from 2 px down (measured in Chromium); a title's top
#: goes below it, so that no window width puts a title under its buttons.
TOOLBAR_PX = 34
#: A title line's height, headline and ``<sup>`` line (``two_line_title``), and the shift plotly gives a title of
#: several lines: its top lands that much above its pad (all measured in Chromium).
HEAD_LINE_PX, SUB_LINE_PX, MULTILINE_SHIFT_PX = 23, 18, 16
#: Room between the toolbar and panel titles of a chart without a title (a panel title is drawn a few px above
#: its plot).
PANEL_TITLE_GAP_PX = 6


def title_below_toolbar(fig: go.Figure) -> go.Figure:
    """Move ``fig``'s title (if it has one) under the toolbar's row, with the top margin its lines need, one line
    more below them (the top tick label) and one more for panel titles; without a title, its panel titles go under
    the toolbar's row. Idempotent: a cached figure drawn again is left as it is."""
    text = fig.layout.title.text
    # subplot titles sit just above the top of their plots: the margin keeps a line for them under the title
    panel_titles = any(a.yref == "paper" and a.yanchor == "bottom" and (a.y or 0) >= 1 for a in fig.layout.annotations)
    if not text and panel_titles:  # no title: the panel titles alone go under the toolbar's row
        fig.update_layout(margin_t=max(fig.layout.margin.t or 0, TOOLBAR_PX + SUB_LINE_PX + PANEL_TITLE_GAP_PX))
    if text:
        lines = text.split("<br>")
        subs = sum(line.startswith("<sup>") for line in lines)
        block = HEAD_LINE_PX * (len(lines) - subs) + SUB_LINE_PX * subs
        fig.update_layout(
            title=dict(
                yref="container", y=1, yanchor="top", pad=dict(t=TOOLBAR_PX + MULTILINE_SHIFT_PX * (len(lines) > 1))
            ),
            margin_t=max(fig.layout.margin.t or 0, TOOLBAR_PX + block + SUB_LINE_PX * (1 + panel_titles)),
        )
    return fig


def plain_title(fig: go.Figure, fallback: str = "") -> str:
    """The figure's title as plain text (its lines joined, markup and escapes undone): a chart's accessible name
    for screen readers; ``fallback`` for a figure without a title."""
    lines = re.split(r"<br\s*/?>", fig.layout.title.text or "")
    # " — " where the headline ends and the smaller line begins; a wrapped line's break is a space
    text = lines[0] + "".join(
        (" — " if line.startswith("<sup>") and not before.startswith("<sup>") else " ") + line
        for before, line in zip(lines, lines[1:])
    )
    return plain_text(text) or fallback


def plain_text(markup: str) -> str:
    """Text of plotly markup (tags such as <sup> dropped, HTML escapes read, runs of spaces one space)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup)).split())


def balanced_wrap(text: str, width: int) -> list[str]:
    """``text`` in as few lines of at most ``width`` characters as ``textwrap`` needs, of even length (no one-word
    last line)."""
    wrap = functools.partial(textwrap.wrap, break_long_words=False, break_on_hyphens=False)  # "conll2000-test" whole
    lines = wrap(text, width) or [""]
    for narrower in range(max(1, -(-len(text) // len(lines))), width):
        if len(even := wrap(text, narrower)) == len(lines):
            return even
    return lines


def two_line_title(head: str, rest: str, widths: tuple[int, int] | None = None) -> str:
    """A chart title as a headline and, below it, a smaller second line (plotly's title markup; text escaped);
    with ``widths`` (characters), each wrapped at spaces to lines of at most that many."""
    heads, rests = (
        ([head], [rest]) if widths is None else (balanced_wrap(head, widths[0]), balanced_wrap(rest, widths[1]))
    )
    return "<br>".join([*map(escape_html, heads), *(f"<sup>{escape_html(line)}</sup>" for line in rests)])
