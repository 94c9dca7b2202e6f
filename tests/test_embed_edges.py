"""The embedder contract at its edges (docs/reliability.md, round eleven: an outside audit of word ↔ piece alignment):
what ``embed`` and the feature cache's ``embed_rows`` accept, and that a verdict on the text never depends on how
the sentences were batched. Tiny random checkpoints from ``models.tiny``, tokenizers trained here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from corpora.errors import RequestError
from models.errors import UnknownTextError
from models.tiny import make_tiny_checkpoint
from models.transformer.auto import load_hf_checkpoint
from tests.probe_helpers import RandomEmbedder

TEXT = [
    "The bank closed early today , and nobody knew why .",
    "Investors sold shares as the market fell for a third day .",
] * 20
SENTENCE = ["The", "bank", "closed", "early", "today", "."]
EMOJI = ["😀", "😂", "🎉", "👍", "🙏", "🔥", "💯", "🤔", "and", "day"]  # 8 of 10 words the tiny vocabulary lacks


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """kind -> a tiny checkpoint loaded on the CPU, with a window of 10 pieces (long sentences are windowed)."""
    root = tmp_path_factory.mktemp("edges")
    return {
        kind: load_hf_checkpoint(make_tiny_checkpoint(kind, root / kind, corpus=TEXT, vocab_size=300), window=10)
        for kind in ("bert", "gpt2")
    }


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_kept_words_must_be_increasing_on_both_paths(tiny, kind):
    """The streamed path laid a sentence's rows out in piece order: keep = [3, 1] put word 3's first piece and word
    1's other pieces in one row (a difference of up to 1.9, silently). Now an increasing keep is the contract, on the
    streamed path and the base one; an increasing keep gives exactly ``embed``'s vectors."""
    emb, words = tiny[kind], SENTENCE
    for bad in ([3, 1], [1, 1], [0, 6]):
        with pytest.raises(RequestError, match="must be increasing word indices from 0 to 5"):
            list(emb.embed_rows([([words], [np.array(bad)])], torch.float32))
        with pytest.raises(RequestError, match="must be increasing word indices"):
            list(RandomEmbedder().embed_rows([([words], [np.array(bad)])], torch.float32))
    (rows,) = [b.rows for _, b in emb.embed_rows([([words], [np.array([1, 3])])], torch.float32) if b.counts.sum()]
    np.testing.assert_allclose(rows.numpy(), emb.embed([words])[0].vectors[:, [1, 3]], atol=1e-6)


def test_a_string_for_a_sentence_and_an_empty_word_are_refused(tiny):
    """``embed(["The bank"])`` embedded its 8 characters as words; an empty word reached GPT-2 as its end-of-text
    token, a document boundary in mid-sentence. Both are refused, naming the sentence (and the word)."""
    for emb in (tiny["bert"], tiny["gpt2"], RandomEmbedder()):
        with pytest.raises(RequestError, match=r"Sentence 2 is a string \('The bank closed'\), not a list of words"):
            emb.embed([SENTENCE, "The bank closed"])
        with pytest.raises(RequestError, match="Sentence 1, word 2 is empty"):
            emb.embed([["The", "", "bank"]])


def test_a_sentence_too_long_for_attention_is_named_by_its_words(tiny):
    """The error named "Sentence 2" for the caller's fourth sentence (an index among the non-empty ones)."""
    long = (SENTENCE * 4)[:20]
    with pytest.raises(
        RequestError,
        match=r"The sentence “The bank closed early today \. The bank…” has 20 pieces; bert takes at most 10",
    ):
        tiny["bert"].embed([[], ["a"], ["b"], long], with_attention=True)


def test_the_unknown_text_verdict_is_the_datasets_not_a_chunks(tiny):
    """The feature path sorts sentences longest first, so the short, mostly unknown lines fall in its last chunk;
    that chunk alone was refused ("8 of 10 words of a batch"), so whether an extraction failed hung on how the
    chunks fell. The dataset is judged as a whole (``check_text``); its chunks are not judged again."""
    emb = tiny["bert"]
    dataset = [s.split() for s in TEXT[:6]] + [EMOJI]
    with pytest.raises(UnknownTextError, match="of a batch"):
        emb.embed([EMOJI])  # one call is its own text
    emb.check_text(dataset)  # mostly known: passes
    blocks = list(emb.embed_rows([(dataset[:6], None), ([EMOJI], None)], torch.float32))
    assert sum(int(b.counts.sum()) for _, b in blocks) == sum(map(len, dataset))
    with pytest.raises(UnknownTextError, match="of the text to embed are the unknown token"):
        emb.check_text([EMOJI] * 3 + [SENTENCE])


