"""The sampler's PyTorch path (``device="cuda"``) draws the numba kernel's users bit for bit.

The torch path runs here on the CPU through the private ``_sample`` (``torch_device``): the
public ``device="cpu"`` always means the numba kernel.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from model_helpers import persistent_model, random_model
from typer.testing import CliRunner

from topicslab import io as tio
from topicslab.cli import app
from topicslab.errors import InputError
from topicslab.model import TypeMixture, sample, sample_to_file, save_model
from topicslab.model.sample import _sample, _torch_device
from topicslab.taxonomy import load

CPU = torch.device("cpu")


def _torch(model: TypeMixture, n: int, **kw: object) -> np.ndarray:
    args: dict[str, object] = {"weeks": None, "chunk_users": 1 << 20, "first_user": 0,
                               "raw": False, "progress": False}
    args.update(kw)
    return _sample(model, n, torch_device=CPU, **args).sets  # type: ignore[arg-type]


def _edge_persistent(tax) -> TypeMixture:
    """Persistent types whose stays and mode stays include exactly 0 and 1."""
    rng = np.random.default_rng(7)
    T, M, k = 5, 3, 5
    stay = rng.uniform(size=(T, M, k)).astype(np.float32)
    stay[0] = 0.0
    stay[1] = 1.0
    stay[3] = 1.0  # with mode stay 1: the week-0 slots for good
    stay[2, :, ::2] = 0.0
    stay[2, :, 1::2] = 1.0
    mode_stay = np.array([1.0, 0.0, 0.5, 1.0, 0.0], dtype=np.float32)
    weights = rng.dirichlet(np.ones(M), size=T).astype(np.float32)
    weights[3] = [0.0, 1.0, 0.0]  # a mode never drawn, one always
    return TypeMixture(rng.normal(size=(T, M, k, tax.size)).astype(np.float32) * 2, tax,
                       {"weeks": 4, "seed": 7}, stay=stay, mode_weights=weights,
                       mode_stay=mode_stay)


@pytest.mark.parametrize("raw", [False, True])
def test_paper_types_with_wrapped_weeks(tax12, raw):
    model = random_model(tax12, T=6, r=3, k=5, seed=11, scale=1.2)
    want = sample(model, 6000, seed=5, weeks=8, raw=raw).sets
    got = _torch(model, 6000, seed=5, weeks=8, raw=raw)
    assert got.dtype == np.int16 and np.array_equal(got, want)


@pytest.mark.parametrize("raw", [False, True])
def test_persistent_types(tax12, raw):
    model = persistent_model(tax12, T=4, M=3, k=5, seed=2)
    want = sample(model, 6000, seed=9, weeks=7, raw=raw).sets
    assert np.array_equal(_torch(model, 6000, seed=9, weeks=7, raw=raw), want)


@pytest.mark.parametrize("raw", [False, True])
def test_persistent_stays_of_zero_and_one(tax12, raw):
    model = _edge_persistent(tax12)
    want = sample(model, 8000, seed=3, weeks=6, raw=raw).sets
    got = _torch(model, 8000, seed=3, weeks=6, raw=raw)
    assert np.array_equal(got, want)
    # (the edge cases are exercised: some users keep every slot, some redraw every week)
    assert (got[:, 1:] == got[:, :-1]).all(axis=(1, 2)).any()


def test_one_mode_and_one_slot(tax12):
    rng = np.random.default_rng(4)
    model = TypeMixture(rng.normal(size=(3, 1, 1, 12)).astype(np.float32), tax12,
                        {"weeks": 2}, stay=rng.uniform(size=(3, 1, 1)).astype(np.float32),
                        mode_weights=np.ones((3, 1), np.float32),
                        mode_stay=rng.uniform(size=3).astype(np.float32))
    assert np.array_equal(_torch(model, 3000, seed=1, weeks=5),
                          sample(model, 3000, seed=1, weeks=5).sets)


@pytest.mark.parametrize("persistent", [False, True])
def test_first_user_and_chunking(tax12, persistent):
    model = (persistent_model(tax12, T=3, M=2, k=4, seed=5) if persistent
             else random_model(tax12, T=4, r=2, k=4, seed=3))
    want = sample(model, 5000, seed=2, weeks=5, first_user=12_345).sets
    for chunk in (1, 777, 5000):
        n = 5000 if chunk > 1 else 300
        got = _torch(model, n, seed=2, weeks=5, first_user=12_345, chunk_users=chunk)
        assert np.array_equal(got, want[:n]), chunk
    # a slice regenerated alone
    assert np.array_equal(_torch(model, 1000, seed=2, weeks=5, first_user=14_345),
                          want[2000:3000])


def test_large_user_ids(tax12):
    """Ids past 2**32 (the hash's 64-bit products wrap)."""
    model = random_model(tax12, T=5, r=2, k=5, seed=8)
    first = 2**40 + 12_345
    assert np.array_equal(_torch(model, 2000, seed=2**62 + 3, first_user=first),
                          sample(model, 2000, seed=2**62 + 3, first_user=first).sets)


@pytest.mark.parametrize("fmt", ["parquet", "tfrecord"])
def test_sample_to_file_on_the_torch_path(tax12, tmp_path, monkeypatch, fmt):
    model = persistent_model(tax12, T=3, M=2, k=5, seed=6)
    a = sample_to_file(model, tmp_path / f"a.{fmt}", 3000, seed=4, weeks=5, format=fmt,
                       chunk_users=1000, progress=False)
    # (the package's ``sample`` is the function: the module is taken from sys.modules)
    monkeypatch.setattr(sys.modules["topicslab.model.sample"], "_torch_device", lambda device: CPU)
    b = sample_to_file(model, tmp_path / f"b.{fmt}", 3000, seed=4, weeks=5, format=fmt,
                       chunk_users=1000, progress=False, device="cuda")
    assert len(a) == len(b) == (3 if fmt == "tfrecord" else 1)
    pattern = "{}-*.tfrecord" if fmt == "tfrecord" else "{}.parquet"
    ra, rb = (tio.read_sets(tmp_path / pattern.format(x), format=fmt, taxonomy=tax12)
              for x in "ab")
    assert np.array_equal(ra.sets, rb.sets) and np.array_equal(ra.user_ids, rb.user_ids)


def test_device_choice():
    assert _torch_device("cpu") is None and _torch_device(torch.device("cpu")) is None
    auto = _torch_device("auto")
    assert auto is None if not torch.cuda.is_available() else auto.type == "cuda"
    for bad in ("gpu", "", 3):
        with pytest.raises(InputError, match="device must be cpu, cuda or auto"):
            _torch_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA"):
            _torch_device("cuda")
        with pytest.raises(InputError, match="CUDA"):
            _torch_device(torch.device("cuda"))


def test_auto_without_cuda_is_the_numba_kernel(tax12):
    model = random_model(tax12, T=3, r=2, k=5, seed=1)
    assert np.array_equal(sample(model, 2000, seed=1, device="auto").sets,
                          sample(model, 2000, seed=1).sets)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("raw", [False, True])
def test_cuda_matches_the_numba_kernel(tax12, raw):
    for model in (random_model(tax12, T=6, r=3, k=5, seed=11), _edge_persistent(tax12),
                  persistent_model(tax12, T=4, M=3, k=5, seed=2)):
        want = sample(model, 20_000, seed=5, weeks=7, raw=raw, first_user=99).sets
        got = sample(model, 20_000, seed=5, weeks=7, raw=raw, first_user=99, device="cuda",
                     chunk_users=7000).sets
        assert np.array_equal(got, want)


def test_cli_device(tmp_path):
    model = random_model(load("v1"), T=3, r=2, k=5, seed=2)
    save_model(tmp_path / "m", model)
    base = ["sample", "--model", str(tmp_path / "m"), "--users", "500", "--seed", "1"]
    runner = CliRunner()
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "x.parquet"), "--device", "gpu"])
    assert res.exit_code == 2 and "--device" in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert not (tmp_path / "x.parquet").exists()
    if not torch.cuda.is_available():
        res = runner.invoke(app, [*base, "--out", str(tmp_path / "x.parquet"),
                                  "--device", "cuda"])
        assert res.exit_code == 2 and "CUDA" in res.output and "--device" in res.output
        assert len(res.output.strip().splitlines()) == 1, res.output
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "y.parquet"), "--device", "auto"])
    assert res.exit_code == 0, res.output
    assert np.array_equal(tio.read_sets(tmp_path / "y.parquet").sets,
                          sample(model, 500, seed=1).sets)
