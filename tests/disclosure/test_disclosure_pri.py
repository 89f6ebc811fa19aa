"""The PRI estimator: the paper's worked example, eqs 13-17 and their identities."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicslab.disclosure import PRI, Dictionary, worked_example
from topicslab.errors import InputError


def test_worked_example() -> None:
    w = worked_example()
    est = w.estimate
    assert est.m_hat["prostate"] == pytest.approx(0.32, abs=1e-12)  # 8/25
    assert est.m_hat["other"] == pytest.approx(0.08, abs=1e-12)  # 2/25
    assert est.calibrated["prostate"] == pytest.approx(1.6, abs=1e-12)
    assert est.calibrated["other"] == pytest.approx(0.4, abs=1e-12)
    assert est.in_vocabulary_mass == pytest.approx(0.4)
    assert est.phi == pytest.approx({"treat": 0.2, "here": 0.2})
    assert set(w.pri.dictionary.terms) == {"prostat", "cancer", "diabet", "discov", "possibl",
                                           "learn", "here", "treat", "risk", "suffer",
                                           "revers", "natur", "lifetim"}
    # Table 1 of the paper (lifetim is 1/4: it sits in the four-term advert)
    table = {row["term"]: row for row in w.pri.term_table()}
    zero = Fraction(0)
    expect = {"prostat": (Fraction(5, 12), Fraction(5, 12), zero),
              "possibl": (Fraction(1, 6), Fraction(1, 6), zero),
              "treat": (Fraction(5, 12), Fraction(1, 4), Fraction(1, 6)),
              "suffer": (Fraction(5, 12), Fraction(1, 4), Fraction(1, 6)),
              "risk": (Fraction(5, 12), Fraction(1, 6), Fraction(1, 4)),
              "revers": (Fraction(1, 6), zero, Fraction(1, 6))}
    for term, (p_t, p_pro, p_oth) in expect.items():
        assert table[term]["p_T"] == pytest.approx(float(p_t))
        assert table[term]["prostate"] == pytest.approx(float(p_pro))
        assert table[term]["other"] == pytest.approx(float(p_oth))
    d = w.to_dict()
    assert d["m_hat"]["prostate"] == pytest.approx(0.32) and d["advert"][3] == "treat"


def test_phi_counts_out_of_vocabulary_terms_in_the_length() -> None:
    d = Dictionary(("a", "b"))
    phi = d.phi([["a", "a", "x", "b"], [], ["x"]])
    assert phi.tolist() == [[0.5, 0.25], [0.0, 0.0], [0.0, 0.0]]
    # grouped sums (eq 14 with two probes) and ignored documents (-1)
    sums = d.phi([["a"], ["b", "x"], ["a", "b"]], groups=[1, 1, -1], n_groups=2)
    assert sums.tolist() == [[0.0, 0.0], [1.0, 0.5]]
    assert "a" in d and d.index_of("zz") == -1 and len(d) == 2
    with pytest.raises(InputError):
        d.phi([["a"]], groups=[0, 1])
    with pytest.raises(InputError):
        Dictionary(("a", "a"))


docs = st.lists(st.sampled_from("abcdefg"), min_size=0, max_size=6)
labelled = st.tuples(st.sampled_from(["c1", "c2", "other"]), docs)


@settings(max_examples=60, deadline=None)
@given(training=st.lists(labelled, min_size=3, max_size=12),
       probes=st.lists(st.lists(st.lists(st.sampled_from("abcdefxyz"), max_size=5),
                                max_size=4), min_size=1, max_size=5),
       smoothing=st.sampled_from([0.0, 0.5, 3.0]))
def test_identities(training, probes, smoothing) -> None:
    training = [("c1", ["a"]), ("c2", ["b", "c"]), ("other", ["d"]), *training]
    pri = PRI.fit(training, smoothing=smoothing)
    r = pri.ratio
    assert ((r >= -1e-12) & (r <= 1 + 1e-12)).all()
    np.testing.assert_allclose(r.sum(axis=0), 1.0, atol=1e-12)  # Σ_c r(c, w) = 1
    # eq 15 = Σ over all of T of φ, directly
    direct = pri.dictionary.phi([doc for _, doc in training]).sum(axis=0)
    np.testing.assert_allclose(pri.p_t, direct, atol=1e-12)
    p_a = pri.observe(probes)
    m_hat = pri.m_hat(p_a)
    # Σ_c M̂_k(c) = in-vocabulary mass Σ_w p̂_{a_k}(w)
    np.testing.assert_allclose(m_hat.sum(axis=1), p_a.sum(axis=1), atol=1e-12)
    mass = np.array([sum(sum(t in pri.dictionary for t in ad) / len(ad) for ad in ads if ad)
                     for ads in probes])
    np.testing.assert_allclose(p_a.sum(axis=1), mass, atol=1e-12)
    cal = pri.calibrated(m_hat, p_a.sum(axis=1))
    has = mass > 0
    # the calibrated ratios average to 1 under the training prior
    np.testing.assert_allclose((cal[has] * pri.prior).sum(axis=1), 1.0, atol=1e-9)
    assert np.isnan(cal[~has]).all()


def test_fit_counts_matches_fit_on_one_term_adverts() -> None:
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 3, 200)
    terms = rng.integers(10, 30, 200)
    names = ("c1", "c2", "other")
    slow = PRI.fit([(names[lab], [int(t)]) for lab, t in zip(labels, terms, strict=True)],
                   categories=names)
    counts = np.zeros((3, 40))
    np.add.at(counts, (labels, terms), 1.0)
    fast = PRI.fit_counts(counts, np.bincount(labels, minlength=3), list(range(40)), names)
    assert set(fast.dictionary.terms) == set(slow.dictionary.terms)
    order = [fast.dictionary.index_of(t) for t in slow.dictionary.terms]
    np.testing.assert_allclose(fast.ratio[:, order], slow.ratio)
    np.testing.assert_array_equal(fast.n_ads, slow.n_ads)
    est = fast.estimate([[12], [13], [99]])
    assert est.in_vocabulary_mass == pytest.approx(2.0)
    assert sum(est.m_hat.values()) == pytest.approx(2.0)


def test_bad_training_sets() -> None:
    with pytest.raises(InputError, match="empty"):
        PRI.fit([])
    with pytest.raises(InputError, match="other"):
        PRI.fit([("c1", ["a"])], categories=("c1",), other="other")  # no 'other' advert
    with pytest.raises(InputError, match="sensitive"):
        PRI.fit([("other", ["a"])])
    with pytest.raises(InputError, match="row 1"):
        PRI.fit([("c1", ["a"]), ("zz", ["b"]), ("other", ["c"])], categories=("c1",))
    with pytest.raises(InputError, match="not a string"):
        PRI.fit([("c1", "abc"), ("other", ["b"])])
    with pytest.raises(InputError, match="label"):
        PRI.fit([(3, ["a"]), ("other", ["b"])])  # type: ignore[list-item]
    with pytest.raises(InputError, match="pairs"):
        PRI.fit([("c1",), ("other", ["b"])])  # type: ignore[list-item]
    pri = PRI.fit([("c1", ["a"]), ("other", ["b"])])
    with pytest.raises(InputError):
        pri.m_hat(np.zeros(5))
    with pytest.raises(InputError):
        PRI.fit_counts(np.zeros((2, 3)), [1, 1], ["a", "b"], ("c1", "other"))
    with pytest.raises(InputError, match="smoothing"):
        PRI.fit([("c1", ["a"]), ("other", ["b"])], smoothing=-1.0)
