"""Bad input, the thirtieth independent round.

- ``import_release_parameters`` (``sample --model output_parameters.json``) read topic keys with
  ``int()``: ``"01"``, ``" 1"``, ``"1_2"`` and full-width digits were topic ids, so a second
  key of the same topic (``"1"`` and ``"01"``) silently replaced the first one's logit; a logit
  past float32's range (1e308) was refused as "theta has non-finite logits", naming no file.
- ``qif.iba_vulnerabilities`` checked nothing: a topic id >= m wrote past its co-occurrence
  matrix (a segmentation fault), a topic twice in a set gave a vulnerability of 2;
  ``iba_theorem7_bounds`` took a prior vulnerability of 2 (an upper bound of 1.05).
- qif's explicit channels, compositions, figures and combinatorial helpers: MemoryErrors of
  TiBs, a parallel power and figures that ran for hours, NaN gains, casts, and NumPy's or
  Python's own errors instead of one line.
- ``attacks.ldp_bound``/``ldp_delta``: epsilon NaN gave NaN (and a delta of 0), 1e308 an
  OverflowError, n = 2.5 a bound; ``asymmetric_weights(k=2.5)``.
- ``dp.calibrate_sigma`` with a negative sensitivity returned a negative sigma.
- an output file replaced a file of another command's output: ``reid --json model/model.json``
  destroyed a fitted model.
- ``qif --r -0`` printed ``q = -0`` and ``"r": -0.0``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke, invoke_refused, small_population

from topicslab.errors import InputError, TopicsLabError


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A small paper-types model's output_parameters.json, as a dict."""
    from topicslab.model.files import export_release_parameters
    from topicslab.model.typemixture import TypeMixture
    from topicslab.taxonomy import load

    tax = load("v2")
    theta = np.random.default_rng(0).normal(size=(2, 2, 5, tax.size)).astype(np.float32)
    path = tmp_path_factory.mktemp("round30") / "output_parameters.json"
    export_release_parameters(path, TypeMixture(theta, tax))
    return json.loads(path.read_text())


@pytest.mark.parametrize(("key", "value"), [("01", 50.0), (" 1", 50.0), ("1_2", 50.0),
                                            ("\uff11\uff12", 50.0), ("+1", 50.0)])
def test_release_topic_keys_are_canonical_ids(release: dict, tmp_path: Path, key: str,
                                              value: float) -> None:
    from topicslab.model.files import import_release_parameters

    doc = json.loads(json.dumps(release))
    doc["type 0"]["epoch 0"]["slot 0"][key] = value  # the same topic as "1" or "12"
    path = tmp_path / "op.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="is not an integer id") as exc:
        import_release_parameters(path)
    assert "type 0/epoch 0/slot 0" in str(exc.value)


def test_release_logit_past_float32_is_named(release: dict, tmp_path: Path) -> None:
    doc = json.loads(json.dumps(release))
    doc["type 1"]["epoch 1"]["slot 2"]["1"] = 1e308
    path = tmp_path / "op.json"
    path.write_text(json.dumps(doc))
    res = invoke(["sample", "--model", str(path), "--users", "5", "--seed", "0", "--out",
                  str(tmp_path / "s.parquet")])
    line = check_refused(res.output, res.exit_code, "type 1/epoch 1/slot 2")
    assert "op.json" in line and "float32" in line
    assert not (tmp_path / "s.parquet").exists()


# ``qif.iba_vulnerabilities`` checked nothing: a topic id >= m wrote past its m x m
# co-occurrence matrix (2**24 with m = 10: a segmentation fault), a topic twice in a set gave
# a vulnerability of 2, weights of another length were NumPy's broadcast ValueError, m = 0 a
# ZeroDivisionError, r = 1.5 or NaN weights were used as given
@pytest.mark.parametrize(("topics", "weights", "m", "r", "named"), [
    ([[1, 2**24]], [1.0], 10, 0.05, "topics"),
    ([[1, 20]], [1.0], 10, 0.05, "topics"),
    ([[1, -2]], [1.0], 10, 0.05, "topics"),
    ([[1, 1]], [1.0], 10, 0.05, "topics"),
    ([[1.5, 2]], [1.0], 10, 0.05, "topics"),
    ([1, 2], [1.0, 1.0], 10, 0.05, "topics"),
    ([[1, 2]], [1.0, 2.0], 10, 0.05, "weights"),
    ([[1, 2], [3, 4]], [1.0, -2.0], 10, 0.05, "weights"),
    ([[1, 2]], [float("nan")], 10, 0.05, "weights"),
    ([[1, 2]], "a", 10, 0.05, "weights"),
    ([[1, 2]], [1.0], 0, 0.05, "'m'"),
    ([[1, 2]], [1.0], True, 0.05, "'m'"),
    ([[1, 2]], [1.0], 10, 1.5, "'r'"),
    ([[1, 2]], [1.0], 10, float("nan"), "'r'"),
], ids=["id-2^24", "id>=m", "id-2", "twice", "fraction", "1-D", "weights-length",
        "weights-negative", "weights-nan", "weights-text", "m0", "m-bool", "r1.5", "r-nan"])
