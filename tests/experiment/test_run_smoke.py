"""The smoke preset of ``topicslab run`` end to end: every stage, every report section, the
results schema, the content-keyed cache, and the alternative inputs (--stats, --sets)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import jsonschema
import pytest

from topicslab.experiment import one_std_rule, run, verdict
from topicslab.model import NOISE_AT_START
from topicslab.report import SECTION_IDS, results_schema, validate_results
from topicslab.report.schema import ResultsSchemaError

FAST = {"trials": 2, "targets": 512, "fit_minutes": 0.1}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("smoke")
    res = run("smoke", out, seed=1)
    return out, res


def test_every_stage_and_section(smoke: tuple[Path, dict]) -> None:
    out, res = smoke
    html = (out / "report.html").read_text(encoding="utf-8")
    for sid in SECTION_IDS:
        assert f'<section id="{sid}">' in html, sid
    # self-contained: figures are embedded, nothing is fetched
    assert html.count("data:image/png;base64,") >= 6
    assert not re.search(r'(src|href)="https?://', html)
    on_disk = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert on_disk == res
    jsonschema.validate(on_disk, results_schema())
    for side in ("population", "synthetic"):
        for att in ("hamming", "asymmetric"):
            r = res["reidentification"][side][att]
            assert 0 <= r["mean"] <= 1 and r["std"] >= 0
    assert 0 <= res["fit_quality"]["share_abs_within_0.1pp"] <= 1
    assert res["verdict"]["pass"] in (True, False, None)
    assert res["verdict"]["outcome"] == res["fidelity"]["outcome"]
    assert res["verdict"]["pass"] == {"pass": True, "fail": False}.get(res["verdict"]["outcome"])
    # the note on a fit that took no step is there exactly when the fit took none
    stalled = res["fit"]["stopped"] == "noise" and res["fit"]["steps"] == 0
    assert (res["verdict"]["note"] == NOISE_AT_START) is stalled
    assert (res["verdict"]["note"] is None) is not stalled
    assert res["dp_statistics"]["ledger"]["claimed"]["epsilon"] == pytest.approx(1.0986, 1e-4)
    # the default release: every simulated week (4 within-week, 3 across-week queries) under
    # one zCDP budget
    ledger = res["dp_statistics"]["ledger"]
    assert ledger["accounting"] == "tight"
    assert ledger["contribution_bounding"]["weeks"] == [0, 1, 2, 3]
    assert len(ledger["split"]) == 7 and res["parameters"]["stats_weeks"] == [0, 1, 2, 3]
    assert res["cached_stages"] == []
    # the peak memory after each stage: a running maximum over the stages, in order
    peaks = [res["stage_peak_rss_mb"][name] for name in res["stage_seconds"]]
    assert all(p is not None and p > 50 for p in peaks)
    assert peaks == sorted(peaks) and "peak memory so far" in html
    for stage in ("population", "dp_statistics", "fit", "sample", "fidelity", "validate",
                  "reid_population", "reid_synthetic", "qif", "disclosure", "report"):
        assert stage in res["stage_seconds"]
    # the release's verdict: gaps for r = 1..4, both attacks, the paper's rule second
    fid = res["fidelity"]
    assert [(g["attack"], g["weeks"]) for g in fid["gaps"]] == [
        (a, r) for r in (1, 2, 3, 4) for a in ("hamming", "asymmetric")]
    assert fid["users"] == res["population"]["users"] and fid["trials"] == 2
    assert res["verdict"]["outcome"] == fid["outcome"]
    assert res["verdict"]["pass"] == {"pass": True, "fail": False}.get(fid["outcome"])
    assert fid["pass"] == (fid["outcome"] == "pass")
    assert res["verdict"]["one_std_rule"]["pass"] in (True, False)
    assert res["verdict"]["text"].startswith(fid["outcome"].upper())
    assert "Paper's rule" in res["verdict"]["text"]
    assert res["fit"]["model"] == "persistent" and res["fit"]["stay_quantiles"]
    assert 0 < res["fit_quality"]["share_within_2sigma"] <= 1
    assert "Gap table" in html and "Top 10 within-week pairs" in html
    assert "Top 10 across-week pairs" in html


def test_rerun_uses_the_cache_and_redoes_only_what_changed(smoke: tuple[Path, dict]) -> None:
    out, first = smoke
    again = run("smoke", out, seed=1)
    assert set(again["cached_stages"]) >= {"population", "dp_statistics", "fit", "sample",
                                           "validate", "reid_population", "reid_synthetic"}
    assert again["fit_quality"] == first["fit_quality"]
    changed = run("smoke", out, seed=1, overrides={"trials": 2})
    assert "reid_population" not in changed["cached_stages"]
    assert "reid_synthetic" not in changed["cached_stages"]
    assert {"population", "dp_statistics", "fit", "sample", "fidelity"} <= set(
        changed["cached_stages"])
    more = run("smoke", out, seed=1, overrides={"trials": 2, "fidelity_trials": 1})
    assert "fidelity" not in more["cached_stages"] and more["fidelity"]["trials"] == 1


def test_from_published_statistics_has_no_population_side(smoke: tuple[Path, dict],
                                                          tmp_path: Path) -> None:
    out, _ = smoke
    res = run("smoke", tmp_path / "fromstats", seed=2, stats_dir=out / "stats",
              overrides={**FAST, "disclosure": False})
    assert res["input"]["kind"] == "stats" and res["population"] is None
    assert res["reidentification"]["population"] is None
    assert res["reidentification"]["synthetic"]["hamming"]["mean"] >= 0
    assert res["verdict"]["pass"] is None
    html = (tmp_path / "fromstats" / "report.html").read_text(encoding="utf-8")
    assert "synthetic side only" in html


def test_verdict_rule() -> None:
    pop = {"hamming": {"mean": 0.010, "std": 0.002}, "asymmetric": {"mean": 0.02, "std": 0.003}}
    ok = {"hamming": {"mean": 0.011, "std": 0.002}, "asymmetric": {"mean": 0.018, "std": 0.003}}
    bad = {"hamming": {"mean": 0.011, "std": 0.002}, "asymmetric": {"mean": 0.03, "std": 0.003}}
    assert one_std_rule({"population": pop, "synthetic": ok})["pass"] is True
    v = one_std_rule({"population": pop, "synthetic": bad})
    assert v["pass"] is False and v["attacks"]["asymmetric"]["within_one_std"] is False
    assert one_std_rule({"population": None, "synthetic": ok})["pass"] is None
    # the release verdict follows the fidelity gaps; the one-std rule is its second line
    fid = {"pass": False, "resolved": True, "tolerance": 0.02, "text": "FAIL: gaps."}
    both = verdict({"population": pop, "synthetic": ok}, fid)
    assert both["pass"] is False and both["one_std_rule"]["pass"] is True
    assert both["text"].startswith("FAIL: gaps.") and "one std" in both["text"]
    assert verdict({"population": pop, "synthetic": bad}, None)["pass"] is False
    # a fit that stopped at the noise floor before its first step: the verdict says why it
    # cannot speak of the model; one that took steps, or stopped otherwise, adds nothing
    stalled = verdict({"population": pop, "synthetic": ok}, fid, {"stopped": "noise", "steps": 0})
    assert stalled["pass"] is False and stalled["note"] == NOISE_AT_START
    assert stalled["text"].endswith(f"Note: {NOISE_AT_START}.")
    for fit in ({"stopped": "noise", "steps": 3}, {"stopped": "steps", "steps": 0}, None):
        v = verdict({"population": pop, "synthetic": ok}, fid, fit)
        assert v["note"] is None and "Note:" not in v["text"]
    # an inconclusive fidelity outcome is neither a pass nor a failure
    unsure = {**fid, "outcome": "inconclusive", "text": "INCONCLUSIVE: gaps."}
    v = verdict({"population": pop, "synthetic": ok}, unsure)
    assert v["pass"] is None and v["outcome"] == "inconclusive"
    assert v["text"].startswith("INCONCLUSIVE") and v["fidelity"]["outcome"] == "inconclusive"
    assert verdict({"population": pop, "synthetic": ok}, {**fid, "pass": True})["outcome"] == (
        "pass")  # (a section cached before the outcome existed)
    with pytest.raises(TypeError, match="fit"):
        verdict({"population": pop, "synthetic": ok}, fid, [])  # type: ignore[arg-type]


def test_paper_model_and_refit_per_trial(tmp_path: Path) -> None:
    """``--model paper`` fits the paper's types; ``--refit-per-trial`` fits once per trial
    (seed + trial) and reports each fit (the fit-to-fit spread)."""
    res = run("smoke", tmp_path / "paper", seed=4,
              overrides={**FAST, "model": "paper", "refit_per_trial": True, "fit_steps": 20,
                         "disclosure": False, "fidelity_trials": 1})
    assert res["fit"]["model"] == "paper" and res["fit"]["stay_quantiles"] is None
    refits = res["reidentification"]["refits"]
    assert [x["trial"] for x in refits] == [0, 1]
    assert [x["seed"] for x in refits] == [5, 6]
    assert all(0 <= x["share_rel_within_20pct"] <= 1 for x in refits)
    assert refits[0]["loss"] != refits[1]["loss"]
    assert res["reidentification"]["protocol"]["refit_per_trial"] is True
    html = (tmp_path / "paper" / "report.html").read_text(encoding="utf-8")
    assert "Fit-to-fit spread" in html


def test_schema_rejects_a_broken_results_file(smoke: tuple[Path, dict]) -> None:
    _, res = smoke
    broken = json.loads(json.dumps(res))
    del broken["fit_quality"]["share_rel_within_20pct"]
    with pytest.raises(ResultsSchemaError, match="fit_quality"):
        validate_results(broken)
    broken = json.loads(json.dumps(res))
    broken["reidentification"]["population"]["hamming"]["mean"] = 1.5
    with pytest.raises(ResultsSchemaError, match="reidentification/population/hamming/mean"):
        validate_results(broken)


def test_bad_inputs(tmp_path: Path) -> None:
    from topicslab.errors import InputError

    with pytest.raises(InputError, match="unknown preset"):
        run("huge", tmp_path)
    with pytest.raises(InputError, match="not both"):
        run("smoke", tmp_path, sets_path=tmp_path / "a", stats_dir=tmp_path / "b")


def test_on_user_sets(tmp_path: Path) -> None:
    from topicslab import io, population

    sets = population.generate(3_000, 4, seed=9)
    path = tmp_path / "mine.parquet"
    io.write_sets(path, sets)
    res = run("smoke", tmp_path / "mine", seed=3, sets_path=path,
              overrides={**FAST, "disclosure": False})
    assert res["input"]["kind"] == "sets" and res["population"]["users"] == 3_000
    assert res["population"]["calibration"] is None
    assert res["sample"]["users"] == 3_000
    assert not (tmp_path / "mine" / "pop.parquet").exists()
    assert res["verdict"]["outcome"] in ("pass", "fail", "inconclusive")


def test_interrupted_run_and_truncated_artefact(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the DP statistics are written leaves no ``stats/`` (and no temporary);
    the next run carries on from the finished population; a cached model cut short
    afterwards is recomputed with everything made from it, and the log says why."""
    from topicslab.dp import release
    from topicslab.model import load_model

    out = tmp_path / "interrupted"
    tiny = {"seed": 5, "users": 2_000,
            "overrides": {**FAST, "targets": 256, "fit_minutes": 0.02, "fit_steps": 5,
                          "disclosure": False, "fidelity_trials": 1}}
    real = release.write_text_atomic
    calls: list[int] = []

    def ctrl_c_at_the_second_file(path: Path, text: str) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(release, "write_text_atomic", ctrl_c_at_the_second_file)
    with pytest.raises(KeyboardInterrupt):
        run("smoke", out, **tiny)
    monkeypatch.setattr(release, "write_text_atomic", real)
    assert sorted(p.name for p in out.iterdir()) == ["pop.parquet", "stages.json"]
    assert list(json.loads((out / "stages.json").read_text())) == ["population"]

    log: list[str] = []
    res = run("smoke", out, log=log.append, **tiny)
    assert res["cached_stages"] == ["population"]

    weights = out / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    log.clear()
    res = run("smoke", out, log=log.append, **tiny)
    assert {"population", "dp_statistics", "reid_population", "qif"} <= set(
        res["cached_stages"])
    assert not {"fit", "sample", "validate", "reid_synthetic"} & set(res["cached_stages"])
    assert "fit: recomputing (model/model.safetensors was truncated or changed after the " \
        "stage wrote it)" in log
    assert "sample: recomputing (fit was recomputed)" in log
    load_model(out / "model")  # whole again


