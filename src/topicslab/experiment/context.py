"""What the stages of a run share: its inputs, its paths and its artefacts, loaded once.

Public names:
    RunContext(cfg, preset, out, seed, ...)     the run's inputs and paths; the artefacts of
                                                finished stages (``population_sets``,
                                                ``statistics``, ``fitted``, ``synthetic_sets``)
                                                read on first use and kept

A stage (``stages``) reads what it needs through the context and returns its summary; it never
reads another stage's closure or memo. The context holds at most one copy of each table, and
lets go of the release's synthetic users where the work ahead draws its own
(``let_go_of_synthetic``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from topicslab.experiment.presets import Preset

__all__ = ["RunContext"]


@dataclass
class RunContext:
    """The inputs, paths and loaded artefacts of one run (module docstring).

    ``sets_path``: the user's topic sets instead of the reference population; ``stats_dir``:
    published DP statistics, with no population at all.
    """

    cfg: Preset
    preset: str
    out: Path
    seed: int = 0
    sets_path: Path | None = None
    sets_taxonomy: str | None = None
    stats_dir: Path | None = None
    progress: bool = False
    #: the fingerprint of ``sets_path`` or ``stats_dir`` (what a stage reading it is keyed on)
    input_fingerprint: str | None = None
    #: the cache key of every stage that ran or was reused (upstream of the next ones)
    keys: dict[str, str] = field(default_factory=dict)
    #: the summary of every stage that ran or was reused
    summaries: dict[str, Any] = field(default_factory=dict)
    #: the fits of ``refit_per_trial`` (one per synthetic trial)
    refits: list[dict[str, Any]] = field(default_factory=list)
    _loaded: dict[str, Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ what the run starts from
    @property
    def input_kind(self) -> str:
        """``"stats"`` (published statistics), ``"sets"`` (the user's) or ``"reference"``."""
        if self.stats_dir is not None:
            return "stats"
        return "sets" if self.sets_path is not None else "reference"

    @property
    def has_population(self) -> bool:
        """Whether a population exists (not when the run starts from DP statistics)."""
        return self.stats_dir is None

    # ------------------------------------------------------------------ paths
    @property
    def pop_path(self) -> Path:
        return self.sets_path if self.sets_path is not None else self.out / "pop.parquet"

    @property
    def stats_path(self) -> Path:
        return self.stats_dir if self.stats_dir is not None else self.out / "stats"

    @property
    def model_dir(self) -> Path:
        return self.out / "model"

    @property
    def synth_path(self) -> Path:
        return self.out / "synth.parquet"

    def upstream(self, *names: str) -> list[str]:
        """The cache keys of the stages ``names`` (``""`` for one that does not exist in this
        run, e.g. the population of a run from DP statistics)."""
        return [self.keys.get(n, "") for n in names]

    # ------------------------------------------------------------------ artefacts, loaded once
    def keep_population(self, sets: Any) -> None:
        """The population a stage made or read (no second read from its file)."""
        self._loaded["population"] = sets

    def keep_statistics(self, stats: Any) -> None:
        """The release a stage made and saved (no second read of its files: 1.2 s of JSON
        at 469 topics); what ``dp.load_statistics`` reads back from them, bit for bit
        (tests/dp/test_release.py)."""
        self._loaded["statistics"] = stats

    def _once(self, key: str, load: Callable[[], Any]) -> Any:
        if key not in self._loaded:
            self._loaded[key] = load()
        return self._loaded[key]

    def population_sets(self) -> Any:
        from topicslab import io as tio

        return self._once("population", lambda: tio.read_sets(
            self.pop_path, taxonomy=self.sets_taxonomy if self.sets_path else None))

    def statistics(self) -> Any:
        from topicslab import dp

        return self._once("statistics", lambda: dp.load_statistics(self.stats_path))

    def fitted(self) -> Any:
        from topicslab import model as tm

        return self._once("model", lambda: tm.load_model(self.model_dir))

    def synthetic_sets(self) -> Any:
        from topicslab import io as tio

        return self._once("synthetic", lambda: tio.read_sets(self.synth_path))

    def let_go_of_synthetic(self) -> None:
        """Drop the release's synthetic table where the work ahead draws its own users or
        needs none (0.8 GB at 10M users: it sat beside each trial's fresh users, and under
        the QIF tables); the report's pair statistics are taken from it first."""
        from topicslab.population import empirical_statistics

        table = self._loaded.pop("synthetic", None)
        if table is not None and "synthetic_statistics" not in self._loaded:
            self._loaded["synthetic_statistics"] = empirical_statistics(table)

    def let_go_of_population(self, keep_weeks: int) -> None:
        """Keep only the population's first ``keep_weeks`` weeks (a compact copy,
        ``population_head``) where the work ahead needs no more: the QIF tables read three
        weeks, and the 10M × 8-week table (0.8 GB) sat under their 2 GB. The report's pair
        statistics are taken from the whole table first; a later ``population_sets`` reads
        the file again."""
        from topicslab.datamodel import TopicSets
        from topicslab.population import empirical_statistics

        table = self._loaded.pop("population", None)
        if table is None:
            return
        if "population_statistics" not in self._loaded:
            self._loaded["population_statistics"] = empirical_statistics(table)
        keep = min(table.n_weeks, max(1, int(keep_weeks)))
        self._loaded["population_weeks"] = table.n_weeks
        self._loaded["population_head"] = TopicSets(
            np.ascontiguousarray(table.sets[:, :keep]), table.taxonomy, table.user_ids,
            dict(table.metadata))

    def population_head(self, weeks: int) -> Any:
        """The population's first ``weeks`` weeks (a view of the whole table, or the copy
        ``let_go_of_population`` kept)."""
        head = self._loaded.get("population_head")
        whole = self._loaded.get("population_weeks")
        if head is not None and (head.n_weeks >= weeks or head.n_weeks == whole):
            return head if head.n_weeks <= weeks else head.subset(weeks=slice(0, weeks))
        return self.population_sets().subset(weeks=slice(0, weeks))

    def population_for_report(self) -> Any:
        """The population side of the report's pair statistics: the statistics taken when
        the table was let go, else the table."""
        return self._loaded.get("population_statistics") or self.population_sets()

    def synthetic_for_report(self) -> Any:
        """The synthetic side of the report's pair statistics: the statistics taken when the
        table was let go, else the table."""
        return self._loaded.get("synthetic_statistics") or self.synthetic_sets()

    # ------------------------------------------------------------------ the model being fitted
    def variant(self) -> Any:
        from topicslab import model as tm

        return tm.make_variant(self.cfg.model, self.cfg.types, self.cfg.weeks)

    def optimizer(self) -> Any:
        from topicslab import model as tm

        return (tm.PaperAdam() if self.cfg.optimizer == "paper"
                else tm.FullObjective(steps=self.cfg.fit_steps))

    def fit_once(self, fit_seed: int) -> Any:
        """One fit of the configured variant and optimiser to the DP statistics."""
        from topicslab import model as tm

        cfg = self.cfg
        return tm.fit(self.statistics(), self.variant(), self.optimizer(), seed=fit_seed,
                      max_minutes=cfg.fit_minutes,
                      target="bar" if cfg.fit_target == "bar" else None,
                      progress=self.progress)

    def drawn_synthetic(self, model: Any, seed: int) -> Any:
        """``synthetic_users`` users of ``model`` drawn with ``seed`` a chunk at a time
        (``ChunkedSets``): the attacks read each trial's synthetic population once, so the
        10M-user table (0.8 GB) is never held beside the population. ``seed + 3`` gives the
        release's own users (the sample stage's, bit for bit)."""
        from topicslab import model as tm
        from topicslab.datamodel import ChunkedSets

        weeks = self.cfg.weeks
        # (the alias tables built once for the chunks of the draw, not once a chunk)
        return ChunkedSets(tm.sampler(model, seed=seed, weeks=weeks), self.synthetic_users,
                           weeks, model.k, model.taxonomy)

    @property
    def synthetic_users(self) -> int:
        """As many synthetic users as the population has (the preset's number without one)."""
        return int((self.summaries.get("population") or {}).get("users") or self.cfg.users)
