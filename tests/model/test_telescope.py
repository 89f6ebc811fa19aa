"""The compiled diagonal telescope of persistent types (``model._telescope``): the same
values as the tensor version bit for bit, gradients of the same sums."""

from __future__ import annotations

import pytest
import torch

from topicslab.model._telescope import telescope, telescope_tensors


def _inputs(dtype, C=7, k=5, m=11, seed=0):
    gen = torch.Generator().manual_seed(seed)
    P = torch.softmax(3 * torch.randn(C, k, m, generator=gen, dtype=dtype), dim=-1)
    P[0, 0, 0] = 0.0  # a topic no slot draws, and one a slot always draws
    P[1, 2] = 0.0
    P[1, 2, 3] = 1.0
    u = torch.exp(torch.log1p(-P).clamp(min=-1000.0))
    stay = torch.rand(C, k, generator=gen, dtype=dtype)
    stay[2] = 0.0  # slots that never stay, and always do
    stay[3] = 1.0
    return u, P, stay


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_telescope_has_the_tensor_versions_values_bit_for_bit(dtype):
    for seed in range(3):
        u, P, stay = _inputs(dtype, seed=seed)
        assert torch.equal(telescope(u, P, stay), telescope_tensors(u, P, stay))


def test_the_telescope_is_the_difference_of_the_two_products():
    u, P, stay = _inputs(torch.float64)
    x = u * (u + P * stay.unsqueeze(-1))
    y = u * u
    expected = x.prod(dim=1) - y.prod(dim=1)
    assert torch.allclose(telescope(u, P, stay), expected, rtol=1e-12, atol=1e-15)


def test_the_compiled_gradients_pass_gradcheck():
    u, P, stay = (x.clone().requires_grad_(True) for x in _inputs(torch.float64, C=4, k=4, m=5))
    assert torch.autograd.gradcheck(telescope, (u, P, stay))


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-13), (torch.float32, 1e-5)])
def test_the_compiled_gradients_are_autograds_of_the_tensor_version(dtype, tol):
    base = _inputs(dtype, C=40, m=60, seed=4)
    weights = torch.rand(40, 60, generator=torch.Generator().manual_seed(5), dtype=dtype)
    grads = []
    for fn in (telescope, telescope_tensors):
        xs = [x.clone().requires_grad_(True) for x in base]
        grads.append(torch.autograd.grad((fn(*xs) * weights).sum(), xs))
    for ours, theirs in zip(*grads, strict=True):
        scale = float(theirs.abs().max())
        assert float((ours - theirs).abs().max()) <= tol * scale


def test_strided_inputs_and_other_dtypes_take_the_same_values():
    u, P, stay = _inputs(torch.float64)
    # a view with the slots last, transposed back: not contiguous
    ut, Pt = u.transpose(1, 2).contiguous().transpose(1, 2), P.transpose(1, 2).contiguous()
    assert not ut.is_contiguous()
    assert torch.equal(telescope(ut, Pt.transpose(1, 2), stay), telescope(u, P, stay))
    half = [x.to(torch.bfloat16) for x in (u, P, stay)]  # (no kernel: the tensor version)
    assert torch.equal(telescope(*half), telescope_tensors(*half))


def test_shapes_the_kernels_do_not_take_go_to_the_tensor_version():
    # (the kernels index without bounds checks: a wrong shape read past the arrays)
    u, P, stay = _inputs(torch.float64)
    assert torch.equal(telescope(u, P[:1], stay), telescope_tensors(u, P[:1], stay))
    with pytest.raises(IndexError):  # no slots: the tensor version's own error
        telescope(u[:, :0], P[:, :0], stay[:, :0])


def test_a_second_derivative_is_refused_not_dropped():
    u, P, stay = (x.clone().requires_grad_(True) for x in _inputs(torch.float64))
    weights = torch.rand(u.shape[0], u.shape[2], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((telescope(u, P, stay) * weights).sum(), u, create_graph=True)
    with pytest.raises(RuntimeError, match=r"once_differentiable|twice"):
        g.sum().backward()