def test_every_sentence_of_a_chunk_gets_a_block_empty_ones_too(tiny):
    for emb in (tiny["bert"], RandomEmbedder()):
        blocks = [b for _, b in emb.embed_rows([([SENTENCE, [], ["bank"], []], None)], torch.float32)]
        sentences = np.concatenate([b.sentences for b in blocks])
        counts = np.concatenate([b.counts for b in blocks])
        assert sorted(sentences.tolist()) == [0, 1, 2, 3]
        assert dict(zip(sentences.tolist(), counts.tolist())) == {0: 6, 1: 0, 2: 1, 3: 0}


def test_a_sharded_extraction_judges_the_text_as_a_local_one_does(tmp_path):
    """Shard workers embedded chunk by chunk with ``embed``, each chunk judged on its own: a last chunk of short,
    mostly unknown lines failed the sharded extraction that the local one completes. Workers now stream through the
    model's ``embed_rows``, the local path itself: the same entry, byte for byte."""
    from cluster.extract import extract_sharded
    from features import get_features

    path = make_tiny_checkpoint("bert", tmp_path / "bert", corpus=TEXT, vocab_size=300)
    sentences = [s.split() for s in TEXT[:8]] + [EMOJI[:8]] * 2  # longest first: the emoji lines are the last chunk
    keep = np.arange(0, sum(map(len, sentences)), 3)
    feats, stats = extract_sharded(
        str(path), "edges", sentences, keep, num_shards=2, root=tmp_path / "sharded", chunk_size=4
    )
    local = get_features(load_hf_checkpoint(path), "edges", sentences, keep=keep, root=tmp_path / "local", chunk_size=4)
    assert stats["shards"] == 2
    for name in ["meta.json"] + [f"layer_{j}.npy" for j in range(3)]:
        assert (feats.directory / name).read_bytes() == (local.directory / name).read_bytes(), name


def test_the_dataset_sample_is_random_not_periodic_and_sentences_may_be_a_generator(tiny):
    """``check_text`` sampled every k-th sentence: a file whose lines alternate (a known pair of words, then ten
    unknown ones; 83 % unknown) put only the known lines in the sample and passed. And ``embed`` of a generator
    came back empty (the input was read twice)."""
    emb = tiny["bert"]
    alternating = [["The", "bank"], EMOJI[:8] + ["😀", "🔥"]] * 2_100  # 25,200 words: sampled
    with pytest.raises(UnknownTextError, match="of the text to embed"):
        emb.check_text(alternating)
    assert len(RandomEmbedder().embed(s.split() for s in ["the bank", "a cat sat"])) == 2


def test_the_dataset_check_names_the_datasets_own_sentence(tiny):
    """A refusal from the whole-dataset check counted sentences of its sample (empty ones left out): the dataset's
    seventh sentence was "Sentence 6"."""
    dataset = [[]] + [SENTENCE] * 9
    dataset[6] = ["a", ""]
    with pytest.raises(RequestError, match="^Sentence 7, word 2 is empty"):
        tiny["bert"].check_text(dataset)


OUT_OF_MEMORY = """
import resource, sys
import numpy as np
from corpora.errors import RequestError
from models.static_embedder import StaticEmbedder

emb = StaticEmbedder("wide", ["a", "b", "c"], np.ones((3, 1_000_000), np.float32), source="test")
vm = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + 2**31, resource.getrlimit(resource.RLIMIT_AS)[1]))  # 2 GiB more
try:
    emb.embed([["a", "b", "c"] * 400])  # 1,200 words x 1M dims: 4.8 GB at once
except RequestError as exc:
    print("refused:", exc)
"""


def test_an_embed_call_too_big_for_memory_is_one_message_saying_what_to_do():
    """``embed`` of 2 million sentences was torch's "can't allocate memory … 4000000000 bytes" RuntimeError."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_MEMORY],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "refused: Out of memory embedding 1 sentences (1,200 words) at once with wide" in done.stdout, done.stderr
    assert "embed_rows" in done.stdout and "Traceback" not in done.stderr
