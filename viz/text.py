"""User text in the app: tokenize, validate, cap, and escape.

Everything a user types goes through :func:`parse_sentences` (never straight into a model) and is
shown back only through :func:`escape_html` / :func:`escape_markdown` or as plain text, so HTML or
Markdown in the input is displayed, never rendered.

    >>> parse_sentences("The bank closed.\\nShe sat on the bank.", one_per_line=True).sentences
    [['The', 'bank', 'closed', '.'], ['She', 'sat', 'on', 'the', 'bank', '.']]
"""

from __future__ import annotations

import html
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field

from corpora.errors import RequestError

# Caps that keep every page responsive on a 2-core CPU. Pages may pass smaller ones.
MAX_CHARS = 200_000  # beyond this the text is cut before tokenizing (a paste of a book)
MAX_WORDS_PER_SENTENCE = 60
MAX_SENTENCES = 50
MAX_TOTAL_WORDS = 600

# Joiners inside a word ("don't", "state-of-the-art", "U.S") when flanked by word characters.
_INNER_JOINERS = set("'’-.")
# Characters that extend an emoji / symbol cluster (ZWJ, variation selectors, skin tones).
_CLUSTER_EXTENDERS = {"\u200d", "\ufe0e", "\ufe0f"}


class InputError(RequestError):
    """The user's input cannot be used; the message is shown to the user as is."""


@dataclass
class ParsedText:
    sentences: list[list[str]]
    warnings: list[str] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)  # optional "sentence | label" labels

    @property
    def num_words(self) -> int:
        return sum(len(s) for s in self.sentences)


def _is_word_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    # Letters, marks (Devanagari vowel signs, Arabic harakat) and digits belong to words.
    return cat[0] in "LMN" or ch == "_"


def tokenize(text: str) -> list[str]:
    """Split text into words and punctuation.

    Words are runs of letters, combining marks and digits (any script, so RTL text such as
    Arabic or Hebrew stays whole), with inner apostrophes, hyphens and dots kept (``don't``,
    ``well-known``, ``U.S``). Every punctuation mark is its own token; emoji stay one token
    per cluster (ZWJ sequences, skin-tone modifiers).
    """
    tokens: list[str] = []
    for chunk in text.split():
        i, n = 0, len(chunk)
        while i < n:
            ch = chunk[i]
            if _is_word_char(ch):
                j = i + 1
                while j < n:
                    if _is_word_char(chunk[j]):
                        j += 1
                    elif chunk[j] in _INNER_JOINERS and j + 1 < n and _is_word_char(chunk[j + 1]):
                        j += 2
                    else:
                        break
                word = chunk[i:j]
                # Possessive clitic as its own token, as the Penn Treebank does ("bank's" -> bank 's).
                if len(word) > 2 and word[-2] in "'’" and word[-1] in "sS":
                    tokens.extend([word[:-2], word[-2:]])
                else:
                    tokens.append(word)
                i = j
            elif unicodedata.category(ch) in ("So", "Sk", "Cs") or ch in _CLUSTER_EXTENDERS:
                j = i + 1
                while j < n and (
                    chunk[j] in _CLUSTER_EXTENDERS
                    or unicodedata.category(chunk[j]) in ("Sk", "Mn", "Me")
                    or (chunk[j - 1] == "\u200d" and unicodedata.category(chunk[j]) == "So")
                ):
                    j += 1
                tokens.append(chunk[i:j])
                i = j
            elif unicodedata.category(ch)[0] == "C":  # control / format characters: drop
                i += 1
            else:
                tokens.append(ch)
                i += 1
    return tokens


def _clean(text: str) -> str:
    # Drop control characters except newlines and tabs (NULs, escape sequences, bidi overrides
    # are harmless to the model but confuse tables); keep everything else as typed.
    return "".join(
        ch for ch in text if ch in "\n\t" or ch in ("\u200c", "\u200d") or unicodedata.category(ch) not in ("Cc", "Cf")
    )


