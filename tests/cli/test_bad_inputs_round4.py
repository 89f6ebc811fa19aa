"""Bad input, the third independent round (issue 15): the learned attack (``attack-train``,
``reid --attack learned``), the one-to-one matching, ``--bounds --figure`` and the rest that
earlier rounds did not list.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending option, file, row or field, no traceback, and nothing written (the test's directory,
also the current directory, is unchanged, and so are the inputs, the attack model included).
Every case fails before any real work: no attack is trained here (the model directory is an
untrained one, written directly), so the module runs in seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke_refused
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 4-week population of 300 users (taxonomy v2), the same ids read as v1, a one-user
    file, an untrained learned-attack model (v2, r = 4) and a copy whose model.json lacks
    'weeks', a dangling symbolic link."""
    from topicslab.attacks.learned import LearnedAttackConfig, _new_attack, save_attack
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round4")
    rng = np.random.default_rng(0)
    sets = np.sort(np.stack([np.stack([rng.choice(40, 5, replace=False) + 1 for _ in range(4)])
                             for _ in range(300)]), axis=-1).astype(np.int16)
    tio.write_sets(d / "pop.parquet", TopicSets(sets, "v2", np.arange(300, dtype=np.int64)))
    tio.write_sets(d / "v1.parquet", TopicSets(sets, "v1", np.arange(300, dtype=np.int64)))
    tio.write_sets(d / "one.parquet", TopicSets(sets[:1], "v2", np.arange(1, dtype=np.int64)))
    att = _new_attack(469, "v2", 4, 1, LearnedAttackConfig(), "cpu")
    att.metadata.update(train_file="none", best_epoch=-1)
    save_attack(d / "model", att)
    shutil.copytree(d / "model", d / "no-weeks")
    meta = json.loads((d / "no-weeks" / "model.json").read_text())
    del meta["weeks"]
    (d / "no-weeks" / "model.json").write_text(json.dumps(meta))
    (d / "dangling").symlink_to(d / "missing-dir")
    return {"dir": d}





REID = ["reid", "--sets", "{in}/pop.parquet", "--no-progress", "--trials", "1"]
LEARNED = [*REID, "--attack", "learned", "--attack-model", "{in}/model"]
TRAIN = ["attack-train", "--no-progress", "--sets", "{in}/pop.parquet", "--out", "{out}"]

CASES: list[tuple[str, list[str], str]] = [
    # the learned attack's model directory is an input: nothing is written into it
    ("reid-json-into-the-attack-model", [*LEARNED, "--json", "{in}/model/r.json"],
     "field '--json': lies inside the input --attack-model"),
    ("reid-figure-into-the-attack-model", [*LEARNED, "--bounds", "--figure",
                                           "{in}/model/x.png"],
     "field '--figure': lies inside the input --attack-model"),
    ("reid-learned-twice", [*REID, "--attack", "learned,learned", "--attack-model",
                            "{in}/model"], "field '--attack'"),
    ("reid-learned-with-engine-brute", [*LEARNED, "--engine", "brute"], "field '--engine'"),
    # a v2 model with v1 sets: the model is what misfits, not the lookback
    ("reid-learned-other-taxonomy", [*LEARNED[:2], "{in}/v1.parquet", *LEARNED[3:]],
     "field '--attack-model': the learned attack was trained on taxonomy v2"),
    # model.json's 'weeks' is a field of the file, not reid's --weeks
    ("reid-learned-model-without-weeks", [*LEARNED[:-1], "{in}/no-weeks"],
     "model.json, field 'weeks'"),
    # options of the one-to-one attack typed without it, at their default values too
    ("reid-objective-default-without-assignment", [*REID, "--setting", "matching",
                                                   "--objective", "loglik"], "--objective"),
    ("reid-candidates-default-without-assignment", [*REID, "--candidates", "32"],
     "--candidates"),
    # attack-train: an absurd pass count, too few users, an output link to nowhere
    ("attack-train-epochs-past-the-cap", [*TRAIN, "--epochs", "1001"], "field '--epochs'"),
    ("attack-train-one-user", [*TRAIN[:3], "{in}/one.parquet", *TRAIN[4:]],
     "field '--sets': training needs at least two users"),
    ("attack-train-out-dangling-link", [*TRAIN[:-1], "{in}/dangling"],
     "field '--out': is a symbolic link to a missing directory"),
    # convert: shard counts past the names, and past the users
    ("convert-shards-past-the-names", ["convert", "{in}/pop.parquet", "{out}.tfrecord",
                                       "--shards", "1000000000"], "field '--shards'"),
    ("convert-shards-past-the-users", ["convert", "{in}/pop.parquet", "{out}.tfrecord",
                                       "--shards", "301"], "field '--shards'"),
    # an epsilon whose per-query share underflows to 0: refused before the data is read,
    # showing the value typed (it said "got 0", naming the sets file)
    ("stats-epsilon-subnormal", ["stats", "--sets", "{in}/pop.parquet", "--out", "{out}",
                                 "--epsilon", "5e-324"], "field '--epsilon'"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused(inputs: dict[str, Path], work: Path, name: str,
                              args: list[str], named: str) -> None:
    invoke_refused(lambda a: runner.invoke(app, a), args, inputs["dir"], work, named)


def test_matching_graph_past_the_memory_is_refused(inputs: dict[str, Path], work: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-to-one matching's candidate graph (users x min(--candidates, users) edges per
    attack) is checked before any trace is drawn, naming --candidates."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 1_000_000)
    res = runner.invoke(app, [*[a.format(**{"in": inputs["dir"]}) for a in REID],
                              "--setting", "matching", "--matching", "assignment",
                              "--candidates", "300"])
    check_refused(res.output, res.exit_code, "field '--candidates'")
    assert not list(work.iterdir())
