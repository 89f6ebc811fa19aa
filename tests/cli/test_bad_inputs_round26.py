"""Bad input, the twenty-sixth independent round (issue 15): every command's options, output
paths, environments, odd encodings and interruptions.

- ``COLUMNS=0`` (what some containers and CI runners set when no terminal gives a width) made
  rich print to a console 0 columns wide: every command printed nothing at all, its error
  line included (exit code 2 and an empty standard error).
- A terminal whose encoding cannot show the output (``PYTHONIOENCODING=ascii``, or a C locale
  with Python's coercion turned off) was refused only when the summary was printed: after the
  command had done its work and written or replaced its outputs, so a refusal (exit code 2)
  left the outputs of a finished command behind, an older one replaced.
- ``run`` interrupted while the population stage built its calibration table left
  ``OUT/pop.parquet`` (written just before) with "no stage had finished".
- A budget that holds but whose share for one query does not: ``stats --epsilon 1.5e-6``
  (the documented range is [1e-6, 1e6]) said "epsilon must be in [1e-6, 1e6], got 3.75e-7",
  ``--delta 5e-324`` said "delta must be in (0, 1), got 0" and ``--split 1e-300,0.5,0.5`` an
  epsilon of 1.1e-300: each query's share was reported as the value the user gave.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, console_script, invoke, random_profiles, small_population

from topicslab import io as tio
from topicslab.datamodel import TopicSets


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small v2 population as Parquet."""
    return small_population(tmp_path_factory.mktemp("round26"))


def test_columns_zero_still_prints_the_error_line(tmp_path: Path) -> None:
    proc = console_script(["qif", "--m", "0"], {"COLUMNS": "0"}, tmp_path)
    check_refused(proc.stderr, proc.returncode, "--m")


