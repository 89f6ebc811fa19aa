"""Bad input, the twenty-fifth independent round (issue 15): the public Python API that
earlier rounds did not try (``api``, ``attacks``, ``qif``, ``dp``, ``model``, ``validate``,
``population`` and ``experiment`` beyond their main entry points), and ``disclosure``,
``observe`` and ``qif`` on the command line (all refused as they should be).

- ``experiment.run`` created ``OUT`` before reading its input: sets of no users or too few
  weeks, a ``--stats`` directory that holds no statistics, or an unknown ``sets_taxonomy``
  were refused with an empty ``OUT`` left behind (the CLI removes it); an existing file as
  ``out`` was a ``FileExistsError``.
- ``population.generate(first_user=2**63 - 3)`` of 10 users wrapped the last ids to negative
  ones (``model.sample`` was fixed in round 24).
- ``dp.stream_statistics`` took ``seed=1.5`` as 1 and ``2**64`` as it came (``-1`` was a
  ``ValueError``) and ``chunk_users=1.5`` as 1; ``dp.release_counts`` took ``seed=1.5`` as 1
  and a week given twice; ``dp.RandomWords(1.5)`` (and ``"1"``) was seed 1's stream.
- ``api.top_k_sparse`` truncated a fractional ``indptr`` and ``row_keys`` (a negative key
  wrapped to another row's), and ranked a topic given twice in a row twice: the profile held
  it twice. ``api.answers``/``observe`` ended ``sites=10**12`` in a ``MemoryError`` (the site
  ids were drawn before the memory check) and gave two rows of one ``user_ids`` entry the same
  answers everywhere.
- ``attacks.reid_bounds``: ``weeks=1.5`` and ``seed=1.5`` were ``TypeError``s, ``seed=-1`` a
  ``ValueError``, and ``max_cells=-1`` or ``2.5`` was taken; ``measure_risk_traces(seed=-1)``
  was NumPy's ``ValueError``. ``AsymmetricAttack`` took ``pseudo_count=-1`` and ``clip=2``
  (``ValueError``s deep in the trials) and clipped a given popularity of NaN or -1 into (0, 1).
- ``qif.distinct_profiles``/``population_tables``: ``weeks=1.5`` was "'float' object is not
  iterable", and a week given twice (``[0, 0]``, or ``[0, -4]`` of 4 weeks) a profile of two
  identical epochs; ``max_cells=-1`` was taken; ``channel_sums`` returned NaN for ``r=NaN``,
  and weights of another length were an ``IndexError``.
- ``model.check_statistics``, ``statistics_fingerprint``, ``fit`` and
  ``validate.fit_quality`` given a model where statistics belong said "float() argument must
  be ... not 'method'"; ``fit_quality`` took ``week_pairs`` past the model's weeks or
  negative; ``model.QualityBar`` took a share of 2 and a NaN or negative tolerance;
  ``model.week_map(1.5, 4)`` mapped a week to 0.5; ``alias_tables`` and
  ``export_release_parameters`` of statistics were ``AttributeError``s.
- ``population.generate`` used ``PopulationParams`` built in Python as they came
  (``explore_prob=2``, a NaN sigma, tables of another taxonomy), as the parameters file is
  not; ``calibrate`` took ``iterations=-1`` and ``rate=0`` or NaN (the initial knobs came back
  as calibrated); ``empirical_statistics(sets, m=10)`` ignored ``m``.
- ``dp.bound_contributions`` took ``user_ids`` of another length and ``seed=-1`` or ``1.5``;
  ``Taxonomy.id_of(1.5)`` was dense index 1 and ``is_known(1.5)`` said topic 1.5 is known;
  ``validate.distinct_topics_comparison`` compared sets of no users.
- ``qif.multi_epoch_capacity(mode="x")`` was answered as ``kronecker`` when k <= s;
  ``attacks.solve_assignment`` truncated a fractional edge endpoint; ``register_attack``
  registered a factory that is not callable.

API cases are plain ``pytest.raises(InputError)`` tests naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from refusal import (
    api_refused,
    fit_small_model,
    invoke,
    population_and_stats,
    random_profiles,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A population and its statistics, a fitted model, sets of no users and of 2 weeks."""
    from topicslab import io as tio
    from topicslab.datamodel import TopicSets

    d = tmp_path_factory.mktemp("round25")
    population_and_stats(d)
    fit_small_model(invoke, d)
    tio.write_sets(d / "empty.parquet", _empty())
    tio.write_sets(d / "w2.parquet", TopicSets(random_profiles(30, 2, seed=2), "v2",
                                               np.arange(30, dtype=np.int64)))
    return d


