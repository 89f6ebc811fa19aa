"""Bad input, the twenty-third independent round (issue 15), full scope.

``ingest``: a visits log's URL whose host could not be read was counted as another domain
without a word -- ``http://a b.com/`` as ``a``, ``https://exa mple.com`` as ``exa``,
``http://[::1/`` as ``[``, ``https://site.de:abc/`` (a port that is not a number) as
``site.de`` -- and a domain table with no domains (a header only, ``{}`` or ``[]``) was
accepted, so that every visit was unclassified and every profile was padding topics only.

The same contract as ``test_bad_inputs.py``: exit code 2, one line ``error: ...`` naming the
offending file, row or field, no traceback, and nothing written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from refusal import invoke, refusal_test

from topicslab.io.visits import sample_files


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped ingest sample, and copies of it with one edit."""
    d = tmp_path_factory.mktemp("round23")
    visits, domains = sample_files()
    shutil.copy(visits, d / "visits.csv")
    shutil.copy(domains, d / "domains.csv")
    text = (d / "visits.csv").read_text(encoding="utf-8")
    first = "https://m.dogwalkers.de"
    assert first in text
    for name, url in [("space", "http://dog walkers.de/"), ("bracket", "http://[::1/"),
                      ("port", "https://m.dogwalkers.de:abc/")]:
        (d / f"visits-{name}.csv").write_text(text.replace(first, url, 1), encoding="utf-8")
    (d / "domains-header.csv").write_text("domain,topics\n", encoding="utf-8")
    (d / "domains-empty.json").write_text("{}", encoding="utf-8")
    return d


INGEST = ["ingest", "-q", "--out", "{out}.parquet"]

CASES: list[tuple[str, list[str], str]] = [
    # counted as the unclassified domain 'dog', '[' or read as m.dogwalkers.de, exit code 0
    *[(f"ingest-url-{name}", [*INGEST, "-d", "{in}/domains.csv", "-v",
                              f"{{in}}/visits-{name}.csv"],
       f"visits-{name}.csv, row 1, field 'url': no host name in")
      for name in ("space", "bracket", "port")],
    # every visit unclassified, every profile padding topics only, exit code 0
    ("ingest-domains-header-only", [*INGEST, "-v", "{in}/visits.csv", "-d",
                                    "{in}/domains-header.csv"],
     "domains-header.csv: the domain table lists no domains"),
    ("ingest-domains-empty-object", [*INGEST, "-v", "{in}/visits.csv", "-d",
                                     "{in}/domains-empty.json"],
     "domains-empty.json: the domain table lists no domains"),
]

test_bad_input_is_refused = refusal_test(CASES)


def test_urls_with_a_port_path_or_space_after_the_host_are_still_read(inputs: Path,
                                                                     work: Path) -> None:
    """Guard: a port, an IPv6 host, a path with a space and a trailing space still give the
    host."""
    import pyarrow as pa

    from topicslab.io.visits import hosts_of

    got = hosts_of(pa.array(["https://a.com:8080/x", "http://[::1]:80/", "https://a.com/b c",
                             "a.com ", "a.com?q", "https://a b.com"])).to_pylist()
    assert got == ["a.com", "[::1]", "a.com", "a.com", "a.com", ""]
    res = invoke(["ingest", "-q", "-v", str(inputs / "visits.csv"), "-d",
                  str(inputs / "domains.csv"), "--out", str(work / "p.parquet")])
    assert res.exit_code == 0, res.output
