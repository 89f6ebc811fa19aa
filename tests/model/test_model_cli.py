"""``topicslab fit / sample / validate`` end to end on small data, and one-line errors."""

from __future__ import annotations

import json

import numpy as np
from model_helpers import random_model, stats_of
from typer.testing import CliRunner

from topicslab import dp
from topicslab import io as tio
from topicslab.cli import app
from topicslab.model import TypeMixture, load_model, sample, save_model
from topicslab.taxonomy import load

runner = CliRunner()


def _strict(text: str):
    """JSON that must be strict: no NaN / Infinity tokens (the one rule: null, "inf")."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    return json.loads(text, parse_constant=refuse)


def _stats_dir(tmp_path, model: TypeMixture):
    st = stats_of(model)
    stats = dp.DPStatistics(st.q_single, st.q_within, st.q_across, float("nan"),
                            model.taxonomy, model.k)
    return dp.save_statistics(tmp_path / "stats", stats)


def test_fit_sample_validate(tmp_path, monkeypatch):
    # reading a release directory is the dp package's (slow, pure-Python) job: once is enough
    cache: dict[str, dp.DPStatistics] = {}
    real = dp.load_statistics

    def once(d, **kw):
        if str(d) not in cache:
            cache[str(d)] = real(d, **kw)
        return cache[str(d)]

    monkeypatch.setattr(dp, "load_statistics", once)
    tax = load("v1")
    one = random_model(tax, T=3, r=1, k=5, seed=1, scale=3.0)
    true = TypeMixture(np.repeat(one.theta, 2, axis=1), tax)
    stats_dir = _stats_dir(tmp_path, true)
    model_dir = tmp_path / "model"
    res = runner.invoke(app, ["fit", "--stats", str(stats_dir), "--types", "4", "--weeks", "2",
                              "--out", str(model_dir), "--steps", "30", "--device", "cpu",
                              "--model", "paper",
                              "--threads", "1", "--no-progress", "--target", "none",
                              "--export-release", str(tmp_path / "output_parameters.json"),
                              "--json", str(tmp_path / "fit.json")])
    assert res.exit_code == 0, res.output
    assert "terms within 0.1 pp" in res.output
    model = load_model(model_dir)
    assert model.theta.shape == (4, 2, 5, tax.size)
    assert model.metadata["optimizer"] == "default" and model.metadata["steps"] == 30
    hist = _strict((model_dir / "fit_history.json").read_text())["history"]
    assert hist[0]["step"] == 0 and len(hist) == 30
    assert _strict((tmp_path / "fit.json").read_text())["steps"] == 30
    assert (model_dir / "checkpoints" / "checkpoint.pt").is_file()

    synth = tmp_path / "synth.parquet"
    res = runner.invoke(app, ["sample", "--model", str(model_dir), "--users", "3000",
                              "--seed", "5", "--out", str(synth)])
    assert res.exit_code == 0, res.output
    sets = tio.read_sets(synth)
    assert sets.n_users == 3000 and sets.n_weeks == 2
    assert np.array_equal(sets.sets, sample(model, 3000, seed=5).sets)
    # the release's parameter file samples the same users
    res = runner.invoke(app, ["sample", "--model", str(tmp_path / "output_parameters.json"),
                              "--taxonomy", "v1", "--users", "3000", "--seed", "5",
                              "--out", str(tmp_path / "s2.parquet")])
    assert res.exit_code == 0, res.output
    assert np.array_equal(tio.read_sets(tmp_path / "s2.parquet").sets, sets.sets)

    pop = tmp_path / "pop.parquet"
    tio.write_sets(pop, sample(true, 3000, seed=6))
    out_json = tmp_path / "val.json"
    res = runner.invoke(app, ["validate", "--stats", str(stats_dir), "--model", str(model_dir),
                              "--population", str(pop), "--weeks", "2", "--json",
                              str(out_json)])
    assert res.exit_code == 0, res.output
    doc = _strict(out_json.read_text())
    assert set(doc) >= {"fit_quality", "distinct_topics", "population_stationarity",
                        "synthetic_stationarity", "model_stationarity", "wrap_transition"}
    assert doc["wrap_transition"]["pair"] == [1, 0]
    assert 0 <= doc["fit_quality"]["share_abs_within_0_1pp"] <= 1
    assert doc["distinct_topics"]["synthetic"]["users"] == 3000
    # --risk: the release-fidelity gap table for r = 1..2
    res = runner.invoke(app, ["validate", "--stats", str(stats_dir), "--model", str(model_dir),
                              "--population", str(pop), "--weeks", "2", "--risk",
                              "--risk-trials", "1", "--json", str(out_json)])
    assert res.exit_code == 0, res.output
    fid = _strict(out_json.read_text())["fidelity"]
    assert [(g["attack"], g["weeks"]) for g in fid["gaps"]] == [
        (a, r) for r in (1, 2) for a in ("hamming", "asymmetric")]
    assert "release fidelity" in res.output
    res = runner.invoke(app, ["validate", "--stats", str(stats_dir), "--model", str(model_dir),
                              "--risk", "--json", str(out_json)])
    assert res.exit_code == 2 and "--population" in res.output


def test_tfrecord_sample_and_more_weeks(tmp_path):
    model = random_model(load("v2"), T=3, r=2, k=5, seed=2)
    save_model(tmp_path / "m", model)
    res = runner.invoke(app, ["sample", "--model", str(tmp_path / "m"), "--users", "2500",
                              "--seed", "1", "--weeks", "3", "--out",
                              str(tmp_path / "t.tfrecord"), "--shards", "2"])
    assert res.exit_code == 0, res.output
    assert "3 weeks from a 2-week model" in res.output
    back = tio.read_sets(tmp_path / "t-*.tfrecord", format="tfrecord")
    assert back.n_users == 2500 and back.n_weeks == 3


def test_errors_are_one_line(tmp_path):
    res = runner.invoke(app, ["sample", "--model", str(tmp_path / "none"), "--users", "5",
                              "--seed", "1", "--out", str(tmp_path / "x.parquet")])
    assert res.exit_code == 2
    assert "no such file" in res.output and "--model" in res.output
    bad = tmp_path / "stats"
    bad.mkdir()
    (bad / "q_within.json").write_text("[]")
    res = runner.invoke(app, ["fit", "--stats", str(bad), "--out", str(tmp_path / "m")])
    assert res.exit_code != 0


def test_noise_stop_option_belongs_to_the_default_optimiser(tmp_path):
    tax = load("v1")
    stats_dir = _stats_dir(tmp_path, random_model(tax, T=2, r=2, k=5, seed=3))
    res = runner.invoke(app, ["fit", "--stats", str(stats_dir), "--out", str(tmp_path / "m"),
                              "--model", "paper", "--optimizer", "paper", "--no-noise-stop"])
    assert res.exit_code == 2
    assert "--no-noise-stop" in res.output and "default optimiser" in res.output
    assert not (tmp_path / "m").exists()


def test_truncation_option(tmp_path):
    tax = load("v1")
    stats_dir = _stats_dir(tmp_path, random_model(tax, T=2, r=2, k=5, seed=3))
    base = ["fit", "--stats", str(stats_dir), "--out", str(tmp_path / "m")]
    for extra, words in ((["--truncation", "2"], "[0, 1]"),
                         (["--truncation", "nan"], "[0, 1]"),
                         (["--model", "paper", "--optimizer", "paper", "--truncation", "0.1"],
                          "default optimiser")):
        res = runner.invoke(app, [*base, *extra])
        assert res.exit_code == 2, res.output
        assert "--truncation" in res.output and words in res.output
        assert not (tmp_path / "m").exists()
    res = runner.invoke(app, [*base, "--types", "2", "--steps", "2", "--truncation", "0",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert load_model(tmp_path / "m").metadata["truncation"] == 0.0


def test_fit_that_stops_at_step_0_says_why(tmp_path):
    """3,000 users: the release's noise hides the pair structure, J starts below the noise
    floor and the fit takes no step; the fit says what that means for the synthetic data (a
    fit that takes steps says nothing of the kind, test_fit_sample_validate)."""
    pop, stats, model = tmp_path / "pop.parquet", tmp_path / "st", tmp_path / "m"
    for args in (["population", "--users", "3000", "--weeks", "2", "--seed", "1",
                  "--out", str(pop)],
                 ["stats", "--sets", str(pop), "--out", str(stats)],
                 ["fit", "--stats", str(stats), "--out", str(model), "--types", "2",
                  "--steps", "5", "--no-progress", "--json", str(tmp_path / "fit.json")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    fitted = json.loads((tmp_path / "fit.json").read_text())
    assert (fitted["steps"], fitted["stopped"]) == (0, "noise")
    assert "note: the fit stopped at step 0" in " ".join(res.output.split())
