"""Range checks of the parameter objects: one message format, one error type.

Only the typed parameter objects call these (``topicslab.dp.params``, ``topicslab.api``'s
``Mechanism``, ``topicslab.attacks.ReidProtocol``, ``topicslab.qif.ReportingChannel``,
``topicslab.disclosure.DisclosureDesign``); each checks its fields once, in ``__post_init__``,
and every engine and command takes the checked object. A failure is a ``ParameterError``
naming the field (the command's option of the same name), the range and the value given,
then why the range is what it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import Any, TypeVar

from topicslab.errors import ParameterError

__all__ = ["MAX_COUNT", "MAX_STEPS", "MIN_FIT_MINUTES", "choice", "comma_items", "flag",
           "integer", "integer_array", "is_collection", "is_integer", "is_real", "number",
           "refuse", "refuse_complex", "shown", "value_shown"]


#: the largest count a computation can hold (an int64): a count past it (10**400) is no
#: count any engine can run, and past a float it broke the memory estimates (OverflowError)
MAX_COUNT = 2**63 - 1


#: the most full-objective steps a fit may ask for (``fit --steps``, ``run --fit-steps`` and
#: the run's ``fit_steps``): 300 are the default and a fit usually stops earlier, at the DP
#: noise floor; 10^12 ran until stopped by hand (a time budget gives a fit more time)
MAX_STEPS = 100_000
#: the shortest time budget of a run's fit, in minutes (``run --fit-minutes``, ``fit_minutes``)
MIN_FIT_MINUTES = 0.01


Error = type[ParameterError]


def refuse(message: str, field: str, why: str = "", error: Error = ParameterError
           ) -> ParameterError:
    """The error of a bad ``field`` (``why``, if given, follows the message); ``error``: a
    toolkit's own subclass (``topicslab.qif`` raises ``QIFParameterError``)."""
    return error(f"{message}: {why}" if why else message, field=field)


def _g(x: float) -> str:
    """``x`` as the papers print it: 0.05, 469, 1e6 (not 1e+06)."""
    return f"{x:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _range(lo: float | None, hi: float | None, lo_open: bool = False,
           hi_open: bool = False) -> str:
    if lo is not None and hi is not None:
        if not lo_open and not hi_open and isinstance(lo, int) and isinstance(hi, int):
            return f"in {lo}..{hi}"
        return f"in {'(' if lo_open else '['}{_g(lo)}, {_g(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_g(lo)}"
    assert hi is not None
    return f"{'<' if hi_open else '<='} {_g(hi)}"


def _duration(value: object) -> bool:
    """Whether ``value`` is a NumPy duration (``np.timedelta64``), which NumPy registers as an
    integer: ``integer``/``number`` took one, and ``int()`` of it then failed ("int() argument
    must be ... not 'datetime.timedelta'"), or its days were read as the count."""
    import numpy as np

    return isinstance(value, np.timedelta64)


def is_real(value: object) -> bool:
    """Whether ``value`` is a real number (a Python or NumPy int or float), not a bool: the
    ad hoc range checks took ``int | float``, which refused ``np.float32(0.1)`` and
    ``np.int64(3)`` where ``number``/``integer`` took them."""
    return isinstance(value, Real) and not isinstance(value, bool) and not _duration(value)


def is_integer(value: object) -> bool:
    """Whether ``value`` is an integer (a Python or NumPy one), not a bool."""
    return isinstance(value, Integral) and not isinstance(value, bool) and not _duration(value)


def value_shown(value: object, most: int | None = None) -> str:
    """``repr(value)`` on one line (cut as ``shown`` cuts it, to ``most`` characters, if
    given): the repr of a pandas Series or a pyarrow array spans lines (``0    1\\n1    2\\n
    dtype: int64``), and an error that quoted it was one of several lines."""
    import re

    text = re.sub(r"\s*[\r\n]+\s*", " ", repr(value))
    return text if most is None else shown(text, most)


def is_collection(value: object) -> bool:
    """Whether ``value`` holds values one can go through (a list, tuple, set, generator or
    array of one dimension or more), not text and not a NumPy 0-d array: ``isinstance(v,
    Iterable)`` is true of a 0-d array (``np.array(0.5)``), whose iteration then fails with
    "TypeError: iteration over a 0-d array"."""
    from collections.abc import Iterable

    return (isinstance(value, Iterable) and not isinstance(value, str | bytes)
            and getattr(value, "ndim", None) != 0)


