"""Bad input, the forty-ninth independent round: artefacts that are each valid but do not
belong together, fed from one command to another, and ``topicslab run``'s stage cache over a
run directory edited by hand.

- ``validate --stats S --model M`` of a release and a model of the other taxonomy: "error:
  field 'taxonomy': statistics use taxonomy v1, the model v2", naming neither the model nor
  the statistics (the k of the two is named by file and option).
- A release directory whose ``privacy_ledger.json`` is another release's, of the other
  taxonomy (its pair queries count the pairs of 349 topics, the statistics those of 469): read
  as this release's ledger -- ``fit`` stopped at that ledger's noise floor, ``validate``
  scored the fit against its σ (exit 0).
- A model directory whose ``model.safetensors`` is another fit's of the same shape (another
  seed, release or number of weeks): read under this fit's ``model.json`` (its seed, loss,
  statistics fingerprint) by ``sample`` and ``validate`` (exit 0); only a shape that differs
  was refused. ``model.json`` now records the digest of its weights (``weights_sha256``).
- ``run --sets P --out R`` over a run of the same file with other options: the population
  stage, keyed on the file only, was reused without the checks the run's options make, so
  a week of more than k topics outside the earlier ``--release-weeks 0,1`` (or empty slots
  with ``--theory``) was refused by the DP stage, naming no file and no option (``row 2,
  field 'epoch_3_topics'``, and its advice ``--bound truncate``, an option ``run`` does not
  have), under a "recomputing" line.
- ``run --stats S --out R`` (or ``--sets P``) over a run of the reference population: R kept
  the earlier run's ``pop.parquet`` and ``stats/`` beside the new model, sample and report,
  which describe other data (exit 0): a directory of two runs.
- ``run --out R`` where a file the run writes is a symbolic link (``R/report.html``,
  ``R/synth.parquet``, ``R/stages.json``, ``R/stats/q_single.json``, ...): refused by the
  stage's closing write, after the work (the report's link after every stage), as "is a
  symbolic link ...; name the file itself", naming no option.

- ``experiment.run(..., overrides={"calibration_users": 500})`` over a finished run: the
  population stage's key left the calibration out, so the earlier run's table (of all 3,000
  users) was reused and reported, where a fresh run counts 500.
- Two commands on one set of files at once: a set is committed one renamed file at a time,
  so a reader in between read a mixed set without a word -- TFRecord shards read while
  ``sample`` replaced them (the same user ids, the users of two draws: 3 reads in ~3,000 of
  one race); by the same one-file-at-a-time merge, a DP release read while ``stats --out``
  moved a new one in (``q_within.json`` of one release beside ``q_across.json`` of
  another), and a model while ``fit`` moved its files in. The commit
  of a set now holds its directory (flock, as ``run``'s ``exclusive_dir``), and the readers
  of a set read it while no commit is under way.

Each case holds to ``test_bad_inputs.py``'s contract (exit 2, one ``error:`` line naming the
file, row or field, nothing written; from Python an ``InputError`` naming the field).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal import (
    api_run_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
    refused_leaving,
)

from topicslab.errors import InputError

RUN = ["run", "--preset", "smoke", "--fit-steps", "2", "--types", "2", "--targets", "50",
       "--trials", "2", "--fidelity-trials", "1", "--no-disclosure", "-q"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v2 population and release, a model fitted to it, a v1 release and topic sets whose
    week 3 holds six topics for one user (read by a run of ``--release-weeks 0,1``)."""
    from topicslab import dp
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("made")
    population_and_stats(d)
    fit_small_model(invoke, d)
    v1 = TopicSets(random_profiles(300, 4, seed=1), "v1", np.arange(300, dtype=np.int64))
    dp.save_statistics(d / "stats_v1", dp.compute_statistics(v1, epsilon=1e3, delta=1e-6,
                                                             seed=0))
    six = np.full((300, 4, 6), -1, dtype=np.int16)
    six[:, :, :5] = random_profiles(300, 4, seed=2)
    six[1, 3, 5] = 300  # (the profiles hold topics of the first 40 only)
    six[1, 3] = np.sort(six[1, 3])
    tio.write_sets(d / "six.parquet", TopicSets(six, "v2", np.arange(300, dtype=np.int64)))
    return d