def test_iba_vulnerabilities_checks_its_inputs(topics: object, weights: object, m: object,
                                               r: object, named: str) -> None:
    from topicslab.qif import iba_vulnerabilities

    with pytest.raises(InputError, match=named):
        iba_vulnerabilities(topics, weights, m, r)  # type: ignore[arg-type]


def test_iba_vulnerabilities_of_padded_sets_still_computes() -> None:
    from topicslab.qif import iba_vulnerabilities

    prior, post = iba_vulnerabilities([[1, -1], [2, 3]], [0.5, 0.5], 10, 0.05)
    assert prior == pytest.approx(0.5) and 0.5 < post <= 1.0


@pytest.mark.parametrize(("call", "named"), [
    (lambda q: q.iba_theorem7_bounds(0.05, 2.0), "prior_iba"),
    (lambda q: q.iba_theorem7_bounds(float("nan"), 0.5), "'r'"),
    (lambda q: q.iba_tight_lower_bound(469, float("nan"), 0.05), "'s'"),
    (lambda q: q.iba_tight_lower_bound(10, 50, 0.05), "'s'"),
], ids=["theorem7-prior2", "theorem7-r-nan", "tight-s-nan", "tight-s>m"])
def test_iba_bounds_check_their_inputs(call: object, named: str) -> None:
    from topicslab import qif

    with pytest.raises(InputError, match=named):
        call(qif)  # type: ignore[operator]


# the explicit channels and their compositions (``qif.core``, ``qif.compose``,
# ``qif.channels``), the figures and the combinatorial helpers: MemoryErrors of TiBs
# (identity_channel(10**6), deterministic_channel([10**12])), a parallel power that ran out of
# memory after minutes, figures of a billion points that ran for hours, NumPy's zero-size
# reduction ValueError for an empty channel, a NaN gain giving a NaN vulnerability, casts
# (deterministic_channel([0.5]) was column 0, r_for_capacity(decimals=2.5) floored to
# multiples of 1/316.2) and Python's TypeError/ValueError/InvalidOperation for the rest
_C = [[0.5, 0.5], [0.2, 0.8]]


@pytest.mark.parametrize(("call", "named"), [
    (lambda q: q.identity_channel(10**6), "'n'"),
    (lambda q: q.identity_channel(2.5), "'n'"),
    (lambda q: q.deterministic_channel([10**12]), "outputs"),
    (lambda q: q.deterministic_channel([0.5]), "outputs"),
    (lambda q: q.deterministic_channel([0, 1], 0), "n_outputs"),
    (lambda q: q.parallel_power(_C, 80), "'k'"),
    (lambda q: q.parallel_power(_C, 2.5), "'k'"),
    (lambda q: q.kron_power(_C, 2.5), "'n'"),
    (lambda q: q.k_anonymity(np.zeros((0, 0))), "non-empty"),
    (lambda q: q.bayes_capacity(np.zeros((0, 3))), "non-empty"),
    (lambda q: q.bayes_capacity([["a", "b"]]), "numeric"),
    (lambda q: q.posterior_vulnerability([0.5, 0.5], _C, np.full((2, 2), np.nan)), "finite"),
    (lambda q: q.figure5(n_max=10**9), "n_max"),
    (lambda q: q.figure5(n_max=0), "n_max"),
    (lambda q: q.tradeoff_figure(469, r_points=10**9), "r_points"),
    (lambda q: q.round_half_up(1.25, 400), "decimals"),
    (lambda q: q.r_for_capacity(2.0, 469, 5, 2.5), "decimals"),
    (lambda q: q.tuples_with_partition(5, (-1, 2)), "lam"),
    (lambda q: q.tuples_with_partition(5, (10**9,)), "lam"),
    (lambda q: q.tuples_with_partition(5.5, (1,)), "'m'"),
    (lambda q: list(q.multiplicity_partitions(2.5)), "'k'"),
], ids=["identity-1e6", "identity-2.5", "deterministic-1e12", "deterministic-0.5",
        "deterministic-n0", "parallel-80", "parallel-2.5", "kron-2.5", "k-anonymity-empty",
        "capacity-no-secret", "capacity-text", "gain-nan", "figure5-1e9", "figure5-0",
        "tradeoff-1e9", "round-400", "r-for-capacity-2.5", "partition-negative",
        "partition-1e9", "partition-m-5.5", "partitions-2.5"])
def test_qif_helpers_refuse_in_one_line(call: object, named: str) -> None:
    from topicslab import qif

    with pytest.raises(TopicsLabError, match=named):
        call(qif)  # type: ignore[operator]


def test_qif_helpers_still_compute() -> None:
    from topicslab import qif

    assert qif.parallel_power(_C, 3).shape == (2, 8)
    assert qif.deterministic_channel([0, 2]).shape == (2, 3)
    assert qif.tuples_with_partition(5, (2, 1)) == 60
    assert qif.round_half_up(66.415, 2) == 66.42
    assert qif.posterior_vulnerability([0.5, 0.5], _C, np.eye(2)) == pytest.approx(0.65)


