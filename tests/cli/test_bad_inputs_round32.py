"""Bad input, the thirty-second independent round.

Leftovers of rounds 30 and 31:

- the boolean flags of the public functions (``progress``, ``cache``, ``resume``, ``strict``,
  ``raw``, ``clip``, ``with_answers``) took any value for its truth:
  ``experiment.run(progress="no", cache="no")`` showed the bars and reused the stages.
- ``model.closed_forms`` / ``persistent_forms`` with a theta of another rank failed with an
  unpacking ``ValueError``; week pairs out of range were an ``IndexError``; mode tensors of
  another shape torch's ``RuntimeError``.
- NumPy numbers: ``np.float32(0.5)`` and ``np.int64(3)`` were refused by the checks that took
  ``int | float`` (``Stress``, ``FullObjective``, ``PaperAdam``, ``Preset``'s fit_minutes and
  fidelity_tolerance, ``train_attack``'s weeks, ``ingest_visits``' k) and taken by those of
  ``_checks``; ``FullObjective(init_std="x")`` was a ``TypeError`` and ``init_std=True`` a
  standard deviation of 1; ``fit(max_minutes="5")`` a ``TypeError``.
- ``check_call_weeks(lookback=0)``, ``wilson_interval`` of a fractional count,
  ``student_interval`` with a NaN (it returned ``(nan, nan)``), ``solve_assignment``'s
  ``batch_edges=0`` and ``dp_channel``'s ``sets`` (only their count was read) were unchecked.

Fresh (the Python API, mostly): ``write_sets`` wrote a topic twice in a week to files its
readers refuse (a TFRecord read back without it); ``answers``/``observe`` took a non-boolean
witnessed mask (0.5: all witnessed), a site id twice and a topic twice in a profile;
``calibrate``/``calibration_table`` of one week measured the across targets as 0; text as
``make_script`` keywords was split into letters; ``learn_bands``, ``first_violation``,
``evaluate``, ``simulate_personas``, ``PRI.fit_counts`` took NaN or fractional values;
``estimate_popularity`` and the DP and engine building blocks cast or crashed on NumPy's
errors; the fit's and the closed forms' subset expansion (2^k) was not counted against memory;
``SiteTraces``/``write_traces`` took what ``TopicSets``/``write_sets`` refuse;
``release_counts`` recorded a bound no reader takes; ``sample_to_file`` wrote Parquet bytes to
x.csv; ``fit_quality`` scored a one-week release's all-zero q_across; ``Stress.apply`` mixed
taxonomies; ``ingest_visits`` read ``batch_rows=0`` as the default.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from topicslab.errors import InputError
from topicslab.qif.errors import QIFError

# ---- leftover: boolean flags ---------------------------------------------------------------


def _flag_calls() -> list[tuple[str, str]]:
    return [
        ("topicslab.experiment:run", "progress"),
        ("topicslab.experiment:run", "cache"),
        ("topicslab.model.sample:sample", "progress"),
        ("topicslab.model.sample:sample", "raw"),
        ("topicslab.model.sample:sample_to_file", "progress"),
        ("topicslab.model.fit:fit", "progress"),
        ("topicslab.model.fit:fit", "resume"),
        ("topicslab.api.ingest:ingest_visits", "progress"),
        ("topicslab.population.generator:generate", "progress"),
        ("topicslab.qif.cover_levels:cover_levels", "progress"),
        ("topicslab.qif.cover_levels:corollary1_interval", "progress"),
        ("topicslab.dp.stream:stream_counts", "strict"),
        ("topicslab.dp.stream:stream_statistics", "progress"),
        ("topicslab.validate.fidelity:fidelity", "progress"),
        ("topicslab.attacks.protocol:measure_risk", "progress"),
        ("topicslab.attacks.protocol:measure_risk_traces", "progress"),
        ("topicslab.attacks.protocol:evaluate_attacks", "progress"),
        ("topicslab.attacks.protocol:risk_curve", "progress"),
        ("topicslab.attacks.matching:matching_attack", "progress"),
        ("topicslab.attacks.engine:match_set_counts", "progress"),
        ("topicslab.attacks.bounds:reid_bounds", "progress"),
        ("topicslab.attacks.theory:theory_curve", "progress"),
        ("topicslab.attacks.learned:train_attack", "progress"),
        ("topicslab.attacks.learned:measure_risk_learned", "progress"),
        ("topicslab.attacks.learned_curve:learned_curve", "progress"),
        ("topicslab.disclosure.experiment:topics_experiment", "clip"),
        ("topicslab.disclosure.experiment:topics_experiment", "progress"),
        ("topicslab.disclosure.bands:learn_bands", "clip"),
        ("topicslab.disclosure.personas:simulate_personas", "with_answers"),
    ]


def _function(where: str) -> Any:
    import importlib

    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("where", "flag"), _flag_calls())
def test_boolean_flags_of_public_functions_are_real_bools(where: str, flag: str,
                                                          work: Path) -> None:
    fn = _function(where)
    required = {name: None for name, p in inspect.signature(fn).parameters.items()
                if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if where.endswith(":run"):
        required.update(preset="smoke", out=work / "out")
    with pytest.raises(InputError) as err:
        fn(**{**required, flag: "no"})
    assert err.value.field == flag
    assert f"{flag} must be True or False, got 'no'" in str(err.value)
    assert not (work / "out").exists()


def test_a_numpy_bool_is_a_flag() -> None:
    from topicslab.qif.cover_levels import cover_levels

    profiles = np.array([[[0, 1]], [[1, 2]]], dtype=np.int32)
    assert cover_levels(profiles, 5, progress=np.bool_(False)) is not None


# ---- leftover: closed forms of a theta of another rank ---------------------------------------


def _theta(*shape: int) -> Any:
    import torch

    return torch.zeros(shape, dtype=torch.float64)


@pytest.mark.parametrize("case", ["3-d", "5-d", "empty", "ndarray", "int", "pairs", "pair-text"])
def test_closed_forms_refuse_a_theta_of_another_rank(case: str) -> None:
    import torch

    from topicslab.model import closed_forms

    theta: Any = {"3-d": _theta(2, 2, 5), "5-d": _theta(1, 2, 2, 2, 5),
                  "empty": _theta(0, 2, 2, 5), "ndarray": np.zeros((2, 2, 2, 5)),
                  "int": torch.zeros((2, 2, 2, 5), dtype=torch.int64)}.get(case,
                                                                           _theta(2, 2, 2, 5))
    pairs = {"pairs": [(0, 2)], "pair-text": [("0", "1")]}.get(case)
    with pytest.raises(InputError) as err:
        closed_forms(theta, pairs)
    assert err.value.field == ("week_pairs" if case.startswith("pair") else "theta")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("case", ["theta", "weights", "stay", "slot", "lags"])
def test_persistent_forms_refuse_tensors_of_other_shapes(case: str) -> None:
    import torch

    from topicslab.model import persistent_forms

    T, M, k, m = 2, 2, 2, 5
    args: dict[str, Any] = {"theta": _theta(T, M, k, m), "mode_weights": torch.full((T, M), 0.5,
                            dtype=torch.float64), "mode_stay": torch.full((T,), 0.5,
                            dtype=torch.float64), "log_slot_stay": _theta(T, M, k),
                            "lags": (1,)}
    bad = {"theta": ("theta", _theta(T, k, m)), "weights": ("mode_weights", _theta(T, M + 1)),
           "stay": ("mode_stay", _theta(T, 1)), "slot": ("log_slot_stay", _theta(T, M, k + 1)),
           "lags": ("lags", (0,))}[case]
    args[bad[0]] = bad[1]
    with pytest.raises(InputError) as err:
        persistent_forms(**args)
    assert err.value.field == bad[0]


def test_closed_forms_of_right_tensors_still_compute() -> None:
    import torch

    from topicslab.model import closed_forms, persistent_forms

    qs, _, qa = closed_forms(_theta(2, 2, 2, 5), [(0, 1)])
    assert qs.shape == (2, 5) and qa.shape == (1, 5, 5)
    qs, _, qa = persistent_forms(_theta(2, 2, 2, 5), torch.full((2, 2), 0.5,
                                  dtype=torch.float64), torch.full((2,), 0.5,
                                  dtype=torch.float64), _theta(2, 2, 2), [np.int64(1), 2])
    assert qa.shape == (2, 5, 5)
    assert 0 < float(qs.sum()) <= 2.0  # at most k = 2 topics a week


# ---- leftover: NumPy numbers ------------------------------------------------------------------


def test_numpy_numbers_are_numbers_everywhere() -> None:
    from topicslab.experiment import PRESETS
    from topicslab.model.fit import FullObjective, PaperAdam
    from topicslab.population.stress import Stress

    s = Stress(persistence=np.float32(0.5), routine=np.float64(0.25), groups=np.int64(0),
               interests=np.int64(3))
    assert s.persistence == 0.5 and type(s.persistence) is float
    assert type(s.interests) is float
    o = FullObjective(steps=np.int64(10), lr=np.float32(0.5), truncation=np.float32(0.001),
                      persistence=np.int64(1), eval_every=np.int32(5),
                      init_std=np.float16(1.0))
    assert type(o.steps) is int and type(o.truncation) is float
    import json

    json.dumps(o.config())  # (a NumPy number in model.json is a TypeError)
    assert type(PaperAdam(epochs=np.int64(3), batch_terms=np.int16(8)).epochs) is int
    p = PRESETS["smoke"].with_overrides(fit_minutes=np.float32(0.5),
                                        fidelity_tolerance=np.float64(0.1))
    assert type(p.fit_minutes) is float
    json.dumps(p.to_dict())


@pytest.mark.parametrize("case", ["bool", "text", "np-bool", "nan", "huge"])
def test_numeric_fields_still_refuse_what_is_no_number(case: str) -> None:
    from topicslab.model.fit import FullObjective
    from topicslab.population.stress import Stress

    v: Any = {"bool": True, "text": "0.5", "np-bool": np.bool_(True), "nan": float("nan"),
              "huge": 10**400}[case]
    with pytest.raises(InputError):
        Stress(routine=v)
    with pytest.raises(InputError) as err:
        FullObjective(init_std=v)  # ("0.5" was a TypeError, True a standard deviation of 1)
    assert err.value.field == "init_std"
    with pytest.raises(InputError):
        FullObjective(lr=v)


def test_fit_checks_max_minutes() -> None:
    from topicslab.model.fit import fit

    with pytest.raises(InputError) as err:
        fit(None, max_minutes="5")  # (a TypeError out of math.isfinite)
    assert err.value.field == "max_minutes"


def test_training_and_ingest_take_numpy_integers(work: Path) -> None:
    from topicslab.api.ingest import ingest_visits

    (work / "domains.csv").write_text("domain,topics\na.com,1\n")
    (work / "visits.csv").write_text("user,week,domain\n1,0,a.com\n2,0,a.com\n")
    with pytest.raises(InputError) as err:  # an integer: refused only for k > m
        ingest_visits(work / "visits.csv", work / "domains.csv", k=np.int64(10**6))
    assert err.value.field == "k" and "1..469" in str(err.value)
    got = ingest_visits(work / "visits.csv", work / "domains.csv", k=np.int64(3))
    assert got.sets.k == 3  # (np.int64(3) was refused as no integer)


# ---- leftover: minor unchecked arguments of round 30 ------------------------------------------


@pytest.mark.parametrize("case", ["lookback-0", "lookback-2.5", "wilson-1.5", "wilson-n",
                                  "wilson-disclosure", "student-nan", "student-2d",
                                  "student-text", "batch-edges", "dp-sets", "dp-fraction"])
def test_round30_minor_arguments_are_checked(case: str) -> None:
    from topicslab.attacks import protocol
    from topicslab.attacks.matching import solve_assignment
    from topicslab.disclosure.evaluation import wilson_interval
    from topicslab.qif.channels import dp_channel

    calls: dict[str, tuple[Any, str]] = {
        "lookback-0": (lambda: protocol.check_call_weeks(2, lookback=0), "lookback"),
        "lookback-2.5": (lambda: protocol.check_call_weeks(2, lookback=2.5), "lookback"),
        "wilson-1.5": (lambda: protocol.wilson_interval(1.5, 3), "successes"),
        "wilson-n": (lambda: protocol.wilson_interval(0, -2), "n"),
        "wilson-disclosure": (lambda: wilson_interval(1.5, 3), "successes"),
        "student-nan": (lambda: protocol.student_interval([float("nan"), 1.0]), "values"),
        "student-2d": (lambda: protocol.student_interval([[1.0, 2.0]]), "values"),
        "student-text": (lambda: protocol.student_interval(["a", "b"]), "values"),
        "batch-edges": (lambda: solve_assignment(2, 2, [0, 1], [0, 1], [1.0, 1.0],
                                                 batch_edges=0), "batch_edges"),
        "dp-sets": (lambda: dp_channel(10, 2, [[0, 20]]), ""),
        "dp-fraction": (lambda: dp_channel(10, 2, [[0, 1.5]]), "sets"),
    }
    call, field = calls[case]
    with pytest.raises((InputError, QIFError)) as err:  # (qif's own errors: QIFError)
        call()
    if field:
        assert getattr(err.value, "field", None) == field
    assert "\n" not in str(err.value)


def test_round30_minor_arguments_in_range_still_work() -> None:
    from topicslab.attacks import protocol
    from topicslab.qif.channels import dp_channel

    assert protocol.check_call_weeks(np.int64(2), lookback=2) == 2
    lo, hi = protocol.wilson_interval(np.int64(5), 100)
    assert 0 < lo < 0.05 < hi
    lo, hi = protocol.student_interval([0.1, 0.2, 0.3])
    assert lo < 0.2 < hi
    assert dp_channel(10, 2, [[0, 1], [2, 3]]).shape == (2, 10)


# ---- fresh: write_sets wrote files its readers refuse or read otherwise -------------------------

@pytest.mark.parametrize("ext", ["parquet", "csv", "tfrecord", "long.csv", "prof.csv"])
def test_write_sets_refuses_sets_no_reader_takes(ext: str, work: Path) -> None:
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    fmt = {"long.csv": "long", "prof.csv": "profiles"}.get(ext)
    twice = TopicSets(np.array([[[7, 7, 3, -1, -1]], [[1, 2, 3, 4, 5]]], np.int16), "v2")
    path = work / f"x.{ext}"
    with pytest.raises(InputError) as err:  # (CSV: written, then refused by its reader;
        tio.write_sets(path, twice, format=fmt)  # TFRecord: read back as [3, 7])
    assert err.value.file == str(path) and err.value.field == "sets"
    assert "distinct" in str(err.value)
    assert not path.exists()


# ---- fresh: the API's answers ------------------------------------------------------------------

def _profiles() -> Any:
    rng = np.random.default_rng(0)
    return np.sort(np.stack([rng.choice(469, 5, replace=False) for _ in range(12)]
                            ).reshape(4, 3, 5), axis=-1).astype(np.int16)


@pytest.mark.parametrize("mask", ["float", "int", "text"])
def test_answers_witnessed_mask_must_be_boolean(mask: str) -> None:
    from topicslab.api import answers, observe

    sets = _profiles()
    given = {"float": np.full((2, 4, 3, 5), 0.5), "int": np.ones((2, 4, 3, 5), np.int64),
             "text": np.full((2, 4, 3, 5), "yes")}[mask]
    with pytest.raises(InputError) as err:  # (0.5 was cast to True: every topic witnessed)
        answers(sets, 2, witnessed=given)
    assert err.value.field == "witnessed"
    with pytest.raises(InputError):
        observe(sets, 2, weeks=3, witnessed=given)
    # a boolean mask and a probability still filter
    none = answers(sets, 2, witnessed=np.zeros((2, 4, 3, 5), bool))
    assert (none == -1).mean() > 0.5  # (the random topic is not filtered)
    assert (answers(sets, 2, witnessed=0.0) == -1).mean() > 0.5


def test_answers_refuse_a_site_id_twice() -> None:
    from topicslab.api import answers

    with pytest.raises(InputError) as err:  # (two identical traces, as if of two sites)
        answers(_profiles(), [3, 3])
    assert err.value.field == "sites" and "site id 3" in str(err.value)
    assert answers(_profiles(), [3, 7]).shape == (2, 4, 3)


@pytest.mark.parametrize("where", ["answers", "observe"])
def test_answers_refuse_a_topic_twice_in_a_week(where: str) -> None:
    from topicslab.api import answers, observe

    sets = _profiles()
    sets[2, 1] = [7, 7, 7, 7, 7]  # (answered 7 every time: "a profile" of one topic)
    with pytest.raises(InputError) as err:
        if where == "answers":
            answers(sets, 2)
        else:
            observe(sets, 1, weeks=2)
    assert err.value.field == "sets" and "user 2" in str(err.value)
    assert "week 1" in str(err.value) if where == "answers" else True
    sets[2, 1] = [3, 7, -1, -1, -1]  # a short week is padded, as the browser does
    assert answers(sets, 2).shape == (2, 4, 3)


# ---- fresh: calibration of one week; published targets of v1 ------------------------------------

def test_calibration_needs_two_weeks() -> None:
    from topicslab.population import calibrate, calibration_table, generate

    with pytest.raises(InputError) as err:  # (ran, pushed the knobs to the across targets
        calibrate(n_users=50, n_weeks=1, iterations=1, log=None)  # measured as 0)
    assert err.value.field == "n_weeks"
    with pytest.raises(InputError) as err:  # (across targets and persistence reported 0)
        calibration_table(generate(20, 1, seed=1))
    assert err.value.field == "sets"
    assert calibration_table(generate(20, 2, seed=1)).rows


def test_published_targets_are_of_v2() -> None:
    from topicslab.population import calibration_table, generate, published_targets

    with pytest.raises(InputError) as err:  # (UnknownTopicError of one label)
        published_targets("v1")
    assert err.value.field == "taxonomy" and "v2" in str(err.value)
    with pytest.raises(InputError):
        calibration_table(generate(20, 2, seed=1, taxonomy="v1"))


# ---- fresh: disclosure ---------------------------------------------------------------------------

@pytest.mark.parametrize(("keywords", "probe", "field"), [
    ("loneliness", "probe", "keywords"), ([1, 2], "probe", "keywords"),
    (["lonely"], 5, "probe")])
def test_make_script_takes_lists_of_words(keywords: Any, probe: Any, field: str) -> None:
    from topicslab.disclosure import make_script

    with pytest.raises(InputError) as err:  # ("loneliness": keywords l, o, n, e, ...)
        make_script(keywords, probe)
    assert err.value.field == field
    assert make_script(["lonely", "alone"], "probe").probe == "probe"


@pytest.mark.parametrize(("case", "field"), [
    ("cats-text", "categories"), ("cats-twice", "categories"), ("sigma-text", "n_sigma"),
    ("sigma-true", "n_sigma"), ("m-hat-text", "m_hat")])
def test_learn_bands_checks_its_arguments(case: str, field: str) -> None:
    from topicslab.disclosure import learn_bands

    m = np.array([[0.5, 0.5], [0.4, 0.6], [0.6, 0.4], [0.5, 0.5]])
    args: dict[str, Any] = {"m_hat": m, "labels": [0, 1, 0, 1], "categories": ["a", "other"]}
    args.update({"cats-text": {"categories": "ab"}, "cats-twice": {"categories": ["a", "a"]},
                 "sigma-text": {"n_sigma": "3"}, "sigma-true": {"n_sigma": True},
                 "m-hat-text": {"m_hat": [["a", "b"]], "labels": [0]}}[case])
    with pytest.raises(InputError) as err:
        learn_bands(**args)
    assert err.value.field == field
    assert learn_bands(m, [0, 1, 0, 1], ["a", "other"], n_sigma=np.float32(2)).n_sigma == 2


@pytest.mark.parametrize(("call", "field"), [
    ("eps-nan", "epsilon"), ("eps-neg", "epsilon"), ("ln-nan", "ln_m"), ("ln-0d", "ln_m"),
    ("slr-text", "p"), ("slr-k", "k")])
def test_white_box_functions_check_their_arguments(call: str, field: str) -> None:
    from topicslab.disclosure import first_violation, single_answer_likelihood_ratio

    calls = {"eps-nan": lambda: first_violation([[0.1, 0.9]], epsilon=float("nan")),
             "eps-neg": lambda: first_violation([[0.1, 0.9]], epsilon=-1.0),
             "ln-nan": lambda: first_violation([[float("nan"), 0.9]]),
             "ln-0d": lambda: first_violation(0.1),
             "slr-text": lambda: single_answer_likelihood_ratio(p="0.05"),
             "slr-k": lambda: single_answer_likelihood_ratio(k=2.5)}
    with pytest.raises(InputError) as err:  # (NaN: never violated; -1: at every epoch)
        calls[call]()
    assert err.value.field == field
    assert first_violation([[0.1, 0.9]]).tolist() == [2]
    assert single_answer_likelihood_ratio() > 1


# ---- fresh: the attacks' building blocks ------------------------------------------------

@pytest.mark.parametrize(("case", "field"), [
    ("bound-text", "P"), ("pop-pseudo-nan", "pseudo_count"), ("pop-float", "answers"),
    ("pop-below", "answers"), ("pop-q-text", "q_in"), ("radius-text", "n"),
    ("radius-delta", "delta"), ("weights-text", "p"), ("weights-q", "q_in")])
def test_attack_building_blocks_refuse_in_one_line(case: str, field: str) -> None:
    from topicslab import attacks

    ans = np.zeros((3, 2), np.int16)
    calls = {
        "bound-text": lambda: attacks.full_information_bound([["a"]]),
        "pop-pseudo-nan": lambda: attacks.estimate_popularity(ans, 5, 0.2, 0.01,
                                                              pseudo_count=float("nan")),
        "pop-float": lambda: attacks.estimate_popularity(np.full((3, 2), 1.5), 5, 0.2, 0.01),
        "pop-below": lambda: attacks.estimate_popularity(np.full((3, 2), -3), 5, 0.2, 0.01),
        "pop-q-text": lambda: attacks.estimate_popularity(ans, 5, "0.2", 0.01),
        "radius-text": lambda: attacks.lemma10_radius("10", 5, 0.2, 0.01, 0.1),
        "radius-delta": lambda: attacks.lemma10_radius(10, 5, 0.2, 0.01, float("nan")),
        "weights-text": lambda: attacks.asymmetric_weights(["a"], 0.2, 0.01, 2),
        "weights-q": lambda: attacks.asymmetric_weights([0.2], "0.2", 0.01, 2),
    }
    with pytest.raises(InputError) as err:  # (NaN popularities; NumPy's casting errors)
        calls[case]()
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_attack_building_blocks_still_estimate() -> None:
    from topicslab import attacks

    p = attacks.estimate_popularity(np.array([[0, 1], [1, -1]]), 5, 0.2, 0.01)
    assert p.shape == (5,) and np.isfinite(p).all()
    assert attacks.lemma10_radius(np.int64(10), 5, 0.2, 0.01, 0.1) > 0
    with pytest.raises(ValueError):  # (still a ValueError, as before)
        attacks.estimate_popularity(np.zeros(2, np.int16), 5, 0.01, 0.2)


@pytest.mark.parametrize(("case", "error"), [
    ("array", TypeError), ("config", TypeError), ("seed-neg", InputError),
    ("seed-frac", InputError), ("attack", TypeError)])
def test_learned_attack_entries_check_their_arguments(case: str, error: type) -> None:
    from topicslab.attacks.learned import measure_risk_learned, train_attack
    from topicslab.population import generate

    pop = generate(30, 3, seed=1)
    calls = {"array": lambda: train_attack(pop.sets, weeks=2),
             "config": lambda: train_attack(pop, weeks=2, config={"epochs": 0}),
             "seed-neg": lambda: train_attack(pop, weeks=2, seed=-1),
             "seed-frac": lambda: train_attack(pop, weeks=2, seed=2.5),
             "attack": lambda: measure_risk_learned(pop, "model-dir", progress=False)}
    with pytest.raises(error) as err:  # (AttributeErrors; NumPy's "expected non-negative
        calls[case]()  # integer" and "seed must be integer")
    assert "\n" not in str(err.value)
    if error is InputError:
        assert err.value.field == "seed"


# ---- fresh: the DP building blocks --------------------------------------------------------------

@pytest.mark.parametrize(("case", "field"), [
    ("pairs-float", "bounded"), ("pairs-wrap", "bounded"), ("pairs-m", "m"),
    ("overlap-float", "bounded"), ("noise-n", "n"), ("noise-frac", "n"),
    ("noise-huge", "epsilon"), ("noise-nan", "sigma"), ("split", "overlap")])
def test_dp_building_blocks_refuse_in_one_line(case: str, field: str) -> None:
    from topicslab import dp

    s = np.stack([np.stack([np.arange(5) + 7 * u + w for w in range(2)]) for u in range(4)])
    calls = {
        "pairs-float": lambda: dp.pair_counts(s + 0.5, 469),  # (truncated to topics)
        "pairs-wrap": lambda: dp.pair_counts((s + 65536).astype(np.int32), 469),  # (wrapped)
        "pairs-m": lambda: dp.pair_counts(s, "469"),
        "overlap-float": lambda: dp.overlap_counts(s + 0.5),
        "noise-n": lambda: dp.discrete_gaussian(-1, 1.0, dp.RandomWords(1)),
        "noise-frac": lambda: dp.discrete_gaussian(2.5, 1.0, dp.RandomWords(1)),
        "noise-huge": lambda: dp.discrete_gaussian(3, 1e200, dp.RandomWords(1)),  # (Overflow)
        "noise-nan": lambda: dp.discrete_gaussian(3, float("nan"), dp.RandomWords(1)),
        "split": lambda: dp.default_split(2, overlap="no"),  # (taken as true)
    }
    with pytest.raises(InputError) as err:
        calls[case]()
    assert err.value.field == field
    assert int(dp.pair_counts(s, 469).within.sum()) == 4 * 2 * 10
    assert dp.discrete_gaussian(3, 2.0, dp.RandomWords(1)).shape == (3,)
    assert dp.default_split(2, overlap=np.bool_(True))[-1] == dp.OVERLAP_SHARE


# ---- fresh: top_k of negative or infinite counts; iter_records' verify ----------------------

@pytest.mark.parametrize("bad", [-1.0, float("inf")])
def test_top_k_refuses_counts_that_are_no_visits(bad: float) -> None:
    from topicslab.api import top_k, top_k_sparse

    counts = np.zeros((1, 469))
    counts[0, :3] = [bad, 2.0, 1.0]
    with pytest.raises(InputError) as err:  # (-1 was read as no visit, silently)
        top_k(counts, seed=1)
    assert err.value.field == "counts"
    with pytest.raises(InputError):
        top_k_sparse([0, 3], [0, 1, 2], [bad, 2.0, 1.0], seed=1)
    counts[0, 0] = 0.5  # weights of visits still rank
    assert top_k(counts, seed=1)[0, :3].tolist() == [0, 1, 2]


def test_iter_records_verify_is_a_bool(work: Path) -> None:
    from topicslab import io as tio

    tio.write_records(work / "r.tfrecord", [b"abc"])
    with pytest.raises(InputError) as err:  # ("no" verified every CRC all the same)
        list(tio.iter_records(work / "r.tfrecord", verify="no"))
    assert err.value.field == "verify"
    assert list(tio.iter_records(work / "r.tfrecord", verify=False)) == [(1, b"abc")]


def test_log_functions_are_checked_up_front(work: Path) -> None:
    from topicslab import experiment
    from topicslab.population import calibrate

    with pytest.raises(TypeError, match="log takes a function"):
        experiment.run("smoke", work / "out", log=5, users=50)  # (at the first log line)
    assert not (work / "out").exists()
    with pytest.raises(TypeError, match="log takes a function"):  # (after an iteration)
        calibrate(n_users=50, n_weeks=2, iterations=1, log=5)


# ---- fresh: the fit's subset expansion was not counted against memory -------------------------

def test_fit_refuses_a_subset_expansion_past_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import _resources, dp, model
    from topicslab.population import generate

    st = dp.compute_statistics(generate(60, 2, seed=1), seed=3)
    # 2^5 subsets x 2 types x 2 weeks x 469 topics x 3 float64 copies: about 1.4 MB
    monkeypatch.setattr(_resources, "available_memory", lambda: 1_000_000)
    with pytest.raises(InputError) as err:  # (k = 20 tried hundreds of GB: torch's "can't
        model.fit(st, "paper", types=2, weeks=2, max_minutes=0.01,  # allocate memory")
                  progress=False, device="cpu")
    assert err.value.field == "types" and "2^5 subsets" in str(err.value)


def test_closed_forms_refuse_an_expansion_past_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from topicslab import _resources
    from topicslab.model import closed_forms, persistent_forms

    monkeypatch.setattr(_resources, "available_memory", lambda: 100_000_000)
    theta = torch.zeros((2, 1, 17, 300))  # 2^17 subsets x 2 laws x 300 topics: 0.9 GB
    with pytest.raises(InputError) as err:  # (a model of k = 22 asked torch for 8 GB blocks)
        closed_forms(theta)
    assert err.value.field == "theta" and "2^17" in str(err.value)
    with pytest.raises(InputError):
        persistent_forms(theta, torch.ones((2, 1)), torch.zeros(2), torch.zeros((2, 1, 17)))


# ---- fresh: SiteTraces and write_traces took what TopicSets and write_sets refuse ---------------

@pytest.mark.parametrize(("case", "field"), [
    ("fraction", "traces"), ("nan", "traces"), ("past-m", "traces"), ("below", "traces"),
    ("int32", "traces"), ("text", "traces"), ("user-fraction", "user_ids"),
    ("site-fraction", "site_ids")])
def test_site_traces_check_their_values(case: str, field: str) -> None:
    from topicslab.datamodel import SiteTraces

    tr: Any = np.zeros((2, 3, 2), np.int16)
    kw: dict[str, Any] = {}
    tr = {"fraction": tr + 0.5, "nan": np.full((2, 3, 2), np.nan),  # (NaN was cast to 0)
          "past-m": tr + 469, "below": tr - 5, "int32": np.full((2, 3, 2), 70000, np.int32),
          "text": np.full((2, 3, 2), "a")}.get(case, tr)
    kw = {"user-fraction": {"user_ids": [1.5, 2, 3]},
          "site-fraction": {"site_ids": [0.5, 1]}}.get(case, {})
    with pytest.raises(InputError) as err:
        SiteTraces(tr, "v2", **kw)
    assert err.value.field == field


@pytest.mark.parametrize("case", ["user-twice", "site-twice", "no-week"])
def test_write_traces_refuses_files_no_reader_takes(case: str, work: Path) -> None:
    from topicslab import io as tio
    from topicslab.datamodel import SiteTraces

    tr = np.zeros((2, 3, 0 if case == "no-week" else 2), np.int16)
    traces = SiteTraces(tr, "v2", user_ids=[1, 1, 3] if case == "user-twice" else None,
                        site_ids=[4, 4] if case == "site-twice" else None)
    path = work / "t.parquet"
    with pytest.raises(InputError) as err:  # (written; read_traces refused the file)
        tio.write_traces(path, traces)
    assert err.value.file == str(path)
    assert not path.exists()
    tio.write_traces(path, SiteTraces(np.zeros((2, 3, 2), np.int16), "v2", site_ids=[4, 9]))
    assert tio.read_traces(path).site_ids.tolist() == [4, 9]


@pytest.mark.parametrize(("case", "field"), [
    ("brute-float", "site1"), ("brute-text", "queries"), ("cutoff-nan", "weights"),
    ("cutoff-rows", "rows")])
def test_reference_engines_check_their_inputs(case: str, field: str) -> None:
    from topicslab import attacks
    from topicslab.attacks.matching import cutoff_dummies

    s1 = np.array([[1, 2], [3, 4], [1, 4]], np.int16)
    calls = {"brute-float": lambda: attacks.brute_force_counts(s1 + 0.5, s1[:2]),
             "brute-text": lambda: attacks.brute_force_counts(s1, [["a", "b"]]),
             "cutoff-nan": lambda: cutoff_dummies(3, [0, 1], [float("nan"), 2.0]),
             "cutoff-rows": lambda: cutoff_dummies(3, [0.5, 1], [1.0, 2.0])}
    with pytest.raises(InputError) as err:  # (1.5 matched no answer; NaN dummies)
        calls[case]()
    assert err.value.field == field
    assert attacks.brute_force_counts(s1, s1[:2]).tolist() == [[1, 1, 0, 1], [1, 0, 1, 1]]


@pytest.mark.parametrize("pair", [[1], [1, 4], [1.5, 4, 0.1], ["1", 4, 0.1], (1, 4, "x")])
def test_population_params_pair_tables_are_checked(pair: Any) -> None:
    from topicslab.population import generate, load_reference

    p = load_reference()
    p.cotags = [pair]
    with pytest.raises(InputError) as err:  # ([1] was "not enough values to unpack", and
        generate(10, 2, seed=1, params=p)  # topic 1.5 was truncated to topic 1)
    assert err.value.field == "cotags[0]"


@pytest.mark.parametrize(("case", "error"), [
    ("bound", InputError), ("counts", TypeError), ("engine", TypeError)])
def test_release_counts_checks_what_it_records(case: str, error: type, work: Path) -> None:
    from topicslab import dp
    from topicslab.population import generate

    bounded, _ = dp.bound_contributions(generate(40, 2, seed=1).sets, 469, k=5, seed=1)
    counts = dp.pair_counts(bounded, 469)
    kw: dict[str, Any] = {"bound": {"bound": "xyz"}, "engine": {"engine": 5}}.get(case, {})
    with pytest.raises(error):  # (bound "xyz" was recorded in a ledger load_statistics refuses)
        dp.release_counts(np.zeros(3) if case == "counts" else counts, "v2", k=5,
                          weeks=[0, 1], seed=1, **kw)
    st = dp.release_counts(counts, "v2", k=5, weeks=[0, 1], seed=1)  # (text: AttributeError)
    dp.save_statistics(work / "s", st)
    assert dp.load_statistics(work / "s").k == 5


@pytest.mark.parametrize(("name", "fmt", "users", "field"), [
    ("a.csv", "parquet", 5, "format"), ("a.tfrecord", "parquet", 5, "format"),
    ("a.parquet", "tfrecord", 5, "format"),
    ("a.parquet", "csv", 5, "format")])
def test_sample_to_file_writes_what_its_readers_take(name: str, fmt: str, users: int,
                                                      field: str, work: Path) -> None:
    from topicslab import io as tio
    from topicslab.model import TypeMixture, sample_to_file

    theta = np.random.default_rng(0).normal(size=(2, 2, 5, 469)).astype(np.float32)
    model = TypeMixture(theta, "v2")
    with pytest.raises(InputError) as err:  # (a.csv got Parquet bytes)
        sample_to_file(model, work / name, users, seed=1, format=fmt, progress=False)
    assert err.value.field == field
    assert not list(work.iterdir())
    sample_to_file(model, work / "ok.pq", 3, seed=1, progress=False)
    assert tio.read_sets(work / "ok.pq").n_users == 3


@pytest.mark.parametrize(("case", "error", "field"), [
    ("pop-nan", InputError, "popularity"), ("cats-text", TypeError, None),
    ("model-text", InputError, "model"), ("model-max", InputError, "model")])
def test_simulate_personas_checks_its_knobs(case: str, error: type, field: str | None) -> None:
    from topicslab import disclosure

    cats = disclosure.default_categories()
    calls = {
        "pop-nan": lambda: disclosure.simulate_personas(  # (NaN weights were drawn from)
            [0, 1], 0.1, categories=cats, epochs=2, popularity=np.full(469, np.nan)),
        "cats-text": lambda: disclosure.simulate_personas([0, 1], 0.1, categories="abc"),
        "model-text": lambda: disclosure.PersonaModel(interests_mean="5"),  # (TypeError)
        "model-max": lambda: disclosure.PersonaModel(max_interests=2.5),
    }
    with pytest.raises(error) as err:
        calls[case]()
    if field:
        assert err.value.field == field
    if case == "model-max":
        assert "max_interests must be" in str(err.value)  # (it blamed interests_mean)


@pytest.mark.parametrize(("case", "field"), [
    ("truth-fraction", "truth"), ("m-hat-nan", "m_hat"), ("qbp-nan", "queries_between_probes"),
    ("exclude-fraction", "exclude"), ("m-hat-text", "m_hat")])
def test_evaluate_checks_its_inputs(case: str, field: str) -> None:
    from topicslab import disclosure

    m = np.array([[0.5, 0.5], [0.4, 0.6], [0.6, 0.4], [0.5, 0.5]])
    det = disclosure.Detector(disclosure.learn_bands(m, [0, 1, 0, 1], ["a", disclosure.OTHER]))
    mh: Any = np.random.default_rng(0).random((3, 10, 2))
    truth: Any = np.array([0, 1, 0])
    kw: dict[str, Any] = {}
    if case == "truth-fraction":
        truth = truth + 0.5  # (0.5 was category 0)
    elif case == "m-hat-nan":
        mh = np.full((3, 10, 2), np.nan)  # (inside no band, silently)
    elif case == "m-hat-text":
        mh = [[["a", "b"]]]
    elif case == "qbp-nan":
        kw = {"queries_between_probes": float("nan")}  # (NaN timings)
    else:
        kw = {"exclude": (0.5,)}  # (a TypeError of a slice)
    with pytest.raises(InputError) as err:
        disclosure.evaluate(mh, truth, det, **kw)
    assert err.value.field == field
    with pytest.raises(TypeError, match="Detector"):
        disclosure.evaluate(np.zeros((3, 10, 2)), [0, 1, 0], None)


@pytest.mark.parametrize(("counts", "n_ads", "field"), [
    ([[3, 1], [1, 3]], [4.5, 4], "n_ads"), ([[np.inf, 1], [1, 3]], [4, 4], "counts")])
def test_pri_fit_counts_takes_counts(counts: Any, n_ads: Any, field: str) -> None:
    from topicslab import disclosure

    with pytest.raises(InputError) as err:  # (4.5 adverts were 4; inf made NaN ratios)
        disclosure.PRI.fit_counts(np.array(counts, float), np.array(n_ads), (1, 4),
                                  ("a", "other"))
    assert err.value.field == field


@pytest.mark.parametrize(("kw", "field"), [
    ({"batch_rows": 0}, "batch_rows"), ({"epoch_start": 5}, "epoch_start")])
def test_ingest_visits_checks_batch_rows_and_epoch_start(kw: dict[str, Any], field: str,
                                                        work: Path) -> None:
    from topicslab.api.ingest import ingest_visits

    (work / "domains.csv").write_text("domain,topics\na.com,1\n")
    (work / "visits.csv").write_text("user_id,timestamp,domain\n1,2024-01-01T10:00:00Z,a.com\n")
    with pytest.raises(InputError) as err:  # (0 rows a batch: the default, silently; 5: an
        ingest_visits(work / "visits.csv", work / "domains.csv", **kw)  # AttributeError)
    assert err.value.field == field
    got = ingest_visits(work / "visits.csv", work / "domains.csv", batch_rows=1,
                        epoch_start="2024-01-01")
    assert got.sets.n_users == 1


def test_observe_names_the_lookback_past_the_weeks() -> None:
    from topicslab.api import Mechanism, observe

    with pytest.raises(InputError) as err:  # ("observing 0 call-week(s) with lookback 4 needs
        observe(_profiles(), 2, mechanism=Mechanism(lookback=4))  # 3 weeks; sets have 3")
    assert "lookback of 4" in str(err.value) and "sets have 3" in str(err.value)
    assert observe(_profiles(), 2, mechanism=Mechanism(lookback=3)).shape == (2, 4, 3)


def test_build_report_names_a_missing_synthetic_release() -> None:
    from topicslab.report import build_report

    with pytest.raises(TypeError, match="synthetic and population take TopicSets"):
        build_report({}, statistics=None, synthetic=None)  # ("m (taxonomy size) is required")


def test_fit_quality_refuses_across_terms_of_a_one_week_release() -> None:
    from topicslab import dp, validate
    from topicslab.model import TypeMixture
    from topicslab.population import generate

    pop = generate(60, 2, seed=1)
    theta = np.random.default_rng(0).normal(size=(2, 2, 5, 469)).astype(np.float32)
    with pytest.raises(InputError) as err:  # (219,961 across terms scored against zeros)
        validate.fit_quality(dp.compute_statistics(pop, seed=2, weeks=[0]),
                             TypeMixture(theta, "v2"))
    assert err.value.field == "weeks"
    one = TypeMixture(theta[:, :1], "v2")
    assert validate.fit_quality(dp.compute_statistics(pop, seed=2, weeks=[0]), one).loss >= 0


def test_stress_apply_checks_its_base_parameters() -> None:
    from topicslab.population import Stress, load_reference

    with pytest.raises(InputError) as err:  # (v2 cliques added to v1 parameters: refused
        Stress(groups=0.5).apply(load_reference("v1"))  # later as "cotags[0]: topic id 392")
    assert err.value.field == "taxonomy"
    with pytest.raises(TypeError):  # (a dict failed on a missing attribute)
        Stress(persistence=0.5).apply({})
    assert Stress(groups=0.5).apply(load_reference("v1"), "v1").taxonomy == "v1"


def test_theory_and_bounds_check_their_sets_and_popularity() -> None:
    from topicslab.attacks.bounds import reid_bounds
    from topicslab.attacks.theory import theory_curve
    from topicslab.population import generate

    pop = generate(30, 2, seed=1)
    with pytest.raises(InputError) as err:  # ("the truth value of an array is ambiguous")
        reid_bounds(pop, weeks=1, popularity=np.ones(469))
    assert err.value.field == "popularity"
    with pytest.raises(TypeError, match="takes TopicSets"):  # (an AttributeError)
        theory_curve(pop.sets, weeks=(1,), progress=False)
