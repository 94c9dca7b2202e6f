"""cluster/ without Ray: the sweep plan and resume, sharded extraction in-process (byte-identical to a
local extraction), a sweep sharing its feature cache through an fsspec store, and the commands' errors.
The same on a local Ray instance: tests/test_cluster_ray.py."""

from __future__ import annotations

import json
import sys
import uuid

import numpy as np
import pytest

from cluster.datasets import dataset_request
from cluster.executors import InProcess
from cluster.extract import extract_sharded
from cluster.plan import SweepTask, finished, plan_sweep
from cluster.shards import plan_shards
from cluster.sweep import run_sweep
from cluster.tasks import TaskEnv
from features.extract import get_features
from models.registry import load_embedder
from models.tiny import make_tiny_checkpoint
from probes.__main__ import main  # the program: probes.cli plus sweep and extract
from probes.results import load_results


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "tiny-bert"
    return str(make_tiny_checkpoint("bert", path, layers=2, hidden=32, heads=2))


def entry_bytes(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name.startswith(("layer_", "meta"))}


def test_plan_runs_baselines_first_then_model_by_model():
    tasks = plan_sweep(["a", "b"], ["pos", "wsd"], [0, 1], 20, {"wsd": {"semcor_limit": 100}})
    assert [t.label for t in tasks[:2]] == ["baselines/pos seed 0", "baselines/wsd seed 0"]
    assert [t.label for t in tasks[2:6]] == ["a/pos seed 0", "a/pos seed 1", "a/wsd seed 0", "a/wsd seed 1"]
    assert len({t.task_id for t in tasks}) == len(tasks) == 10
    assert tasks[6].label == "b/pos seed 0"
    assert tasks[4].options == (("semcor_limit", 100),)
    # the id names what decides the result: another slice or option is another task
    assert SweepTask("pos", "a", 0, 20).task_id != SweepTask("pos", "a", 0, 30).task_id
    with pytest.raises(ValueError, match="twice"):
        plan_sweep(["a", "a"], ["pos"], [0], None, {})


def test_finished_counts_a_task_only_when_all_its_results_are_there(tmp_path):
    def write(name, sweep):
        (tmp_path / name).write_text(json.dumps({"model": "m", "probe": "p", "rows": [], "extra": {"sweep": sweep}}))

    write("a.json", {"task": "t1", "part": 0, "parts": 2})
    write("b.json", {"task": "t2", "part": 0, "parts": 1})
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"model": "m", "probe": "p", "rows": []}))
    assert set(finished(tmp_path)) == {"t2"}
    write("c.json", {"task": "t1", "part": 1, "parts": 2})
    assert set(finished(tmp_path)) == {"t1", "t2"}
    assert finished(tmp_path / "missing") == {}


def test_finished_takes_a_tasks_newest_result(tmp_path):
    """`sweep --no-resume` reruns every task beside its old results; the seed merge read ``finished``'s oldest file of
    each task, so the tables showed the old runs' mean (an audit: 38.47 = (10.0 + 66.94) / 2, the fresh 67.61
    unused). The newest by the result's timestamp, then its save time (same-second runs), not by file name."""

    def write(name, stamp, saved_ns, task="t"):
        body = {"model": "m", "probe": "p", "rows": [], "timestamp": stamp, "saved_ns": saved_ns}
        (tmp_path / name).write_text(json.dumps(body | {"extra": {"sweep": {"task": task}}}))

    write("m__p__a.json", "2026-12-06T00:00:00", 1)  # the newest run, its name sorting first
    write("m__p__b.json", "2026-12-01T00:00:00", 9)
    write("m__p__c.json", "2026-12-05T00:00:00", 5, task="u")  # two runs in one second: the later save wins
    write("m__p__d.json", "2026-12-05T00:00:00", 3, task="u")
    assert finished(tmp_path)["t"].name == "m__p__a.json" and finished(tmp_path)["u"].name == "m__p__c.json"


