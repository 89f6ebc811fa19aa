"""Fitting a type mixture to DP statistics (Dick et al. §5.1): ``fit`` → ``FitResult``.

Public names:
    fit(stats, model="persistent", optimizer="default", *, types=None, weeks=4, device="auto",
        seed=0, max_minutes=None, target=None, progress=True, checkpoint_dir=None, ...)
        -> FitResult
    FitResult         model, history (step, seconds, loss[, quality shares]), seconds, loss,
                      loss_float64, stopped
    FullObjective     the default optimiser (strategy object)
    PaperAdam         the paper's optimiser (strategy object; paper types only)
    OPTIMIZERS        ("default", "paper")

What is fitted is a model variant (``variants``: ``PersistentTypes`` — the default — or the
paper's ``PaperTypes``); how, an optimiser:

* ``PaperAdam`` — the paper's recipe: Adam (ε = 1e-8), learning rate 1.0, minibatches of 8192
  terms of J drawn without replacement each epoch, init θ ~ N(0, 0.001²), ``epochs`` passes
  (paper: 8000). Each minibatch term is computed exactly from its own slots. The paper does not
  say how the minibatch loss is scaled; the default is the batch *mean* (what TensorFlow/Keras
  losses do): its gradients (~1e-10) sit below ε, so Adam moves each logit by ~lr·g/ε per step
  — slow, which is why the paper needs thousands of epochs (docs/design.md §Objective).
  ``batch_loss="sum"`` scales the batch SSE by N/B instead: normalised Adam steps of ~lr = 1.0
  per logit, which at lr 1.0 saturate the softmaxes within one epoch (measured: J rises from
  2.4e-6 to 8.0e-6 and stays there).
* ``FullObjective`` — full-objective steps: all of J's terms and the gradient from a few dense
  products per step (the variant's closed forms), Adam on N·J (``single_weight="relative"``
  weights the single terms for equal relative error instead, see ``objective``), a cosine
  learning-rate decay 0.5 → 0.005 whose clock is the larger of the step and the wall-time
  fraction (so a time budget is used to the end), float32, starting from the targets'
  marginals plus noise that breaks the symmetry between types. A step's pair statistics may
  be off by ``truncation`` (1e-3) of the DP noise's Frobenius norm, the expansion's smallest
  rows dropped (``closed_forms``): 2.6× faster steps, the same fit. The final J, quality and
  model are exact, and J is recomputed in float64 (``loss_float64``).

Both stop at ``target`` (a loss value, or a ``QualityBar``/``"bar"`` checked every
``eval_every`` steps), at ``max_minutes``, or after their steps/epochs; ``FullObjective`` also
stops when J reaches the DP noise floor (``stop_at_noise``, the default: the discrepancy
principle, docs/fidelity.md); both report progress (a bar with the loss, or a ``callback``
per logged step), write a checkpoint every ``checkpoint_every`` steps and can ``resume``.

Only DP statistics are read here (``Targets``): this package never imports the population.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

import topicslab
from topicslab import _checks
from topicslab._atomic import atomic_path
from topicslab._checks import value_shown
from topicslab._progress import task
from topicslab._resources import heap_kept
from topicslab.errors import InputError
from topicslab.model._adam import Adam
from topicslab.model.objective import Objective, QualityBar
from topicslab.model.persistence import PersistenceTerm
from topicslab.model.targets import Targets
from topicslab.model.typemixture import TypeMixture
from topicslab.model.variants import ModelVariant, PaperTypes, PersistentTypes, make_variant

__all__ = ["NOISE_AT_START", "OPTIMIZERS", "FitResult", "FullObjective", "PaperAdam", "fit",
           "fit_memory", "noise_at_start", "resolve_device"]

OPTIMIZERS = ("default", "paper")
#: the largest weight of the persistence term: it counts a moment off by its tolerance as
#: ``persistence`` noise floors of J, so at this weight the pair statistics have long lost
#: their say (0.003..0.03 measured, docs/fidelity.md §4c); far above it the objective
#: overflowed, and the fit failed blaming the learning rate or ended with non-finite logits,
#: its checkpoint left behind
MAX_PERSISTENCE = 1e6
CHECKPOINT = "checkpoint.pt"

Target = float | QualityBar | Literal["bar"] | None
Params = dict[str, torch.Tensor]


def _positive(name: str, value: Any, integer: bool = False) -> Any:
    """``value`` as an ``int`` (``integer``) or a ``float``, if it is a finite number > 0 (a
    NumPy one too: ``np.float32(0.1)`` was refused here, and taken by ``_checks.number``)."""
    try:
        ok = (_checks.is_real(value) and math.isfinite(value) and value > 0
              and (not integer or float(value).is_integer()))
    except OverflowError:  # (10**400)
        ok = False
    if not ok:
        kind = "a positive integer" if integer else "a positive number"
        raise InputError(f"{name} must be {kind}, got {value_shown(value)}", field=name)
    return int(value) if integer else float(value)


def _set_positive(obj: Any, name: str, integer: bool = False) -> None:
    object.__setattr__(obj, name, _positive(name, getattr(obj, name), integer))


def _share(obj: Any, name: str, hi: float, message: str) -> None:
    """``obj.name`` as a ``float`` in [0, hi], else ``message`` (an ``InputError``)."""
    v = getattr(obj, name)
    try:
        ok = _checks.is_real(v) and 0 <= v <= hi and math.isfinite(v)
    except OverflowError:
        ok = False
    if not ok:
        raise InputError(f"{message}, got {value_shown(v)}", field=name)
    object.__setattr__(obj, name, float(v))


@dataclass(frozen=True)
class FullObjective:
    """The default optimiser: full-objective Adam with a cosine learning-rate decay
    (module docstring). Values chosen by measurement (benchmarks/RESULTS.md).

    ``stop_at_noise``: stop once J is down to the DP noise floor (``Objective.noise_floor``,
    from the ledger's noise scale), the discrepancy principle of early stopping (Morozov):
    the model then fits the released statistics as closely as the true statistics do, and
    further steps fit the noise. Fits that never get there (populations the model class
    describes less well) run all ``steps``, unchanged.
    """

    steps: int = 300
    #: 0.5: the reference fit reaches the noise floor in ~145 steps instead of ~167 at 0.3,
    #: and the stress family keeps every gap within ±7% (docs/fidelity.md §5); at 1.2 the
    #: reference fit diverges (measured)
    lr: float = 0.5
    lr_end: float = 0.005
    init_std: float = 1.0
    eval_every: int = 5
    single_weight: str = "uniform"
    stop_at_noise: bool = True
    #: weight of the persistence statistic's term (``persistence.PersistenceTerm``) when the
    #: release has one and the model is persistent types, in units of J's noise floor per
    #: squared relative moment error; 0 ignores the statistic (docs/fidelity.md §4c)
    persistence: float = 0.03
    #: the Frobenius error allowed in each pair statistic during the steps, as a share of
    #: the DP noise's own (σ·m for an m × m table): the fit drops the subset expansion's
    #: smallest rows within it (``closed_forms``), 2.6× faster steps on the default fit at
    #: 1e-3; 0, or statistics without a noise scale, keep the exact expansion. The final
    #: J, quality and model are computed exactly either way.
    truncation: float = 1e-3
    name: str = "default"

    def __post_init__(self) -> None:
        _set_positive(self, "steps", integer=True)
        _share(self, "persistence", MAX_PERSISTENCE,
               f"persistence must be a number in [0, {MAX_PERSISTENCE:g}]")
        if not isinstance(self.stop_at_noise, bool):
            raise InputError(f"stop_at_noise must be true or false, got "
                             f"{value_shown(self.stop_at_noise)}",
                             field="stop_at_noise")
        _set_positive(self, "lr")
        _set_positive(self, "lr_end")
        _set_positive(self, "eval_every", integer=True)
        _check_init_and_weights(self)
        _share(self, "truncation", 1.0,
               "truncation must be a number in [0, 1] (a share of the DP noise)")

    def tolerance(self, targets: Targets) -> float:
        """The Frobenius bound on each pair statistic's error during the steps: this share
        of the smallest pair noise scale times m (0 without a noise scale)."""
        sig = targets.noise_sigma
        if not self.truncation or not sig:
            return 0.0
        scales = [float(sig[name]) for name in ("within", "across") if sig.get(name)]
        return self.truncation * min(scales) * targets.m if scales else 0.0

    def config(self) -> dict[str, Any]:
        # the persistence weight is recorded by ``fit`` only when its term is active, so
        # that fits (and checkpoints) of releases without the statistic stay as they were
        d = asdict(self)
        d.pop("persistence")
        return d


#: float64-sized copies of the subset expansion a fit step holds (measured: one float32 block
#: of [2^k, T, m] per week and mode, the cat and its gradient)
_EXPANSION_COPIES = 3


def _check_expansion_memory(variant: ModelVariant, k: int, m: int) -> None:
    """Refuse a fit whose subset expansion (2^k subsets of each slot law's rows) cannot fit
    in memory: statistics of k = 14 and 50 types tried to allocate 1.5 GB blocks one after
    another, and k = 20 hundreds of GB (torch's "can't allocate memory", or the OOM killer)."""
    from topicslab._resources import require_memory

    rows = variant.types * (variant.weeks if variant.name == "paper"
                            else getattr(variant, "modes", 1))
    require_memory(8.0 * _EXPANSION_COPIES * 2.0**k * rows * m,
                   f"the subset expansion of k = {k} topics a week (2^{k} subsets) for "
                   f"{variant.types} types", field="types",
                   hint="fit fewer types (or statistics of a smaller k: the Topics API's is 5)")


def _check_init_and_weights(cfg: FullObjective | PaperAdam) -> None:
    # ("x" was a TypeError out of math.isfinite, and True a standard deviation of 1)
    _share(cfg, "init_std", math.inf, "init_std must be a finite number >= 0")
    single_weight = cfg.single_weight
    # (isinstance first: an array was NumPy's "truth value of an array is ambiguous")
    if not isinstance(single_weight, str) or single_weight not in ("uniform", "relative"):
        raise InputError(f"single_weight must be uniform or relative, got "
                         f"{value_shown(single_weight)}",
                         field="single_weight")


@dataclass(frozen=True)
class PaperAdam:
    """The paper's optimiser: Adam on 8192-term minibatches (module docstring)."""

    epochs: int = 8000
    lr: float = 1.0
    batch_terms: int = 8192
    init_std: float = 0.001
    batch_loss: str = "mean"
    eval_every: int | None = None
    single_weight: str = "uniform"
    name: str = "paper"

    def __post_init__(self) -> None:
        _set_positive(self, "epochs", integer=True)
        _set_positive(self, "lr")
        _set_positive(self, "batch_terms", integer=True)
        if self.eval_every is not None:
            _set_positive(self, "eval_every", integer=True)
        _check_init_and_weights(self)
        if not isinstance(self.batch_loss, str) or self.batch_loss not in ("mean", "sum"):
            raise InputError(f"batch_loss must be mean or sum, got {value_shown(self.batch_loss)}",
                             field="batch_loss")

    def config(self) -> dict[str, Any]:
        return asdict(self)


Optimizer = FullObjective | PaperAdam


@dataclass
class FitResult:
    """What ``fit`` returns.

    Attributes:
        model: the fitted ``TypeMixture`` (metadata: seed, fingerprint, optimiser, loss...).
        history: one dict per logged step: ``step``, ``seconds``, ``loss`` (J), ``lr`` and,
            every ``eval_every`` steps, ``share_abs_within_0_1pp`` and
            ``share_rel_within_20pct``.
        seconds: wall time of the fit (including earlier runs when resumed).
        loss: final J in the fitting precision; ``loss_float64``: recomputed in float64.
        stopped: ``"target"``, ``"noise"`` (J reached the DP noise floor), ``"time"``,
            ``"steps"`` or ``"epochs"``.
        steps: optimiser steps taken in total.
    """

    model: TypeMixture
    history: list[dict[str, float]]
    seconds: float
    loss: float
    loss_float64: float
    stopped: str
    steps: int
    quality: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "loss": self.loss, "loss_float64": self.loss_float64,
                "stopped": self.stopped, "steps": self.steps, "quality": self.quality,
                "history": self.history}

    @property
    def noise_at_start(self) -> str | None:
        """``NOISE_AT_START`` when the fit stopped at the DP noise floor before its first
        step, else ``None``."""
        return noise_at_start(self.stopped, self.steps)


#: what a fit that stops at the noise floor before its first step means: the release's
#: statistics are as close to the starting model (the topics' marginals with random types) as
#: to the true statistics, so they carry almost nothing more to fit; further steps fit the
#: noise (measured on the smoke preset, 20K users: 60 or 300 steps without the stop made every
#: risk gap worse, docs/fidelity.md §5e)
NOISE_AT_START = ("the fit stopped at step 0: the DP statistics are within their noise of the "
                  "starting model (the topics' marginals), so at this number of users the noise "
                  "hides the pair structure that drives re-identification risk, and the "
                  "synthetic data cannot be expected to reproduce it; release the statistics "
                  "of more users (the default preset has 1M) for a fidelity verdict that "
                  "speaks of the model")


#: measured peak of a fit on CPU: ~32 float64 copies of the slot parameters (parameters,
#: gradients, Adam moments, per-type statistics) plus one m x m float64 table per week
FIT_COPIES = 32


def fit_memory(variant: ModelVariant, k: int, m: int) -> float:
    """Bytes a CPU fit of ``variant`` to statistics of ``k`` topics a week out of ``m``
    needs (``topicslab fit`` and ``topicslab run`` refuse past the machine's memory)."""
    per_slot_law = k * m * variant.types
    slot_params = per_slot_law * (variant.weeks if variant.name == "paper"
                                  else getattr(variant, "modes", 1))
    return 8.0 * (FIT_COPIES * slot_params + 2 * variant.weeks * m * m)


def noise_at_start(stopped: object, steps: object) -> str | None:
    """``NOISE_AT_START`` for a fit that ``stopped`` at the noise floor after 0 ``steps``."""
    return NOISE_AT_START if stopped == "noise" and steps == 0 else None


#: the longest model fitted: the statistics cover one week and one week pair, so more weeks
#: only repeat them (two years is already far past any use; 100,000 weeks took 44 GB)
MAX_MODEL_WEEKS = 104


def has_week_pair(ledger: Any) -> bool:
    """Whether the statistics of ``ledger`` (a ``PrivacyLedger``; ``None``: unknown, taken as
    yes) count a week pair: a release of one week has no across-week query, and its q_across
    is all zeros."""
    return ledger is None or any(
        isinstance(mech, dict) and str(mech.get("name", "")).startswith("across")
        for mech in ledger.mechanisms)


def resolve_device(device: str) -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; ``"cuda"`` without CUDA is an error."""
    if not isinstance(device, str):  # (None failed on a missing attribute)
        raise InputError(f"device must be cpu, cuda or auto, got "
                         f"{value_shown(device)}", field="device")
    d = device.lower()
    if d == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = re.fullmatch(r"cuda(?::([0-9]+))?", d)
    if cuda:
        if not torch.cuda.is_available():
            raise InputError("CUDA requested but torch.cuda.is_available() is false",
                             field="device")
        # an index past the GPUs was torch's RuntimeError ("invalid device ordinal") once
        # the work began
        count = torch.cuda.device_count()
        if cuda.group(1) is not None and int(cuda.group(1)) >= count:
            raise InputError(f"{device!r}: this machine has {count} CUDA device(s), "
                             f"cuda:0..cuda:{count - 1}", field="device")
        return torch.device(d)
    if d == "cpu":
        return torch.device("cpu")
    raise InputError(f"device must be cpu, cuda or auto, got {value_shown(device)}", field="device")


def _bar(target: Target) -> tuple[QualityBar, float | None, bool]:
    """(bar used for the quality shares, loss target, stop at the bar?)."""
    if target is None:
        return QualityBar(), None, False
    if isinstance(target, QualityBar):
        return target, None, True
    if isinstance(target, str):
        if target in ("bar", "quality"):
            return QualityBar(), None, True
        raise InputError(f"target must be a loss, 'bar' or a QualityBar, got {target!r}",
                         field="target")
    try:  # ([0.01], (0.01,) and 1j were float()'s TypeError; True was a loss target of 1)
        if isinstance(target, bool | np.bool_):
            raise TypeError(target)
        t = float(target)
    except (TypeError, ValueError):
        raise InputError(f"target must be a loss, 'bar' or a QualityBar, got {target!r}",
                         field="target") from None
    if not t > 0 or not math.isfinite(t):
        raise InputError(f"loss target must be a positive number, got {target}",
                         field="target")
    return QualityBar(), t, False


def _resolve(model: ModelVariant | str, optimizer: Optimizer | str, types: int | None,
             weeks: int) -> tuple[ModelVariant, Optimizer]:
    variant = make_variant(model, types, weeks) if isinstance(model, str) else model
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZERS:
            raise InputError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}",
                             field="optimizer")
        opt: Optimizer = PaperAdam() if optimizer == "paper" else FullObjective()
    else:
        opt = optimizer
    if isinstance(opt, PaperAdam) and not isinstance(variant, PaperTypes):
        raise InputError("the paper's optimiser fits the paper's types only (--model paper)",
                         field="optimizer")
    return variant, opt


def _save_checkpoint(directory: Path, state: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / CHECKPOINT) as tmp:
        torch.save(state, tmp)


def _not_a_checkpoint(path: Path, what: str) -> InputError:
    return InputError(f"is not a checkpoint of topicslab fit ({what}): remove it, or drop "
                      "--resume to start a new fit", file=str(path), field="resume")


def _check_checkpoint(state: Any, path: Path) -> None:
    """The parts of a checkpoint a resumed fit reads, of the types ``_save_checkpoint``
    wrote: another program's file (or one edited) under the name was read as far as it went,
    then failed in ``int()``, ``list()`` or the optimiser (exit code 1)."""
    if not isinstance(state, dict):
        raise _not_a_checkpoint(path, f"it holds a {type(state).__name__}, not a fit's state")
    kinds: dict[str, tuple[type, ...]] = {"params": (dict,), "optimizer": (dict,),
                                          "step": (int,), "seconds": (int, float),
                                          "history": (list,), "config": (dict,)}
    for key, kind in kinds.items():
        value = state.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _not_a_checkpoint(path, f"its {key!r} is {type(value).__name__}"
                                    if key in state else f"no {key!r}")
    if state["step"] < 0 or not (math.isfinite(state["seconds"]) and state["seconds"] >= 0):
        raise _not_a_checkpoint(path, f"step {state['step']}, {state['seconds']} seconds")
    if not all(isinstance(entry, dict) for entry in state["history"]):
        raise _not_a_checkpoint(path, "its 'history' is not a list of steps")
    if not state["params"] or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                      for k, v in state["params"].items()):
        raise _not_a_checkpoint(path, "its 'params' are not named tensors")
    saved = state.get("persistence")
    if saved is not None and not (isinstance(saved, dict) and {"term", "unit"} <= set(saved)):
        raise _not_a_checkpoint(path, "its 'persistence' lacks the term and unit")
    if "generator" in state and not isinstance(state["generator"], torch.Tensor):
        raise _not_a_checkpoint(path, f"its 'generator' is {type(state['generator']).__name__}")


def _check_checkpoint_params(state: dict[str, Any], path: Path,
                             expected: dict[str, torch.Tensor]) -> None:
    """The checkpoint's parameters are those of this fit's variant (names and shapes)."""
    got = {name: tuple(p.shape) for name, p in state["params"].items()}
    want = {name: tuple(p.shape) for name, p in expected.items()}
    if got != want:
        raise _not_a_checkpoint(path, f"parameters {got}, this fit's are {want}")


def _load_checkpoint(directory: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    path = directory / CHECKPOINT
    if not path.is_file():
        return None
    import pickle

    try:
        # weights_only: tensors, numbers, text, lists and dicts, all a checkpoint holds; a
        # full unpickling ran whatever code a checkpoint one was given named (and the fit
        # then went on, exit code 0)
        state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        named = re.search(r"GLOBAL ([\w.]+)", str(exc))
        what = f" ({named.group(1)})" if named else ""
        raise _not_a_checkpoint(path, f"it holds Python objects{what} that a fit's state never "
                                "holds, and loading them could run code") from None
    except Exception as exc:
        # (an empty file said "cannot read checkpoint ()", and a cut one torch's paragraph on
        # miniz; neither named --resume nor what to do)
        why = (" ".join(str(exc).split()).split(". ")[0].rstrip(".")
               if path.stat().st_size else "") or "it is empty"
        raise InputError(f"cannot be read as a checkpoint ({why}): it was cut short or "
                         "damaged; remove it, or drop --resume to start a new fit",
                         file=str(path), field="resume") from None
    _check_checkpoint(state, path)
    old = state.get("config", {})
    # (the week pairs last: other weeks change them too, and it is --weeks that differs)
    for key in sorted(set(old) | set(config), key=lambda k: (k == "week_pairs", k)):
        was, now = old.get(key), config.get(key)
        if was != now:
            if key == "fingerprint":
                # two hashes under 'fingerprint' named nothing the caller chose
                raise InputError("checkpoint was made from other DP statistics than these; "
                                 "resume with the statistics of the interrupted fit, or drop "
                                 "--resume to start a new one", file=str(path), field="stats")
            if isinstance(was, dict) and isinstance(now, dict):
                # the optimiser's settings: name the one that differs (--steps), not all
                # of them as two dicts under '--optimizer'; another optimiser is named as
                # such (its first differing setting was "batch_loss=None")
                if was.get("name") != now.get("name"):
                    was, now = was.get("name"), now.get("name")
                else:
                    key = next(k for k in sorted(set(was) | set(now))
                               if was.get(k) != now.get(k))
                    was, now = was.get(key), now.get(key)
            raise InputError(f"checkpoint was made with {key}={was!r}, this fit has {now!r}; "
                             "resume with the options of the interrupted fit, or drop "
                             "--resume to start a new one", file=str(path), field=key)
    return state


def fit(stats: Any, model: ModelVariant | str = "persistent",
        optimizer: Optimizer | str = "default", *, types: int | None = None, weeks: int = 4,
        device: str = "auto", seed: int = 0, max_minutes: float | None = None,
        target: Target = None, progress: bool = True,
        checkpoint_dir: str | os.PathLike[str] | None = None, checkpoint_every: int = 50,
        resume: bool = False, threads: int | None = None,
        callback: Callable[[dict[str, float]], None] | None = None) -> FitResult:
    """Fit a model variant to DP statistics.

    Args:
        stats: ``DPStatistics`` (or any object with ``q_single``, ``q_within``, ``q_across``,
            ``taxonomy``, ``k``); checked (NaN, negative, wrong taxonomy → ``InputError``).
        model: a variant (``PersistentTypes(...)``, ``PaperTypes(...)``) or its name;
            ``types`` (T; default: the variant's, paper 500) and ``weeks`` (r, paper: 4) size
            a variant given by name.
        optimizer: ``FullObjective(...)`` / ``PaperAdam(...)`` or ``"default"`` / ``"paper"``.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA when available).
        seed: initialisation and minibatch order.
        max_minutes: wall-time budget (stops after the step that crosses it).
        target: stop early at this J, or at the quality bar (``"bar"`` or a ``QualityBar``).
        progress: show a progress bar with the loss.
        checkpoint_dir: where ``checkpoint.pt`` is written every ``checkpoint_every`` steps
            (and at the end); ``resume`` continues from it.
        threads: CPU threads for torch; default adaptive (the faster of all cores and one
            core, re-measured every 20 steps: on a shared machine one thread often wins).
        callback: called with each history entry.
    """
    progress = _checks.flag(progress, "progress")
    resume = _checks.flag(resume, "resume")
    variant, opt = _resolve(model, optimizer, types, weeks)
    if variant.weeks > MAX_MODEL_WEEKS:  # (the CLI's bound; from Python 10**6 weeks were fitted)
        raise InputError(f"weeks must be at most {MAX_MODEL_WEEKS}, got {variant.weeks}: the "
                         "statistics describe one week and one week pair, and sampling "
                         "repeats the model's weeks (stationarity)", field="weeks")
    # seed=1.5 was taken as 1, and -1 or 2**64 failed in torch; threads=2.5 was taken as 2,
    # and 0 was torch's RuntimeError
    seed = _checks.integer(seed, "seed", at_least=0, at_most=np.iinfo(np.int64).max)
    if threads is not None:
        # (2**70 was torch's "ValueError: Overflow when unpacking long long"; the command
        # line refuses more threads than CPUs, and so does this now)
        from topicslab._resources import usable_cpus

        _checks.integer(threads, "threads", at_least=1, at_most=usable_cpus(),
                        why="more threads than the CPUs this process may use only "
                            "oversubscribe them")
    if max_minutes is not None:  # ("5" was a TypeError out of math.isfinite, True 1 minute)
        max_minutes = _checks.number(max_minutes, "max_minutes", lo=0, lo_open=True)
    _positive("checkpoint_every", checkpoint_every, integer=True)
    if resume and checkpoint_dir is None:
        raise InputError("resume needs a checkpoint directory", field="checkpoint_dir")
    targets = Targets.from_statistics(stats)
    if variant.weeks > 1 and not has_week_pair(getattr(stats, "ledger", None)):
        # (the CLI refused it; from Python the all-zero q_across was fitted: no topic ever
        # persists from one week to the next)
        raise InputError(f"a model of {variant.weeks} weeks needs statistics of a week pair, "
                         "but the release has one week (its privacy ledger lists no "
                         "across-week query): fit weeks=1, or compute the statistics of two "
                         "weeks", field="weeks")
    _check_expansion_memory(variant, targets.k, targets.m)
    dev = resolve_device(device)
    bar, loss_target, stop_at_bar = _bar(target)
    obj = Objective(targets, variant.weeks, variant.week_pairs(), device=dev,
                    dtype=torch.float32, bar=bar, single_weight=opt.single_weight,
                    rows=variant.rows())
    floor = (obj.noise_floor() if isinstance(opt, FullObjective) and opt.stop_at_noise
             else None)
    persistence = None
    if (targets.q_overlap is not None and isinstance(variant, PersistentTypes)
            and isinstance(opt, FullObjective) and opt.persistence > 0):
        noise = (targets.noise_sigma or {}).get("overlap", 0.0)
        persistence = PersistenceTerm(targets.q_overlap, noise_sigma=noise,
                                      weight=float(opt.persistence), seed=int(seed) + 7919)
    config = {**variant.config(), "k": targets.k, "m": targets.m,
              "fingerprint": targets.fingerprint, "seed": int(seed),
              "optimizer": opt.config()}
    if persistence is not None:
        config["persistence"] = persistence.weight
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if ckpt_dir is not None and ckpt_dir.exists() and not ckpt_dir.is_dir():
        # (FileExistsError at the first checkpoint, exit code 1)
        raise InputError("is a file, where the fit keeps its checkpoints (a directory); "
                         "remove or rename it", file=str(ckpt_dir), field="checkpoint_dir")
    state = _load_checkpoint(ckpt_dir, config) if (resume and ckpt_dir is not None) else None
    if resume and state is None:  # (a new fit began, as if resume were not given)
        raise InputError(f"resume needs {CHECKPOINT} in the checkpoint directory, which does "
                         "not exist: nothing to continue (pass resume=False to begin a new fit)",
                         file=str(ckpt_dir), field="resume")
    params0 = variant.init(targets, seed, opt.init_std,
                           around_marginals=isinstance(opt, FullObjective))
    if state is not None:
        assert ckpt_dir is not None
        _check_checkpoint_params(state, ckpt_dir / CHECKPOINT, params0)
        params0 = state["params"]
    params = {name: p.to(dev, torch.float32).clone().requires_grad_(True)
              for name, p in params0.items()}
    tuner = _Threads(threads, dev)
    # Products of k slot probabilities (the subset expansion) fall below float32's normal
    # range for rare topics; CPUs compute on subnormal numbers up to 100x slower (measured: a
    # fit step 5x slower once the slot laws are peaked). Flushing them to zero changes terms
    # of size < 1.2e-38 only.
    flush = dev.type == "cpu" and torch.set_flush_denormal(True)
    run = _Run(variant=variant, obj=obj, params=params, state=state, ckpt_dir=ckpt_dir,
               config=config, checkpoint_every=int(checkpoint_every), bar=bar,
               loss_target=loss_target, stop_at_bar=stop_at_bar, noise_floor=floor,
               budget=None if max_minutes is None else 60.0 * max_minutes,
               callback=callback, tuner=tuner, persistence=persistence,
               unit_floor=obj.noise_floor() if persistence is not None else None,
               tolerance=(opt.tolerance(targets)
                          if isinstance(opt, FullObjective) else 0.0))
    # a step frees and allocates the same blocks of a few MB: the heap keeps them (CPU only)
    heap = heap_kept() if dev.type == "cpu" else contextlib.nullcontext()
    try:
        with heap:
            if isinstance(opt, PaperAdam):
                stopped = run.paper(opt, seed, progress)
            else:
                stopped = run.default(opt, progress)
    finally:
        tuner.restore()
        if flush:
            torch.set_flush_denormal(False)
    return run.finish(stopped, targets, opt, seed)


class _Threads:
    """Picks torch's CPU thread count by measurement: on a machine shared with other jobs,
    OpenMP with all cores can be several times slower than one thread, so the faster of the
    two is re-measured (two trial steps on the other count) ``period`` steps after the last
    trial; each trial the other count loses doubles the wait (up to ``max_period``), since
    on a quiet machine every trial step on one thread costs ~60% of a step (measured)."""

    def __init__(self, fixed: int | None, device: torch.device, period: int = 20,
                 max_period: int = 160) -> None:
        self.saved = torch.get_num_threads()
        self.base_period = period
        self.period = period
        self.max_period = max_period
        self.next_trial = 2  # the first steps are warm-up
        self.adaptive = fixed is None and device.type == "cpu" and self.saved > 1
        self.choices = [self.saved, 1]
        self.cur = 0
        self.trial = -1  # steps left on the alternative count, -1 when not trying
        self.times: dict[int, list[float]] = {0: [], 1: []}
        self.count = 0
        if fixed is not None:
            torch.set_num_threads(int(fixed))
        self.t = time.perf_counter()

    def tick(self) -> None:
        """Call once per optimiser step."""
        if not self.adaptive:
            return
        now = time.perf_counter()
        dt, self.t = now - self.t, now
        arm = self.cur if self.trial < 0 else 1 - self.cur
        self.times[arm] = (self.times[arm] + [dt])[-2:]
        self.count += 1
        if self.trial > 0:
            self.trial -= 1
            if self.trial == 0:
                alt = 1 - self.cur
                if min(self.times[alt]) < 0.9 * min(self.times[self.cur]):
                    self.cur = alt
                    self.period = self.base_period
                else:
                    self.period = min(2 * self.period, self.max_period)
                self.trial = -1
                self.next_trial = self.count + self.period
                torch.set_num_threads(self.choices[self.cur])
        elif self.count == self.next_trial:
            self.trial = 2
            torch.set_num_threads(self.choices[1 - self.cur])

    def restore(self) -> None:
        torch.set_num_threads(self.saved)


@dataclass
class _Run:
    """Mutable state of one fit: the loop bodies, logging, checkpoints."""

    variant: ModelVariant
    obj: Objective
    params: Params
    state: dict[str, Any] | None
    ckpt_dir: Path | None
    config: dict[str, Any]
    checkpoint_every: int
    bar: QualityBar
    loss_target: float | None
    stop_at_bar: bool
    noise_floor: float | None
    budget: float | None
    callback: Callable[[dict[str, float]], None] | None
    tuner: _Threads
    persistence: PersistenceTerm | None = None
    #: J's noise floor as the persistence term's unit, known even when the fit does not
    #: stop at it (``stop_at_noise=False``), so that a weight means the same either way
    unit_floor: float | None = None
    #: the Frobenius error allowed in the pair statistics of a step (``FullObjective``)
    tolerance: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)
    step: int = 0
    elapsed0: float = 0.0
    t0: float = 0.0
    last_loss: float = math.nan
    last_quality: tuple[float, float] | None = None
    optimizer_state: Adam | None = None
    _unit: float | None = None

    def __post_init__(self) -> None:
        if self.state is not None:
            self.history = list(self.state.get("history", []))
            self.step = int(self.state.get("step", 0))
            self.elapsed0 = float(self.state.get("seconds", 0.0))
            saved = self.state.get("persistence")
            if self.persistence is not None and saved is not None:
                # the offset and unit of the interrupted fit: a resumed fit takes the same steps
                self.persistence.restore(saved["term"])
                self._unit = saved["unit"]
        self.t0 = time.perf_counter()

    # ----------------------------------------------------------------- helpers
    def seconds(self) -> float:
        return self.elapsed0 + time.perf_counter() - self.t0

    def out_of_time(self) -> bool:
        return self.budget is not None and self.seconds() >= self.budget

    def log(self, loss: float, lr: float, quality: tuple[float, float] | None) -> bool:
        """Record a step; True when a target is reached."""
        self.last_loss = loss
        entry: dict[str, float] = {"step": self.step, "seconds": round(self.seconds(), 3),
                                   "loss": loss, "lr": lr}
        if quality is not None:
            self.last_quality = quality
            entry["share_abs_within_0_1pp"] = quality[0]
            entry["share_rel_within_20pct"] = quality[1]
        self.history.append(entry)
        if self.callback is not None:
            self.callback(entry)
        if self.loss_target is not None and loss <= self.loss_target:
            return True
        return bool(self.stop_at_bar and quality is not None and self.bar.met(*quality))

    def at_noise_floor(self, loss: float) -> bool:
        if self.noise_floor is None or loss > self.noise_floor:
            return False
        term = self.persistence
        if term is None:
            return True
        # with the persistence statistic, J at its floor is not enough: its moments must be
        # matched too, measured on the model of this step (not one up to 19 steps old)
        if term.refreshed_at != self.step:
            term.due = True
            return False
        return term.met()

    def persistence_sse(self, sse: torch.Tensor) -> torch.Tensor | None:
        """The persistence term scaled to N·J's noise floor (its weight's unit), or ``None``
        without one. Without a known floor (statistics without a ledger) the unit is the
        starting N·J / 25 (a fit takes J to its floor in about that ratio or more)."""
        term = self.persistence
        if term is None:
            return None
        if self._unit is None:
            self._unit = (self.unit_floor * self.obj.n_terms if self.unit_floor is not None
                          else float(sse.detach()) / 25.0)
        unit = self._unit
        variant = self.variant
        assert isinstance(variant, PersistentTypes)
        tax = self.obj.targets.taxonomy
        raw = term.sse(self.params, variant.laws,
                       lambda: variant.build(self.params, tax, {}), self.step)
        return (term.weight * unit) * raw.to(sse.dtype)

    def info(self) -> str:
        q = self.last_quality
        qs = f" abs≤0.1pp {q[0]:.4%} rel≤20% {q[1]:.2%}" if q is not None else ""
        return f"J={self.last_loss:.4e}{qs}"

    def adam(self, lr: float) -> Adam:
        opt = Adam(self.params.values(), lr=lr)
        if self.state is not None and "optimizer" in self.state:
            try:
                opt.load_state_dict(self.state["optimizer"])
            except (ValueError, KeyError, TypeError, RuntimeError) as exc:
                assert self.ckpt_dir is not None
                raise _not_a_checkpoint(self.ckpt_dir / CHECKPOINT,
                                        f"its optimiser state does not fit: {exc}") from None
        self.optimizer_state = opt
        return opt

    def checkpoint(self, force: bool = False, extra: dict[str, Any] | None = None) -> None:
        opt = self.optimizer_state
        if self.ckpt_dir is None or opt is None or (not force and
                                                    self.step % self.checkpoint_every):
            return
        _save_checkpoint(self.ckpt_dir, {
            "params": {n: p.detach().to("cpu", torch.float64) for n, p in self.params.items()},
            "optimizer": opt.state_dict(), "step": self.step, "seconds": self.seconds(),
            "history": self.history, "config": self.config,
            **({"persistence": {"term": self.persistence.state(), "unit": self._unit}}
               if self.persistence is not None else {}),
            **(extra or {})})

    # ----------------------------------------------------------------- default
    def default(self, opt_cfg: FullObjective, progress: bool) -> str:
        steps, lr, lr_end = opt_cfg.steps, opt_cfg.lr, opt_cfg.lr_end
        opt = self.adam(lr)
        stopped = "steps"
        with task(f"fitting {self.variant.name} types (full objective)", steps,
                  progress) as advance:
            advance(self.step)
            while self.step < steps:
                # cosine decay on the larger of the step and time fractions (so that a time
                # budget is spent to the end with a fully decayed learning rate)
                frac = self.step / steps
                if self.budget is not None:
                    frac = max(frac, self.seconds() / self.budget)
                cur = lr_end + 0.5 * (lr - lr_end) * (1 + math.cos(math.pi * min(frac, 1.0)))
                for g in opt.param_groups:
                    g["lr"] = cur
                opt.zero_grad(set_to_none=True)
                qs, qw, qa = self.variant.statistics(self.params, self.tolerance)
                objective, sse = self.obj.fit_sse_of(qs, qw, qa)
                extra = self.persistence_sse(sse)
                if extra is not None:
                    if not bool(torch.isfinite(extra)):
                        # checked before the step: a non-finite term would make every logit
                        # NaN, and the lr message below would blame the wrong knob
                        raise InputError(f"the persistence term is not finite at step "
                                         f"{self.step} ({float(extra)}): lower the weight "
                                         "of the persistence statistic", field="persistence")
                    objective = objective + extra
                objective.backward()
                loss = float(sse) / self.obj.n_terms
                if not math.isfinite(loss):
                    # past a stable step size Adam overshoots until a softmax overflows; the
                    # model would be unusable, so say which knob to turn instead
                    raise InputError(f"the fit diverged at step {self.step} (J = {loss}): "
                                     f"lower the learning rate (lr = {lr:g})", field="lr")
                quality = (self.obj.quality(qs.detach(), qw.detach(), qa.detach())
                           if self.step % opt_cfg.eval_every == 0 else None)
                del qs, qw, qa
                if self.log(loss, cur, quality):
                    stopped = "target"
                    break
                if self.at_noise_floor(loss):
                    stopped = "noise"
                    break
                opt.step()
                self.step += 1
                self.tuner.tick()
                self.checkpoint()
                advance(1, self.info())
                if self.out_of_time():
                    stopped = "time"
                    break
        return stopped

    # ----------------------------------------------------------------- paper
    def paper(self, opt_cfg: PaperAdam, seed: int, progress: bool) -> str:
        opt = self.adam(opt_cfg.lr)
        theta = self.params["theta"]
        batch = opt_cfg.batch_terms
        n = self.obj.n_terms
        per_epoch = math.ceil(n / batch)
        gen = torch.Generator().manual_seed(int(seed) + 1)
        start_epoch, start_batch = divmod(self.step, per_epoch)
        perm: torch.Tensor | None = None
        gen_state = gen.get_state()
        if self.state is not None and "generator" in self.state:
            # the saved state precedes the permutation of the epoch of the last step taken:
            # regenerate it (mid-epoch) or step past it (at an epoch boundary)
            gen.set_state(self.state["generator"])
            gen_state = gen.get_state()
            perm = torch.randperm(n, generator=gen)
            if start_batch == 0:
                perm = None
        every = per_epoch if opt_cfg.eval_every is None else int(opt_cfg.eval_every)
        dev = theta.device
        with task("fitting paper types (Adam, 8192-term batches)",
                  opt_cfg.epochs * per_epoch, progress) as advance:
            advance(self.step)
            self._evaluate(opt)
            for _epoch in range(start_epoch, opt_cfg.epochs):
                if perm is None:
                    gen_state = gen.get_state()
                    perm = torch.randperm(n, generator=gen)
                for b in range(start_batch, per_epoch):
                    idx = perm[b * batch:(b + 1) * batch].to(dev)
                    opt.zero_grad(set_to_none=True)
                    P = torch.softmax(theta, dim=-1)
                    sse = self.obj.batch_sse(P, idx)
                    loss = (sse / idx.numel() if opt_cfg.batch_loss == "mean"
                            else sse * (n / idx.numel()))
                    loss.backward()
                    opt.step()
                    self.step += 1
                    self.tuner.tick()
                    self.checkpoint(extra={"generator": gen_state})
                    done = self.step % every == 0
                    if done and self._evaluate(opt):
                        return "target"
                    advance(1, self.info())
                    if self.out_of_time():
                        if not done:
                            self._evaluate(opt)
                        return "time"
                start_batch = 0
                perm = None
        return "epochs"

    @torch.no_grad()
    def _evaluate(self, opt: Adam) -> bool:
        qs, qw, qa = self.variant.statistics(self.params)
        loss = float(self.obj.sse_of(qs, qw, qa)) / self.obj.n_terms
        return self.log(loss, float(opt.param_groups[0]["lr"]), self.obj.quality(qs, qw, qa))

    # ----------------------------------------------------------------- end
    def _persistence_summary(self) -> dict[str, Any] | None:
        term = self.persistence
        if term is None:
            return None
        err = term.relative_errors()
        return {"lags": len(term.lags), "weight": term.weight,
                "moments_released": term.target.tolist(),
                "moments_sampled": None if term.last_sampled is None
                else term.last_sampled.tolist(),
                "max_relative_error": None if err is None else float(abs(err).max())}

    def finish(self, stopped: str, targets: Targets, opt: Optimizer, seed: int) -> FitResult:
        with torch.no_grad():
            qs, qw, qa = self.variant.statistics(self.params)
            loss = float(self.obj.sse_of(qs, qw, qa)) / self.obj.n_terms
            quality = self.obj.quality(qs, qw, qa)
            del qs, qw, qa
            p64 = {n: p.detach().double() for n, p in self.params.items()}
            obj64 = Objective(targets, self.variant.weeks, self.variant.week_pairs(),
                              device=self.obj.device, dtype=torch.float64, bar=self.bar,
                              rows=self.variant.rows())
            loss64 = float(obj64.sse_of(*self.variant.statistics(p64))) / obj64.n_terms
            del obj64, p64
        self.checkpoint(force=True)
        seconds = self.seconds()
        metadata = {
            "seed": int(seed), "statistics_fingerprint": targets.fingerprint,
            "optimizer": opt.name, "single_weight": opt.single_weight,
            "steps": self.step, "seconds": round(seconds, 3),
            "loss": loss, "loss_float64": loss64, "stopped": stopped,
            "noise_floor": self.noise_floor,
            "truncation": self.tolerance,
            "week_pairs": [list(p) for p in self.variant.week_pairs()],
            "share_abs_within_0_1pp": quality[0], "share_rel_within_20pct": quality[1],
            "package": {"name": "topicslab", "version": topicslab.__version__},
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        if self.persistence is not None:
            if self.persistence.refreshed_at != self.step:  # the final model's own moments
                variant, tax = self.variant, targets.taxonomy
                self.persistence.measure(lambda: variant.build(self.params, tax, {}),
                                         self.step)
            metadata["persistence"] = self._persistence_summary()
        model = self.variant.build(self.params, targets.taxonomy, metadata)
        return FitResult(model=model, history=self.history, seconds=seconds, loss=loss,
                         loss_float64=loss64, stopped=stopped, steps=self.step,
                         quality={"share_abs_within_0_1pp": quality[0],
                                  "share_rel_within_20pct": quality[1]})

