"""Resource quantities (`500m`, `128Mi`, `1e3`): parsing to exact numbers and printing kube's canonical form.

Validation compares requests with limits and LimitRange bounds, and the Pod QoS class is computed from them,
so quantities are parsed into `Fraction`s (no float rounding: `0.1` CPU is exactly 1/10). `canonical` prints a
quantity the way apimachinery's `Quantity.String()` does in error messages (`0.5` → `500m`, `1024Mi` → `1Gi`),
keeping the input's family of suffixes as kube does.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}


class QuantityError(ValueError):
    """Raised for a string that is not a quantity; the message is kube's."""


def _split(text: str) -> tuple[str, str]:
    match = _NUMBER.match(text)
    if not match or match.end() == 0:
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    return text[:match.end()], text[match.end():]


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity given as a JSON string or number."""
    if not isinstance(value, str | int | float):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    return _parse(value)


# Quantities repeat across objects ("100m", "128Mi"): parsing is exact Fraction arithmetic, worth caching.
@functools.lru_cache(maxsize=4096, typed=True)
def _parse(value: str | int | float) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    if isinstance(value, int | float):
        return Fraction(str(value))
    number, suffix = _split(str(value).strip())
    base = Fraction(number)
    if suffix in _BINARY:
        return base * 1024 ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * Fraction(10) ** _DECIMAL[suffix]
    exponent = re.fullmatch(r"[eE]([+-]?\d+)", suffix)
    if exponent:
        return base * Fraction(10) ** int(exponent.group(1))
    raise QuantityError("unable to parse quantity's suffix")


def canonical(value: object) -> str:
    """`Quantity.String()`: the shortest exact form in the input's suffix family."""
    if not isinstance(value, str | int | float):
        raise QuantityError(f"quantities must match the regular expression '{QUANTITY_PATTERN}'")
    return _canonical(value)


@functools.lru_cache(maxsize=4096, typed=True)
def _canonical(value: str | int | float) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _decimal(parse_quantity(value))
    text = str(value).strip()
    amount = parse_quantity(text)
    suffix = _split(text)[1]
    if suffix in _BINARY and amount.denominator == 1:
        return _binary(int(amount))
    if suffix and suffix[0] in "eE" and suffix not in _DECIMAL:
        return _exponent(amount)
    return _decimal(amount)


def _round_up_nano(amount: Fraction) -> Fraction:
    # Quantities carry at most nano precision; kube rounds the rest up (away from zero).
    scaled = amount * 10**9
    whole = -((-scaled.numerator) // scaled.denominator) if scaled >= 0 else scaled.numerator // scaled.denominator
    return Fraction(whole, 10**9)


def _decimal(amount: Fraction) -> str:
    amount = _round_up_nano(amount)
    if amount == 0:
        return "0"
    for exp in (18, 15, 12, 9, 6, 3, 0, -3, -6, -9):
        mantissa = amount / Fraction(10) ** exp
        if mantissa.denominator == 1:
            return f"{mantissa.numerator}{_DECIMAL_SUFFIX[exp]}"
    return str(amount)


def _binary(amount: int) -> str:
    if amount == 0:
        return "0"
    for power in (6, 5, 4, 3, 2, 1):
        if amount % 1024**power == 0:
            suffix = next(s for s, p in _BINARY.items() if p == power)
            return f"{amount // 1024**power}{suffix}"
    return _decimal(Fraction(amount))


def _exponent(amount: Fraction) -> str:
    amount = _round_up_nano(amount)
    if amount == 0:
        return "0"
    for exp in range(18, -10, -3):
        mantissa = amount / Fraction(10) ** exp
        if mantissa.denominator == 1:
            return f"{mantissa.numerator}e{exp}" if exp else str(mantissa.numerator)
    return str(amount)