def flag(value: object, field: str, error: Error = ParameterError) -> bool:
    """``value`` as a ``bool``: ``True`` or ``False`` (or NumPy's). Any other value is
    refused, not taken for its truth: ``progress="no"`` or ``cache=0.0`` was silently read
    as on or off."""
    import numpy as np

    if not isinstance(value, bool | np.bool_):
        raise refuse(f"{field} must be True or False, got {value_shown(value)}", field,
                     error=error)
    return bool(value)


def shown(text: str, most: int = 60) -> str:
    """``text`` as an error line quotes a value: whole up to ``most`` characters, else its
    ends and its length (a 5,000-digit option value filled a screen with one line)."""
    if len(text) <= most:
        return text
    return f"{text[:most // 2]}...{text[-10:]} ({len(text):,} characters)"


def _integer_shown(v: int) -> str:
    try:
        return shown(str(v))
    except ValueError:  # past Python's 4,300 digits, str() refuses (the refusal failed)
        sign = "a negative" if v < 0 else "an"
        return f"{sign} integer of about {int(v.bit_length() * math.log10(2)) + 1:,} digits"


def integer(value: object, field: str, *, at_least: int | None = None,
            at_most: int | None = None, why: str = "", error: Error = ParameterError) -> int:
    """``value`` as an ``int``: an integer (not a bool) within ``[at_least, at_most]``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or _duration(value):
        raise refuse(f"{field} must be an integer, got {value_shown(value, 60)}", field,
                     error=error)
    v = int(value)
    if (at_least is not None and v < at_least) or (at_most is not None and v > at_most):
        raise refuse(f"{field} must be {_range(at_least, at_most)}, got {_integer_shown(v)}",
                     field, why, error)
    return v


def number(value: object, field: str, *, lo: float | None = None, hi: float | None = None,
           lo_open: bool = False, hi_open: bool = False, why: str = "",
           error: Error = ParameterError) -> float:
    """``value`` as a finite ``float`` within the interval from ``lo`` to ``hi`` (open at an
    end whose ``*_open`` is set)."""
    if isinstance(value, bool) or not isinstance(value, Real) or _duration(value):
        raise refuse(f"{field} must be a number, got {value_shown(value)}", field, error=error)
    shown = _range(lo, hi, lo_open, hi_open)
    try:
        v = float(value)
    except OverflowError:  # an int past a float's range (10**400)
        raise refuse(f"{field} must be a finite number {shown}, got an integer past a "
                     "float's range", field, why, error) from None
    if not math.isfinite(v):
        raise refuse(f"{field} must be a finite number {shown}, got {v}", field, why, error)
    below = lo is not None and (v <= lo if lo_open else v < lo)
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if below or above:
        raise refuse(f"{field} must be {shown}, got {_g(v)}", field, why, error)
    return v


def choice(value: object, field: str, options: Iterable[str],
           error: Error = ParameterError) -> str:
    """``value`` if it is one of ``options``."""
    opts = tuple(options)
    if not isinstance(value, str) or value not in opts:
        raise refuse(f"{field} must be one of {', '.join(opts)}, got {value_shown(value)}",
                     field, error=error)
    return value


def comma_items(text: str) -> list[str]:
    """The items of a comma list, stripped. An empty item between or after others (``1,,2``,
    ``1,``) is a ``ValueError``: a value was left out, and dropping it would run on fewer
    values than the user meant. A text of no item at all (``""``, ``","``) gives ``[]``, for
    the caller's own "nothing given" message. An item that is not ASCII (``０,１``, full-width
    digits that ``int`` and ``float`` read) is a ``ValueError`` too: the options typed as
    numbers, and every reader of files, take ASCII digits only."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        return []
    if not all(items):
        raise ValueError(f"a value is missing between the commas of {text!r}")
    for item in items:
        if not item.isascii():
            raise ValueError(f"{item!r} is not ASCII (numbers are read in the digits 0-9 "
                             "only)")
    return items


