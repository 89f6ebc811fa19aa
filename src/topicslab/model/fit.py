"""Fitting the type mixture to DP statistics (paper §5.1, spec 01 §4): ``fit`` → ``FitResult``.

Public names:
    fit(stats, *, types=500, weeks=4, optimizer="default", device="auto", seed=0,
        max_minutes=None, target=None, progress=True, checkpoint_dir=None, ...) -> FitResult
    FitResult        model, history (step, seconds, loss[, quality shares]), seconds, loss,
                     loss_float64, stopped
    OPTIMIZERS       ("default", "paper")

Optimisers:

* ``"paper"`` — the paper's recipe: Adam (ε = 1e-8), learning rate 1.0, minibatches of 8192
  terms of J drawn without replacement each epoch, init θ ~ N(0, 0.001²), ``epochs`` passes
  (paper: 8000). Each minibatch term is computed exactly from its own slots. The paper does not
  say how the minibatch loss is scaled; the default is the batch *mean* (what TensorFlow/Keras
  losses do): its gradients (~1e-10) sit below ε, so Adam moves each logit by ~lr·g/ε per step
  — slow, which is why the paper needs thousands of epochs (spec 01 §4 "Pitfall").
  ``batch_loss="sum"`` scales the batch SSE by N/B instead: normalised Adam steps of ~lr = 1.0
  per logit, which at lr 1.0 saturate the softmaxes within one epoch (measured: J rises from
  2.4e-6 to 8.0e-6 and stays there).
* ``"default"`` — full-objective steps: all of J's ~1.1M terms and the gradient from a few
  dense products per step (``closed_forms``), Adam on N·J with the single terms weighted for
  equal relative error (``objective``: the DP singles' clipping bias), a cosine learning-rate
  decay 0.3 → 0.005 whose clock is the larger of the step and the wall-time fraction (so a
  time budget is used to the end), float32, starting from the targets' marginals plus noise
  that breaks the symmetry between types. The final J is recomputed in float64
  (``loss_float64``).

Both stop at ``target`` (a loss value, or a ``QualityBar``/``"bar"`` checked every
``eval_every`` steps), at ``max_minutes``, or after ``steps``/``epochs``; both show a progress
bar with the loss, write a checkpoint every ``checkpoint_every`` steps and can ``resume``.

Only DP statistics are read here (``Targets``): this package never imports the population.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

import topicslab
from topicslab._atomic import atomic_path
from topicslab.errors import InputError
from topicslab.model.objective import Objective, QualityBar
from topicslab.model.targets import Targets
from topicslab.model.typemixture import TypeMixture

__all__ = ["OPTIMIZERS", "FitResult", "fit", "resolve_device"]

OPTIMIZERS = ("default", "paper")
CHECKPOINT = "checkpoint.pt"

#: Defaults of the full-objective optimiser (chosen by measurement, see benchmarks/).
DEFAULT_LR = 0.3
DEFAULT_LR_END = 0.005
DEFAULT_STEPS = 250
DEFAULT_INIT_STD = 1.0
#: The paper's recipe.
PAPER_LR = 1.0
PAPER_BATCH = 8192
PAPER_EPOCHS = 8000
PAPER_INIT_STD = 0.001

Target = float | QualityBar | Literal["bar"] | None


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
        stopped: ``"target"``, ``"time"``, ``"steps"`` or ``"epochs"``.
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


def resolve_device(device: str) -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; ``"cuda"`` without CUDA is an error."""
    d = device.lower()
    if d == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if d.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError("CUDA requested but torch.cuda.is_available() is false",
                             field="device")
        return torch.device(d)
    if d == "cpu":
        return torch.device("cpu")
    raise InputError(f"device must be cpu, cuda or auto, got {device!r}", field="device")


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
    t = float(target)
    if not t > 0 or not math.isfinite(t):
        raise InputError(f"loss target must be a positive number, got {target}",
                         field="target")
    return QualityBar(), t, False