def test_shards_are_whole_chunks_of_the_cache_order_balanced_by_words():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, size=1000)
    shards = plan_shards(lengths, 3, chunk_size=64)
    order = np.argsort(-lengths, kind="stable")
    flat = np.concatenate([c for s in shards for c in s])
    np.testing.assert_array_equal(flat, order)  # every sentence once, in get_features' order
    assert all(len(c) == 64 for s in shards for c in s[:-1])
    words = [sum(int(lengths[c].sum()) for c in s) for s in shards]
    assert len(shards) == 3 and max(words) < 1.5 * min(words)
    assert len(plan_shards(lengths[:100], 8, chunk_size=64)) == 2  # never more shards than chunks
    with pytest.raises(ValueError):
        plan_shards(lengths, 0)


def test_sharded_extraction_in_process_is_byte_identical_and_served_by_the_cache(tiny_bert, tmp_path):
    sentences, keep, key = dataset_request("semcor-tagged", 150)  # keep: only the sense-tagged pieces
    assert keep is not None and key == "semcor-tagged-limit150"
    feats, stats = extract_sharded(
        tiny_bert, key, sentences, keep, num_shards=3, root=tmp_path / "sharded", chunk_size=32
    )
    assert stats["shards"] == 3 and stats["model_loads"] == 1
    emb = load_embedder(tiny_bert)
    local = get_features(emb, key, sentences, keep=keep, chunk_size=32, root=tmp_path / "local", show_progress=False)
    assert entry_bytes(feats.directory) == entry_bytes(local.directory)
    assert not (tmp_path / "sharded" / "shards").exists()  # the shards and their folders are gone
    messages = []
    get_features(
        emb,
        key,
        sentences,
        keep=keep,
        root=tmp_path / "sharded",
        show_progress=False,
        progress=lambda f, m: messages.append(m),
    )
    assert messages and messages[-1].endswith("features from cache")


def test_a_sharded_extraction_makes_the_models_whole_dataset_check_before_any_shard(tmp_path):
    """A vectors file whose words carry their POS (``the_NOUN``) knows none of the words: a sharded extraction
    embedded all-zero vectors, the model's whole-dataset check (``check_text``) being made only where the model is
    loaded in the driver. Now one worker makes it before the first shard: refused, nothing written."""
    from models.errors import ModelLoadError

    words = ["the", "bank", "river", "money", "a", "of", "and", "to", "in", "is"]
    rows = [f"{w}_NOUN " + " ".join(f"{(i * 7 + j) % 5 / 10:.1f}" for j in range(4)) for i, w in enumerate(words)]
    tagged = tmp_path / "tagged.vec"
    tagged.write_text(f"{len(rows)} 4\n" + "\n".join(rows) + "\n", encoding="utf-8")
    sentences = [words[:5], words[5:9], words[2:8]]
    with pytest.raises(ModelLoadError, match="words to embed are not in its vocabulary"):
        extract_sharded(str(tagged), "tagged", sentences, num_shards=2, root=tmp_path / "cache", chunk_size=1)
    assert not any((tmp_path / "cache").rglob("*.npz"))


def test_a_sharded_extraction_under_other_releases_is_refused_before_any_shard(tiny_bert, tmp_path, monkeypatch):
    """Workers computing under other library releases than the driver's were refused only at the commit, after
    every shard had been embedded and uploaded (on a GPU cluster, the whole extraction). Now before the first."""
    from cluster.shards import ShardWorker
    from features import FeatureCacheError

    info = ShardWorker.info
    monkeypatch.setattr(ShardWorker, "info", lambda self: {**info(self), "libraries": {"torch": "1.0.0"}})
    sentences = [["The", "bank", "closed", "."], ["A", "river", "bank"]] * 4
    with pytest.raises(FeatureCacheError, match=r"under torch 1\.0\.0 \(here "):
        extract_sharded(tiny_bert, "toy", sentences, num_shards=2, root=tmp_path / "cache", chunk_size=2)
    assert not any((tmp_path / "cache").rglob("*.npz"))


