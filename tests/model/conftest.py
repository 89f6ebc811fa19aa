"""Fixtures of the model tests. torch runs on one thread: the tensors are small and OpenMP
only adds overhead on a shared machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from model_helpers import small_taxonomy

from topicslab.taxonomy import Taxonomy


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> Iterator[None]:
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="session")
def tax12() -> Taxonomy:
    return small_taxonomy(12)


@pytest.fixture(scope="session")
def tax30() -> Taxonomy:
    return small_taxonomy(30)
