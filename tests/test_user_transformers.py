"""Any local Hugging Face checkpoint, family by family: tiny random ones from ``models.tiny``.

For each family the checkpoint is built once per session; the loader must give every layer
(``num_hidden_layers + 1``), one vector per word however many pieces it has, and exactly what a
plain ``transformers`` forward gives (AutoModel, the tokenizer's own special tokens, hidden states
mean-pooled per ``word_ids()``; decoders with a BOS, or the EOS where there is none, in front),
batched and padded against one sentence at a time.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
import transformers

from bench.bench_user_models import decoder_bos, hf_forward, hf_pieces, pool_words
from corpora.digests import content_fingerprint
from corpora.wsj import load_treebank
from models.tiny import KINDS, make_tiny_checkpoint
from models.transformer.auto import load_hf_checkpoint

DECODERS = {k for k, spec in KINDS.items() if spec.auto_class == "AutoModelForCausalLM"}
# The special tokens each family's tokenizer puts around a sentence (first, last); None = none.
SPECIALS = {
    "bert": ("[CLS]", "[SEP]"),
    "electra": ("[CLS]", "[SEP]"),
    "distilbert": ("[CLS]", "[SEP]"),
    "deberta-v2": ("[CLS]", "[SEP]"),
    "albert": ("[CLS]", "[SEP]"),
    "roberta": ("<s>", "</s>"),
    "llama": ("<s>", None),
    "opt": ("</s>", None),
    "t5": (None, "</s>"),
    "gpt2": (None, None),
    "gpt-neox": (None, None),
    "qwen2": (None, None),
}
# Pre-split words, the transformers way: byte-level BPE is loaded with add_prefix_space=True (what
# transformers asks for pre-tokenized input); where the byte-level step follows a regex split (Qwen2),
# that would put a space before every split of a word ("6", "1" -> "Ġ6", "Ġ1"), so each word gets a
# leading space instead.
ADD_PREFIX_SPACE = {"roberta", "gpt2", "gpt-neox", "opt"}
SPACE_BEFORE_WORD = {"qwen2"}
# Rare words: with a 400-piece vocabulary each is several pieces (asserted per tokenizer below).
SPLIT_WORDS = ["Vinken", "chrysanthemums", "unbelievably", "Schwarzenegger"]


@pytest.fixture(scope="session")
def sentences() -> list[list[str]]:
    """The split words in a sentence, and real sentences of different lengths (padding in a batch)."""
    tb = [list(s.words) for s in load_treebank()[:40]]
    return [["The", *SPLIT_WORDS[:2], "met", *SPLIT_WORDS[2:], "."], tb[0], tb[3][:5], tb[7], ["Yes"]]


@pytest.fixture(scope="session", params=sorted(KINDS))
def tiny(request, tmp_path_factory):
    """(kind, checkpoint path), built once per session."""
    kind = request.param
    return kind, make_tiny_checkpoint(kind, tmp_path_factory.mktemp("tiny") / kind)


@pytest.fixture(scope="session")
def loaded(tiny):
    """(kind, path, embedder): loaded by path, as a user's checkpoint is."""
    kind, path = tiny
    return kind, path, load_hf_checkpoint(path, name=f"tiny-{kind}", device="cpu")


class Reference(NamedTuple):
    """The plain transformers side of one checkpoint."""

    tok: transformers.PreTrainedTokenizerFast
    model: transformers.PreTrainedModel  # eager attention, base model (T5: its encoder)
    cfg: transformers.PretrainedConfig
    bos: int | None  # decoders: prepended unless the tokenizer adds it
    prefix: str  # put before every word

    def pieces(self, words: list[str]) -> tuple[list[int], list[int | None]]:
        return hf_pieces(self.tok, words, self.bos, self.prefix)


@pytest.fixture(scope="session")
def reference(tiny) -> Reference:
    kind, path = tiny
    tok = transformers.AutoTokenizer.from_pretrained(
        path, **({"add_prefix_space": True} if kind in ADD_PREFIX_SPACE else {})
    )
    model_cls = transformers.T5EncoderModel if kind == "t5" else transformers.AutoModel
    model = model_cls.from_pretrained(path, attn_implementation="eager").eval()
    return Reference(
        tok,
        model,
        model.config,
        decoder_bos(tok) if kind in DECODERS else None,
        " " if kind in SPACE_BEFORE_WORD else "",
    )