def integer_array(value: object, field: str, *, error: Error = ParameterError) -> Any:
    """``value`` as a NumPy array of integers: an integer dtype, or floats that are whole
    numbers. A NaN, an infinity or a fraction is refused, not cast (a cast makes NaN a topic
    id), and so is any other dtype (bool, text, objects)."""
    import numpy as np

    if isinstance(value, np.ma.MaskedArray) and np.ma.count_masked(value):
        # np.asarray drops the mask: the hidden values (whatever a masked entry holds) were
        # read as topics and user ids, a wrong answer without a word
        raise refuse(f"{field} is a masked array with {np.ma.count_masked(value):,} masked "
                     "entries, whose hidden values would be read as data; fill them "
                     "(array.filled(...)) or drop them", field, error=error)
    value = host_values(value, field, error=error)
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nested lists: NumPy's "inhomogeneous shape" ValueError
        raise refuse(f"{field} must be a rectangular integer array (nested lists of one "
                     "length per level)", field, error=error) from None
    if arr.dtype.kind == "m":
        # durations are integers to NumPy: they reached the compiled kernels (numba's
        # "TypingError: ... add(timedelta64[s], int64)") or were read as topics
        raise refuse(f"{field} must be an integer array, got dtype {arr.dtype}", field,
                     error=error)
    if np.issubdtype(arr.dtype, np.integer):
        # in the machine's byte order: a big-endian array (">i2", as data from elsewhere may
        # come) reached the compiled kernels, which type none other (profile_anonymity:
        # numba's "TypingError: non-precise type pyobject")
        return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))
    if not np.issubdtype(arr.dtype, np.floating):
        raise refuse(f"{field} must be an integer array, got dtype {arr.dtype}", field,
                     error=error)
    bad = ~np.isfinite(arr) | (arr != np.trunc(arr))
    if bad.any():
        raise refuse(f"{field} must hold whole numbers, got {float(arr[bad].flat[0])!r}", field,
                     error=error)
    if arr.size and float(np.abs(arr).max()) >= 2.0 ** 63:
        raise refuse(f"{field} holds {float(arr.flat[int(np.argmax(np.abs(arr)))])!r}, outside "
                     "the 64-bit integer range", field, error=error)
    # as integers: whole floats were handed on as floats, and a float16 array reached a
    # compiled kernel that has no float16 (profile_anonymity: "NotImplementedError: float16")
    return arr.astype(np.int64)


def refuse_complex(value: object, field: str, *, error: Error = ParameterError) -> None:
    """Refuse complex numbers where real ones are read: ``np.asarray(v, dtype=np.float64)``
    keeps the real part of a complex array with a warning at most (``[[0.5+3j, 0.5]]`` was
    the channel ``[[0.5, 0.5]]``), a reinterpretation without a word. Values NumPy cannot
    make an array of are left to the caller's own conversion."""
    import numpy as np

    try:
        kind = np.asarray(host_values(value, field, error=error)).dtype.kind
    except (TypeError, ValueError):
        return
    if kind == "c":
        raise refuse(f"{field} must hold real numbers, got complex ones (their imaginary "
                     "parts would be dropped)", field, error=error)


def host_values(value: object, field: str, *, error: Error = ParameterError) -> object:
    """A PyTorch tensor as a NumPy array of its values (others unchanged): ``np.asarray``
    of a tensor that requires grad was torch's "RuntimeError: Can't call numpy() on Tensor
    that requires grad", and of one on the ``meta`` device (shapes, no values) a TypeError;
    one on a GPU is copied to the host."""
    if not (type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")):
        return value
    device = getattr(getattr(value, "device", None), "type", None)
    if device == "meta":
        raise refuse(f"{field} is a tensor on the 'meta' device, which has a shape but no "
                     "values; give a tensor that holds the data", field, error=error)
    return value.detach().cpu().numpy()


P = TypeVar("P")


def object_or_keywords(make: Callable[..., P], given: P | None, name: str,
                       defaults: dict[str, Any] | None = None, **keywords: Any) -> P:
    """``given``, or ``make(**keywords)`` from the keywords that are not ``None`` (over
    ``defaults``): the engines take a parameter object or its keyword form. Both at once is
    a ``TypeError``: which would win is not obvious."""
    chosen = {k: v for k, v in keywords.items() if v is not None}
    if given is None:
        return make(**{**(defaults or {}), **chosen})
    if chosen:
        raise TypeError(f"pass {name}= or {'/'.join(chosen)}=, not both")
    if isinstance(make, type) and not isinstance(given, make):
        # (budget="x" was AttributeError: 'str' object has no attribute 'shares')
        raise TypeError(f"{name} takes a {make.__name__}, got {type(given).__name__}")
    return given
