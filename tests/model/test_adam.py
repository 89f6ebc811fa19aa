"""The fit's Adam (``model._adam``): bit for bit ``torch.optim.Adam`` on a CPU, checkpoints
that either one resumes, and no ``torch._dynamo`` import (1.3 s of every fit)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from topicslab.model._adam import Adam


def _problem(seed: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(7, 5, generator=g).requires_grad_(True),
              torch.randn(11, generator=g).requires_grad_(True),
              torch.randn(3, 2, 4, generator=g).requires_grad_(True)]
    target = torch.randn(5, generator=g)
    return params, target


def _loss(params: list[torch.Tensor], target: torch.Tensor) -> torch.Tensor:
    a, b, c = params
    return (((a.sum(0) - target) ** 2).sum() + torch.log1p(b ** 4).sum()
            + (c.tanh() * 3).pow(3).mean())


def _run(opt: object, params: list[torch.Tensor], target: torch.Tensor, steps: range,
         lrs: list[float]) -> None:
    for s in steps:
        for group in opt.param_groups:  # type: ignore[attr-defined]
            group["lr"] = lrs[s]
        opt.zero_grad(set_to_none=True)  # type: ignore[attr-defined]
        _loss(params, target).backward()
        opt.step()  # type: ignore[attr-defined]


LRS = [0.5 * 0.97 ** s + 0.005 for s in range(60)]


def test_each_step_is_torch_adam_bit_for_bit() -> None:
    ours, target = _problem(1)
    theirs, _ = _problem(1)
    a, b = Adam(ours, lr=0.5), torch.optim.Adam(theirs, lr=0.5)
    for s in range(60):
        _run(a, ours, target, range(s, s + 1), LRS)
        _run(b, theirs, target, range(s, s + 1), LRS)
        for x, y in zip(ours, theirs, strict=True):
            assert torch.equal(x, y), s


@pytest.mark.parametrize("first", ["ours", "torch"])
def test_a_checkpoint_of_either_resumes_in_the_other(first: str) -> None:
    """Fits checkpointed with torch.optim.Adam resume with this one, and the other way."""
    straight, target = _problem(2)
    _run(Adam(straight, lr=0.5), straight, target, range(40), LRS)
    params, _ = _problem(2)
    make = {"ours": lambda p: Adam(p, lr=0.5), "torch": lambda p: torch.optim.Adam(p, lr=0.5)}
    opt = make[first](params)
    _run(opt, params, target, range(25), LRS)
    saved = opt.state_dict()
    # (a checkpoint round-trips through torch.save and a weights-only load)
    import io

    buf = io.BytesIO()
    torch.save(saved, buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    second = make["torch" if first == "ours" else "ours"](params)
    second.load_state_dict(saved)
    _run(second, params, target, range(25, 40), LRS)
    for x, y in zip(params, straight, strict=True):
        assert torch.equal(x, y)


def test_a_state_of_other_parameters_is_refused() -> None:
    params, target = _problem(3)
    opt = Adam(params, lr=0.1)
    _run(opt, params, target, range(3), LRS)
    saved = opt.state_dict()
    with pytest.raises(ValueError, match="parameter group"):
        Adam(params[:2], lr=0.1).load_state_dict(saved)
    with pytest.raises(ValueError, match="shape"):
        Adam([torch.zeros(7, 5), torch.zeros(12), torch.zeros(3, 2, 4)],
             lr=0.1).load_state_dict(saved)
    amsgrad = torch.optim.Adam(params, lr=0.1, amsgrad=True)
    with pytest.raises(ValueError, match="options"):
        Adam(params, lr=0.1).load_state_dict(amsgrad.state_dict())


def test_a_fit_imports_no_torch_dynamo(run_python: Callable[[str], Any]) -> None:
    helpers = str(Path(__file__).parent)
    script = (
        "import sys\n"
        f"sys.path.insert(0, {helpers!r})\n"
        "from model_helpers import random_model, small_taxonomy, stats_of\n"
        "from topicslab.model import FullObjective, fit\n"
        "st = stats_of(random_model(small_taxonomy(), T=4, r=2, k=3, seed=7))\n"
        "fit(st, 'persistent', FullObjective(steps=5), types=5, weeks=2, progress=False,\n"
        "    device='cpu')\n"
        "print('torch._dynamo' in sys.modules)\n")
    assert run_python(script).stdout.strip().splitlines()[-1] == "False"
