"""Will a run fit? Its memory and disk, estimated before any stage, for ``topicslab run`` and
``experiment.run`` alike (from Python, a population of 300M users was refused as "use fewer
--targets" by the protocol's estimate, and the population's own check ran in the CLI only).

Every estimate is a lower bound of what the work surely needs, so only a run that surely
cannot fit is refused; the options named are the CLI's (``--users``: ``users=`` from Python).

Public names:
    check_run_size(cfg, users_known=, out_dir=)   all of the checks below, in the run's order
    check_population_size(users, weeks, out_dir, release_weeks)
    check_fit_size(model, types, weeks)
    check_memory(cfg, users_known=)               the protocol, learned section and fidelity
"""

from __future__ import annotations

from pathlib import Path

from topicslab.errors import InputError
from topicslab.experiment.presets import Preset

#: disk of the DP release per released week, whatever the users (its JSON tables of the v2
#: taxonomy's topic pairs: 72 MB for a default run's four weeks, measured), and of the rest
#: a run writes beside the sets (model 4.7 MB, validation 4.1 MB, report 0.8 MB, measured)
_RELEASE_BYTES_PER_WEEK = 18e6
_OTHER_RUN_BYTES = 10e6


def check_run_size(cfg: Preset, *, users_known: bool, out_dir: Path | None) -> None:
    """Refuse, before any stage, a run whose stages surely cannot fit: the reference
    population and its synthetic twin (memory and disk, naming --users; ``users_known``: the
    run simulates ``cfg.users`` users), the fit (the estimate ``topicslab fit`` makes, naming
    --types) and the re-identification protocol, learned section and fidelity check
    (``check_memory``). ``out_dir``: where the run writes (``None``: the disk is not checked)."""
    if users_known:
        check_population_size(cfg.users, cfg.weeks, out_dir, len(cfg.release_weeks))
    check_fit_size(cfg.model, cfg.types, cfg.weeks)
    check_memory(cfg, users_known=users_known)


def check_population_size(users: int, weeks: int, out_dir: Path | None,
                          release_weeks: int) -> None:
    """The reference population is generated whole (then its synthetic twin is sampled, as
    many users): both sets in memory, both Parquet files in ``out_dir``, beside the DP
    release and the other files (the check counted the sets only: a run on a disk that held
    them but not the 72 MB release failed at the release, told to use fewer --users)."""
    from topicslab._resources import require_disk, require_memory
    from topicslab.api import Mechanism
    from topicslab.io.parquet_sets import PARQUET_BYTES_PER_USER_WEEK
    from topicslab.population.generator import CHUNK_BYTES_PER_USER_WEEK, CHUNK_USERS

    user_weeks = float(users) * weeks
    # two int16 sets of k topics a week (a lower bound), and the chunk being generated
    need = (user_weeks * Mechanism().k * 2 * 2
            + min(users, CHUNK_USERS) * weeks * CHUNK_BYTES_PER_USER_WEEK)
    what = f"the run's population and synthetic sets of {users:,} users x {weeks} weeks"
    require_memory(need, what, field="--users", hint="use fewer --users")
    if out_dir is None:
        return
    sets = 2 * user_weeks * PARQUET_BYTES_PER_USER_WEEK
    fixed = release_weeks * _RELEASE_BYTES_PER_WEEK + _OTHER_RUN_BYTES
    if sets >= fixed:
        require_disk(sets + fixed, f"{what}, with the DP release and the report", out_dir,
                     field="--users", hint="use fewer --users")
    else:
        # most of it does not depend on the users: fewer would not help
        require_disk(sets + fixed, f"the run's DP release ({release_weeks} weeks), model, "
                     f"report and sets of {users:,} users", out_dir, field="--out",
                     hint="free some space or choose another --out")


def check_fit_size(model: str, types: int | None, weeks: int) -> None:
    """The fit's memory, estimated as ``topicslab fit`` does (top-5 sets of the largest
    taxonomy), against the memory of the device the run fits on."""
    from topicslab import model as tm
    from topicslab._resources import require_memory, size_text
    from topicslab.api import Mechanism
    from topicslab.model.fit import fit_memory
    from topicslab.taxonomy import resolve

    variant = tm.make_variant(model, types, weeks)
    need = fit_memory(variant, Mechanism().k, resolve("v2").size)
    what = f"fitting {variant.types:,} types over {variant.weeks} weeks"
    device = tm.resolve_device("auto")
    if device.type == "cpu":
        require_memory(need, what, field="--types", hint="use fewer --types")
        return
    import torch

    free, _ = torch.cuda.mem_get_info(device)
    if need > free:
        raise InputError(f"{what} needs about {size_text(need)} of GPU memory, "
                         f"{size_text(free)} free; use fewer --types", field="--types")


#: bytes the learned section keeps per target and trial: the success of its four attacks
#: (float64) and the paired gaps made of them
_LEARNED_BYTES_PER_TARGET = 64


def check_memory(cfg: Preset, *, users_known: bool) -> None:
    """Refuse, before any stage, a run whose learned-attack section, re-identification protocol
    or release-fidelity check surely cannot fit in memory (``topicslab run`` and ``run``
    alike: from Python, ``overrides={"trials": 10**6}`` was taken, and the protocol's stage ran
    for hours after the others); ``users_known``: the run simulates ``cfg.users`` users (the
    reference population), else their number is not known before the input is read."""
    from topicslab._resources import require_memory
    from topicslab.attacks import ReidProtocol
    from topicslab.validate.fidelity import check_fidelity_size

    if cfg.learned:
        # the learned section keeps every target's success of its four attacks in every
        # trial (float64, and as much again for the paired gaps): --learned-trials 10^8 ran
        # for hours before failing
        targets = cfg.targets if isinstance(cfg.targets, int) else cfg.users
        require_memory(float(targets) * cfg.learned_trials * _LEARNED_BYTES_PER_TARGET,
                       f"the learned attack's {cfg.learned_trials:,} trials of {targets:,} "
                       "targets", field="--learned-trials", hint="use fewer --learned-trials")
    work, trials = ReidProtocol(cfg.targets, cfg.trials).memory(
        cfg.users if users_known else 0, cfg.weeks, 2)
    option = "--trials" if trials >= work else "--targets"
    require_memory(work + trials, f"the re-identification protocol's {cfg.trials:,} trials",
                   field=option, hint=f"use fewer {option}")
    # the fidelity check's trials were unchecked: --fidelity-trials 10^18 ran the stages
    check_fidelity_size(cfg.fidelity_trials, cfg.users if users_known else 0, cfg.weeks,
                        option="--fidelity-trials", users_option="--users",
                        users_hint="use fewer --users")