def parse_sentences(
    text: str | None,
    *,
    one_per_line: bool = True,
    max_words_per_sentence: int = MAX_WORDS_PER_SENTENCE,
    max_sentences: int = MAX_SENTENCES,
    max_total_words: int = MAX_TOTAL_WORDS,
    allow_labels: bool = False,
) -> ParsedText:
    """Validate and tokenize user text into sentences of words.

    Raises :class:`InputError` when nothing usable is left. Over-long input is cut to the caps
    with a warning (a 10,000-word paste gives a warning, not a crash). With ``allow_labels``,
    a line ``"text | label"`` carries a label for colouring.
    """
    if text is None or not text.strip():
        raise InputError("Please type at least one sentence.")
    warnings: list[str] = []
    if len(text) > MAX_CHARS:
        warnings.append(f"The text has {len(text):,} characters; only the first {MAX_CHARS:,} were read.")
        text = text[:MAX_CHARS]
    text = _clean(text)
    lines = [ln.strip() for ln in text.splitlines()] if one_per_line else [" ".join(text.split())]
    lines = [ln for ln in lines if ln]

    sentences: list[list[str]] = []
    labels: list[str | None] = []
    cut_long = 0
    for line in lines:
        label = None
        if allow_labels and "|" in line:
            line, _, label = line.rpartition("|")
            label = label.strip() or None
        words = tokenize(line)
        if not words:
            continue
        if len(words) > max_words_per_sentence:
            cut_long += 1
            words = words[:max_words_per_sentence]
        sentences.append(words)
        labels.append(label)
    if not sentences:
        raise InputError("No words found in the text: type a sentence of words, e.g. “The bank closed early.”")
    if cut_long:
        warnings.append(
            f"{cut_long} sentence(s) were longer than {max_words_per_sentence} words and were cut "
            f"to their first {max_words_per_sentence} words."
        )
    if len(sentences) > max_sentences:
        warnings.append(f"Only the first {max_sentences} of {len(sentences)} sentences are used.")
        sentences, labels = sentences[:max_sentences], labels[:max_sentences]
    total = sum(len(s) for s in sentences)
    if total > max_total_words:
        kept, count = [], 0
        for s in sentences:
            if count + len(s) > max_total_words:
                break
            kept.append(s)
            count += len(s)
        if not kept:  # a single sentence over the total cap: cut it
            kept = [sentences[0][:max_total_words]]
        warnings.append(
            f"The text has {total:,} words; only the first {sum(len(s) for s in kept):,} "
            f"(in {len(kept)} sentence(s)) are used to keep the page fast."
        )
        sentences, labels = kept, labels[: len(kept)]
    return ParsedText(sentences=sentences, warnings=warnings, labels=labels)


def validate_word(word: str | None, *, max_len: int = 50) -> str:
    """A single word (lemma) typed by the user, stripped; InputError if it is not one word."""
    word = _clean(word or "").strip()
    if not word:
        raise InputError("Please type a word, e.g. “bank”.")
    if len(word) > max_len:
        raise InputError(f"That is {len(word)} characters long; please type a single word.")
    if len(word.split()) > 1:
        raise InputError("Please type a single word (multiword expressions use _ , e.g. “interest_rate”).")
    return word


def escape_html(text: str) -> str:
    """Escape text for plotly labels and hover text (plotly renders a subset of HTML tags)."""
    return html.escape(str(text), quote=False)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>$:])")


def escape_markdown(text: str) -> str:
    """Escape user text for st.markdown / st.info (Markdown and HTML shown literally)."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))


def legend_label(text: str, width: int = 45) -> str:
    """A legend entry in full (a sense key and its gloss), wrapped into lines of ``width`` characters and escaped:
    a legend never cuts what tells its entries apart."""
    return "<br>".join(escape_html(line) for line in textwrap.wrap(" ".join(str(text).split()), width) or [""])


def shorten(text: str, width: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, in the plural unless one, thousands grouped: "1 occurrence", "10,000 points"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
