"""Bad input, the twenty-eighth independent round (issue 15): options whose range depends on
another option or on the input file, valid but extreme inputs, this project's own outputs fed
to every other command, outputs named alike, and resources.

- ``population --users 250000 --weeks 20 --k 469`` (the default --chunk-users) passed the
  up-front memory check, which counted 128 bytes a user-week whatever k: at k = 469 a
  user-week takes ~10 kB (100,000 users x 4 weeks peaked at 4.5 GB), so the chunk needed
  about 52 GB and the kernel would have killed the command (no line, a temporary left).
- ``convert x.tsv o.parquet --from csv`` read the file as TSV (the name's separator), the
  option ignored without a word, while ``--from tsv`` of a ``.csv`` file read tabs; a
  comma-separated ``x.tsv`` with ``--from csv`` was refused with "name the file .csv", as if
  the option had not been given.
- ``convert pop.parquet o.parquet --k 469`` of 500,000 users x 4 weeks had no memory check:
  200,000 users peaked at 8.7 GB (~22 bytes a topic slot), 500,000 were killed by the kernel
  mid-write.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from refusal import check_refused, invoke, invoke_refused, random_profiles, small_population, tree

from topicslab import io as tio
from topicslab.datamodel import TopicSets


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small v2 population as Parquet, and its sets as CSV and TSV under the other's
    name (``commas.tsv``: comma-separated, ``tabs.csv``: tab-separated)."""
    directory = small_population(tmp_path_factory.mktemp("round28"))
    sets = TopicSets(random_profiles(), "v2", np.arange(300, dtype=np.int64))
    tio.write_sets(directory / "pop.csv", sets)
    tio.write_sets(directory / "pop.tsv", sets)
    (directory / "commas.tsv").write_bytes((directory / "pop.csv").read_bytes())
    (directory / "tabs.csv").write_bytes((directory / "pop.tsv").read_bytes())
    return directory


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    return tmp_path


def test_a_population_chunk_too_large_for_its_k_is_refused_up_front(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 users x 1,023 weeks: 131 MB at k = 5, ~12 GB at k = 469; with 2 GiB available
    the second is refused before the writer opens (the first still runs)."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 2 << 30)

    def no_writer(*args: object, **kwargs: object) -> None:
        raise AssertionError("the population was generated: not refused up front")

    monkeypatch.setattr(tio, "SetsWriter", no_writer)
    invoke_refused(invoke, ["population", "--users", "1000", "--weeks", "1023", "--k", "469",
                            "--out", "{out}.parquet"], inputs, work, "--chunk-users")
    res = invoke(["population", "--users", "1000", "--weeks", "1023", "--k", "469",
                  "--out", str(work / "p.parquet")])
    assert "of 469 topics" in res.output and "smaller --k" in res.output, res.output


def test_a_population_of_the_api_k_still_passes_the_check(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard: the estimate at k = 5 is as before (1,000 x 1,023 fits in 2 GiB)."""
    from topicslab import _resources
    from topicslab.cli.population import check_generation_memory

    monkeypatch.setattr(_resources, "available_memory", lambda: 2 << 30)
    check_generation_memory(1000, 1023, "--chunk-users", "", writing=True)


def test_convert_from_csv_reads_commas_whatever_the_name(inputs: Path, work: Path) -> None:
    res = invoke(["convert", str(inputs / "commas.tsv"), str(work / "o.parquet"),
                  "--from", "csv"])
    assert res.exit_code == 0, res.output
    assert (tio.read_sets(work / "o.parquet").sets == random_profiles()).all()


@pytest.mark.parametrize(("source", "given", "fix"), [
    ("pop.tsv", "csv", "--from tsv"),  # was read as TSV: --from csv ignored
    ("pop.csv", "tsv", "--from csv"),  # was told "name the file .csv" (it is)
])
def test_convert_from_a_format_the_file_is_not_says_so(inputs: Path, work: Path, source: str,
                                                      given: str, fix: str) -> None:
    invoke_refused(invoke, ["convert", f"{{in}}/{source}", "{out}.parquet", "--from", given],
                   inputs, work, fix)


def test_convert_from_tsv_still_reads_tabs_whatever_the_name(inputs: Path, work: Path) -> None:
    """The guard: --from tsv of a tab-separated .csv file read tabs before, and still does."""
    res = invoke(["convert", str(inputs / "tabs.csv"), str(work / "o.parquet"),
                  "--from", "tsv"])
    assert res.exit_code == 0, res.output


def test_write_sets_in_a_format_given_uses_its_separator(work: Path) -> None:
    """The API: format='csv' of a .tsv name writes (and reads back) commas, as 'tsv' tabs."""
    sets = TopicSets(random_profiles(20), "v2", np.arange(20, dtype=np.int64))
    tio.write_sets(work / "a.tsv", sets, format="csv")
    assert "," in (work / "a.tsv").read_text().splitlines()[0]
    assert (tio.read_sets(work / "a.tsv", format="csv").sets == sets.sets).all()
    with pytest.raises(Exception, match=r"name the file \.csv"):  # no format: the name's
        tio.read_sets(work / "a.tsv")


def test_convert_wider_than_memory_is_refused_before_writing(
        inputs: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 users x 4 weeks x 469 slots at 24 bytes (13.5 MB) against 1 MB available: refused
    naming --k; the file's own k = 5 (144 kB) is still converted."""
    from topicslab import _resources

    monkeypatch.setattr(_resources, "available_memory", lambda: 1 << 20)
    invoke_refused(invoke, ["convert", "{in}/pop.parquet", "{out}.parquet", "--k", "469"],
                   inputs, work, "--k")
    res = invoke(["convert", str(inputs / "pop.parquet"), str(work / "o.parquet")])
    assert res.exit_code == 0, res.output


def test_an_ingest_of_wide_profiles_is_refused_up_front(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """D4: ``ingest``'s check counted 8 bytes a topic slot where ~24 are used (5,000 users x
    100 weeks at k = 469 peaked at 5.6 GB): 2,000 users x 100 weeks at k = 469 passed 2 GiB
    at 0.75 GB estimated and needs ~2.3 GB. Refused now, naming the time column and --k."""
    from topicslab import _resources
    from topicslab.io.visits import sample_files

    _, domains = sample_files()
    visits = tmp_path / "visits.csv"
    rows = ["user_id,timestamp,url"]
    for u in range(2000):
        rows.append(f"{u},2024-01-01T01:00:00Z,https://hoops-report.com")
        rows.append(f"{u},2025-11-24T01:00:00Z,https://hoops-report.com")  # week 99
    visits.write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(_resources, "available_memory", lambda: 2 << 30)
    work = tmp_path / "work"
    work.mkdir()
    before = tree(work)
    res = invoke(["ingest", "-v", str(visits), "-d", str(domains), "--k", "469",
                  "-o", str(work / "p.parquet")])
    line = check_refused(res.output, res.exit_code, "timestamp")
    assert "--k" in line and "100 weeks" in line, line
    assert tree(work) == before