def _init_theta(targets: Targets, shape: tuple[int, int, int, int], optimizer: str,
                seed: int, init_std: float | None) -> torch.Tensor:
    gen = torch.Generator().manual_seed(int(seed))
    if optimizer == "paper":
        std = PAPER_INIT_STD if init_std is None else init_std
        return torch.randn(shape, generator=gen, dtype=torch.float64) * std
    # The targets' marginals (a slot draws o with probability ~ q_single(o)/k) plus noise
    # that makes the types differ from the start; the paper's near-zero init leaves all
    # types alike and most early steps are spent breaking that symmetry.
    std = DEFAULT_INIT_STD if init_std is None else init_std
    base = np.log(np.clip(targets.q_single, 1e-7, None) / targets.k)
    noise = torch.randn(shape, generator=gen, dtype=torch.float64) * std
    return torch.from_numpy(base).view(1, 1, 1, -1) + noise


def _save_checkpoint(directory: Path, state: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / CHECKPOINT) as tmp:
        torch.save(state, tmp)


def _load_checkpoint(directory: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    path = directory / CHECKPOINT
    if not path.is_file():
        return None
    try:
        state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:
        raise InputError(f"cannot read checkpoint ({exc})", file=str(path)) from None
    old = state.get("config", {})
    for key in ("types", "weeks", "k", "m", "optimizer", "fingerprint", "week_pairs",
                "seed", "single_weight", "batch_loss"):
        if old.get(key) != config.get(key):
            raise InputError(f"checkpoint was made with {key}={old.get(key)!r}, this fit "
                             f"has {config.get(key)!r}", file=str(path), field=key)
    return state


class _Bar:
    """A rich progress bar with the loss and quality shares; silent when disabled."""

    def __init__(self, enabled: bool, total: float | None, desc: str) -> None:
        self.enabled = enabled
        self.progress: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("{task.fields[info]}"),
                                     console=Console(stderr=True))
            self.progress.start()
            self.tid = self.progress.add_task(desc, total=total, info="")

    def update(self, completed: float, info: str) -> None:
        if self.progress is not None:
            self.progress.update(self.tid, completed=completed, info=info)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def fit(stats: Any, *, types: int = 500, weeks: int = 4, optimizer: str = "default",
        device: str = "auto", seed: int = 0, max_minutes: float | None = None,
        target: Target = None, progress: bool = True,
        checkpoint_dir: str | os.PathLike[str] | None = None, checkpoint_every: int = 50,
        resume: bool = False, steps: int | None = None, epochs: int | None = None,
        lr: float | None = None, lr_end: float | None = None, batch_terms: int = PAPER_BATCH,
        init_std: float | None = None, eval_every: int | None = None, cyclic: bool = False,
        threads: int | None = None, single_weight: str | None = None,
        batch_loss: str = "mean",
        callback: Callable[[dict[str, float]], None] | None = None) -> FitResult:
    """Fit a T-type mixture with r weeks of k slots to DP statistics.

    Args:
        stats: ``DPStatistics`` (or any object with ``q_single``, ``q_within``, ``q_across``,
            ``taxonomy``, ``k``); checked (NaN, negative, wrong taxonomy → ``InputError``).
        types: T (paper: 500). weeks: r (paper: 4).
        optimizer: ``"default"`` (full-objective Adam) or ``"paper"`` (see module doc).
        device: ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA when available).
        seed: initialisation and minibatch order.
        max_minutes: wall-time budget (stops after the step that crosses it).
        target: stop early at this J, or at the quality bar (``"bar"`` or a ``QualityBar``).
        progress: show a progress bar with the loss.
        checkpoint_dir: where ``checkpoint.pt`` is written every ``checkpoint_every`` steps
            (and at the end); ``resume`` continues from it.
        steps: full-objective steps (default 250). epochs: paper epochs (default 8000).
        lr, lr_end: learning rate (default: 0.3 → 0.005 cosine; paper: 1.0 constant).
        batch_terms: paper minibatch size (8192).
        batch_loss: paper minibatch loss: ``"mean"`` of the batch's squared errors (the
            usual framework loss, so Adam's ε = 1e-8 dominates and steps are ~lr·g/ε) or
            ``"sum"`` (scaled by N/B: normalised Adam steps of size ~lr).
        init_std: initial noise (default 1.0 around the marginals; paper 0.001 around 0).
        eval_every: steps between quality evaluations (default 5; paper: once an epoch).
        cyclic: also fit the wrap-around week pair (r−1 → 0), so sampling more than r weeks
            by the stationarity rule keeps every transition fitted (not in the paper).
        single_weight: weights of the single terms in the fitted objective: ``"relative"``
            (default optimiser's default; see ``objective``) or ``"uniform"`` (J as is; the
            paper's). The loss reported is always the unweighted J.
        threads: CPU threads for torch; default adaptive (the faster of all cores and one
            core, re-measured every 20 steps: on a shared machine one thread often wins).
        callback: called with each history entry.
    """
    if optimizer not in OPTIMIZERS:
        raise InputError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}",
                         field="optimizer")
    for name, v in (("types", types), ("weeks", weeks)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)
    if batch_loss not in ("mean", "sum"):
        raise InputError(f"batch_loss must be mean or sum, got {batch_loss!r}",
                         field="batch_loss")
    if max_minutes is not None and not max_minutes > 0:
        raise InputError(f"max_minutes must be > 0, got {max_minutes}", field="max_minutes")
    targets = Targets.from_statistics(stats)
    dev = resolve_device(device)
    bar, loss_target, stop_at_bar = _bar(target)
    pairs = [(i, i + 1) for i in range(weeks - 1)]
    if cyclic and weeks > 1:
        pairs.append((weeks - 1, 0))
    sw = single_weight or ("uniform" if optimizer == "paper" else "relative")
    if sw not in ("uniform", "relative"):
        raise InputError(f"single_weight must be uniform or relative, got {single_weight!r}",
                         field="single_weight")
    obj = Objective(targets, weeks, pairs, device=dev, dtype=torch.float32, bar=bar,
                    single_weight=sw)
    shape = (types, weeks, targets.k, targets.m)
    config = {"types": types, "weeks": weeks, "k": targets.k, "m": targets.m,
              "optimizer": optimizer, "fingerprint": targets.fingerprint,
              "week_pairs": [list(p) for p in pairs], "seed": int(seed), "single_weight": sw,
              "batch_loss": batch_loss if optimizer == "paper" else None}
    ckpt_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
    state = _load_checkpoint(ckpt_dir, config) if (resume and ckpt_dir is not None) else None
    if resume and ckpt_dir is None:
        raise InputError("resume needs a checkpoint directory", field="checkpoint_dir")
    theta0 = state["theta"] if state is not None else _init_theta(
        targets, shape, optimizer, seed, init_std)
    theta = theta0.to(dev, torch.float32).clone().requires_grad_(True)
    tuner = _Threads(threads, dev)
    run = _Run(obj=obj, theta=theta, state=state, ckpt_dir=ckpt_dir, config=config,
               checkpoint_every=max(1, int(checkpoint_every)), bar=bar,
               loss_target=loss_target, stop_at_bar=stop_at_bar,
               budget=None if max_minutes is None else 60.0 * max_minutes,
               callback=callback, tuner=tuner)
    try:
        stopped = _optimise(run, optimizer, epochs, lr, lr_end, batch_terms, seed, progress,
                            eval_every, steps, batch_loss)
    finally:
        tuner.restore()
    run.extra["single_weight"] = sw
    return run.finish(stopped, targets, optimizer, seed, pairs)


