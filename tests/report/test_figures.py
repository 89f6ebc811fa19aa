"""The report's figure helpers: a thinned CDF stays within one step of the exact one."""

from __future__ import annotations

import numpy as np
import pytest

from topicslab.report.figures import cdf_points, error_cdfs


@pytest.mark.parametrize("n", [0, 1, 7, 2048, 2049, 333_333])
def test_cdf_points_track_the_empirical_cdf(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.lognormal(size=n)
    xs, fr = cdf_points(x, points=2048)
    assert xs.size <= 2048 + 2 and xs.size == fr.size
    if n == 0:
        return
    assert xs[0] == x.min() and xs[-1] == x.max() and fr[-1] == 1.0
    assert np.all(np.diff(xs) >= 0) and np.all(np.diff(fr) > 0)
    # every plotted point lies on the exact ECDF, and consecutive points are at most
    # n / points + 1 ranks apart: the drawn step curve is within 1/points + 1/n of the ECDF
    exact = np.searchsorted(np.sort(x), xs, side="right") / n
    assert np.all(fr <= exact + 1e-12)
    assert np.max(np.diff(np.concatenate([[0.0], fr]))) <= 1 / 2048 + 1 / n + 1e-12


def test_error_cdfs_draw_a_png() -> None:
    rng = np.random.default_rng(0)
    png = error_cdfs(rng.normal(size=50_000) * 1e-3, rng.normal(size=20_000) * 0.1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
