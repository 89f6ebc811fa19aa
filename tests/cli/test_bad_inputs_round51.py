"""Bad input, the fifty-first independent round: valid files holding adversarial numbers (a
DP release's ledger, degenerate models), interrupted runs and fits resumed, the learned
attack's odd training sets, and ``experiment.run``'s overrides against what the CLI refuses.

- A release whose ``privacy_ledger.json`` estimates its users (``extra.n_estimate``) as 0 or
  -5: read as a release of unknown noise -- ``fit`` ran with no noise floor and ``validate``
  left its noise shares out (``null``), without a word; 1e-300 users made the floor infinite
  (``fit`` "stopped: noise (DP noise floor J = inf)", ``"noise_floor": "inf"`` in
  ``model.json``). The release never estimates fewer than one user; below that is now refused
  naming the ledger and ``extra.n_estimate``.
- A ledger whose mechanisms' σ is 1e300 (or 1e-300): the noise of one released frequency
  squared past a float, so the fit's noise floor was NaN (``"noise_floor": null`` in
  ``model.json``, the fit ran its steps with no floor) and ``validate`` wrote ``"noise_sigma":
  null``; 1e-300 squared to 0, read as "no noise known". Both exit 0. A per-frequency noise
  outside 1e-150..1e150 is now refused naming the ledger and ``mechanisms``.
- ``experiment.run(..., overrides=...)``: an unknown key was dataclasses' "TypeError:
  Preset.__init__() got an unexpected keyword argument 'bogus'", a key that is not text
  "keywords must be strings", and ``{"users": 500}`` "got multiple values for keyword
  argument 'users'" (``users`` is a field of the preset like the others); now an
  ``InputError`` naming the key (``users`` given both ways is refused naming ``users``).
- ``overrides={"fit_steps": 100_001}`` and ``{"fit_minutes": 0.001}`` were taken, where ``run
  --fit-steps`` refuses past 100,000 and ``--fit-minutes`` below 0.01.
- ``experiment.run(seed=2**64)``: taken up front (``run --seed`` refuses past 2**63 - 1), then
  refused by the first stage that drew with it, after the DP release was computed and
  recorded in OUT.
- ``experiment.run`` ignored without a word what ``topicslab run`` refuses as unused:
  ``users=500`` (or ``overrides={"users": 500}``) with ``sets_path`` or ``stats_dir``; the DP
  release's ``stats_weeks``, ``accounting`` and ``overlap_lags``, and ``fidelity_trials``,
  ``theory`` and ``learned`` with ``stats_dir``; ``learned_epochs``/``learned_trials``
  without ``learned``. The CLI's checks now live in ``experiment.pipeline.check_unused``,
  which both call.
- ``experiment.run(..., overrides={"fidelity_trials": 10**15})`` (or ``"trials": 10**12``, or
  ``"learned_trials": 10**12`` with ``"learned": True``): the memory checks ``topicslab run``
  makes before any stage were the CLI's own, so the API began the population, the release and
  the fit, and the trials would have run for hours. They now live in ``experiment.sizes.
  check_memory``, which both call (with the population's and the fit's size checks, since the
  twenty-fifth session: ``experiment.sizes.check_run_size``, tests/experiment/test_sizes.py).
- Numbers shown to people by a formatter of their own: ``validate`` of a release whose
  ``q_single.json`` frequencies are all 0 (valid) showed the undefined relative-error share
  as "nan%" (the one formatter shows NaN as "—"); ``disclosure --script`` of a script whose
  probe is never queried showed "None" for the queries between probes, and 200000 queries
  without separators.
- ``fit`` (or ``save_model``) of one model twice: safetensors writes its metadata map in an
  order that changes between saves, so the same weights came out as files of other bytes,
  and ``model.json``'s ``weights_sha256`` differed (a fit resumed from its checkpoint against
  the same fit uninterrupted: equal tensors, other digests). The header is now written with
  its keys sorted.
- Not fixed (documented here): ``fit`` without ``--threads`` picks torch's thread count by
  timing (one thread or all, re-measured), and one thread and two sum in other orders, so
  two fits of one seed differ in the last bits (and ``run``'s fit with them); with
  ``OMP_NUM_THREADS=1`` or ``fit --threads N`` they are identical, and so are the runs.

Tried and found sound (no test): zero, all-equal, one-topic and tiny-but-valid frequencies and
a ledger of one user, given to ``fit`` and ``validate`` (a fit, or a one-line refusal when the
within-week pairs contradict k); models of all mass on one topic, on two topics (fewer than
k), one type degenerate, logits at float32's extremes, one mode, every slot or mode kept or
none, given to ``sample``, ``validate`` and ``reid`` (sets of fewer topics, the undefined
correlations ``null`` as documented); ``run --stats`` of zero, all-equal and one-user
releases (results.json's ``null`` only where not applicable); ``run`` interrupted by SIGINT,
SIGTERM or SIGHUP inside the DP stage, the fit, the sample, validation and the report and
run again (the same results.json as an uninterrupted run but for timings, torch on one
thread) and ``fit --resume`` after SIGINT (the same tensors); ``NUMBA_NUM_THREADS`` 1 and 2
(``sample``, ``reid``, ``stats --seed``: the same outputs); ``attack-train`` of one user
(refused), two users, identical users, empty weeks, no topic at all, one week (refused for r
= 2), and its model edited (``training.p`` refused; another ``--weeks`` or ``--lookback``
refused); ``disclosure --script`` of waits only, a wait of 10^29 s, 200,000 queries, a BOM,
CRLF line ends; ``fit --resume`` with other types, seed, statistics or lr (refused); a
persistence statistic of all mass at one overlap given to ``fit --persistence``.

Each case holds to ``test_bad_inputs.py``'s contract (exit 2, one ``error:`` line naming the
file, row or field, nothing written; from Python an ``InputError`` naming the field).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from refusal import invoke, made_with_model, refused_leaving, tree

from topicslab.errors import InputError


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v2 population, its release (ε = 1000) and a model fitted to it."""
    return made_with_model(tmp_path_factory.mktemp("made"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


# ---- a ledger's numbers ------------------------------------------------------------------------


def _n(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(ledger: dict[str, Any]) -> None:
        ledger["extra"]["n_estimate"] = value
    return edit


def _sigma(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(ledger: dict[str, Any]) -> None:
        for mech in ledger["mechanisms"]:
            mech["sigma"] = mech["sigma_sampled"] = value
    return edit


@pytest.mark.parametrize(("edit", "named"), [
    (_n(0), "field 'extra.n_estimate': n_estimate must be a number >= 1"),
    (_n(-5), "field 'extra.n_estimate': n_estimate must be a number >= 1"),
    (_n(1e-300), "field 'extra.n_estimate': n_estimate must be a number >= 1"),
    (_sigma(1e300), "field 'mechanisms': the mechanisms' sigma"),
    (_sigma(1e-300), "field 'mechanisms': the mechanisms' sigma"),
], ids=["n-0", "n-negative", "n-tiny", "sigma-huge", "sigma-tiny"])
def test_a_ledger_of_a_noise_no_release_has_is_refused(made: Path, work: Path,
                                                      edit: Callable[[dict[str, Any]], None],
                                                      named: str) -> None:
    release = work / "release"
    shutil.copytree(made / "stats", release)
    path = release / "privacy_ledger.json"
    ledger = json.loads(path.read_text())
    edit(ledger)
    path.write_text(json.dumps(ledger))
    for args in (["fit", "--stats", str(release), "--out", str(work / "m"), "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress"],
                 ["validate", "--stats", str(release), "--model", str(made / "model"),
                  "--json", str(work / "v.json")]):
        line = refused_leaving(args, work, "privacy_ledger.json, " + named, made)
        assert "restore the ledger" in line


def test_a_ledger_of_one_user_is_still_read(made: Path) -> None:
    """The least n_estimate a release writes, and the noise of the test release: read."""
    from topicslab import dp

    ledger = json.loads((made / "stats" / "privacy_ledger.json").read_text())
    assert ledger["extra"]["n_estimate"] >= 1
    stats = dp.load_statistics(made / "stats")
    assert stats.noise_sigmas() is not None


# ---- experiment.run's overrides ----------------------------------------------------------------


def _api_refused(work: Path, match: str, **kwargs: Any) -> None:
    """``experiment.run("smoke", work/out, **kwargs)`` raises an ``InputError`` matching
    ``match`` (a field) before writing anything."""
    from topicslab import experiment

    before = tree(work)
    with pytest.raises(InputError, match=match):
        experiment.run("smoke", work / "out", **kwargs)
    assert tree(work) == before


@pytest.mark.parametrize(("overrides", "match"), [
    ({"bogus": 1}, "field 'bogus': unknown override 'bogus'"),
    ({1: 2}, "field 'overrides': unknown override 1"),
    ({"users": 0}, "field '--users'"),
    ({"fit_steps": 100_001}, "field '--fit-steps': fit_steps must be in 1..100,000"),
    ({"fit_minutes": 0.001}, "field '--fit-minutes': fit_minutes must be a finite number >= "
                             "0.01"),
], ids=["unknown", "not-text", "users", "fit-steps", "fit-minutes"])
def test_run_overrides_are_checked_as_the_cli_checks_them(work: Path, overrides: dict,
                                                          match: str) -> None:
    release = work / "release"  # (an empty one: the old code, taking the override, failed
    release.mkdir()             # reading it, not after a whole run)
    _api_refused(work, match, stats_dir=release, overrides=overrides)


def test_run_seed_past_an_int64_is_refused_before_any_stage(work: Path) -> None:
    release = work / "release"
    release.mkdir()
    _api_refused(work, "field 'seed': seed must be in 0..9223372036854775807", seed=2**64,
                 stats_dir=release)


def test_run_users_given_twice_is_refused(work: Path) -> None:
    _api_refused(work, "field 'users': users is given twice", users=600,
                 overrides={"users": 500})


def test_run_overrides_not_a_mapping_is_a_type_error(work: Path) -> None:
    from topicslab import experiment

    with pytest.raises(TypeError, match="overrides takes a dict"):
        experiment.run("smoke", work / "out", overrides=[("users", 5)])  # type: ignore[arg-type]


@pytest.mark.parametrize(("inputs", "match"), [
    ({"users": 500}, "field '--users': --users sizes the reference population only; with "
                     "--stats"),
    ({"overrides": {"users": 500}}, "field '--users'"),
    ({"overrides": {"stats_weeks": (0, 1)}}, "field '--release-weeks'"),
    ({"overrides": {"accounting": "paper"}}, "field '--accounting'"),
    ({"overrides": {"overlap_lags": 1}}, "field '--overlap-lags'"),
    ({"overrides": {"fidelity_trials": 3}}, "field '--fidelity-trials'"),
    ({"overrides": {"theory": True}}, "field '--theory'"),
    ({"overrides": {"learned": True}}, "field '--learned'"),
], ids=["users", "users-override", "release-weeks", "accounting", "overlap-lags",
        "fidelity-trials", "theory", "learned"])
def test_run_from_statistics_refuses_what_it_would_not_use(work: Path, inputs: dict,
                                                           match: str) -> None:
    # an empty directory as the release: the old code ignored the option and then failed
    # reading the release (another error), so the case fails fast without the fix
    release = work / "release"
    release.mkdir()
    _api_refused(work, match, stats_dir=release, **inputs)


def test_run_from_sets_refuses_users(work: Path) -> None:
    sets = work / "empty.parquet"  # (the old code failed reading it, after ignoring users)
    sets.write_bytes(b"")
    _api_refused(work, "field '--users': --users sizes the reference population only; with "
                       "--sets", sets_path=sets, users=500)


@pytest.mark.parametrize("name", ["learned_epochs", "learned_trials"])
def test_run_learned_sizes_without_learned_are_refused(work: Path, name: str) -> None:
    option = "--" + name.replace("_", "-")
    release = work / "release"  # (as above: the old code failed reading it)
    release.mkdir()
    _api_refused(work, f"field '{option}': {option} sizes the learned-attack section",
                 stats_dir=release, overrides={name: 2})


# ---- numbers shown to people -------------------------------------------------------------------


def test_validate_shows_an_undefined_share_by_the_one_formatter(made: Path, work: Path) -> None:
    """A release whose topics all have q_single 0 (valid: frequencies in [0, 1]) leaves the
    single terms' relative-error share undefined: "—", as every table shows NaN."""
    release = work / "release"
    shutil.copytree(made / "stats", release)
    path = release / "q_single.json"
    records = json.loads(path.read_text())
    for rec in records:
        rec["frequency"] = 0.0
    path.write_text(json.dumps(records))
    res = invoke(["validate", "--stats", str(release), "--model", str(made / "model"),
                  "--json", str(work / "v.json")])
    assert res.exit_code == 0, res.output
    single = next(ln for ln in res.output.splitlines() if "│ single" in ln)
    assert "nan" not in res.output.lower() and single.rstrip(" │").endswith("—"), res.output


def test_disclosure_script_summary_shows_numbers_by_the_one_formatter(work: Path) -> None:
    script = work / "s.txt"
    script.write_text("! probe: help and advice\n" + "".join(f"query {i}\n"
                                                            for i in range(1500)))
    res = invoke(["disclosure", "--script", str(script)])
    assert res.exit_code == 0, res.output
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip()
            for ln in res.output.splitlines() if ln.count("│") == 3}
    assert rows["queries"] == "1,500" and rows["queries_between_probes"] == "—", res.output


# ---- the same model, the same bytes ------------------------------------------------------------


def test_a_model_saved_again_is_the_same_file(made: Path, work: Path) -> None:
    """safetensors writes its metadata map in an order that changes between saves: one model
    (a fit resumed from its checkpoint, or the same command again) gave files and
    ``weights_sha256`` digests that differed. Ten saves: one file, read back as it was."""
    import hashlib

    from topicslab.model import load_model, save_model

    model = load_model(made / "model")
    digests = set()
    for i in range(10):
        save_model(work / f"m{i}", model)
        digests.add(hashlib.sha256((work / f"m{i}" / "model.safetensors").read_bytes())
                    .hexdigest())
        assert json.loads((work / f"m{i}" / "model.json").read_text())["weights_sha256"] == (
            "sha256:" + next(iter(digests)))
    assert len(digests) == 1
    again = load_model(work / "m9")
    assert (again.theta == model.theta).all() and again.taxonomy.version == "v2"


# ---- experiment.run's sizes --------------------------------------------------------------------


def _no_stage(msg: str) -> None:
    """A run's ``log``: the first stage line fails the test at once (the old code began the
    stages, and the trials would have run for hours)."""
    raise AssertionError(f"a stage began: {msg}")


@pytest.mark.parametrize(("overrides", "match"), [
    ({"fidelity_trials": 10**15}, "field '--fidelity-trials': the release fidelity of "),
    ({"trials": 10**12}, "field '--trials': the re-identification protocol's "),
    ({"learned": True, "learned_trials": 10**12}, "field '--learned-trials': the learned "
                                                  "attack's "),
], ids=["fidelity-trials", "trials", "learned-trials"])
def test_run_refuses_trials_past_the_memory_before_any_stage(work: Path, overrides: dict,
                                                             match: str) -> None:
    from topicslab import experiment

    before = tree(work)
    with pytest.raises(InputError, match=match):
        experiment.run("smoke", work / "out", overrides=overrides, log=_no_stage)
    assert tree(work) == before