def _optimise(run: _Run, optimizer: str, epochs: int | None, lr: float | None,
              lr_end: float | None, batch_terms: int, seed: int, progress: bool,
              eval_every: int | None, steps: int | None, batch_loss: str) -> str:
    if optimizer == "paper":
        return run.paper(epochs if epochs is not None else PAPER_EPOCHS,
                         PAPER_LR if lr is None else lr, int(batch_terms), seed, progress,
                         eval_every, batch_loss)
    return run.default(steps if steps is not None else DEFAULT_STEPS,
                       DEFAULT_LR if lr is None else lr,
                       DEFAULT_LR_END if lr_end is None else lr_end, progress,
                       5 if eval_every is None else max(1, int(eval_every)))


class _Threads:
    """Picks torch's CPU thread count by measurement: on a machine shared with other jobs,
    OpenMP with all cores can be several times slower than one thread, so the faster of the
    two is re-measured every ``period`` steps (two trial steps on the other count)."""

    def __init__(self, fixed: int | None, device: torch.device, period: int = 20) -> None:
        self.saved = torch.get_num_threads()
        self.period = period
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
                self.trial = -1
                torch.set_num_threads(self.choices[self.cur])
        elif self.count % self.period == 2:
            # the first steps are warm-up; then every period steps try the other count
            self.trial = 2
            torch.set_num_threads(self.choices[1 - self.cur])

    def restore(self) -> None:
        torch.set_num_threads(self.saved)