def test_theory_section_adds_only_its_stage(smoke: tuple[Path, dict]) -> None:
    """``--theory``: the population's risk against r with the Bayes attacker and the bounds
    (Carey et al. Fig. 2) in results.json and the report; every other stage is reused."""
    out, first = smoke
    assert first["theory"] is None
    res = run("smoke", out, seed=1, overrides={"theory": True})
    assert "theory" in res["stage_seconds"] and "theory" not in res["cached_stages"]
    assert {"population", "dp_statistics", "fit", "sample"} <= set(res["cached_stages"])
    rows = res["theory"]["rows"]
    assert [row["weeks"] for row in rows] == [1, 2, 3, 4]
    for row in rows:
        bayes = row["bayes_exact"]
        if bayes is None:
            bayes = row["bayes_sampled"]["ci95"][1]
        # no attack beats the full-information Bayes attacker on average (Corollary 1); the
        # attacks' figure here is one trial of 512 targets, so allow its sampling noise
        for att in ("hamming", "asymmetric"):
            assert row[att]["risk"] <= bayes + 0.05
    exact = [row["bayes_exact"] for row in rows if row["bayes_exact"] is not None]
    assert exact and all(a <= b + 1e-12 for a, b in itertools.pairwise(exact))
    html = (out / "report.html").read_text(encoding="utf-8")
    section = html.split('<section id="theory">')[1].split("</section>")[0]
    assert "data:image/png;base64," in section and "Bayes attacker" in section
    validate_results(res)