def _sets(users: int = 60) -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(random_profiles(users, 4, seed=1), "v2", np.arange(users, dtype=np.int64))


def _empty() -> Any:
    from topicslab.datamodel import TopicSets

    return TopicSets(np.zeros((0, 4, 5), np.int16), "v2", np.zeros(0, np.int64))


def _run(i: Path, w: Path, **options: Any) -> Any:
    from topicslab import experiment

    return experiment.run("smoke", w / "out", **options)


def _stream(i: Path, **options: Any) -> Any:
    from topicslab import dp

    return dp.stream_statistics(i / "pop.parquet", epsilon=1.0, delta=1e-6, **options)


def _release(**options: Any) -> Any:
    from topicslab import dp
    from topicslab.taxonomy import resolve

    bounded, _ = dp.bound_contributions(_sets().sets, 469, k=5)
    return dp.release_counts(dp.pair_counts(bounded, 469), resolve("v2"), **{
        "k": 5, "weeks": [0, 1, 2, 3], "epsilon": 1.0, "delta": 1e-6, "seed": 0, **options})


def _top_k_sparse(**options: Any) -> Any:
    from topicslab import api

    return api.top_k_sparse(**{"indptr": [0, 2, 3], "topics": [1, 5, 7], "counts": [3, 2, 1],
                               **options})


def _api(name: str, *args: Any, **options: Any) -> Any:
    import importlib

    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(f"topicslab.{module}"), attr)(*args, **options)


def _generate(**fields: Any) -> Any:
    import dataclasses

    from topicslab import population

    params = dataclasses.replace(population.load_reference("v2"), **fields)
    return population.generate(10, params=params, taxonomy="v2")


def _model(i: Path) -> Any:
    from topicslab import model

    return model.load_model(i / "model")


def _stats(i: Path) -> Any:
    from topicslab import dp

    return dp.load_statistics(i / "stats")


def _profiles() -> Any:
    from topicslab import qif

    return qif.distinct_profiles(_sets())


