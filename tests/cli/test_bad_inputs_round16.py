"""Bad input, the sixteenth independent round (issue 15): a count past 64 bits (10^400) given
to ``reid --trials``, ``disclosure --mc-samples``, ``run --trials/--users/--types`` or
``validate --risk-trials`` was "OverflowError: int too large to convert to float" (exit code
1), and from Python ``Mechanism(lookback=10**400)`` and ``ReidProtocol(trials=10**400)`` were
taken (the trials then crashed the progress bar's thread); ``run --fidelity-trials`` was
never sized, so 10^18 trials ran the stages before the fidelity check. Writing: two
``sample``/``convert`` runs writing TFRecord shards of other counts to one name at once left
both sets (a reader of the directory sees every user twice), and a second Ctrl-C while the
sampler's writer thread finished its shard left that shard's temporary on disk. Spark:
``stats --engine spark`` on a CSV file was a Java trace (exit code 1), on a Parquet file of no
users a release of noise only, ``--master yarn`` without HADOOP_CONF_DIR blamed Java, and
an executor's refusal named the file twice.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from refusal import fit_small_model, invoke, invoke_refused, population_and_stats, refusal_test

BIG = str(10**400)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics and a one-step model; the users as CSV,
    and a Parquet file of no users."""
    from topicslab import io as tio

    d = tmp_path_factory.mktemp("round16")
    data, pop = population_and_stats(d)
    fit_small_model(invoke, d)
    tio.write_sets(d / "pop.csv", data)
    pq.write_table(pq.read_table(pop).slice(0, 0), d / "no-users.parquet")
    return d


RUN = ["run", "--preset", "smoke", "--out", "{out}", "-q"]

CASES: list[tuple[str, list[str], str]] = [
    # "OverflowError: int too large to convert to float", exit code 1
    ("reid-trials-past-64-bits",
     ["reid", "--sets", "{in}/pop.parquet", "--targets", "5", "--trials", BIG],
     "field '--trials': trials must be in 1..9223372036854775807"),
    ("disclosure-mc-samples-past-64-bits", ["disclosure", "--mc-samples", BIG, "-q"],
     "field '--mc-samples': mc_samples must be in 1..9223372036854775807"),
    ("run-trials-past-64-bits", [*RUN, "--trials", BIG], "field '--trials'"),
    ("run-users-past-64-bits", [*RUN, "--users", BIG],
     "field '--users': users must be a positive 64-bit integer"),
    ("run-types-past-64-bits", [*RUN, "--types", BIG],
     "field '--types': types must be a positive 64-bit integer"),
    ("validate-risk-trials-past-64-bits",
     ["validate", "--stats", "{in}/stats", "--model", "{in}/model", "--population",
      "{in}/pop.parquet", "--risk", "--risk-trials", BIG, "--json", "{out}.json"],
     "field '--risk-trials': trials must be in 1..9223372036854775807"),
    # ran the population, the release, the fit and the sample first
    ("run-fidelity-trials-past-64-bits", [*RUN, "--fidelity-trials", BIG],
     "field '--fidelity-trials': fidelity_trials must be a positive 64-bit integer"),
    ("run-fidelity-trials-past-memory", [*RUN, "--fidelity-trials", str(2**62)],
     "field '--fidelity-trials': the release fidelity of 4,611,686,018,427,387,904 trials"),
    ("run-sets-fidelity-trials-past-memory",
     ["run", "--sets", "{in}/pop.parquet", "--out", "{out}", "-q", "--fidelity-trials",
      str(2**62)], "use fewer --fidelity-trials"),
]


test_bad_input_is_refused = refusal_test(CASES)


SPARK = ["stats", "--out", "{out}", "--engine", "spark", "--epsilon", "1000", "--sets"]