def test_tokenizer_is_the_familys_fast_tokenizer_with_its_special_tokens(tiny):
    kind, path = tiny
    tok = transformers.AutoTokenizer.from_pretrained(path)  # as saved
    assert tok.is_fast and isinstance(tok, transformers.PreTrainedTokenizerFast)
    assert type(tok).__name__ == getattr(transformers, KINDS[kind].tokenizer).__name__  # Electra's is Bert's
    assert len(tok) <= 400 and tok.backend_tokenizer.get_vocab_size() == len(tok)
    enc = tok(["a", "house"], is_split_into_words=True)
    pieces, wids = tok.convert_ids_to_tokens(enc["input_ids"]), enc.word_ids()
    first, last = SPECIALS[kind]
    assert (pieces[0] == first and wids[0] is None) == (first is not None)
    assert (pieces[-1] == last and wids[-1] is None) == (last is not None)
    assert sum(w is None for w in wids) == (first is not None) + (last is not None)
    assert {p.name for p in path.iterdir()} >= {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }


def test_loads_by_path_with_every_layer(loaded, reference):
    kind, _, emb = loaded
    cfg = reference.cfg
    assert emb.info.family == ("gpt" if kind in DECODERS else "bert")  # T5: its encoder
    assert emb.num_layers == cfg.num_hidden_layers + 1 == 3
    assert emb.dim == cfg.hidden_size == 32


def test_one_vector_per_word_for_words_split_into_pieces(loaded, reference, sentences):
    kind, _, emb = loaded
    words = sentences[0]
    _, wids = reference.pieces(words)
    counts = np.bincount([w for w in wids if w is not None], minlength=len(words))
    for word in SPLIT_WORDS:
        assert counts[words.index(word)] >= 2, (kind, word, counts)
    out = emb.embed([words])[0]
    assert out.vectors.shape == (emb.num_layers, len(words), emb.dim)
    assert out.vectors.dtype == np.float32 and np.isfinite(out.vectors).all()
    assert len({v.tobytes() for v in out.vectors[-1]}) == len(words)  # no word shares another's vector


def test_vectors_match_a_direct_transformers_forward(loaded, reference, sentences):
    kind, _, emb = loaded
    outs = emb.embed(sentences)  # one call: sorted, batched, padded
    for words, out in zip(sentences, outs):
        ids, wids = reference.pieces(words)
        expected = pool_words(hf_forward(reference.model, ids)[0], wids, len(words))
        np.testing.assert_allclose(out.vectors, expected, rtol=1e-5, atol=1e-5, err_msg=f"{kind}: {words}")


def test_word_attention_matches_a_direct_transformers_forward(loaded, reference, sentences):
    kind, _, emb = loaded
    if not emb.has_attention:
        pytest.skip(f"{emb.name} returns no attention")
    cfg = reference.cfg
    outs = emb.embed(sentences[:3], with_attention=True)
    for words, out in zip(sentences, outs):
        if out.attentions is None:
            continue
        W = len(words)
        assert out.attentions.shape == (cfg.num_hidden_layers, cfg.num_attention_heads, W, W)
        np.testing.assert_allclose(out.attentions.sum(-1), 1.0, atol=1e-5)
        ids, wids = reference.pieces(words)
        att = hf_forward(reference.model, ids, attentions=True)[1]  # (L, H, T, T)
        K = np.zeros((W, len(ids)), np.float64)  # word membership of the pieces; specials dropped
        for t, w in enumerate(wids):
            if w is not None:
                K[w, t] = 1.0
        expected = np.einsum("wt,lhts,vs->lhwv", K / K.sum(1, keepdims=True), att, K)
        expected /= expected.sum(-1, keepdims=True)
        np.testing.assert_allclose(out.attentions, expected, atol=1e-5, err_msg=kind)


