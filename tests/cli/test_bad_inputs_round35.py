"""Bad input, the thirty-fifth independent round.

- ``fit --resume`` of a checkpoint.pt that is no fit's state (another program's file saved
  under the name, or one edited: ``step`` text, ``history`` null, no ``params``, a list):
  read as far as it went, then ``ValueError``, ``TypeError`` or ``AttributeError`` with exit
  code 1; ``checkpoints/checkpoint.pt`` a directory was said not to exist.
- ``OMP_NUM_THREADS=abc`` (or 0, or empty): libgomp printed "Invalid value for environment
  variable OMP_NUM_THREADS" above the command's output and went on with its default.
- A run's results.json (or stages.json) given as ``sample/validate --model`` or ``stats
  --explain``: "invalid JSON: the integer 634131898169… (34 digits) is past 64 bits" (a
  capacity of its QIF section), as if the file were corrupt.
- ``sample/validate --model`` of a missing name, a Parquet file or a run's directory:
  "NAME/model.json: file missing (not a model directory?)", a file under a file, no field.
- ``fit/validate/run --stats`` of a run's directory: "no q_within.json or qwithin.json in this
  directory" (its release is RUN/stats); fit and validate named no field for the directory.
- An output directory that is a symbolic link looping back on itself: "is a symbolic link to
  a missing directory (loop); create it", which cannot be done.
- ``run --seed 1 --out R`` over a finished ``--seed 0`` run, stopped (Ctrl-C, or a failure)
  after its first stages: R held the new population, release and model beside the old
  report.html and results.json, which described the replaced ones.
- ``population --params`` whose ``affinities`` or ``site_tags`` pair a topic with itself:
  "error: ValueError: pair entry (1, 1) must name two different topics", exit code 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from refusal import (
    check_refused,
    console_script,
    fit_small_model,
    invoke,
    invoke_refused,
    population_and_stats,
    tree,
)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 users (v2, 4 weeks) as ``pop.parquet``, their DP statistics ``stats`` and a
    fitted model ``model`` (2 types, 1 step) with its checkpoint."""
    d = tmp_path_factory.mktemp("round35")
    population_and_stats(d)
    fit_small_model(invoke, d)
    assert (d / "model" / "checkpoints" / "checkpoint.pt").is_file()
    return d


# ---- fit --resume of a checkpoint that is no fit's state -----------------------------------


def _edited(state: dict, how: str) -> object:
    if how == "a-list":
        return [1, 2]
    if how == "step-text":
        return {**state, "step": "x"}
    if how == "history-null":
        return {**state, "history": None}
    if how == "no-params":
        return {k: v for k, v in state.items() if k != "params"}
    if how == "params-empty":
        return {**state, "params": {}}
    if how == "theta-of-other-shape":
        return {**state, "params": {**state["params"],
                                    "theta": state["params"]["theta"][:1]}}
    assert how == "optimizer-of-nothing"
    return {**state, "optimizer": {"state": {}, "param_groups": []}}


@pytest.mark.parametrize("how", ["a-list", "step-text", "history-null", "no-params",
                                 "params-empty", "theta-of-other-shape",
                                 "optimizer-of-nothing"])
def test_resume_of_a_foreign_checkpoint_is_refused(inputs: Path, work: Path, how: str) -> None:
    """Was ``error: ValueError: invalid literal for int() ...`` (or TypeError,
    AttributeError, "optimizer got an empty parameter list"), exit code 1."""
    import torch

    shutil.copytree(inputs / "model", work / "m")
    ckpt = work / "m" / "checkpoints" / "checkpoint.pt"
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    torch.save(_edited(state, how), ckpt)
    before = tree(work)
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress", "--resume"])
    check_refused(res.output, res.exit_code, "checkpoint.pt, field '--resume': is not a "
                                             "checkpoint of topicslab fit (")
    assert tree(work) == before


def test_resume_of_its_own_checkpoint_still_runs(inputs: Path, work: Path) -> None:
    shutil.copytree(inputs / "model", work / "m")
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--modes", "1", "--steps", "1", "--no-progress", "--resume"])
    assert res.exit_code == 0, res.output


def test_resume_of_a_checkpoint_directory_says_so(inputs: Path, work: Path) -> None:
    """Was "--resume needs m/checkpoints/checkpoint.pt, which does not exist"."""
    (work / "m" / "checkpoints" / "checkpoint.pt").mkdir(parents=True)
    before = tree(work)
    res = invoke(["fit", "--stats", str(inputs / "stats"), "--out", "m", "--types", "2",
                  "--steps", "1", "--no-progress", "--resume"])
    check_refused(res.output, res.exit_code, "field '--resume': --resume needs "
                  f"{Path('m/checkpoints/checkpoint.pt')}, which is a directory, not a "
                  "checkpoint")
    assert tree(work) == before


