"""NumPy ⇄ Arrow for columns of numbers without pandas: ``pa.array`` of a NumPy array and
``Array.to_numpy`` import pandas (0.4 s) the first time, which every ``topicslab run`` paid
in the population's writer and reader though nothing uses pandas."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from topicslab.io._common import arrow_numbers, numpy_numbers


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.uint64,
                                   np.float32, np.float64])
def test_both_ways_agree_with_arrow_own_conversions(dtype: type) -> None:
    values = (np.arange(-5, 20) if np.dtype(dtype).kind != "u" else np.arange(25)).astype(dtype)
    arr = arrow_numbers(values)
    assert arr.equals(pa.array(values)) and arr.null_count == 0
    back = numpy_numbers(arr)
    assert back.dtype == values.dtype
    np.testing.assert_array_equal(back, values)
    # a slice starts at an offset into the same buffer
    np.testing.assert_array_equal(numpy_numbers(arr.slice(7, 9)), values[7:16])
    np.testing.assert_array_equal(numpy_numbers(arr.slice(3, 0)), values[:0])


def test_nulls_and_other_types_go_through_arrow() -> None:
    with_null = pa.array([1, None, 3], pa.int64())
    out = numpy_numbers(with_null)
    assert np.isnan(out[1]) and out[0] == 1  # Arrow's own conversion: floats with NaN
    assert numpy_numbers(pa.array([], pa.int32())).dtype == np.int32
    assert numpy_numbers(pa.array([True, False])).tolist() == [True, False]
    for bad in (np.array([True, False]), np.zeros((2, 2)), np.array(["a"])):
        with pytest.raises(TypeError, match="1-d array of numbers"):
            arrow_numbers(bad)


def test_writing_and_reading_a_population_imports_no_pandas(
        tmp_path: Path, run_python: Callable[[str], Any]) -> None:
    script = (
        "import sys\n"
        "from topicslab import io, population\n"
        "sets = population.generate(2000, 4, seed=1)\n"
        f"io.write_sets({str(tmp_path / 'p.parquet')!r}, sets)\n"
        f"back = io.read_sets({str(tmp_path / 'p.parquet')!r})\n"
        "assert (back.sets == sets.sets).all()\n"
        "print('pandas' in sys.modules)\n")
    assert run_python(script).stdout.strip() == "False"