@pytest.mark.parametrize(("call", "named"), [
    (lambda i, w: _run(i, w, sets_path=i / "empty.parquet"),
     "field '--sets': holds no users"),
    (lambda i, w: _run(i, w, sets_path=i / "w2.parquet"),
     "field '--sets': the run needs 4 weeks, the file has 2"),
    (lambda i, w: _run(i, w, stats_dir=i / "model"), "field '--stats': no q_within.json"),
    (lambda i, w: _run(i, w, sets_path=i / "pop.parquet", sets_taxonomy="v3"),
     "field '--taxonomy': --taxonomy must be one of v1, v2, got 'v3'"),
    (lambda i, w: _api("experiment.run", "smoke", i / "pop.parquet"),
     "pop.parquet, field '--out': is an existing file"),
    (lambda i, w: _api("population.generate", 10, first_user=2**63 - 3),
     "field 'first_user': first_user must be in 0..9223372036854775798"),
    (lambda i, w: _stream(i, seed=1.5), "field 'seed': seed must be an integer, got 1.5"),
    (lambda i, w: _stream(i, seed=2**64), "field 'seed': seed must be in 0..9223372036854775807"),
    (lambda i, w: _stream(i, seed=-1), "field 'seed': seed must be in 0.."),
    (lambda i, w: _stream(i, chunk_users=1.5),
     "field 'chunk_users': chunk_users must be an integer, got 1.5"),
    (lambda i, w: _release(seed=1.5), "field 'seed': seed must be an integer, got 1.5"),
    (lambda i, w: _release(weeks=[0, 0, 1, 2]),
     "field 'weeks': weeks [0, 0, 1, 2] name a week twice"),
    (lambda i, w: _api("dp.RandomWords", 1.5), "field 'seed': seed must be an integer, got 1.5"),
    (lambda i, w: _top_k_sparse(indptr=[0, 1.5, 3]),
     "field 'indptr': indptr must hold whole numbers, got 1.5"),
    (lambda i, w: _top_k_sparse(topics=[5, 5, 7]),
     "field 'topics': topic 5 appears twice in row 0"),
    (lambda i, w: _top_k_sparse(row_keys=[0.5, 1]),
     "field 'row_keys': row_keys must hold whole numbers, got 0.5"),
    (lambda i, w: _top_k_sparse(row_keys=[-1, 1]),
     "field 'row_keys': row_keys must be non-negative, got -1"),
    (lambda i, w: _api("api.answers", _sets().sets, 10**12), "field 'sites'"),
    (lambda i, w: _api("api.observe", _sets().sets, user_ids=np.r_[np.arange(59), 3]),
     "field 'user_ids': user id 3 appears more than once"),
    (lambda i, w: _api("attacks.reid_bounds", _sets(), weeks=1.5),
     "field 'weeks': weeks must be an integer, got 1.5"),
    (lambda i, w: _api("attacks.reid_bounds", _sets(), seed=-1), "field 'seed': seed must be"),
    (lambda i, w: _api("attacks.reid_bounds", _sets(), max_cells=-1),
     "field 'max_cells': max_cells must be"),
    (lambda i, w: _api("attacks.measure_risk_traces", np.zeros((20, 2), np.int16),
                       np.zeros((20, 2), np.int16), targets=5, seed=-1),
     "field 'seed': seed must be"),
    (lambda i, w: _api("attacks.AsymmetricAttack", pseudo_count=-1),
     "field 'pseudo_count': pseudo_count must be"),
    (lambda i, w: _api("attacks.AsymmetricAttack", clip=2), "field 'clip': clip must be"),
    (lambda i, w: _api("attacks.AsymmetricAttack", popularity=np.full(469, np.nan)),
     "field 'popularity': popularity must be a 1-d array of probabilities"),
    (lambda i, w: _api("qif.distinct_profiles", _sets(), weeks=1.5),
     "field 'weeks': weeks must be week indices (integers), got 1.5"),
    (lambda i, w: _api("qif.distinct_profiles", _sets(), weeks=[0, -4]),
     "field 'weeks': weeks [0, -4] name a week twice"),
    (lambda i, w: _api("qif.population_tables", _sets(), weeks=[1, 1]),
     "field 'weeks': weeks [1, 1] name a week twice"),
    (lambda i, w: _api("qif.population_tables", _sets(), max_cells=-1),
     "field 'max_cells': max_cells must be"),
    (lambda i, w: _api("qif.channel_sums", _profiles(), [(np.ones(60), float("nan"))]),
     "field 'r': r must be a finite number"),
    (lambda i, w: _api("qif.channel_sum", _profiles(), np.ones(3), 0.05),
     "field 'weights': weights must be 60 finite non-negative numbers"),
    (lambda i, w: _api("model.check_statistics", _model(i)),
     "field 'q_single': TypeMixture holds no q_single array"),
    (lambda i, w: _api("model.statistics_fingerprint", _model(i)),
     "field 'q_single': TypeMixture holds no q_single array"),
    (lambda i, w: _api("validate.fit_quality", _model(i), _model(i)),
     "field 'q_single': TypeMixture holds no q_single array"),
    (lambda i, w: _api("validate.fit_quality", _stats(i), _model(i), week_pairs=[(0, 9)]),
     "field 'week_pairs': week_pairs must be in 0..3, got 9"),
    (lambda i, w: _api("validate.fit_quality", _stats(i), _model(i), week_pairs=[(-1, 0)]),
     "field 'week_pairs': week_pairs must be in 0..3, got -1"),
    (lambda i, w: _api("model.QualityBar", abs_share=2.0), "field 'abs_share': abs_share must"),
    (lambda i, w: _api("model.QualityBar", rel_tol=-1.0), "field 'rel_tol': rel_tol must"),
    (lambda i, w: _api("model.QualityBar", abs_tol=float("nan")), "field 'abs_tol': abs_tol must"),
    (lambda i, w: _generate(explore_prob=2.0),
     "field 'explore_prob': must be a finite number in [0, 1], got 2"),
    (lambda i, w: _generate(activity_log_sigma=float("nan")),
     "field 'activity_log_sigma': must be a finite number"),
    (lambda i, w: _generate(taxonomy="v1"),
     "field 'taxonomy': the parameters are for taxonomy v1, not v2"),
    (lambda i, w: _api("population.calibrate", n_users=100, iterations=-1, log=None),
     "field 'iterations': iterations must be >= 1, got -1"),
    (lambda i, w: _api("population.calibrate", n_users=100, rate=float("nan"), log=None),
     "field 'rate': rate must be"),
    (lambda i, w: _api("population.empirical_statistics", _sets(), m=10),
     "field 'm': m is the taxonomy's size for TopicSets: 469 (v2), got 10"),
    (lambda i, w: _api("model.week_map", 1.5, 4),
     "field 'fitted_weeks': fitted_weeks must be an integer, got 1.5"),
    (lambda i, w: _api("dp.bound_contributions", _sets().sets, 469, k=5, user_ids=[1, 2]),
     "field 'user_ids': user_ids must have one entry per user (60)"),
    (lambda i, w: _api("dp.bound_contributions", _sets().sets, 469, k=5, seed=1.5),
     "field 'seed': seed must be an integer, got 1.5"),
    (lambda i, w: _api("validate.distinct_topics_comparison", _sets(), _empty()),
     "field 'synthetic_sets': the sets hold no users"),
    (lambda i, w: _api("qif.multi_epoch_capacity", 10, 2, 0.05, 2, mode="x"),
     "field 'mode': mode must be one of parallel, kronecker, got 'x'"),
    (lambda i, w: _api("attacks.solve_assignment", 2, 2, [0, 1.5], [0, 1], [1.0, 1.0]),
     "field 'rows': rows must hold whole numbers, got 1.5"),
], ids=["run-sets-of-no-users", "run-sets-of-2-weeks", "run-stats-not-statistics",
        "run-sets-taxonomy-v3", "run-out-is-a-file", "generate-ids-past-64-bits",
        "stream-seed-fraction", "stream-seed-past-63-bits", "stream-seed-negative",
        "stream-chunk-fraction", "release-counts-seed-fraction", "release-counts-week-twice",
        "random-words-seed-fraction", "top-k-sparse-indptr-fraction",
        "top-k-sparse-topic-twice-in-a-row", "top-k-sparse-row-key-fraction",
        "top-k-sparse-row-key-negative", "answers-sites-past-memory", "observe-user-id-twice",
        "reid-bounds-weeks-fraction", "reid-bounds-seed-negative", "reid-bounds-max-cells",
        "measure-risk-traces-seed-negative", "asymmetric-pseudo-count", "asymmetric-clip",
        "asymmetric-popularity-nan", "distinct-profiles-weeks-fraction",
        "distinct-profiles-week-twice", "population-tables-week-twice",
        "population-tables-max-cells", "channel-sums-r-nan", "channel-sum-weights-length",
        "check-statistics-of-a-model", "fingerprint-of-a-model", "fit-quality-model-as-stats",
        "fit-quality-week-pair-past", "fit-quality-week-pair-negative", "quality-bar-share",
        "quality-bar-tolerance", "quality-bar-nan", "generate-params-explore-2",
        "generate-params-sigma-nan", "generate-params-of-v1", "calibrate-iterations-negative",
        "calibrate-rate-nan", "empirical-statistics-m-ignored", "week-map-fraction",
        "bound-contributions-user-ids-length", "bound-contributions-seed-fraction",
        "distinct-comparison-of-no-users", "multi-epoch-capacity-mode",
        "solve-assignment-row-fraction"])
