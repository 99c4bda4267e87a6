"""Format rules: DNS labels and subdomains, qualified names, label values, annotations, IP addresses.

These are apimachinery's string checks (`IsDNS1123Subdomain`, `IsQualifiedName`, `IsValidLabelValue`, ...).
Each returns a list of human-readable problems, empty when the value is fine; the validation code wraps every
message into a `FieldError` at the field path it is checking (`metadata.name: Invalid value: "Foo": a
lowercase RFC 1123 subdomain must ...`). The messages, regexes and examples are kube's own, because kubectl
users paste them into search engines.

The `name_is_*` functions are the object-name rules (`NameRule`): they take the `prefix` flag kube sets for
`metadata.generateName`, where a trailing dash is fine because a random suffix follows
(`random_suffix`, also used for the names kube makes up itself, like `kube-api-access-<suffix>`).
Pure functions over strings, apart from that random suffix; no I/O.
"""

from __future__ import annotations

import ipaddress
import random
import re
from collections.abc import Callable

DNS1123_LABEL_MAX = 63
# the letters of kube's generated names and safe-encoded hashes: no vowels, so that none spells a word
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_SUFFIX_LENGTH = 5
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_PERCENT_FMT = "[0-9]+%"
_HTTP_HEADER_FMT = "[-A-Za-z0-9]+"

_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character")


def _full(fmt: str) -> re.Pattern[str]:
    return re.compile("^" + fmt + "$")


_DNS1123_LABEL_RE = _full(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = _full(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = _full(_DNS1035_LABEL_FMT)
_QNAME_RE = _full(_QNAME_FMT)
_LABEL_VALUE_RE = _full(_LABEL_VALUE_FMT)
_CONFIG_KEY_RE = _full(_CONFIG_KEY_FMT)
_PERCENT_RE = _full(_PERCENT_FMT)
_HTTP_HEADER_RE = _full(_HTTP_HEADER_FMT)


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _fullmatch(pattern: re.Pattern[str], value: str) -> bool:
    # Go's `$` does not match before a trailing newline, Python's does; fullmatch keeps them equal.
    return pattern.fullmatch(value) is not None


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _fullmatch(_DNS1123_LABEL_RE, value):
        if _fullmatch(_DNS1123_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                                    "characters or '-', and must start and end with an alphanumeric character",
                                    _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _fullmatch(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                "characters, '-' or '.', and must start and end with an alphanumeric character",
                                _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """`*.example.com`: one leading wildcard label, as Ingress hosts allow."""
    fmt = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not value.startswith("*.") or not _fullmatch(_DNS1123_SUBDOMAIN_RE, value[2:]):
        errs.append(regex_error("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                                "subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and "
                                "end with an alphanumeric character", fmt, "*.example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _fullmatch(_DNS1035_LABEL_RE, value):
        errs.append(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                                "start with an alphabetic character, and end with an alphanumeric character",
                                _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """A label key, annotation key or finalizer: `name` or `dns.subdomain/name`."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [("a qualified name " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                 + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _fullmatch(_QNAME_RE, name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _fullmatch(_LABEL_VALUE_RE, value):
        errs.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, "
                                "'-', '_' or '.', and must start and end with an alphanumeric character",
                                _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_config_map_key(value: str) -> list[str]:
    """A key of ConfigMap/Secret data: it becomes a file name when mounted, hence the '..' rules."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _fullmatch(_CONFIG_KEY_RE, value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_name(port: str) -> list[str]:
    """An IANA service name: what `containerPort.name` and named `targetPort`s must look like."""
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not re.fullmatch("[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_percent(value: str) -> list[str]:
    if _fullmatch(_PERCENT_RE, value):
        return []
    return [regex_error("a valid percent string must be a numeric string followed by an ending '%'",
                        _PERCENT_FMT, "1%", "93%")]


def is_http_header_name(value: str) -> list[str]:
    if _fullmatch(_HTTP_HEADER_RE, value):
        return []
    return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'",
                        _HTTP_HEADER_FMT, "X-Header-Name")]


def is_relaxed_env_var_name(value: str) -> list[str]:
    """Kube 1.32 accepts any printable ASCII except '=' in env var names (RelaxedEnvironmentVariableValidation)."""
    errs = []
    if not value:
        errs.append("environment variable name must be non-empty")
    if any(not (" " <= ch <= "~") or ch == "=" for ch in value):
        errs.append("a valid environment variable name must consist only of printable ASCII characters other "
                    "than '='")
    return errs


def is_valid_path_segment_name(name: str) -> list[str]:
    """The loosest name rule: anything that can sit in one URL path segment (RBAC objects, events)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address as Go's `ParseIPSloppy` reads it (IPv4 octets may have leading zeros)."""
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        parts = value.split(".")
        if len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts):
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
        return None


def is_valid_ip(value: str) -> list[str]:
    return [] if parse_ip(value) is not None else ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]


def is_valid_cidr(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return [] if "/" in value else ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]


def is_non_special_ip(value: str) -> list[str]:
    """Endpoints and external IPs may not point at "this host", loopback or link-local addresses."""
    ip = parse_ip(value)
    if ip is None:
        return ["must be a valid IP address"]
    errs = []
    if ip.is_unspecified:
        errs.append(f"may not be unspecified ({value})")
    if ip.is_loopback:
        errs.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        errs.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    link_local_multicast = ipaddress.ip_network("224.0.0.0/24" if ip.version == 4 else "ff02::/16")
    if ip in link_local_multicast:
        errs.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return errs


def annotations_size(annotations: dict[str, str]) -> int:
    return sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())


def _mask_trailing_dash(name: str) -> str:
    # generateName "web-" becomes "web-xyz12"; kube checks it with the dash and the character before it
    # replaced by one letter, and so do we, so that the same prefixes pass.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool = False) -> list[str]:
    if prefix:
        return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]
    return is_valid_path_segment_name(name)


NameRule = Callable[[str, bool], list[str]]


def random_suffix() -> str:
    """Five random letters of SAFE_ALPHABET, as kube's name generator appends to `generateName`. Not
    secret, only unlikely to repeat (kube uses a non-cryptographic generator for it too)."""
    return "".join(random.choices(SAFE_ALPHABET, k=RANDOM_SUFFIX_LENGTH))