# ``attacks.ldp_bound`` / ``ldp_delta``: epsilon = NaN gave a NaN bound and a delta of 0,
# 1e308 an OverflowError, n = 2.5 a bound for 2.5 users (and a bad n or m was reported as
# epsilon); ``asymmetric_weights(k=2.5)`` weighted sets of 2.5 topics
@pytest.mark.parametrize(("call", "named"), [
    (lambda a: a.ldp_bound(10, 469, float("nan")), "'epsilon'"),
    (lambda a: a.ldp_bound(2.5, 469, 1.0), "'n'"),
    (lambda a: a.ldp_bound(10, 469.5, 1.0), "'m'"),
    (lambda a: a.ldp_bound(10, 469, 1.0, 2.0), "'delta'"),
    (lambda a: a.ldp_delta(_C, float("nan")), "'epsilon'"),
    (lambda a: a.asymmetric_weights([0.5, 0.5], 0.2, 0.001, 2.5), "'k'"),
], ids=["ldp-bound-nan", "ldp-bound-n-2.5", "ldp-bound-m-469.5", "ldp-bound-delta-2",
        "ldp-delta-nan", "asymmetric-k-2.5"])
def test_attack_bounds_check_their_arguments(call: object, named: str) -> None:
    from topicslab import attacks

    with pytest.raises(InputError, match=named):
        call(attacks)  # type: ignore[operator]


def test_ldp_bounds_of_huge_or_infinite_epsilon_are_infinite() -> None:
    from topicslab.attacks import ldp_bound, ldp_delta

    assert ldp_bound(10, 469, 1e308) == float("inf")
    assert ldp_bound(10, 469, float("inf")) == float("inf")
    assert ldp_delta(_C, 1e308) == 0.0


@pytest.mark.parametrize("sensitivity", [-1.0, 0.0, float("nan"), float("inf"), True],
                         ids=["negative", "zero", "nan", "inf", "bool"])
def test_calibrate_sigma_checks_the_sensitivity(sensitivity: float) -> None:
    """``dp.calibrate_sigma`` with sensitivity -1 returned σ = -4.2 (0: σ = 0, NaN: NaN)."""
    from topicslab.dp import calibrate_sigma

    with pytest.raises(InputError, match="sensitivity"):
        calibrate_sigma(1.0, 1e-6, sensitivity)
    assert calibrate_sigma(1.0, 1e-6, 2.0) == pytest.approx(2 * calibrate_sigma(1.0, 1e-6, 1.0))


# an output file replaced a file of another command's output directory: ``reid --json
# model/model.json`` wrote its risk table over a fitted model's metadata (the model could no
# longer be loaded), ``disclosure --json stats/privacy_ledger.json`` over a release's ledger
@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = small_population(tmp_path_factory.mktemp("round30-outputs"))
    (d / "model").mkdir()
    (d / "model" / "model.json").write_text(json.dumps({"format": "topicslab-type-mixture"}))
    (d / "stats").mkdir()
    (d / "stats" / "privacy_ledger.json").write_text("{}")
    (d / "run").mkdir()
    (d / "run" / "stages.json").write_text("{}")
    (d / "run" / "results.json").write_text("{}")
    return d


REID = ["reid", "--sets", "{in}/pop.parquet", "--weeks", "1", "--trials", "1", "--targets",
        "10", "--no-progress"]


@pytest.mark.parametrize(("args", "named"), [
    ([*REID, "--json", "{in}/model/model.json"], "a fitted model"),
    ([*REID, "--json", "{in}/run/results.json"], "a run's output"),
    (["disclosure", "--example", "--json", "{in}/stats/privacy_ledger.json"], "DP statistics"),
], ids=["reid-json-over-model-json", "reid-json-over-run-results", "disclosure-over-ledger"])
def test_an_output_file_does_not_replace_another_commands_file(outputs: Path, work: Path,
                                                               args: list[str],
                                                               named: str) -> None:
    invoke_refused(invoke, args, outputs, work, named)


def test_an_output_file_beside_another_commands_files_is_written(outputs: Path,
                                                                 tmp_path: Path) -> None:
    res = invoke(["disclosure", "--example", "--json", str(outputs / "stats" / "mine.json")])
    assert res.exit_code == 0, res.output
    (outputs / "stats" / "mine.json").unlink()


def test_qif_r_minus_zero_is_zero() -> None:
    """``qif --r -0`` printed ``q = -0`` and ``"r": -0.0``."""
    res = invoke(["qif", "--m", "469", "--s", "5", "--r", "-0", "--json"])
    assert res.exit_code == 0, res.output
    assert '"r": 0.0' in res.output and "-0" not in res.output
    res = invoke(["qif", "--m", "469", "--s", "5", "--r", "-0"])
    assert res.exit_code == 0, res.output
    assert "q = 0," in res.output