def test_api_refuses(inputs: Path, work: Path, call: Any, named: str) -> None:
    api_refused(call, inputs, work, named)


def test_api_guards(inputs: Path) -> None:
    """What the new checks must still take."""
    from topicslab import api, attacks, population, qif, validate

    assert _top_k_sparse(topics=[5, 7, 5]).shape == (2, 5)  # one topic in two rows
    assert _top_k_sparse(row_keys=np.array([2**64 - 1, 1], np.uint64)).shape == (2, 5)
    assert api.answers(_sets().sets, user_ids=np.arange(60) * 7).shape == (2, 60, 4)
    ids = population.generate(10, first_user=2**63 - 10).user_ids
    assert int(ids[-1]) == 2**63 - 1
    assert attacks.reid_bounds(_sets(), weeks=2, max_cells=0).weeks == 2
    assert qif.distinct_profiles(_sets(), weeks=-1).sets.shape[1] == 1  # an index from the end
    assert qif.distinct_profiles(_sets(), weeks=np.int64(1)).sets.shape[1] == 1
    model = _model(inputs)
    validate.fit_quality(_stats(inputs), model, week_pairs=[(model.weeks - 1, 0)])
    assert attacks.AsymmetricAttack(popularity=np.full(469, 0.01)).clip == 1e-6
    assert _release(seed=2**63 - 1).k == 5
    assert _stream(inputs, seed=3).k == 5
    assert _generate().n_users == 10
    assert list(_api("taxonomy.resolve", "v2").is_known([1.5, 1.0])) == [False, True]