def test_words_that_spell_a_control_token_reach_the_model_as_text(loaded):
    """T5 and ALBERT's vocabularies hold ``</s>``, ``<pad>``; DeBERTa-v3's ``[SEP]``, ``[CLS]``: a word
    of the text that reads so must not end or pad the sequence (only the unknown piece may appear)."""
    kind, _, emb = loaded
    tok = emb.tokenizer
    control = set(tok.all_special_ids) - {emb._unk_id}
    literal = ["</s>", "<pad>", "[SEP]", "[CLS]", "<s>", "<unk>", "<|endoftext|>", "<mask>", "[MASK]"]
    words = ["The", *literal, "end", "."]
    ((ids, word_of),) = emb._pieces([words])
    assert sorted(set(word_of.tolist())) == list(range(len(words)))
    assert not control & set(ids), (kind, tok.convert_ids_to_tokens([i for i in ids if i in control]))
    ((plain, plain_of),) = emb._pieces([["The", "end", "."]])  # the other words keep their pieces

    def of(pieces, where, w):
        return [p for p, at in zip(pieces, where) if at == w]

    for w, v in ((0, 0), (len(words) - 2, 1), (len(words) - 1, 2)):
        assert of(ids, word_of, w) == of(plain, plain_of, v), (kind, words[w])
    out = emb.embed([words])[0]
    assert out.vectors.shape == (emb.num_layers, len(words), emb.dim) and np.isfinite(out.vectors).all()


def test_sentence_longer_than_the_model_maximum(loaded, reference):
    """Over 512 pieces: no position-embedding overflow (RoBERTa's start at 2), one finite vector per word."""
    kind, _, emb = loaded
    words = [w for s in load_treebank()[:40] for w in s.words]
    n_pieces = len(reference.pieces(words)[0])
    assert n_pieces > 600, n_pieces
    out = emb.embed([words])[0]
    assert out.vectors.shape == (emb.num_layers, len(words), emb.dim) and np.isfinite(out.vectors).all()


# ----------------------------------------------------------------------------- models.tiny itself
@pytest.mark.parametrize("kind", ["bert", "albert", "llama"])  # WordPiece, Unigram, BPE trainers
def test_make_tiny_checkpoint_is_deterministic_for_a_seed(kind, tmp_path):
    corpus = [s.words for s in load_treebank()[:300]]

    def digest(seed: int, name: str) -> tuple[str, str]:
        path = make_tiny_checkpoint(kind, tmp_path / name, corpus=corpus, seed=seed)
        weights = content_fingerprint([path / "model.safetensors"], root=path)
        return weights, content_fingerprint(sorted(path.iterdir()), root=path)

    first, again, other = digest(0, "a"), digest(0, "b"), digest(1, "c")
    assert first == again  # every file, byte for byte
    assert other[0] != first[0]  # another seed: other weights ...
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "c" / "tokenizer.json").read_bytes()


def test_make_tiny_checkpoint_refuses_bad_input(tmp_path):
    corpus = ["a small corpus of words", "and another sentence"]
    with pytest.raises(ValueError, match="unknown kind 'bart'.*bert"):
        make_tiny_checkpoint("bart", tmp_path / "x", corpus=corpus)
    with pytest.raises(ValueError, match="multiple of heads"):
        make_tiny_checkpoint("bert", tmp_path / "x", corpus=corpus, hidden=30, heads=4)
    with pytest.raises(ValueError, match="layers must be a positive integer"):
        make_tiny_checkpoint("bert", tmp_path / "x", corpus=corpus, layers=0)
    with pytest.raises(ValueError, match="corpus .* is empty"):
        make_tiny_checkpoint("bert", tmp_path / "x", corpus=["", "  "])
    with pytest.raises(ValueError, match="vocab_size=100 is too small for gpt2"):
        make_tiny_checkpoint("gpt2", tmp_path / "x", corpus=corpus, vocab_size=100)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "config.json").write_text("{}")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        make_tiny_checkpoint("bert", tmp_path / "full", corpus=corpus)
    assert (tmp_path / "full" / "config.json").read_text() == "{}"
    assert not (tmp_path / "x").exists()  # nothing written on a refused call