# ---- OMP_NUM_THREADS that libgomp cannot read ----------------------------------------------


@pytest.mark.parametrize("value", ["abc", "0", "", "1.5", "-1"])
def test_unreadable_omp_num_threads_is_one_line(tmp_path: Path, value: str) -> None:
    """Was libgomp's "Invalid value for environment variable OMP_NUM_THREADS" above the
    output (exit 0, the value ignored)."""
    proc = console_script(["stats", "--explain", "nowhere"], {"OMP_NUM_THREADS": value},
                          tmp_path)
    check_refused(proc.stderr, proc.returncode, f"OMP_NUM_THREADS={value!r} must be a "
                                                "positive integer")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["2", "2,1", " 1"])
def test_readable_omp_num_threads_still_runs(tmp_path: Path, value: str) -> None:
    proc = console_script(["qif", "--m", "10"], {"OMP_NUM_THREADS": value}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "OMP_NUM_THREADS" not in proc.stderr


# ---- another command's output where a model, a ledger or a release was expected -----------


@pytest.fixture(scope="module")
def run_dir(inputs: Path) -> Path:
    """A run's output as ``run``: its stages.json and results.json (holding an integer past
    64 bits, as a run's QIF section does), its DP release ``run/stats`` and model
    ``run/model``."""
    run = inputs / "run"
    if not run.exists():
        run.mkdir()
        shutil.copytree(inputs / "stats", run / "stats")
        shutil.copytree(inputs / "model", run / "model")
        for name in ("stages.json", "results.json"):
            (run / name).write_text('{"qif": {"cap_generalisation": '
                                    '6341318981691628224081345239406357}}', encoding="utf-8")
    return inputs


MODEL = ["sample", "--users", "10", "--seed", "1", "--out", "{out}.parquet", "--model"]
VALIDATE = ["validate", "--stats", "{in}/stats", "--json", "{out}.json", "--model"]
CASES = [
    ("sample-model-results-json", [*MODEL, "{in}/run/results.json"],
     "results.json, field '--model': is the results.json of a run's output (topicslab run), "
     "not a release output_parameters.json: give the run's model directory"),
    ("validate-model-stages-json", [*VALIDATE, "{in}/run/stages.json"],
     "stages.json, field '--model': is the stages.json of a run's output"),
    ("explain-results-json", ["stats", "--explain", "{in}/run/results.json"],
     "results.json, field '--explain': is the results.json of a run's output (topicslab "
     "run), not a privacy ledger: give the run's DP release"),
    ("sample-model-missing", [*MODEL, "{in}/no-such"], "no-such, field '--model': no such "
                                                       "file"),
    ("validate-model-missing", [*VALIDATE, "{in}/no-such"], "no-such, field '--model': no "
                                                            "such file"),
    ("sample-model-parquet", [*MODEL, "{in}/pop.parquet"],
     "pop.parquet, field '--model': is a file, not a model directory (topicslab fit) nor a "
     "release output_parameters.json"),
    ("sample-model-run-dir", [*MODEL, "{in}/run"],
     "run, field '--model': is a directory holding a run's output (topicslab run), whose "
     "model is"),
    ("sample-model-stats-dir", [*MODEL, "{in}/stats"],
     "stats, field '--model': is a directory holding DP statistics (topicslab stats), not a "
     "fitted model (topicslab fit)"),
    ("fit-stats-run-dir", ["fit", "--out", "{out}", "--types", "2", "--no-progress",
                           "--stats", "{in}/run"],
     "run, field '--stats': is a directory holding a run's output (topicslab run), whose DP "
     "release is"),
    ("validate-stats-run-dir", ["validate", "--model", "{in}/model", "--json", "{out}.json",
                                "--stats", "{in}/run"],
     "run, field '--stats': is a directory holding a run's output"),
    ("validate-stats-a-model", ["validate", "--model", "{in}/model", "--json", "{out}.json",
                                "--stats", "{in}/model"],
     "model, field '--stats': no q_within.json or qwithin.json in this directory"),
    ("run-stats-run-dir", ["run", "--preset", "smoke", "--out", "{out}", "--quiet",
                           "--stats", "{in}/run"],
     "run, field '--stats': is a directory holding a run's output"),
]


@pytest.mark.parametrize(("name", "args", "named"), CASES, ids=[c[0] for c in CASES])
def test_another_output_is_refused(run_dir: Path, work: Path, name: str, args: list[str],
                                   named: str) -> None:
    invoke_refused(invoke, args, run_dir, work, named)


def test_the_runs_own_model_and_release_still_read(run_dir: Path, work: Path) -> None:
    res = invoke(["sample", "--model", str(run_dir / "run" / "model"), "--users", "10",
                  "--seed", "1", "--out", "s.parquet"])
    assert res.exit_code == 0, res.output
    res = invoke(["stats", "--explain", str(run_dir / "run" / "stats")])
    assert res.exit_code == 0, res.output


# ---- an output directory that is a link looping back on itself ----------------------------


@pytest.mark.parametrize("command", [
    ["stats", "--sets", "{in}/pop.parquet", "--out", "loop"],
    ["fit", "--stats", "{in}/stats", "--out", "loop", "--types", "2", "--no-progress"],
])
def test_output_directory_looping_link_is_named_as_such(inputs: Path, work: Path,
                                                        command: list[str]) -> None:
    """Was "is a symbolic link to a missing directory (loop); create it"."""
    (work / "loop").symlink_to("loop")
    before = tree(work)
    res = invoke([a.format(**{"in": inputs}) for a in command])
    check_refused(res.output, res.exit_code, "loop, field '--out': is a symbolic link that "
                                             "loops back on itself")
    assert "create it" not in res.output
    assert tree(work) == before


# ---- a stopped run does not leave the earlier run's report beside its new stages -----------


def _earlier_run(work: Path) -> Path:
    """An output directory as a finished run leaves it: one stage recorded, its report."""
    import json

    out = work / "r"
    out.mkdir()
    (out / "stages.json").write_text(json.dumps({"population": {"key": "old"}}),
                                     encoding="utf-8")
    (out / "report.html").write_text("<html>seed 0</html>", encoding="utf-8")
    (out / "results.json").write_text('{"seed": 0}', encoding="utf-8")
    return out


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_stopped_run_removes_the_report_of_the_stages_it_replaced(
        work: Path, monkeypatch: pytest.MonkeyPatch, stop: type[BaseException]) -> None:
    """Was: the new population (and release, model ...) beside the old report.html and
    results.json, which described the replaced ones."""
    import json

    import topicslab.experiment as experiment

    out = _earlier_run(work)

    def run(_preset: str, out_dir: Path, **_kw: object) -> None:
        (out_dir / "stages.json").write_text(json.dumps({"population": {"key": "new"}}),
                                             encoding="utf-8")
        raise stop("stopped")

    monkeypatch.setattr(experiment, "run", run)
    res = invoke(["run", "--preset", "smoke", "--seed", "1", "--out", str(out), "--quiet"])
    assert res.exit_code == (130 if stop is KeyboardInterrupt else 1), res.output
    assert not (out / "report.html").exists() and not (out / "results.json").exists()
    if stop is KeyboardInterrupt:
        assert ("the earlier report.html and results.json were removed (they described the "
                "stages replaced)") in res.output


def test_stopped_run_keeps_the_report_when_no_stage_changed(
        work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import topicslab.experiment as experiment

    out = _earlier_run(work)

    def run(_preset: str, _out_dir: Path, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "run", run)
    before = tree(work)
    res = invoke(["run", "--preset", "smoke", "--seed", "1", "--out", str(out), "--quiet"])
    assert res.exit_code == 130, res.output
    assert "removed" not in res.output
    assert tree(work) == before


# ---- population --params pairing a topic with itself ---------------------------------------


@pytest.mark.parametrize("table", ["affinities", "site_tags", "cotags"])
def test_params_pair_of_one_topic_is_refused(work: Path, table: str) -> None:
    """Was "error: ValueError: pair entry (1, 1) must name two different topics" (exit 1)."""
    import json
    from importlib import resources

    doc = json.loads(resources.files("topicslab.population").joinpath(
        "data/reference_v2.json").read_text(encoding="utf-8"))
    doc[table] = [*doc.get(table, []), [1, 1, 0.1]]
    (work / "params.json").write_text(json.dumps(doc), encoding="utf-8")
    before = tree(work)
    res = invoke(["population", "--users", "100", "--params", "params.json", "--out",
                  "p.parquet"])
    check_refused(res.output, res.exit_code, f"params.json, field '{table}[")
    assert "names topic 1 twice" in res.output
    assert tree(work) == before