@pytest.fixture(scope="module")
def sets_run(made: Path) -> Path:
    """A finished run on ``six.parquet`` of weeks 0 and 1 (the six topics are in week 3)."""
    out = made / "sets-run"
    res = invoke([*RUN, "--sets", str(made / "six.parquet"), "--release-weeks", "0,1",
                  "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


# ---- artefacts of two releases -----------------------------------------------------------------


def test_validate_names_the_model_of_another_taxonomy(made: Path, work: Path) -> None:
    line = refused_leaving(["validate", "--stats", str(made / "stats_v1"), "--model",
                            str(made / "model"), "--json", str(work / "v.json")], work,
                           "model, field '--model': the model uses taxonomy v2", made)
    assert "stats_v1 taxonomy v1" in line


def _release_with_ledger_of(made: Path, work: Path, other: str) -> Path:
    release = work / "release"
    shutil.copytree(made / "stats", release)
    shutil.copy2(made / other / "privacy_ledger.json", release / "privacy_ledger.json")
    return release


def test_a_ledger_of_another_taxonomy_is_refused(made: Path, work: Path) -> None:
    release = _release_with_ledger_of(made, work, "stats_v1")
    for args in (["fit", "--stats", str(release), "--out", str(work / "m"), "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress"],
                 ["validate", "--stats", str(release), "--model", str(made / "model"),
                  "--json", str(work / "v.json")]):
        line = refused_leaving(args, work, "privacy_ledger.json, field 'mechanisms'", made)
        assert "taxonomy v1 (349 topics)" in line and "taxonomy v2" in line, line


def test_the_python_reader_refuses_a_ledger_of_another_taxonomy(made: Path, work: Path) -> None:
    from topicslab import dp

    release = _release_with_ledger_of(made, work, "stats_v1")
    with pytest.raises(InputError) as info:
        dp.load_statistics(release)
    assert info.value.field == "mechanisms", info.value
    assert dp.load_statistics(made / "stats").taxonomy.version == "v2"  # its own: read


# ---- run: the stage cache over an edited directory ---------------------------------------------


def _copy_run(run: Path, work: Path) -> Path:
    out = work / "r"
    shutil.copytree(run, out, symlinks=True)
    return out


def test_a_reused_population_is_checked_against_the_run_s_options(
        made: Path, sets_run: Path, work: Path) -> None:
    out = _copy_run(sets_run, work)
    line = refused_leaving([*RUN, "--sets", str(made / "six.parquet"), "--out", str(out)], work,
                           "six.parquet, row 2, field '--sets'", made)
    assert "6 distinct topics in week 3" in line, line


def test_the_same_options_still_reuse_every_stage(made: Path, sets_run: Path,
                                                  work: Path) -> None:
    out = _copy_run(sets_run, work)
    res = invoke([*RUN, "--sets", str(made / "six.parquet"), "--release-weeks", "0,1",
                  "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "running" not in res.output and "recomputing" not in res.output, res.output


def _fake_reference_run(work: Path) -> Path:
    """An earlier run's directory as a run of the reference population leaves it (its record,
    population, release and model; not read by the refusals)."""
    out = work / "r"
    (out / "model").mkdir(parents=True)
    (out / "stats").mkdir()
    (out / "stages.json").write_text("{}", encoding="utf-8")
    for name in ("pop.parquet", "synth.parquet", "model/model.json", "stats/q_within.json",
                 "stats/privacy_ledger.json", "report.html", "results.json"):
        (out / name).write_bytes(b"an earlier run's file")
    return out


@pytest.mark.parametrize(("option", "kept"), [
    ("--stats", "population and DP release (pop.parquet and stats/)"),
    ("--sets", "population (pop.parquet)"),
])
def test_a_run_of_another_input_over_a_reference_run_is_refused(
        made: Path, work: Path, option: str, kept: str) -> None:
    out = _fake_reference_run(work)
    given = made / ("stats" if option == "--stats" else "pop.parquet")
    run = RUN[:RUN.index("--fidelity-trials")] + RUN[RUN.index("--fidelity-trials") + 2:]
    refused_leaving([*run, option, str(given), "--out", str(out)], work,
                    f"r, field '--out': holds an earlier run's {kept}", made)


def test_the_python_api_refuses_a_run_of_another_input_over_a_reference_run(
        made: Path, work: Path) -> None:
    api_run_refused(work, _fake_reference_run(work),
                    r"holds an earlier run's population and DP release",
                    stats_dir=made / "stats")


@pytest.mark.parametrize("name", ["report.html", "synth.parquet", "stages.json",
                                  "stats/q_single.json", "model/model.json", "pop.parquet"])
def test_a_link_where_the_run_writes_a_file_is_refused_first(
        made: Path, sets_run: Path, work: Path, name: str) -> None:
    if name == "pop.parquet":
        out = _fake_reference_run(work)
        args = [*RUN, "--users", "300", "--out", str(out)]
    else:
        out = _copy_run(sets_run, work)
        args = [*RUN, "--sets", str(made / "six.parquet"), "--release-weeks", "0,1", "--out",
                str(out)]
    (out / name).parent.mkdir(exist_ok=True)
    target = work / "elsewhere"
    shutil.copy2(out / name, target)
    (out / name).unlink()
    (out / name).symlink_to(target)
    line = refused_leaving(args, work, f"{name}, field '--out': is a symbolic link", made)
    assert "remove the link" in line


# ---- two processes on one set of files ---------------------------------------------------------


def _hold(directory: Path, mode: int) -> int:
    """An open descriptor of ``directory`` holding its flock in ``mode`` (another command
    reading a set there, or committing one)."""
    import fcntl
    import os

    fd = os.open(directory, os.O_RDONLY)
    fcntl.flock(fd, mode)
    return fd


def test_sample_commits_its_shards_only_while_no_reader_reads_them(made: Path,
                                                                   work: Path) -> None:
    """A reader of the shards while ``sample`` replaced them read shards of both draws."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    from topicslab import io as tio

    shards = work / "d"
    shards.mkdir()
    sample = ["sample", "--model", str(made / "model"), "--users", "300", "--out",
              str(shards / "s.tfrecord"), "--shards", "2", "--seed"]
    assert invoke([*sample, "1"]).exit_code == 0
    old = tio.read_sets(shards).sets.copy()
    fd = _hold(shards, fcntl.LOCK_SH)
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(tio.__file__).parents[2])}
        proc = subprocess.Popen([sys.executable, "-m", "topicslab", *sample, "2"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # until the new shards wait for their rename (or, unheld, are renamed)
            while proc.poll() is None and not list(shards.glob(".*tmp*")):
                time.sleep(0.01)
            time.sleep(0.3)
            assert proc.poll() is None, "the shards were replaced under a reader"
            assert np.array_equal(tio.read_sets(shards / "s-*-of-00002.tfrecord").sets, old)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        _, err = proc.communicate(timeout=120)
    finally:
        os.close(fd)
    assert proc.returncode == 0, err
    assert not np.array_equal(tio.read_sets(shards).sets, old)  # then committed whole


@pytest.mark.parametrize("what", ["shards", "release", "model"])
def test_a_set_is_read_only_while_no_writer_commits_one(made: Path, work: Path,
                                                        what: str) -> None:
    """The readers of a set of files (TFRecord shards, a DP release, a model) read while a
    writer renamed its files into place, one at a time."""
    import fcntl
    import os
    import threading

    from topicslab import dp
    from topicslab import io as tio
    from topicslab import model as tm

    if what == "shards":
        where = work / "d"
        where.mkdir()
        tio.write_sets(where / "s.tfrecord", tio.read_sets(made / "pop.parquet"), shards=2)

        def read() -> None:
            tio.read_sets(where)
    elif what == "release":
        where = made / "stats"

        def read() -> None:
            dp.load_statistics(where)
    else:
        where = made / "model"

        def read() -> None:
            tm.load_model(where)
    done = threading.Event()
    reader = threading.Thread(target=lambda: (read(), done.set()), daemon=True)
    fd = _hold(where, fcntl.LOCK_EX)
    try:
        reader.start()
        assert not done.wait(1.5), "the set was read while a writer committed one"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert done.wait(60)


def test_the_population_key_holds_the_calibration_users_when_fewer() -> None:
    """``experiment.run(..., overrides={"calibration_users": 500})`` over a run of the
    preset's calibration reused that run's table (of 3,000 users), as if asked for."""
    from topicslab.experiment.cache import StageCache
    from topicslab.experiment.context import RunContext
    from topicslab.experiment.presets import PRESETS
    from topicslab.experiment.stages import STAGES

    stage = next(s for s in STAGES if s.name == "population")

    def key(**kw: int) -> str:
        ctx = RunContext(PRESETS["smoke"].with_overrides(users=3000, **kw), "smoke",
                         Path("out"))
        assert stage.when(ctx)
        return StageCache.key(stage.name, stage.params(ctx))

    assert key(calibration_users=500) != key()
    assert key(calibration_users=3000) == key() == key(calibration_users=10**6)


def test_weights_of_another_fit_under_a_model_s_metadata_are_refused(made: Path,
                                                                       work: Path) -> None:
    """The weights of another fit of the same shape were read under this fit's model.json
    (its seed, loss, statistics fingerprint): sampled and validated as the fit's."""
    from topicslab import model as tm

    mdl = tm.load_model(made / "model")
    other = tm.TypeMixture(mdl.theta + 0.5, mdl.taxonomy, dict(mdl.metadata),
                           stay=mdl.stay, mode_weights=mdl.mode_weights,
                           mode_stay=mdl.mode_stay)
    tm.save_model(work / "other", other)
    shutil.copytree(made / "model", work / "m")
    shutil.copy2(work / "other" / "model.safetensors", work / "m" / "model.safetensors")
    for args in (["sample", "--model", str(work / "m"), "--users", "10", "--seed", "0",
                  "--out", str(work / "s.parquet")],
                 ["validate", "--stats", str(made / "stats"), "--model", str(work / "m"),
                  "--json", str(work / "v.json")]):
        refused_leaving(args, work, "model.safetensors, field 'weights_sha256': is not the weights "
                                    "model.json was written with", made)
    with pytest.raises(InputError) as info:
        tm.load_model(work / "m")
    assert info.value.field == "weights_sha256"
    assert np.array_equal(tm.load_model(work / "other").theta, other.theta)  # its own: read