@pytest.mark.parametrize(("args", "named"), [
    # "Spark could not start (...); the Spark engine needs Java 17+ and pip install ..."
    ([*SPARK, "{in}/pop.parquet", "--master", "yarn"],
     "field '--master': --master yarn reads the cluster from the environment"),
    # a Java trace, exit code 1
    ([*SPARK, "{in}/pop.csv"], "pop.csv, field '--engine': --engine spark reads topic sets "
                               "in wide Parquet"),
    # a release of noise only, exit code 0 (the local and stream engines refuse it)
    ([*SPARK, "{in}/no-users.parquet"],
     "no-users.parquet, field '--sets': the topic sets hold no users"),
    # Spark runs: "error: F: F, field 'epoch_0_topics': ..." (the executor's line, located
    # again by the driver)
    ([*SPARK, "{in}/pop.parquet", "--k", "3"],
     "pop.parquet, field 'epoch_0_topics': user 0 has 5 distinct topics in week 0"),
], ids=["master-yarn-without-its-configuration", "csv-input", "no-users", "executor-error"])
def test_spark_refuses_before_it_starts(inputs: Path, work: Path, args: list[str], named: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    invoke_refused(invoke, args, inputs, work, named)


@pytest.mark.parametrize(("make", "field"), [
    (lambda: __import__("topicslab.api", fromlist=["Mechanism"]).Mechanism(lookback=10**400),
     "lookback"),
    (lambda: __import__("topicslab.attacks", fromlist=["ReidProtocol"]).ReidProtocol(
        trials=10**400), "trials"),
    (lambda: __import__("topicslab.disclosure", fromlist=["DisclosureDesign"]).DisclosureDesign(
        mc_samples=10**400), "mc_samples"),
], ids=["mechanism-lookback", "protocol-trials", "design-mc-samples"])
def test_python_counts_past_64_bits_are_refused(make: object, field: str) -> None:
    """Taken as they came: no computation can run 10^400 trials or epochs (the trials then
    failed in the progress bar's thread, the design's memory estimate overflowed)."""
    from topicslab.errors import ParameterError

    with pytest.raises(ParameterError) as info:
        make()  # type: ignore[operator]
    assert info.value.field == field


def test_python_large_but_real_counts_still_pass() -> None:
    from topicslab.api import Mechanism
    from topicslab.attacks import ReidProtocol

    assert Mechanism(lookback=2**63 - 1).lookback == 2**63 - 1
    assert ReidProtocol(targets=10**30, trials=2**63 - 1).trials == 2**63 - 1


def test_a_set_committed_meanwhile_is_replaced_too(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two writes of other shard counts to one name at once: the older set was listed when a
    write began, so the set the other committed meanwhile stayed beside the new one."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets
    from topicslab.io import tfrecord

    data = TopicSets(np.sort(np.tile(np.arange(5, dtype=np.int16), (10, 2, 1)), axis=-1),
                     "v2", np.arange(10, dtype=np.int64))
    encode = tfrecord._fast.encode_records

    def encode_while_another_commits(*args: object) -> object:
        for i in range(3):  # the other command's set appears while this one is written
            (tmp_path / f"T-{i:05d}-of-00003.tfrecord").write_bytes(b"")
        return encode(*args)

    monkeypatch.setattr(tfrecord._fast, "encode_records", encode_while_another_commits)
    tio.write_sets(tmp_path / "T.tfrecord", data, shards=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "T-00000-of-00002.tfrecord", "T-00001-of-00002.tfrecord"]


def test_a_second_ctrl_c_waits_for_the_shard_being_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first Ctrl-C stops the draw; a second one during the wait for the writer thread
    ended the command while that thread still held its temporary (left on disk)."""
    ms = importlib.import_module("topicslab.model.sample")  # (the package's sample: a function)
    written: list[int] = []

    def slow_write(lo: int, arr: object) -> None:
        time.sleep(0.3)
        written.append(lo)

    class Draws:
        def draw(self, lo: int, n: int, raw: bool) -> object:
            if lo:
                raise KeyboardInterrupt  # the first Ctrl-C
            return np.zeros((n, 1, 5), np.int16)

    real_wait, calls = ms.wait, []

    def wait_cut_short(fs: object) -> object:
        calls.append(fs)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the second Ctrl-C
        return real_wait(fs)  # type: ignore[arg-type]

    monkeypatch.setattr(ms, "wait", wait_cut_short)
    with pytest.raises(KeyboardInterrupt):
        ms._pipeline(Draws(), [(0, 1), (1, 2)], True, slow_write)  # type: ignore[arg-type]
    assert written == [0]
