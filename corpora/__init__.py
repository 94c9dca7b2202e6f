"""The data layer: readers that return the plain dataclasses of ``corpora.types``.

It is used by ``models`` (LM training text for the trained embedders) and by ``probes`` (SemCor,
the WSD evaluation sets, WSJ POS tags, WordNet), and through them by the app. It imports neither,
nor ``viz`` or ``streamlit``: it depends only on its data files, numpy, scipy (a CoNLL-U tree's
connectivity), filelock (the data digests' lock) and (when a reader runs) NLTK and pandas.

- SemCor 3.0: :func:`load_semcor`
- WSD evaluation framework: :func:`load_wsd_dataset`, :data:`WSD_DATASETS`
- WSJ POS/chunks: :func:`load_conll2000`, :func:`load_treebank`, :func:`to_universal`
- LM corpus: :func:`load_lm_corpus`, :data:`DEFAULT_SOURCES` (sources tokenized in ``corpora.lm_sources``)
- WordNet: :func:`senses`, :func:`first_sense_key`, :func:`key_to_synset`, :func:`sense_from_key`
- Everything at once: ``corpora.stats.dataset_table`` (pandas); ``python -m probes stats`` prints these counts.

Where the data and cache live: ``corpora.paths`` (also ``REPO_ROOT``, the one place the repository
root is computed). Parsed corpora are cached on disk by ``corpora.cache`` in a data-only format
(``corpora.codec``: JSON plus numpy arrays, never pickle).

Importing this package is cheap: pandas and NLTK load only when a reader runs.
"""

from corpora.lm_corpus import DEFAULT_SOURCES, corpus_stats, iter_words, load_lm_corpus
from corpora.semcor import SEMCOR_PARTS, load_semcor, wordnet_sense_keys
from corpora.types import (
    LmCorpus,
    SemcorSentence,
    SemcorStats,
    SemcorToken,
    TaggedSentence,
    WsdDataset,
    WsdInstance,
    WsdSentence,
)
from corpora.wordnet import Sense, UnknownSenseKeyError, first_sense_key, key_to_synset, sense_from_key, senses, wn_pos
from corpora.wsd_eval import WSD_DATASETS, WsdFormatError, load_wsd_dataset
from corpora.wsj import load_conll2000, load_treebank, to_universal, universal_tags

__all__ = [
    "DEFAULT_SOURCES",
    "corpus_stats",
    "iter_words",
    "load_lm_corpus",
    "SEMCOR_PARTS",
    "load_semcor",
    "wordnet_sense_keys",
    "LmCorpus",
    "SemcorSentence",
    "SemcorStats",
    "SemcorToken",
    "TaggedSentence",
    "WsdDataset",
    "WsdInstance",
    "WsdSentence",
    "Sense",
    "UnknownSenseKeyError",
    "first_sense_key",
    "key_to_synset",
    "sense_from_key",
    "senses",
    "wn_pos",
    "WSD_DATASETS",
    "WsdFormatError",
    "load_wsd_dataset",
    "load_conll2000",
    "load_treebank",
    "to_universal",
    "universal_tags",
]
