"""How Go prints decoded JSON values: the renderings kube's error messages are made of.

kube-apiserver holds JSON as Go's `interface{}` values (`map[string]interface {}`, `[]interface {}`,
`string`, `int64`, `float64`, `bool`, `nil`), and its messages show them with `fmt`: `%q` for strings
(`go_quote`), `%v` (`go_v`: `map[a:1]`, `[x 2]`, `<nil>`), `%#v` (`go_sharp_v`), Go's shortest float
form (`go_float`: `1e+06`), `encoding/json` (`go_json`) and `time.Duration` (`go_duration`: `1m30s`).
Selectors, validation, strategic merge patch and CRD schemas all quote kube's messages through this one
module; config errors and metrics windows print durations with it.
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal
from typing import Any

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int(value: Any) -> bool:
    """A JSON integer as Go decodes it into `interface{}` (an int64; bigger integers become float64)."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


def is_float(value: Any) -> bool:
    return type(value) is float or (type(value) is int and not is_int(value))


def is_number(value: Any) -> bool:
    return type(value) in (int, float)


def go_quote(text: str) -> str:
    """Go's `strconv.Quote` (`%q`): printable characters as they are, the rest escaped."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch == " " or (code < 0x7F) or _printable(ch):
            out.append(ch)
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _printable(ch: str) -> bool:
    # Go's unicode.IsPrint: letters, marks, numbers, punctuation and symbols (and the ASCII space).
    return unicodedata.category(ch)[0] in "LMNPS"


def float_digits(number: float) -> tuple[str, str, int]:
    """Sign, shortest round-tripping digits and where the decimal point goes (after `point` digits)."""
    negative, digit_tuple, exponent = Decimal(repr(number)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    return ("-" if negative else ""), digits, len(digits) + int(exponent)


def fixed_notation(sign: str, digits: str, point: int) -> str:
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def exponent_notation(sign: str, digits: str, point: int, min_digits: int) -> str:
    fraction = "." + digits[1:] if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{fraction}e{'-' if point < 1 else '+'}{abs(point - 1):0{min_digits}d}"


def go_float(number: float) -> str:
    """Go's `%v` (and `%#v`) of a float64: shortest digits, exponent form below 1e-4 and from 1e+06."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if math.copysign(1, number) < 0 else "0"
    sign, digits, point = float_digits(number)
    if not -4 <= point - 1 < 6:
        return exponent_notation(sign, digits, point, 2)
    return fixed_notation(sign, digits, point)


def go_number(value: int | float) -> str:
    """`%v` of a JSON number: an int64 as digits, anything else as a float64."""
    return str(value) if is_int(value) else go_float(float(value))


def go_sharp_v(value: Any) -> str:
    """Go's `%#v` of a decoded JSON value (`map[string]interface {}{"a":1}`, `[]interface {}{"x", 2}`)."""
    if value is None:
        return "interface {}(nil)"
    return _sharp_v_inner(value)


def _sharp_v_inner(value: Any) -> str:
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if is_number(value):
        return go_number(value)
    if isinstance(value, dict):
        body = ", ".join(f"{go_quote(str(k))}:{_sharp_v_inner(value[k])}" for k in sorted(value))
        return f"map[string]interface {{}}{{{body}}}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(_sharp_v_inner(v) for v in value) + "}"
    return str(value)


def go_v(value: Any) -> str:
    """Go's `%v` of a decoded JSON value (`map[a:1]`, `[x 2]`, `<nil>`)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if is_number(value):
        return go_number(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    return str(value)


def go_json(value: Any, sort_keys: bool = True) -> str:
    """`encoding/json.Marshal` of a decoded JSON value: HTML-safe escapes, Go's floats, and keys sorted as
    Go sorts a map's (`sort_keys=False` keeps the order given, as Go writes a struct's fields)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _json_string(value)
    if is_int(value):
        return str(value)
    if is_number(value):
        return _json_float(float(value))
    if isinstance(value, dict):
        keys = sorted(value) if sort_keys else list(value)
        return "{" + ",".join(f"{_json_string(str(k))}:{go_json(value[k], sort_keys)}" for k in keys) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v, sort_keys) for v in value) + "]"
    return _json_string(str(value))


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or ch in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_float(number: float) -> str:
    if math.isnan(number) or math.isinf(number):
        return "null"
    if number == 0:
        return "-0" if math.copysign(1, number) < 0 else "0"
    sign, digits, point = float_digits(number)
    if abs(number) < 1e-6 or abs(number) >= 1e21:
        return exponent_notation(sign, digits, point, 1)
    return fixed_notation(sign, digits, point)


def go_duration(seconds: float) -> str:
    """`seconds` printed as Go prints a time.Duration: 500ms, 10s, 1m30s, 15m0s, 1h0m0s."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_trim_seconds(nanos / 1e3)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_trim_seconds(nanos / 1e6)}ms"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{_trim_seconds(rest / 1e9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _trim_seconds(number: float) -> str:
    return f"{number:.9f}".rstrip("0").rstrip(".")
