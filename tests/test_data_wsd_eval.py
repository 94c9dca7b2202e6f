"""WSD evaluation framework reader: every set against its own key/XML files, and broken input."""

from __future__ import annotations

import re
import shutil

import pytest

from corpora import wsd_eval as W
from corpora.paths import DataMissingError
from corpora.semcor import wordnet_sense_keys


def _key_file(data_root, name):
    lines = (data_root / f"wsd_eval/{name}/{name}.gold.key.txt").read_text(encoding="utf-8").splitlines()
    return {ln.split()[0]: tuple(ln.split()[1:]) for ln in lines if ln.strip()}


@pytest.mark.parametrize("name", W.WSD_DATASETS)
def test_dataset_matches_its_key_and_xml_files(data_root, name):
    ds = W.load_wsd_dataset(name)
    gold = _key_file(data_root, name)
    xml = (data_root / f"wsd_eval/{name}/{name}.data.xml").read_text(encoding="utf-8")
    assert ds.name == name
    assert len(ds.instances) == len(gold) == len(re.findall(r"<instance ", xml))
    assert {i.id: i.gold_keys for i in ds.instances} == gold
    assert len(ds.sentences) == len(re.findall(r"<sentence ", xml))
    assert sum(len(s.words) for s in ds.sentences) == len(re.findall(r"<(?:wf|instance) ", xml))
    for sent in ds.sentences:
        assert len(sent.words) == len(sent.lemmas) == len(sent.pos)
        for inst in sent.instances:
            assert inst.id.startswith(sent.id + ".")
            assert sent.lemmas[inst.index] == inst.lemma and sent.pos[inst.index] == inst.pos
            assert inst.pos in ("NOUN", "VERB", "ADJ", "ADV")


def test_all_is_the_concatenation_of_the_five_sets():
    everything = {i.id: (i.lemma, i.pos, i.gold_keys) for i in W.load_wsd_dataset("ALL").instances}
    assert len(everything) == 7_253  # published count
    # The subsets' ids lack the set name that ALL prefixes ("d000.s000.t000" -> "senseval2.d000...").
    parts = {
        f"{name}.{i.id}": (i.lemma, i.pos, i.gold_keys)
        for name in W.WSD_DATASETS
        if name != "ALL"
        for i in W.load_wsd_dataset(name).instances
    }
    assert parts == everything


def test_gold_keys_are_wordnet_30_keys():
    keys = wordnet_sense_keys()
    gold = {k for i in W.load_wsd_dataset("ALL").instances for k in i.gold_keys}
    assert gold <= keys


@pytest.fixture()
def copy_of(tmp_path, data_root):
    """A writable copy of semeval2007 (the smallest set) under tmp_path."""
    src = data_root / "wsd_eval/semeval2007"
    dst = tmp_path / "semeval2007"
    shutil.copytree(src, dst)
    return dst / "semeval2007.data.xml", dst / "semeval2007.gold.key.txt"


def test_truncated_xml_names_the_file(copy_of):
    xml, key = copy_of
    xml.write_bytes(xml.read_bytes()[: len(xml.read_bytes()) // 2])
    with pytest.raises(W.WsdFormatError, match=r"semeval2007\.data\.xml.*truncated XML at line \d+"):
        W.parse_wsd_files("semeval2007", xml, key)


def test_unknown_id_in_key_file_names_file_and_line(copy_of):
    xml, key = copy_of
    lines = key.read_text(encoding="utf-8").splitlines()
    lines.insert(10, "semeval2007.d999.s999.t999 art%1:09:00::")
    key.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(W.WsdFormatError, match=r"gold\.key\.txt:11: unknown instance id 'semeval2007\.d999"):
        W.parse_wsd_files("semeval2007", xml, key)


def test_instance_without_gold_and_bad_key_lines(copy_of):
    xml, key = copy_of
    lines = key.read_text(encoding="utf-8").splitlines()
    key.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    missing = lines[0].split()[0]
    # the error names the instance's own line (it named the line of its sentence's end, ~30 lines on in real files)
    line = next(k for k, text in enumerate(xml.read_text(encoding="utf-8").splitlines(), 1) if f'"{missing}"' in text)
    with pytest.raises(W.WsdFormatError, match=f"data\\.xml:{line}: instance '{re.escape(missing)}' has no gold key"):
        W.parse_wsd_files("semeval2007", xml, key)
    key.write_text("\n".join(lines + [lines[3]]) + "\n", encoding="utf-8")
    with pytest.raises(W.WsdFormatError, match=f":{len(lines) + 1}: .* listed twice"):
        W.parse_wsd_files("semeval2007", xml, key)
    key.write_text("\n".join(lines[:5] + [lines[5].split()[0]] + lines[6:]) + "\n", encoding="utf-8")
    with pytest.raises(W.WsdFormatError, match=":6: .* has no sense key"):
        W.parse_wsd_files("semeval2007", xml, key)


def test_format_error_is_a_value_error_and_missing_data(tmp_path, monkeypatch):
    assert issubclass(W.WsdFormatError, ValueError)
    with pytest.raises(ValueError, match="unknown WSD dataset"):
        W.load_wsd_dataset("senseval9")
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match=r"wsd_eval/senseval2/senseval2\.data\.xml"):
        W.load_wsd_dataset("senseval2")


def test_one_key_outside_wordnet_30_is_named_not_turned_into_labels_mode(copy_of, data_root, tmp_path):
    """One mistyped key (or a WordNet 3.1 key) in a gold file switched the whole run to the labels inventory: every
    key a label of its own, 1,259 of 1,850 instances answered with another lemma's sense, F1 62.11 -> 14.38, exit 0.
    Now the run stops and names the key and its file; a file whose labels are all the user's own still runs."""
    from probes.errors import ProbeInputError
    from probes.run import run_probe
    from tests.probe_helpers import RandomEmbedder

    xml, key = copy_of
    lines = key.read_text(encoding="utf-8").splitlines()
    first_id = lines[0].split()[0]
    key.write_text("\n".join([f"{first_id} man%1:18:00::x", *lines[1:]]) + "\n", encoding="utf-8")
    train = shutil.copytree(data_root / "wsd_eval/senseval2", tmp_path / "train")
    options = {"train": str(train / "senseval2.data.xml"), "test": str(xml)}
    model = RandomEmbedder(num_layers=1, dim=8, seed=0)
    with pytest.raises(ProbeInputError, match=r"semeval2007.*: 1 \(man%1:18:00::x\).*another WordNet"):
        run_probe("wsd", model, options=options, limit=20, show_progress=False)
    key.write_text("\n".join([f"{first_id} U", *lines[1:]]) + "\n", encoding="utf-8")  # Senseval's unassignable
    with pytest.raises(ProbeInputError, match=r"'U' is no sense key \(Senseval's 'U' marks an instance no sense fits"):
        run_probe("wsd", model, options=options, limit=20, show_progress=False)
    own = ["\t".join([line.split()[0], "SENSE" + str(i % 3)]) for i, line in enumerate(lines)]
    key.write_text("\n".join(own) + "\n", encoding="utf-8")
    (train / "senseval2.gold.key.txt").write_text(
        "\n".join(
            f"{line.split()[0]} SENSE{i % 3}"
            for i, line in enumerate(
                (data_root / "wsd_eval/senseval2/senseval2.gold.key.txt").read_text(encoding="utf-8").splitlines()
            )
        )
        + "\n",
        encoding="utf-8",
    )
    assert run_probe("wsd", model, options=options, limit=20, show_progress=False).result.rows