def test_an_in_process_sweep_shares_features_through_a_store(tiny_bert, tmp_path, monkeypatch):
    url = f"memory://sweep-{uuid.uuid4().hex[:8]}"
    tasks = [t for t in plan_sweep([tiny_bert], ["pos"], [0], 15, {}) if t.model]
    first = run_sweep(
        tasks,
        InProcess(),
        TaskEnv(feature_root=str(tmp_path / "node1"), remote=url),
        tmp_path / "res1",
        say=lambda m: None,
    )
    assert first.ok and first.run.done == 1
    emb = load_embedder(tiny_bert)

    def no_extraction(*args, **kwargs):
        raise AssertionError("features were extracted again instead of pulled from the store")

    monkeypatch.setattr(emb, "embed", no_extraction)
    monkeypatch.setattr(emb, "embed_rows", no_extraction)  # the feature cache's path
    second = run_sweep(
        tasks,
        InProcess(),
        TaskEnv(feature_root=str(tmp_path / "node2"), remote=url),
        tmp_path / "res2",
        say=lambda m: None,
    )
    assert second.ok and second.run.done == 1
    rows = [json.loads(next((tmp_path / d).glob("*.json")).read_text())["rows"] for d in ("res1", "res2")]
    assert rows[0] == rows[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sweep", "--models", "x", "--seeds", "a,b"], "--seeds 'a,b'"),
        (["sweep", "--models", "no-such-model-anywhere", "--probes", "pos"], "no-such-model-anywhere"),
        (["sweep", "--models", "glove-6b-50d", "--probes", "nope"], "Unknown probe 'nope'"),
        (["sweep", "--models", "glove-6b-50d", "--limit", "0"], "--limit 0"),
        (["sweep", "--models", "glove-6b-50d", "--retries", "-1"], "--retries -1"),
        (["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--ray", "127.0.0.1:1"], "nothing answers there"),
        (["extract", "--model", "glove-6b-50d", "--dataset", "nope"], "--dataset 'nope'"),
        (["extract", "--model", "glove-6b-50d", "--dataset", "conll2000-test", "--shards", "0"], "--shards 0"),
        # round eight's audit: an option no asked-for probe takes was dropped and the resume called the tasks done;
        # a device this machine lacks failed every task after the baselines (extract: an AssertionError traceback)
        (["sweep", "--models", "glove-6b-50d", "--probes", "pos,wsd", "--epochs", "3"], "--epochs is an option of mix"),
        (
            ["reproduce", "--out", "/nonexistent/o", "--models", "glove-6b-50d", "--probes", "pos", "--epochs", "3"],
            "mix",
        ),
        (["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--device", "cuda:9"], "--device: 'cuda:9'"),
        (["extract", "--model", "glove-6b-50d", "--dataset", "conll2000-test", "--device", "cuda:9"], "--device"),
        (["extract", "--model", "glove-6b-50d", "--dataset", "conll2000-test", "--threads", "0"], "--threads 0"),
        (["extract", "--model", "glove-6b-50d", "--dataset", "conll2000-test", "--store", "/proc/nope"], "/proc/nope"),
    ],
)
def test_bad_requests_end_with_one_error_line(argv, message, capsys, tmp_path):
    assert main(argv + ["--results", str(tmp_path)] if argv[0] == "sweep" else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_ray_missing_is_one_error_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the optional extra were not installed
    assert (
        main(["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--ray", "local", "--results", str(tmp_path)])
        == 2
    )
    assert "requirements-cluster.txt" in capsys.readouterr().err


def test_the_sweep_command_runs_saves_and_resumes(tiny_bert, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    argv = ["sweep", "--models", tiny_bert, "--probes", "pos", "--limit", "12", "--results", str(tmp_path / "res")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "sweep: 2 tasks, 0 already in" in out
        and "2 run, 0 already done (same model content), 0 retried, 0 failed" in out
    )
    saved = sorted(p.name.split("__")[:2] for p in (tmp_path / "res").glob("*.json"))
    assert saved == [["majority-tag", "pos"], ["tiny-bert", "pos"]]
    result = json.loads(next((tmp_path / "res").glob("tiny-bert__pos__*.json")).read_text())
    assert result["command"].startswith("python -m probes sweep") and result["params"]["limit"] == 12
    assert main(argv) == 0  # resumed: nothing left to run
    assert "0 run, 2 already done" in capsys.readouterr().out
    assert len(list((tmp_path / "res").glob("*.json"))) == 2
    # a sweep's --seeds lists seeds (`probes pos --seeds 3` runs three): a lone "3" is said to mean seed 3; several
    # seeds are merged as `--seeds N` merges them, so the tables show their mean, not the newest seed (the audit)
    capsys.readouterr()
    assert main([*argv, "--seeds", "3"]) == 0
    assert "--seeds 3: the sweep runs seed 3 alone" in capsys.readouterr().out
    assert main([*argv, "--seeds", "0,3"]) == 0 and "seeds merged: tiny-bert__pos__" in capsys.readouterr().out
    runs = {
        json.loads(p.read_text())["params"].get("seed"): json.loads(p.read_text())
        for p in (tmp_path / "res").glob("**/tiny-bert__pos__*.json")
        if "seeds" not in json.loads(p.read_text())["params"]
    }

    value = {
        s: next(r["value"] for r in runs[s]["rows"] if r["layer"] == "0" and r["metric"] == "accuracy") for s in (0, 3)
    }
    shown = load_results(tmp_path / "res")
    row = shown[(shown.model == "tiny-bert") & (shown.layer == "0") & (shown.metric == "accuracy")].iloc[0]
    assert row["seeds"] == 2 and row["value"] == round((value[0] + value[3]) / 2, 2)
    files = len(list((tmp_path / "res").glob("**/*.json")))
    assert main([*argv, "--seeds", "0,3"]) == 0 and len(list((tmp_path / "res").glob("**/*.json"))) == files  # reused
    # a sweep's seeds of a run it merges are kept apart (seed-runs/), where the tables do not read: had the sweep
    # stopped after its first seed, that seed alone would have replaced a finished run of several (an audit)
    fresh = [*argv[:-1], str(tmp_path / "fresh"), "--seeds", "1,2"]
    assert main(fresh) == 0
    assert len(list((tmp_path / "fresh" / "seed-runs").glob("tiny-bert__pos__*.json"))) == 2
    (merged,) = (tmp_path / "fresh").glob("tiny-bert__pos__*.json")
    merged.unlink()  # as if it had stopped before the merge: no lone seed stands in for the run
    assert "tiny-bert" not in set(load_results(tmp_path / "fresh").model)
    assert main(fresh) == 0 and "seeds merged: tiny-bert__pos__" in capsys.readouterr().out  # resumed: merged


def test_the_extract_command_fills_the_cache_entry_the_probe_reads(tiny_bert, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    assert main(["extract", "--model", tiny_bert, "--dataset", "conll2000-test", "--limit", "30"]) == 0
    assert "conll2000-test-limit30: " in capsys.readouterr().out
    sentences, _keep, key = dataset_request("conll2000-test", 30)
    emb = load_embedder(tiny_bert)
    messages = []
    get_features(emb, key, sentences, show_progress=False, progress=lambda f, m: messages.append(m))
    assert messages[-1].endswith("features from cache")  # the POS probe's own request is served


def test_a_task_asks_for_its_models_memory_and_gpus_from_its_files():
    from cluster.resources import BASE_BYTES, estimate
    from models.listing import describe
    from models.registry import get_spec

    params = describe(get_spec("minilm"), device="cpu").params  # from the weight-file headers
    assert params and 20e6 < params < 25e6  # all-MiniLM-L6-v2: 22.7 M
    cpu, gpu = estimate("minilm", gpu=False), estimate("minilm", gpu=True)
    assert cpu.gpus == 0 and cpu.memory > BASE_BYTES + 4 * params  # fp32 weights in host memory, plus activations
    assert gpu.gpus == 1 and gpu.memory > BASE_BYTES
    assert estimate("minilm", gpu=True, gpu_memory=10_000_000).gpus == 6  # 1.3 × 45 MB over 10 MB GPUs
    assert estimate(None, gpu=True).gpus == 0  # baselines need no model, no GPU


def test_resume_keys_tasks_on_the_models_content_not_its_name(tmp_path, monkeypatch, capsys):
    """A registered vectors file rewritten in place is another model: its tasks run again (issue 29, item 6)."""
    from models.user_registry import add_user_model
    from probes.tasks.conll import conll_slice

    words = sorted({w for split in ("train", "test") for s in conll_slice(split, 12) for w in s.words})

    def write_vectors(seed):
        vectors = np.random.default_rng(seed).normal(size=(len(words), 8))
        lines = [f"{len(words)} 8"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
        (tmp_path / "vecs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")

    write_vectors(0)
    add_user_model("my-vecs", str(tmp_path / "vecs.txt"), file=tmp_path / "embprobe.toml")
    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    argv = ["sweep", "--models", "my-vecs", "--probes", "pos", "--limit", "12", "--results", str(tmp_path / "res")]
    assert main(argv) == 0 and "2 run, 0 already done" in capsys.readouterr().out
    assert main(argv) == 0 and "0 run, 2 already done" in capsys.readouterr().out
    write_vectors(1)  # same name, same path, other vectors
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 run, 1 already done" in out and "1 already done (same model content)" in out
    # the old vectors' task is said, not passed over: an upgrade's renamed tasks read "0 already in" otherwise
    assert "1 finished sweep task(s) in" in out and "match none of these" in out
    saved = [json.loads(p.read_text()) for p in (tmp_path / "res").glob("my-vecs__pos__*.json")]
    assert len(saved) == 2 and len({r["fingerprint"] for r in saved}) == 2  # the new run is the new model's


def test_a_worker_holds_one_model_at_a_time(tiny_bert, tmp_path):
    """A task of another model releases the ones its process held (issue 29, item 3)."""
    from cluster.tasks import run_task
    from models.registry import loaded_models

    gpt2 = str(make_tiny_checkpoint("gpt2", tmp_path / "tiny-gpt2", layers=2, hidden=32, heads=2))
    env = TaskEnv(feature_root=str(tmp_path / "cache"), device="cpu")
    for model in (tiny_bert, gpt2):
        (task,) = [t for t in plan_sweep([model], ["pos"], [0], 10, {}) if t.model]
        assert run_task(task, env)["results"]
        assert model in loaded_models() and [m for m in loaded_models() if "tiny-" in m] == [model]


def test_resume_keys_tasks_on_the_datas_content_too(data_root, tmp_path, monkeypatch, capsys):
    """The user's test file edited (NOUN -> VERB) between two sweeps: the second reused the old rows ("same model
    content"); the task now hashes the data's content, so it runs again. Unchanged data is still reused."""
    from corpora.conllu import iter_conllu

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    ewt = data_root / "ud_english_ewt"
    for split in ("train", "test"):
        lines = (ewt / f"en_ewt-ud-{split}.conllu").read_text(encoding="utf-8").split("\n\n")[:30]
        (tmp_path / f"{split}.conllu").write_text("\n\n".join(lines) + "\n\n", encoding="utf-8")
    argv = ["sweep", "--models", "glove-6b-50d", "--probes", "tag", "--train", str(tmp_path / "train.conllu")]
    argv += ["--test", str(tmp_path / "test.conllu"), "--results", str(tmp_path / "res")]
    assert main(argv) == 0 and "2 run, 0 already done" in capsys.readouterr().out
    assert main(argv) == 0 and "0 run, 2 already done" in capsys.readouterr().out
    test = tmp_path / "test.conllu"
    test.write_text(test.read_text(encoding="utf-8").replace("\tNOUN\t", "\tVERB\t"), encoding="utf-8")
    assert main(argv) == 0 and "2 run, 0 already done" in capsys.readouterr().out
    hashes = {json.loads(p.read_text())["extra"]["data_hash"] for p in (tmp_path / "res").glob("glove*__tag__*.json")}
    assert len(hashes) == 2 and sum(1 for s in iter_conllu(test) for lab in s.labels if lab == "NOUN") == 0


def test_a_registered_model_whose_folder_is_gone_stops_the_sweep_before_any_work(
    tiny_bert, tmp_path, monkeypatch, capsys
):
    """A registered model's folder moved away: the driver noted "files not found … keyed on the name", ran the
    baselines, then every task failed ("no longer exists"), exit 1. Where the tasks run on this machine, one error
    line before any work."""
    import shutil

    from models.manage import add_model

    monkeypatch.setenv("EMBPROBE_MODELS", str(tmp_path / "embprobe.toml"))
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    folder = shutil.copytree(tiny_bert, tmp_path / "moved-away")
    add_model("gone-bert", str(folder), file=tmp_path / "embprobe.toml")
    shutil.rmtree(folder)
    argv = ["sweep", "--models", "gone-bert", "--probes", "pos", "--limit", "5", "--results", str(tmp_path / "res")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gone-bert: files not found") and "Traceback" not in err
    assert not list((tmp_path / "res").glob("*.json"))  # not even the baselines


def test_a_note_beside_a_checkpoint_changes_no_content_key(tiny_bert, tmp_path):
    """A README (or a log, or a .git folder) put beside a registered checkpoint changed the sweep's content key, so a
    resume re-ran its tasks and wrote a duplicate result; files no loader reads are left out of the key."""
    import shutil

    from cluster.identity import model_content
    from models.references import spec_for_reference

    folder = shutil.copytree(tiny_bert, tmp_path / "mine")
    key = model_content(spec_for_reference(str(folder), "mine"))[0]
    (folder / "README.md").write_text("notes\n")
    (folder / "train.log").write_text("step 1\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert model_content(spec_for_reference(str(folder), "mine"))[0] == key
    (folder / "config.json").write_text((folder / "config.json").read_text().replace("}", ', "x": 1}', 1))
    assert model_content(spec_for_reference(str(folder), "mine"))[0] != key  # what a loader reads still counts


def test_the_data_key_counts_the_gold_keys_beside_a_wsd_xml(tmp_path):
    """`--test X.data.xml` reads its keys from X.gold.key.txt beside it, which no option names: a resumed sweep kept
    F1 65.69 after 818 of 2,282 keys changed, where the probe gave 89.00 (an audit). The probe's input declares the
    file it reads beside the XML (``InputFile.companions``), and the data key hashes it."""
    from cluster.identity import data_content
    from probes.registry import get_probe

    xml, keys = tmp_path / "se2.data.xml", tmp_path / "se2.gold.key.txt"
    xml.write_text("<corpus/>\n")
    keys.write_text("d000.s000.t000 art%1:06:00::\n")
    options, inputs = {"test": str(xml)}, get_probe("wsd").inputs
    before = data_content(options, inputs)
    assert data_content(options, inputs) == before
    keys.write_text("d000.s000.t000 art%1:04:00::\n")
    assert data_content(options, inputs) != before
    tsv = tmp_path / "train.tsv"  # a TSV carries its labels: nothing beside it counts
    tsv.write_text("a b\t0\tx\n")
    assert data_content({"train": str(tsv)}, inputs) == data_content({"train": str(tsv)}, ())


def test_a_data_folder_of_links_is_keyed_on_what_the_links_hold(tmp_path, monkeypatch):
    """Two EMBPROBE_DATA folders made of links to real folders (``ln -s /data/* mine/``), one with an edited file: the
    sweep said "already done (same model content)" and kept the other data's score, since the walk did not enter
    linked folders and both keys hashed nothing. Linked folders are followed (a loop once): a linked copy has the key
    of the real folder, an edit behind a link changes it."""
    from cluster.identity import data_content

    real = tmp_path / "real" / "corpus"
    real.mkdir(parents=True)
    (real / "a.txt").write_text("one\n")
    (real / "loop").symlink_to(real)  # a link loop ends
    edited = tmp_path / "edited" / "corpus"
    edited.mkdir(parents=True)
    (edited / "a.txt").write_text("two\n")
    keys = {}
    for name, target in (("linked", real), ("linked-edited", edited)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "corpus").symlink_to(target)
        monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / name))
        keys[name] = data_content({})
    monkeypatch.setenv("EMBPROBE_DATA", str(tmp_path / "real"))
    assert keys["linked"] != keys["linked-edited"] and keys["linked"] == data_content({})


def test_a_folder_reachable_under_two_names_is_keyed_by_its_real_one(tmp_path):
    """With linked folders followed, a folder with an alias beside it (``semcor -> semcor3.0``) was listed under
    whichever name the file system returned first: the same data, two keys on two machines."""
    from corpora.digests import content_files

    lists = []
    for order, root in enumerate((tmp_path / "a", tmp_path / "b")):
        root.mkdir()
        steps = [lambda r: (r / "semcor3.0").mkdir(), lambda r: (r / "semcor").symlink_to(r / "semcor3.0")]
        for step in steps if order == 0 else steps[::-1]:
            step(root)
        (root / "semcor3.0" / "f.txt").write_text("x\n")
        lists.append([p.relative_to(root).as_posix() for p in content_files(root)])
    assert lists == [["semcor3.0/f.txt"], ["semcor3.0/f.txt"]]


def test_a_worker_whose_data_is_not_the_drivers_refuses_the_task(tmp_path, monkeypatch):
    """The driver keyed each task on its own ``EMBPROBE_DATA``; a Ray node started with another copy (stale,
    partial, edited) ran the task on its own data and the result was filed under the driver's key: a later sweep
    on the real data printed "already done" and kept the other data's numbers (an audit: 70.34 for 75.73)."""
    from cluster.identity import data_content
    from cluster.tasks import run_task
    from probes.errors import ProbeInputError
    from probes.registry import get_probe

    copies = {}
    for name, tag in (("driver", "NN"), ("node", "JJ")):  # one tag changed in the node's copy
        (tmp_path / name / "conll2000").mkdir(parents=True)
        (tmp_path / name / "conll2000" / "test.txt").write_text(f"The DT B-NP\nbank {tag} I-NP\n\n")
        copies[name] = str(tmp_path / name)
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EMBPROBE_DATA", copies["driver"])
    data = {"pos": data_content({}, get_probe("pos").inputs)}
    (task,) = [t for t in plan_sweep(["glove-6b-50d"], ["pos"], [0], 5, {}, data=data) if t.model]
    monkeypatch.setenv("EMBPROBE_DATA", copies["node"])  # the worker's node
    with pytest.raises(ProbeInputError, match=r"this node's data .* is not the driver's .*same EMBPROBE_DATA"):
        run_task(task, TaskEnv(device="cpu"))


def test_a_second_sweep_into_a_folder_another_sweep_is_writing_to_is_refused(tmp_path, monkeypatch, capsys):
    """Two sweeps into one results folder at once each read the same "finished" list and ran every task (twice the
    GPU time; two files per task). The second now stops at once, saying why; after the first it resumes."""
    from filelock import FileLock

    from cluster.sweep import SWEEP_LOCK

    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    res = tmp_path / "res"
    res.mkdir()
    argv = ["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--limit", "5", "--results", str(res)]
    with FileLock(str(res / SWEEP_LOCK)):  # the first sweep, still running
        assert main(argv) == 2
        assert "another sweep is writing to" in capsys.readouterr().err
    assert not list(res.glob("*.json"))
    assert main(argv) == 0 and "2 run, 0 already done" in capsys.readouterr().out
    assert main(argv) == 0 and "0 run, 2 already done" in capsys.readouterr().out  # the lock is let go


def test_dashboard_without_a_local_ray_instance_is_refused_not_ignored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBPROBE_CACHE", str(tmp_path / "cache"))
    argv = ["sweep", "--models", "glove-6b-50d", "--probes", "pos", "--limit", "5", "--results", str(tmp_path / "r")]
    assert main([*argv, "--dashboard"]) == 2
    assert "--dashboard starts the dashboard of a --ray local instance" in capsys.readouterr().err
    assert not list((tmp_path / "r").glob("*.json"))
