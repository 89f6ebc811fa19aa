"""Bad input, the thirteenth independent round (issue 15): ``reid --traces --attack hamming
--p`` read no p and recorded it in --json as the traces' mechanism; ``ingest`` wrote sets of
thousands of weeks (a far too early --epoch-start, a stray week number) past the most weeks a
file may hold, which the long format then refused to read back; ``fit``/``validate --stats``
given a file or a mistyped name said "no q_within.json in this directory"; and from Python
``Stress(interests="3")`` was a TypeError and ``Stress(routine=True)`` a stress level.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written (the test's directory, also
the current directory, is unchanged, and so are the inputs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from refusal import invoke, population_and_stats, refusal_test

from topicslab.errors import InputError


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks), their DP statistics and two-site traces; a visits log of 2024
    and a domain table; a log of week numbers whose last visit is in week 1023."""
    d = tmp_path_factory.mktemp("round13")
    population_and_stats(d)
    res = invoke(["observe", "--sets", str(d / "pop.parquet"), "--out",
                  str(d / "traces.parquet")])
    assert res.exit_code == 0, res.output
    (d / "domains.json").write_text(json.dumps({"news.com": [243], "shop.com": [289]}))
    rows = [f"{u},2024-01-{1 + (u * 7 + i) % 21:02d}T10:00:00Z,https://"
            f"{('news.com', 'shop.com')[i % 2]}/" for u in range(5) for i in range(6)]
    (d / "visits.csv").write_text("user_id,timestamp,url\n" + "\n".join(rows) + "\n")
    (d / "weeks.csv").write_text("user_id,week,url\n0,0,https://news.com/\n"
                                 "1,1023,https://shop.com/\n")
    return d


ING = ["ingest", "-q", "--domains", "{in}/domains.json", "--out", "{out}.parquet", "--visits"]
FIT = ["fit", "--out", "{out}", "--types", "2", "--modes", "1", "--steps", "1",
       "--no-progress", "--stats"]

CASES: list[tuple[str, list[str], str]] = [
    # p is read by the asymmetric attack's weights and to observe --sets; given traces and
    # --attack hamming it was read by nothing, and --json recorded it as their mechanism
    ("reid-traces-hamming-with-p",
     ["reid", "--traces", "{in}/traces.parquet", "--attack", "hamming", "--p", "0.3"],
     "field '--p': --p sets how --sets are observed"),
    # 1,775 weeks of padding per user written as sets (every reader but the long format's
    # took them; a million users would have been 17 GB of empty weeks)
    ("ingest-epoch-start-decades-early", [*ING, "{in}/visits.csv", "--epoch-start", "1990-01-01"],
     "visits.csv, row 1, field 'timestamp': week 1774 is past the last week a file may hold "
     "(1022"),
    ("ingest-week-number-past-the-files", [*ING, "{in}/weeks.csv"],
     "weeks.csv, row 2, field 'week': week 1023 is past the last week a file may hold"),
    # a file, or a name that does not exist, given as the release directory: "no
    # q_within.json or qwithin.json in this directory"
    ("fit-stats-is-a-file", [*FIT, "{in}/pop.parquet"],
     "pop.parquet, field '--stats': is a file; give the directory of DP statistics that "
     "topicslab stats writes"),
    ("validate-stats-does-not-exist",
     ["validate", "--model", "{in}/stats", "--json", "{out}.json", "--stats", "{in}/stat"],
     "stat, field '--stats': does not exist; give the directory of DP statistics"),
]


test_bad_input_is_refused = refusal_test(CASES)


def test_the_last_week_a_file_holds_is_still_ingested(inputs: Path, work: Path) -> None:
    """The bound is the files' (1023 weeks: 0..1022), not one week less."""
    log = work / "last.csv"
    log.write_text((inputs / "weeks.csv").read_text().replace(",1023,", ",1022,"))
    res = invoke(["ingest", "-q", "--domains", str(inputs / "domains.json"), "--visits",
                  str(log), "--out", str(work / "last.parquet")])
    assert res.exit_code == 0, res.output
    assert "2 × 1023" in res.output


def test_the_asymmetric_attack_still_takes_p_on_traces(inputs: Path, work: Path) -> None:
    """The asymmetric attack's weights read p: given traces, --p is still its to take."""
    res = invoke(["reid", "--traces", str(inputs / "traces.parquet"), "--attack", "asymmetric",
                  "--p", "0.3"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("kwargs", [{"interests": "3"}, {"interests": True},
                                    {"routine": True}, {"persistence": True}],
                         ids=["interests-text", "interests-bool", "routine-bool",
                              "persistence-bool"])
def test_python_a_stress_level_that_is_not_a_number_is_refused(kwargs: dict[str, Any]) -> None:
    """``interests="3"`` was a TypeError out of math.isfinite; True passed as 1."""
    from topicslab.population import Stress

    with pytest.raises(InputError, match="must be a number in"):
        Stress(**kwargs)
    assert Stress(interests=np.int64(3)).interests == 3  # a NumPy number still is one
