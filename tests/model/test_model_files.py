"""Model files and the release's ``output_parameters.json``: round trips and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from model_helpers import persistent_model as _persistent
from model_helpers import random_model, small_taxonomy

from topicslab.errors import InputError
from topicslab.model import (
    TypeMixture,
    export_release_parameters,
    import_release_parameters,
    load_model,
    save_model,
)
from topicslab.taxonomy import load


def test_save_load_round_trip(tmp_path):
    tax = load("v2")
    model = random_model(tax, T=3, r=2, k=5, seed=1)
    model.metadata.update({"statistics_fingerprint": "sha256:abc", "week_pairs": [[0, 1]]})
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert (meta["taxonomy"], meta["types"], meta["weeks"], meta["k"], meta["topics"]) == (
        "v2", 3, 2, 5, 469)
    assert meta["seed"] == 1 and meta["statistics_fingerprint"] == "sha256:abc"
    from safetensors.numpy import load_file

    tensors = load_file(str(tmp_path / "model.safetensors"))
    assert list(tensors) == ["theta"] and tensors["theta"].shape == (3, 2, 5, 469)
    assert tensors["theta"].dtype == np.float32
    back = load_model(tmp_path)
    assert np.array_equal(back.theta, model.theta)
    assert back.taxonomy.version == "v2" and back.metadata["seed"] == 1
    assert back.week_pairs == [(0, 1)]


def test_custom_taxonomy_needs_it_passed(tmp_path, tax12):
    model = random_model(tax12, T=2, r=1, k=3)
    save_model(tmp_path, model)
    with pytest.raises(InputError, match="unknown taxonomy"):
        load_model(tmp_path)
    assert np.array_equal(load_model(tmp_path, taxonomy=tax12).theta, model.theta)
    with pytest.raises(InputError, match="expected"):
        load_model(tmp_path, taxonomy=small_taxonomy(13))


def test_bad_model_directories(tmp_path):
    with pytest.raises(InputError, match="file missing"):
        load_model(tmp_path)
    model = random_model(load("v1"), T=2, r=1, k=3)
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    (tmp_path / "model.json").write_text(json.dumps({**meta, "types": 3}))
    with pytest.raises(InputError, match="shape"):
        load_model(tmp_path)
    (tmp_path / "model.json").write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON"):
        load_model(tmp_path)
    (tmp_path / "model.json").write_text(json.dumps(meta))
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="safetensors"):
        load_model(tmp_path)


@pytest.mark.parametrize("name", ["model.json", "model.safetensors"])
@pytest.mark.parametrize("kind", ["directory", "dangling link", "link loop", "fifo"])
def test_a_model_file_of_another_kind_is_named_as_such(tmp_path, name, kind):
    """A model's file that exists as a directory, a link to nothing or a pipe was "file
    missing"; a link to a real file is read as the file."""
    import os

    save_model(tmp_path, random_model(load("v2"), T=2, r=1, k=3))
    target = tmp_path / name
    kept = target.read_bytes()
    target.unlink()
    if kind == "directory":
        target.mkdir()
    elif kind == "dangling link":
        target.symlink_to(tmp_path / "gone")
    elif kind == "link loop":
        target.symlink_to(target)
    else:
        os.mkfifo(target)
    what = {"directory": "is a directory", "dangling link": "is a link that leads to no file",
            "link loop": "is a link that leads to no file",
            "fifo": "is not a regular file"}[kind]
    with pytest.raises(InputError, match=what) as info:
        load_model(tmp_path)
    assert info.value.file == str(target)
    if kind == "directory":
        target.rmdir()
    else:
        target.unlink()
    (tmp_path / "real").write_bytes(kept)
    target.symlink_to(tmp_path / "real")
    assert load_model(tmp_path).theta.shape == (2, 1, 3, 469)


def test_type_mixture_rejects_bad_theta(tax12):
    with pytest.raises(InputError, match="topics"):
        TypeMixture(np.zeros((2, 1, 3, 11), np.float32), tax12)
    with pytest.raises(InputError, match="non-finite"):
        TypeMixture(np.full((2, 1, 3, 12), np.nan, np.float32), tax12)
    with pytest.raises(InputError, match=r"\[T, r, k, m\]"):
        TypeMixture(np.zeros((2, 3, 12), np.float32), tax12)