@pytest.mark.parametrize("name", ["model.alias_tables", "model.export_release_parameters"])
def test_statistics_where_a_model_belongs_is_a_type_error(inputs: Path, work: Path,
                                                          name: str) -> None:
    """(an ``AttributeError`` on ``.slot_probabilities`` or ``.stay`` before)"""
    args = [_stats(inputs)] if name.endswith("tables") else [work / "o.json", _stats(inputs)]
    with pytest.raises(TypeError, match="takes a TypeMixture"):
        _api(name, *args)
    assert not list(work.iterdir())


def test_a_fractional_dense_index_is_not_a_topic() -> None:
    """``Taxonomy.id_of(1.5)`` was dense index 1's id (``UnknownTopicError``, as ``index``)."""
    from topicslab.errors import UnknownTopicError
    from topicslab.taxonomy import resolve

    with pytest.raises(UnknownTopicError, match="dense topic indices must be integers"):
        resolve("v2").id_of([1.5])


def test_register_attack_refuses_what_cannot_make_an_attack() -> None:
    """(``5`` was registered, and failed only when the attack was made)"""
    from topicslab import attacks

    with pytest.raises(TypeError, match="takes a factory"):
        attacks.register_attack("round25-not-callable", 5)  # type: ignore[arg-type]
    assert "round25-not-callable" not in attacks.available_attacks()


# ---- round 25's three low-level leftovers, refused since the sixth session ----------------

def _traces(n: int = 12, weeks: int = 3) -> npt.NDArray[np.int16]:
    return np.random.default_rng(0).integers(0, 5, size=(n, weeks)).astype(np.int16)


@pytest.mark.parametrize("rows", [[0, 1, 12], [0, -2, 1], [0, 1]])
def test_true_rows_outside_site1_are_refused(rows: list[int]) -> None:
    from topicslab.attacks import HammingAttack, evaluate_attacks, matching_attack

    site1 = _traces()
    queries = site1[:3]
    attack = HammingAttack().fit(site1)
    with pytest.raises(ValueError, match="true_rows"):
        evaluate_attacks(site1, queries, np.array(rows), [attack])
    with pytest.raises(ValueError, match="true_rows"):
        matching_attack(site1, queries, np.array(rows), [attack], candidates=3)


def test_cutoff_dummies_and_match_masks_check_their_shapes() -> None:
    from topicslab.attacks import cutoff_dummies, match_masks

    with pytest.raises(ValueError, match="one length"):
        cutoff_dummies(4, np.array([0, 1, 2]), np.array([0.5, 0.2]))
    with pytest.raises(ValueError, match=r"0\.\.3"):
        cutoff_dummies(4, np.array([0, 4]), np.array([0.5, 0.2]))
    with pytest.raises(ValueError, match="one shape"):
        match_masks(np.zeros((3, 4), np.int16), np.zeros((3, 3), np.int16))
    # the valid cases still work
    assert cutoff_dummies(3, np.array([0, 0, 2]), np.array([0.5, 0.2, 0.7])).shape == (3,)
    assert match_masks(np.zeros((2, 3), np.int16), np.zeros((2, 3), np.int16)).tolist() == [7, 7]