@dataclass
class _Run:
    """Mutable state of one fit: the loop bodies, logging, checkpoints."""

    obj: Objective
    theta: torch.Tensor
    state: dict[str, Any] | None
    ckpt_dir: Path | None
    config: dict[str, Any]
    checkpoint_every: int
    bar: QualityBar
    loss_target: float | None
    stop_at_bar: bool
    budget: float | None
    callback: Callable[[dict[str, float]], None] | None
    tuner: _Threads
    history: list[dict[str, float]] = field(default_factory=list)
    step: int = 0
    elapsed0: float = 0.0
    t0: float = 0.0
    last_loss: float = math.nan
    last_quality: tuple[float, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.state is not None:
            self.history = list(self.state.get("history", []))
            self.step = int(self.state.get("step", 0))
            self.elapsed0 = float(self.state.get("seconds", 0.0))
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

    def info(self) -> str:
        q = self.last_quality
        qs = f" abs≤0.1pp {q[0]:.4%} rel≤20% {q[1]:.2%}" if q is not None else ""
        return f"J={self.last_loss:.4e}{qs}"

    def checkpoint(self, opt: torch.optim.Optimizer, force: bool = False,
                   extra: dict[str, Any] | None = None) -> None:
        if self.ckpt_dir is None or (not force and self.step % self.checkpoint_every):
            return
        _save_checkpoint(self.ckpt_dir, {
            "theta": self.theta.detach().to("cpu", torch.float64),
            "optimizer": opt.state_dict(), "step": self.step, "seconds": self.seconds(),
            "history": self.history, "config": self.config, **(extra or {})})

    def _restore(self, opt: torch.optim.Optimizer) -> None:
        if self.state is not None and "optimizer" in self.state:
            opt.load_state_dict(self.state["optimizer"])

    # ----------------------------------------------------------------- default
    def default(self, steps: int, lr: float, lr_end: float, progress: bool,
                eval_every: int) -> str:
        opt = torch.optim.Adam([self.theta], lr=lr)
        self._restore(opt)
        ui = _Bar(progress, steps, "fitting (full objective)")
        stopped = "steps"
        try:
            while self.step < steps:
                # cosine decay on the larger of the step and time fractions (spec: a time
                # budget is spent to the end with a fully decayed learning rate)
                frac = self.step / steps
                if self.budget is not None:
                    frac = max(frac, self.seconds() / self.budget)
                cur = lr_end + 0.5 * (lr - lr_end) * (1 + math.cos(math.pi * min(frac, 1.0)))
                for g in opt.param_groups:
                    g["lr"] = cur
                opt.zero_grad(set_to_none=True)
                objective, sse, (qs, qw, qa) = self.obj.fit_sse(self.theta)
                objective.backward()
                loss = float(sse) / self.obj.n_terms
                quality = (self.obj.quality(qs.detach(), qw.detach(), qa.detach())
                           if self.step % eval_every == 0 else None)
                del qs, qw, qa
                hit = self.log(loss, cur, quality)
                if hit:
                    stopped = "target"
                    break
                opt.step()
                self.step += 1
                self.tuner.tick()
                self.checkpoint(opt)
                ui.update(self.step, self.info())
                if self.out_of_time():
                    stopped = "time"
                    break
        finally:
            ui.close()
        self.extra["optimizer_state"] = opt
        return stopped

    # ----------------------------------------------------------------- paper
    def paper(self, epochs: int, lr: float, batch: int, seed: int, progress: bool,
              eval_every: int | None, batch_loss: str) -> str:
        opt = torch.optim.Adam([self.theta], lr=lr)
        self._restore(opt)
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
        every = per_epoch if eval_every is None else max(1, int(eval_every))
        ui = _Bar(progress, epochs * per_epoch, "fitting (paper: Adam, 8192-term batches)")
        stopped = "epochs"
        dev = self.theta.device
        try:
            self._evaluate(opt)
            for _epoch in range(start_epoch, epochs):
                if perm is None:
                    gen_state = gen.get_state()
                    perm = torch.randperm(n, generator=gen)
                for b in range(start_batch, per_epoch):
                    idx = perm[b * batch:(b + 1) * batch].to(dev)
                    opt.zero_grad(set_to_none=True)
                    P = torch.softmax(self.theta, dim=-1)
                    sse = self.obj.batch_sse(P, idx)
                    loss = sse / idx.numel() if batch_loss == "mean" else sse * (n / idx.numel())
                    loss.backward()
                    opt.step()
                    self.step += 1
                    self.tuner.tick()
                    self.checkpoint(opt, extra={"generator": gen_state})
                    done = self.step % every == 0
                    if done and self._evaluate(opt):
                        return "target"
                    ui.update(self.step, self.info())
                    if self.out_of_time():
                        if not done:
                            self._evaluate(opt)
                        return "time"
                start_batch = 0
                perm = None
        finally:
            ui.close()
            self.extra["optimizer_state"] = opt
        return stopped

    @torch.no_grad()
    def _evaluate(self, opt: torch.optim.Optimizer) -> bool:
        sse, (qs, qw, qa) = self.obj.sse(self.theta)
        loss = float(sse) / self.obj.n_terms
        return self.log(loss, float(opt.param_groups[0]["lr"]),
                        self.obj.quality(qs, qw, qa))

    # ----------------------------------------------------------------- end
    def finish(self, stopped: str, targets: Targets, optimizer: str, seed: int,
               pairs: list[tuple[int, int]]) -> FitResult:
        theta = self.theta.detach()
        with torch.no_grad():
            sse, (qs, qw, qa) = self.obj.sse(theta)
            loss = float(sse) / self.obj.n_terms
            quality = self.obj.quality(qs, qw, qa)
            del qs, qw, qa
            obj64 = Objective(targets, self.obj.weeks, pairs, device=theta.device,
                              dtype=torch.float64, bar=self.bar)
            loss64 = float(obj64.loss(theta.double()))
            del obj64
        opt = self.extra.get("optimizer_state")
        if opt is not None:
            self.checkpoint(opt, force=True)
        seconds = self.seconds()
        metadata = {
            "seed": int(seed), "statistics_fingerprint": targets.fingerprint,
            "optimizer": optimizer, "single_weight": self.extra.get("single_weight"),
            "steps": self.step, "seconds": round(seconds, 3),
            "loss": loss, "loss_float64": loss64, "stopped": stopped,
            "week_pairs": [list(p) for p in pairs],
            "share_abs_within_0_1pp": quality[0], "share_rel_within_20pct": quality[1],
            "package": {"name": "topicslab", "version": topicslab.__version__},
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        model = TypeMixture(theta.to("cpu", torch.float32).numpy(), targets.taxonomy,
                            metadata)
        return FitResult(model=model, history=self.history, seconds=seconds, loss=loss,
                         loss_float64=loss64, stopped=stopped, steps=self.step,
                         quality={"share_abs_within_0_1pp": quality[0],
                                  "share_rel_within_20pct": quality[1]})