def test_release_parameters_round_trip(tmp_path):
    tax = load("v2")
    model = random_model(tax, T=3, r=2, k=5, seed=2)
    path = tmp_path / "output_parameters.json"
    export_release_parameters(path, model)
    doc = json.loads(path.read_text())
    assert list(doc) == ["type 0", "type 1", "type 2"]
    assert list(doc["type 1"]) == ["epoch 0", "epoch 1"]
    assert list(doc["type 1"]["epoch 0"]) == [f"slot {s}" for s in range(5)]
    slot = doc["type 1"]["epoch 1"]["slot 4"]
    assert list(slot) == [str(int(i)) for i in tax.ids] and len(slot) == 469
    assert slot[str(int(tax.ids[7]))] == pytest.approx(float(model.theta[1, 1, 4, 7]))
    back = import_release_parameters(path, tax)
    assert np.array_equal(back.theta, model.theta)


def test_release_parameters_one_based_keys_and_order(tmp_path, tax12):
    model = random_model(tax12, T=2, r=2, k=2, seed=3)
    doc = {f"type_{t + 1}": {f"epoch {w + 1}": {f"slot {s + 1}": {
        str(int(tax12.ids[o])): float(model.theta[t, w, s, o]) for o in range(11, -1, -1)}
        for s in range(2)} for w in range(2)} for t in range(1, -1, -1)}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    back = import_release_parameters(path, tax12)
    assert np.array_equal(back.theta, model.theta)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["type 0"]["epoch 0"]["slot 0"].pop("1"), "topic id 1 missing"),
    (lambda d: d["type 0"]["epoch 0"]["slot 0"].update({"2": 0.5}), "unknown topic id 2"),
    (lambda d: d["type 0"]["epoch 0"]["slot 0"].update({"1": "x"}), "not a finite number"),
    (lambda d: d["type 1"].pop("epoch 1"), "epochs"),
    (lambda d: d.update({"type 7": d["type 0"]}), "type numbers"),
    (lambda d: d.update({"types": {}}), "does not end in a type number"),
])
def test_release_parameters_bad_input(tmp_path, tax12, mutate, message):
    model = random_model(tax12, T=2, r=2, k=2, seed=4)
    path = tmp_path / "p.json"
    export_release_parameters(path, model)
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=message) as info:
        import_release_parameters(path, tax12)
    assert str(path) in str(info.value)


def test_release_parameters_wrong_taxonomy(tmp_path):
    model = random_model(load("v1"), T=1, r=1, k=2, seed=5)
    path = tmp_path / "p.json"
    export_release_parameters(path, model)
    with pytest.raises(InputError, match="wrong taxonomy"):
        import_release_parameters(path, "v2")


def test_persistent_round_trip_and_no_release_export(tmp_path):
    tax = load("v2")
    model = _persistent(tax)
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert (meta["model"], meta["types"], meta["modes"], meta["weeks"]) == (
        "persistent", 3, 2, 4)
    back = load_model(tmp_path)
    assert back.variant == "persistent" and back.weeks == 4 and back.modes == 2
    for name in ("theta", "stay", "mode_weights", "mode_stay"):
        assert np.array_equal(getattr(back, name), getattr(model, name)), name
    for a, b in zip(back.statistics(), model.statistics(), strict=True):
        assert np.array_equal(a, b)
    with pytest.raises(InputError, match="paper's types only"):
        export_release_parameters(tmp_path / "out.json", model)
    # a file without one of the persistent tensors is refused, naming it
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(tmp_path / "model.safetensors"))
    del tensors["mode_stay"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(InputError, match="mode_stay"):
        load_model(tmp_path)


def test_old_files_read_as_paper_types(tmp_path):
    model = random_model(load("v2"), T=2, r=2, k=5, seed=3)
    save_model(tmp_path, model)
    meta = json.loads((tmp_path / "model.json").read_text())
    del meta["model"]  # written before persistent types existed
    (tmp_path / "model.json").write_text(json.dumps(meta))
    assert load_model(tmp_path).variant == "paper"


@pytest.mark.parametrize("change, message", [
    (dict(stay=None), "need stay, mode_weights and mode_stay"),
    (dict(mode_stay=np.full(3, 1.5, np.float32)), "probabilities"),
    (dict(mode_weights=np.full((3, 2), 0.3, np.float32)), "sum to 1"),
    (dict(stay=np.zeros((3, 2, 4), np.float32)), "shape"),
])
def test_persistent_parts_are_checked(change, message):
    tax = load("v1")
    m = _persistent(tax)
    kw = {"stay": m.stay, "mode_weights": m.mode_weights, "mode_stay": m.mode_stay, **change}
    with pytest.raises(InputError, match=message):
        TypeMixture(m.theta, tax, {"weeks": 4}, **kw)
