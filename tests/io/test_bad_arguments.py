"""Bad arguments to the readers and writers (issue 15, round 2: PY1-PY4): an ``InputError``
(a ``ParameterError`` for an argument) naming the argument, never the file's fault, nothing
written and no directory created."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from topicslab import io as tio
from topicslab.errors import InputError, ParameterError


@pytest.fixture
def files(tmp_path: Path, make_sets) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    sets = make_sets(n=6, weeks=2)
    out = {}
    for name in ("s.parquet", "s.csv"):
        tio.write_sets(tmp_path / name, sets)
        out[name] = tmp_path / name
    return out


@pytest.mark.parametrize("name", ["s.parquet", "s.csv"])
@pytest.mark.parametrize("k", [-1, 0, 10**6, 2.5])
def test_bad_k_names_the_argument(files: dict[str, Path], name: str, k: object) -> None:
    with pytest.raises(ParameterError) as exc:
        tio.read_sets(files[name], k=k)  # type: ignore[arg-type]
    assert exc.value.field == "k" and exc.value.file is None


@pytest.mark.parametrize("name", ["s.parquet", "s.csv"])
@pytest.mark.parametrize("batch_size", [0, -5])
def test_bad_batch_size_names_the_argument(files: dict[str, Path], name: str,
                                           batch_size: int) -> None:
    with pytest.raises(ParameterError) as exc:
        list(tio.iter_sets(files[name], batch_size))
    assert exc.value.field == "batch_size"


def test_truncated_gzip_names_the_file(files: dict[str, Path], tmp_path: Path) -> None:
    gz = tmp_path / "c.csv.gz"
    gz.write_bytes(gzip.compress(files["s.csv"].read_bytes())[:60])
    with pytest.raises(InputError) as exc:
        tio.read_sets(gz)
    assert exc.value.file == str(gz)


@pytest.mark.parametrize(("target", "options", "field"), [
    ("x.tfrecord", {"shards": 0}, "shards"),
    ("x.tfrecord", {"shards": -1}, "shards"),
    ("x.csv", {"delimiter": ";"}, "delimiter"),
    ("x.parquet", {"row_group_size": 0}, "row_group_size"),
    ("a-dir", {"format": "parquet"}, None),
    ("no-dir/sub/x.parquet", {}, None),
])
def test_bad_write_is_refused_before_writing(files: dict[str, Path], tmp_path: Path,
                                             target: str, options: dict[str, object],
                                             field: str | None) -> None:
    (tmp_path / "a-dir").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(InputError) as exc:
        tio.write_sets(tmp_path / target, tio.read_sets(files["s.parquet"]),
                       **options)  # type: ignore[arg-type]
    assert exc.value.field == field
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