def test_columns_zero_still_prints_the_output(tmp_path: Path) -> None:
    proc = console_script(["qif"], {"COLUMNS": "0"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Topics API capacities" in proc.stdout


def test_a_terminal_that_cannot_show_the_output_is_refused_before_the_work(
        inputs: Path, tmp_path: Path) -> None:
    target = tmp_path / "o.csv"
    target.write_text("an older file\n")
    proc = console_script(["convert", str(inputs / "pop.parquet"), str(target)],
                           {"PYTHONIOENCODING": "ascii"}, tmp_path)
    check_refused(proc.stderr, proc.returncode, "PYTHONIOENCODING")
    assert target.read_text() == "an older file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv"]


def test_a_terminal_that_replaces_what_it_cannot_show_is_not_refused(
        inputs: Path, tmp_path: Path) -> None:
    """The guard: ``ascii:replace`` shows every line (with ``?``), so the command runs."""
    proc = console_script(["convert", str(inputs / "pop.parquet"), str(tmp_path / "o.csv")],
                           {"PYTHONIOENCODING": "ascii:replace"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 300 users ? 4 weeks" in proc.stdout


def test_run_interrupted_during_the_calibration_table_leaves_no_population(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topicslab import population

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(population, "calibration_table", interrupted)
    res = invoke(["run", "--preset", "smoke", "--users", "1000", "--out", "r", "-q",
                  "--no-disclosure"])
    assert res.exit_code == 130, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert lines[-1].startswith("interrupted: ") and "no stage had finished" in lines[-1]
    assert not (work / "r" / "pop.parquet").exists()
    assert not list(work.iterdir())


@pytest.mark.parametrize(("options", "named", "says"), [
    (["--epsilon", "1.5e-6"], "--epsilon", "epsilon 1.5e-06 split over the release's 3 "
                                           "queries leaves query 1 of 3 (share 0.25) an "
                                           "epsilon of 3.75e-07"),
    (["--delta", "5e-324"], "--delta", "a delta of 0: give a larger delta"),
    (["--delta", "5e-324", "--accounting", "tight"], "--delta", "a delta of 0"),
    (["--split", "1e-300,0.5,0.5"], "--split", "give it a larger share (--split)"),
], ids=["epsilon-in-range-but-its-shares-not", "delta-whose-shares-are-0",
        "delta-whose-shares-are-0-tight", "split-share-of-1e-300"])
def test_a_share_of_the_budget_is_not_reported_as_the_budget(
        inputs: Path, work: Path, options: list[str], named: str, says: str) -> None:
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st", *options])
    line = check_refused(res.output, res.exit_code, named)
    assert says in line, line
    assert not list(work.iterdir())


def test_a_budget_whose_shares_hold_is_still_released(inputs: Path, work: Path) -> None:
    """The guard: δ = 1e-320 split four ways is still positive (a subnormal)."""
    res = invoke(["stats", "--sets", str(inputs / "pop.parquet"), "--out", "st",
                  "--delta", "1e-320"])
    assert res.exit_code == 0, res.output
    assert (work / "st" / "privacy_ledger.json").exists()


# ---- the Python API (part B) ---------------------------------------------------------------


def _bands() -> object:
    from topicslab import disclosure as dz

    return dz.learn_bands(np.zeros((4, 2)), np.array([0, 0, 1, 1]), ["a", "other"])


def _sets_writer(path: Path, **kw: object) -> None:
    args: dict[str, object] = {"taxonomy": "v2", "k": 5, "weeks": 4, **kw}
    tio.SetsWriter(path, **args).abort()  # type: ignore[arg-type]


def _script(**kw: object) -> object:
    from topicslab import disclosure as dz

    return dz.make_script(["a", "b"], "p", **kw)  # type: ignore[arg-type]


def _script_of(*steps: object, headers: tuple[tuple[str, str], ...] = (("probe", "p"),),
               ) -> object:
    from topicslab import disclosure as dz

    return dz.Script(headers, steps)  # type: ignore[arg-type]


def _personas(labels: object) -> object:
    from topicslab import disclosure as dz

    return dz.simulate_personas(labels, 0.1, categories=list(dz.default_categories()),  # type: ignore[arg-type]
                                epochs=2)


def _api_cases() -> list[tuple[str, object, str]]:
    from topicslab import disclosure as dz

    return [
        ("sets-writer-k-fraction", lambda p: _sets_writer(p / "a.parquet", k=1.5), "k"),
        ("sets-writer-k-0", lambda p: _sets_writer(p / "a.parquet", k=0), "k"),
        ("sets-writer-no-weeks", lambda p: _sets_writer(p / "a.parquet", weeks=0), "weeks"),
        ("sets-writer-1024-weeks", lambda p: _sets_writer(p / "a.parquet", weeks=1024),
         "weeks"),
        ("sets-writer-row-group-0", lambda p: _sets_writer(p / "a.parquet", row_group_size=0),
         "row_group_size"),
        ("script-header-line-break",
         lambda p: _script(extra_headers=[("x", "a\nb")]), "'x'"),
        ("script-header-key-colon",
         lambda p: _script(extra_headers=[("x: y", "z")]), "headers"),
        ("script-wait-true", lambda p: _script_of(dz.Query("a"), dz.Wait(True)), "wait"),
        ("script-query-carriage-return", lambda p: _script_of(dz.Query("a\rb")), "query"),
        ("make-script-seed-negative", lambda p: _script(seed=-1), "seed"),
        ("make-script-group-fraction", lambda p: _script(group=(1.5, 3)), "group"),
        ("detector-session-probes-fraction",
         lambda p: dz.Detector(_bands(), session_probes=1.5), "session_probes"),  # type: ignore[arg-type]
        ("simulate-personas-label-fraction", lambda p: _personas(np.array([0.5])), "labels"),
        ("domain-table-indptr-unsorted",
         lambda p: _domain_table(("a.com", "b.com"), [0, 2, 1], [1, 2]), "indptr"),
        ("domain-table-indptr-past-the-topics",
         lambda p: _domain_table(("a.com",), [0, 5], [1]), "indptr"),
        ("domain-table-topic-outside-the-taxonomy",
         lambda p: _domain_table(("a.com",), [0, 1], [9999]), "topics"),
        ("learn-bands-label-fraction",
         lambda p: dz.learn_bands(np.zeros((4, 2)), np.array([0, 0, 1, 0.5]), ["a", "b"]),
         "labels"),
        ("pri-fit-counts-nan",
         lambda p: dz.PRI.fit_counts(np.full((2, 2), np.nan), np.array([1, 1]), ["a", "b"],
                                     ["a", "other"]), "counts"),
        ("topic-m-hat-answer-past-the-taxonomy", lambda p: _m_hat(469), "answers"),
        ("topic-m-hat-answer-fraction", lambda p: _m_hat(3.7), "answers"),
        ("topic-m-hat-pri-of-words", lambda p: _m_hat(3, words=True), "pri"),
        ("paper-types-cyclic-text", lambda p: _paper_types("no"), "cyclic"),
        ("clique-partition-seed-negative", lambda p: _cliques(-1), "seed"),
    ]


def _m_hat(answer: float, words: bool = False) -> object:
    from topicslab import disclosure as dz
    from topicslab.taxonomy import load

    tax = load("v2")
    counts = np.zeros((2, tax.size))
    counts[0, 3] = counts[1, 4] = 5
    pri = (dz.PRI.fit([("a", ["doctor"]), ("other", ["car"])]) if words else
           dz.PRI.fit_counts(counts, np.array([5, 5]), tuple(int(t) for t in tax.ids),
                             ["a", "other"]))
    return dz.topic_m_hat(np.full((1, 1, 1), answer), pri, tax)


def _domain_table(domains: tuple[str, ...], indptr: list[int], topics: list[int]) -> object:
    from topicslab.taxonomy import load

    return tio.DomainTable(domains, np.array(indptr, np.int64), np.array(topics, np.int32),
                           load("v2"))


def _paper_types(cyclic: object) -> object:
    from topicslab import model

    return model.PaperTypes(types=2, cyclic=cyclic)  # type: ignore[arg-type]


def _cliques(seed: object) -> object:
    from topicslab import population

    return population.clique_partition("v2", seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", _api_cases(), ids=lambda c: c[0])
def test_api_refuses(case: tuple[str, object, str], tmp_path: Path) -> None:
    from topicslab.errors import InputError

    _, call, named = case
    with pytest.raises(InputError) as exc:
        call(tmp_path)  # type: ignore[operator]
    assert named in str(exc.value), str(exc.value)
    assert not list(tmp_path.iterdir())


def test_api_guards(tmp_path: Path) -> None:
    """What the checks let through: a whole-number float label, a header of one line, a
    k within the taxonomy."""
    from topicslab import disclosure as dz

    _personas(np.array([1.0]))
    script = _script(extra_headers=[("x-y_1", "one line")])
    dz.write_script(tmp_path / "s.txt", script)  # type: ignore[arg-type]
    assert dz.read_script(tmp_path / "s.txt") == script
    with tio.SetsWriter(tmp_path / "a.parquet", "v2", 10, 4) as writer:
        writer.write(TopicSets(random_profiles(20), "v2", np.arange(20, dtype=np.int64)))
    assert tio.read_sets(tmp_path / "a.parquet").n_users == 20
    assert len(_domain_table(("a.com", "b.com"), [0, 1, 1], [3]).domains) == 2  # type: ignore[attr-defined]
    assert len(_domain_table((), [0], []).domains) == 0  # type: ignore[attr-defined]
    _paper_types(np.bool_(True))
    assert np.asarray(_m_hat(3)).ravel().tolist() == [1.0, 0.0]
    assert np.asarray(_m_hat(-1)).ravel().tolist() == [0.0, 0.0]  # withheld
