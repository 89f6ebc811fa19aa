"""Adam (Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015) for the fit.

Why not ``torch.optim.Adam``: its first use imports ``torch._dynamo`` (a compiler the fit never
uses, 1.3 s of every fit on 2 cores, measured: benchmarks/RESULTS.md). This one takes the same
arithmetic steps as torch's single-tensor Adam, which is the one torch runs on a CPU, so a
fit's numbers are bit for bit those of ``torch.optim.Adam`` there (tested); on a GPU torch
would batch the update over the tensors, rounded differently.

Its ``state_dict`` has the layout of torch's, so the checkpoints of fits made with
``torch.optim.Adam`` resume here, and the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

#: torch's defaults, kept in the state so that a checkpoint reads as torch's own
_GROUP_DEFAULTS: dict[str, Any] = {
    "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
    "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
    "fused": None, "decoupled_weight_decay": False}


class Adam:
    """Adam over a list of tensors, one parameter group; ``param_groups[0]["lr"]`` may be
    changed between steps (the fit's cosine schedule)."""

    def __init__(self, params: Iterable[torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = list(params)
        self.param_groups = [{**_GROUP_DEFAULTS, "lr": float(lr),
                              "betas": (float(betas[0]), float(betas[1])), "eps": float(eps),
                              "params": self.params}]
        #: per parameter: steps taken, first and second moment estimates
        self.state: dict[int, dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        group = self.param_groups[0]
        lr, eps = float(group["lr"]), float(group["eps"])
        beta1, beta2 = group["betas"]
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = p.grad
            st = self.state.get(i)
            if st is None:
                st = self.state[i] = {"step": torch.tensor(0.0),
                                      "exp_avg": torch.zeros_like(p),
                                      "exp_avg_sq": torch.zeros_like(p)}
            st["step"] += 1
            t = st["step"].item()
            m, v = st["exp_avg"], st["exp_avg_sq"]
            # m ← β1 m + (1 − β1) g and v ← β2 v + (1 − β2) g² (Algorithm 1), with the bias
            # corrections 1 − β^t folded into the step size and the denominator
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            step_size = lr / (1 - beta1 ** t)
            denom = (v.sqrt() / (1 - beta2 ** t) ** 0.5).add_(eps)
            p.addcdiv_(m, denom, value=-step_size)

    def state_dict(self) -> dict[str, Any]:
        """Steps and moments per parameter index, and the group's settings (torch's layout)."""
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        return {"state": {i: dict(st) for i, st in self.state.items()},
                "param_groups": [{**group, "params": list(range(len(self.params)))}]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the steps and moments of ``state_dict`` (this class's or torch's Adam's);
        a ``ValueError`` when they do not fit these parameters."""
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError("the saved parameter group does not match these parameters")
        if groups[0].get("amsgrad") or groups[0].get("weight_decay") or \
                groups[0].get("maximize"):
            raise ValueError("the saved optimiser used options this Adam does not have")
        state: dict[int, dict[str, Any]] = {}
        for key, saved in state_dict["state"].items():
            i = int(key)
            if not 0 <= i < len(self.params):
                raise ValueError(f"the saved state names parameter {i}")
            p = self.params[i]
            moments = {name: saved[name] for name in ("exp_avg", "exp_avg_sq")}
            if any(not isinstance(t, torch.Tensor) or t.shape != p.shape
                   for t in moments.values()):
                raise ValueError(f"the saved moments of parameter {i} do not fit its shape")
            step = saved["step"]
            state[i] = {"step": torch.tensor(float(step)),
                        **{n: t.to(device=p.device, dtype=p.dtype).clone()
                           for n, t in moments.items()}}
        self.state = state
        group = self.param_groups[0]
        group["lr"] = float(groups[0]["lr"])
        group["betas"] = tuple(float(b) for b in groups[0]["betas"])
        group["eps"] = float(groups[0]["eps"])
