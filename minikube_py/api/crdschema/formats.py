"""String formats a CRD schema's `format` is checked against.

apiextensions-apiserver strips every format it does not support before building the validator
(`StripUnsupportedFormatsPostProcess`), so `int32`, `int64`, `float`, `double` and unknown names check
nothing (kube accepts `replicas: 3000000000` under `format: int32`). The supported ones are validated by
kube-openapi's `strfmt` registry, whose checks are reproduced here: `date-time` is RFC 3339 (loosely, as
strfmt's `IsDateTime` does), `date` is `2006-01-02`, `duration` is Go's `time.ParseDuration` or strfmt's
Scala-like form (`3 days`), `byte` is standard base64, and so on. Names are compared with dashes removed
(`date-time` is `datetime`).
"""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Callable
from email.utils import parseaddr
from urllib.parse import urlsplit

from .. import names

SUPPORTED = frozenset({
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4",
    "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password",
    "date", "duration", "datetime",
})


def normalize(name: str) -> str:
    return name.replace("-", "")


def supported(name: str) -> str:
    """The format as kube keeps it: the name when supported, "" when stripped."""
    return name if name and normalize(name) in SUPPORTED else ""


def valid(name: str, value: str) -> bool:
    check = _CHECKS.get(normalize(name))
    return True if check is None else check(value)


_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_BYTE = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
_RGB = re.compile(rf"^rgb\(\s*{_BYTE}\s*,\s*{_BYTE}\s*,\s*{_BYTE}\s*\)\Z")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}\Z")
_MAC = re.compile(r"^(?:[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){7}|"
                  r"[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){19}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){2}|"
                  r"[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){3}|[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4}){9})\Z")
_HOST_LABEL = re.compile(r"^[^\W_](?:[\w-]{0,61}[^\W_])?\Z")
_GO_DURATION = re.compile(r"^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+\Z")
_SCALA_DURATION = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_TIME_UNITS = (("ns", "nano"), ("us", "µs", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
               ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))
_CREDIT_CARD = re.compile(r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|"
                          r"27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                          r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})\Z")


def is_date(value: str) -> bool:
    match = _DATE.match(value)
    if not match:
        return False
    try:
        datetime.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return False
    return True


def is_date_time(value: str) -> bool:
    """strfmt's `IsDateTime`: a date, a `t`, then hh:mm:ss[.frac](z|±hh:mm), compared as text."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    match = _TIME.match(parts[1])
    return bool(match) and match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def is_duration(value: str) -> bool:
    if value == "0" or _GO_DURATION.match(value):
        return True
    for _, unit in _SCALA_DURATION.findall(value):
        unit = unit.strip().lower()
        for variants in _TIME_UNITS:
            if any((i == len(variants) - 1 and unit.startswith(v)) or v.lower() == unit
                   for i, v in enumerate(variants)):
                return True
    return False


def is_hostname(value: str) -> bool:
    if not value or len(value) > 255:
        return False
    labels = value.split(".")
    if len(labels) > 1 and not re.fullmatch(r"[^\W\d_]{2,63}", labels[-1]):
        return False
    return all(len(label) <= 63 and _HOST_LABEL.match(label) for label in labels)


def is_ipv4(value: str) -> bool:
    return names.parse_ip(value) is not None and "." in value


def is_ipv6(value: str) -> bool:
    return names.parse_ip(value) is not None and ":" in value


def is_cidr(value: str) -> bool:
    if "/" not in value:
        return False
    address, _, bits = value.partition("/")
    if names.parse_ip(address) is None or not bits.isdigit():
        return False
    try:
        ipaddress.ip_network(f"{names.parse_ip(address)}/{int(bits)}", strict=False)
    except ValueError:
        return False
    return True


def is_email(value: str) -> bool:
    _, address = parseaddr(value)
    return bool(address) and "@" in address and not address.startswith("@") and not address.endswith("@")


def is_request_uri(value: str) -> bool:
    """Go's `url.ParseRequestURI` succeeds: an absolute URI or an absolute path."""
    if not value or " " in value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return False
    if value.startswith("/"):
        return True
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return bool(parts.scheme) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", parts.scheme) is not None


def _isbn10(value: str) -> bool:
    digits = re.sub(r"[\s-]", "", value)
    if not re.fullmatch(r"[0-9]{9}[0-9X]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(value: str) -> bool:
    digits = re.sub(r"[\s-]", "", value)
    if not re.fullmatch(r"[0-9]{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == int(digits[12])


def _credit_card(value: str) -> bool:
    digits = re.sub(r"[^0-9]", "", value)
    if not _CREDIT_CARD.match(digits):
        return False
    total, double = 0, False
    for c in reversed(digits):
        n = int(c) * (2 if double else 1)
        total += n - 9 if n > 9 else n
        double = not double
    return total % 10 == 0


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda v: re.fullmatch(r"[0-9a-fA-F]{24}", v) is not None,
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": lambda v: _MAC.match(v) is not None,
    "uuid": lambda v: _UUID.match(v) is not None,
    "uuid3": lambda v: _UUID3.match(v) is not None,
    "uuid4": lambda v: _UUID4.match(v) is not None,
    "uuid5": lambda v: _UUID5.match(v) is not None,
    "isbn": lambda v: _isbn10(v) or _isbn13(v),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _credit_card,
    "ssn": lambda v: len(v) == 11 and _SSN.match(v) is not None,
    "hexcolor": lambda v: _HEXCOLOR.match(v) is not None,
    "rgbcolor": lambda v: _RGB.match(v) is not None,
    "byte": lambda v: _BASE64.match(v) is not None,
    "password": lambda v: True,
    "date": is_date,
    "duration": is_duration,
    "datetime": is_date_time,
}