def test_learned_section_adds_only_its_stage(smoke: tuple[Path, dict]) -> None:
    """``--learned``: the learned attack trained on the synthetic sample and on the population,
    attacking the population for r = 1..4 beside the hand-made attacks, in results.json and
    the report; every other stage is reused."""
    out, first = smoke
    assert first["learned_attack"] is None
    res = run("smoke", out, seed=1, overrides={"learned": True})
    assert "learned_attack" in res["stage_seconds"]
    assert "learned_attack" not in res["cached_stages"]
    # every stage of the first run is reused: only the new one ran
    assert set(res["stage_seconds"]) - {"report"} - set(res["cached_stages"]) \
        == {"learned_attack"}
    assert set(first["stage_seconds"]) - {"report"} <= set(res["cached_stages"])
    la = res["learned_attack"]
    assert la["users"] == res["population"]["users"] and la["trials"] == 2
    assert la["epochs"] == 0 and la["synthetic_users"] == res["sample"]["users"]
    assert [row["weeks"] for row in la["rows"]] == [1, 2, 3, 4]
    for row in la["rows"]:
        for key in ("learned_synthetic", "learned_population"):
            # a learned attack that kept nothing is the asymmetric attack, target by target
            if row[key]["training"]["best_epoch"] < 0:
                assert row[key]["risk"] == pytest.approx(row["asymmetric"]["risk"], abs=1e-12)
            assert 0.0 <= row[key]["candidate_recall"] <= 1.0
            assert 0.0 <= row[key]["ci95"][0] <= row[key]["risk"]  # a risk's interval: >= 0
        g = row["gaps"]["synthetic_vs_asymmetric"]
        assert g["mean"] == pytest.approx(row["learned_synthetic"]["risk"]
                                          - row["asymmetric"]["risk"], abs=1e-12)
        # the paired interval is mean ± 1.96 se, se from the per-target differences
        assert g["ci95"] == pytest.approx([g["mean"] - 1.96 * g["se"],
                                           g["mean"] + 1.96 * g["se"]], abs=1e-15)
    html = (out / "report.html").read_text(encoding="utf-8")
    section = html.split('<section id="learned-attack">')[1].split("</section>")[0]
    assert "data:image/png;base64," in section and "trained on the synthetic" in section
    validate_results(res)
    again = run("smoke", out, seed=1, overrides={"learned": True})
    assert "learned_attack" in again["cached_stages"]
    assert again["learned_attack"] == la
