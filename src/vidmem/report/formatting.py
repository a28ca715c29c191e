"""Display text for numbers and table cells, the same way in every report.

:func:`format_number` gives floats four significant digits, prints integers as they
are, and turns ``None``, NaN and infinities into :data:`MISSING` (``"n/a"``);
:func:`format_value` adds an optional per-column :data:`CellFormat`. The report blocks
of :mod:`vidmem.report.blocks` format their cells through these.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np

from vidmem.errors import UserInputError

__all__ = ["MISSING", "CellFormat", "format_number", "format_value", "is_missing"]

#: The text shown for a value that does not exist or is not a finite number.
MISSING = "n/a"

#: How one table column is formatted: a format spec for :func:`format` (``".2f"``,
#: ``".1%"``, ``"d"``), a ``str.format`` template (``"{:.1f} s"``), or a callable that
#: receives the raw value and returns the text.
CellFormat: TypeAlias = str | Callable[[Any], str]


def is_missing(value: Any) -> bool:
    """Tell whether a value is shown as ``"n/a"``: ``None``, NaN or an infinity.

    Args:
        value: anything; only ``None`` and real numbers can be missing.

    Returns:
        ``True`` for ``None`` and non-finite real numbers (Python or NumPy scalars).

    Example:
        >>> is_missing(None), is_missing(float("nan")), is_missing(-float("inf"))
        (True, True, True)
        >>> is_missing(0.0), is_missing("nan")
        (False, False)
    """
    if value is None:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return not math.isfinite(float(value))
    return False


def format_number(value: float | int | None) -> str:
    """Format a number for a human reader, the same way in every report.

    Floats get four significant digits in fixed notation (trailing zeros kept, so a
    column lines up), values of 10 000 and more are rounded to an integer, and values
    closer to zero than 0.001 switch to scientific notation. Integers are printed in
    full. ``None``, NaN and infinities become ``"n/a"``; they never print as
    ``"nan"`` or ``"inf"``.

    Args:
        value: a Python or NumPy number, or ``None``.

    Returns:
        The text to show.

    Example:
        >>> [format_number(v) for v in (0.123456, 0.5, 12.3456, 1234.5, 98765.4)]
        ['0.1235', '0.5000', '12.35', '1234', '98765']
        >>> [format_number(v) for v in (None, float("nan"), float("inf"), 0.0, 42)]
        ['n/a', 'n/a', 'n/a', '0', '42']
        >>> format_number(0.0000123)
        '1.23e-05'
    """
    if is_missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not isinstance(value, numbers.Real):
        raise UserInputError(
            f"format_number: expected a real number or None, found {type(value).__name__} "
            f"({value!r})",
            hint="pass strings through format_value, which leaves them as they are",
        )
    x = float(value)
    magnitude = abs(x)
    if magnitude == 0.0:
        return "0"
    if magnitude >= 1e4:
        return f"{x:.0f}"
    if magnitude < 1e-3:
        return f"{x:.3g}"
    text = f"{x:#.4g}"
    return text.rstrip(".") if text.endswith(".") else text


def format_value(value: Any, fmt: CellFormat | None = None) -> str:
    """Turn one value into display text, with an optional per-column format.

    Missing values (see :func:`is_missing`) are always ``"n/a"``, whatever ``fmt``
    says. Without ``fmt``, numbers go through :func:`format_number`, strings are kept,
    booleans become ``"yes"``/``"no"`` and anything else is ``str(value)``.

    Args:
        value: the raw value.
        fmt: ``None``, a format spec (``".1%"``), a template (``"{:.2f} s"``) or a
            callable returning the text.

    Returns:
        The text to show.

    Raises:
        UserInputError: ``fmt`` cannot format ``value``.

    Example:
        >>> format_value(0.4567, ".1%"), format_value(3.14159, "{:.2f} s")
        ('45.7%', '3.14 s')
        >>> format_value(float("nan"), ".1%"), format_value("dinov2/small")
        ('n/a', 'dinov2/small')
    """
    if is_missing(value):
        return MISSING
    if fmt is None:
        if isinstance(value, str):
            return value
        if isinstance(value, numbers.Real | np.bool_):
            return format_number(value)
        return str(value)
    try:
        if callable(fmt):
            text = fmt(value)
        elif "{" in fmt:
            text = fmt.format(value)
        else:
            text = format(value, fmt)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise UserInputError(
            f"format_value: format {fmt!r} cannot format {type(value).__name__} {value!r} ({exc})",
            hint="use a spec like '.3f' or '.1%', a template like '{:.2f} s', or a callable",
        ) from None
    return str(text)
