"""Label and field selectors: parsing them as kube-apiserver does, and matching objects against them.

Label selectors arrive as `?labelSelector=app=web,tier in (a,b),!canary` (kubectl's `-l`) or as the
structured `metav1.LabelSelector` (`{matchLabels, matchExpressions}`) in Deployments, ReplicaSets, Jobs,
PDBs. Field selectors arrive as `?fieldSelector=spec.nodeName=node-1,status.phase!=Failed`.

Where it sits: the apiserver parses both query parameters once per list/watch request
(`LabelSelector.parse`, `FieldSelector.parse(text, resource)`) and then calls `matches` for every object it
lists or every event it streams; controllers build selectors from their objects with
`LabelSelector.from_api` and Scale subresources render one back with `to_string`. So parsing may be
thorough, but matching is a few dict lookups per requirement.

Behaviour follows apimachinery 1.32 (`labels.Parse`, `metav1.LabelSelectorAsSelector`,
`fields.ParseSelector`), including its error messages, because kubectl prints them verbatim inside its
"Unable to find ... that match label selector" line:

* label operators: `=`/`==`, `!=`, `in (..)`, `notin (..)`, `key` (exists), `!key` (does not exist), and
  `>`/`<` (integer comparison); a comma means AND; whitespace between tokens is ignored; "" selects
  everything. `!=` and `notin` also match objects that lack the label.
* label keys and values are validated like `metadata.labels`; any error is a 400 BadRequest.
* field terms are `f=v`, `f==v`, `f!=v`; values may be empty and escape `\\`, `,` and `=` with a
  backslash; a missing field reads as "". Which fields exist is `fields.py`'s business.

Usage rules: selectors are immutable values; build them only through the constructors here, which
validate. `EVERYTHING` and `NOTHING` are the two trivial label selectors (a nil structured selector selects
nothing, an empty one everything).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from minikube_py.api.errors import APIError, bad_request
from minikube_py.api.fields import convert_field_label
from minikube_py.api.gofmt import go_quote
from minikube_py.api.kinds import Resource

Labels = Mapping[str, str]

# --- label keys and values, as `metadata.labels` validation checks them ----------------------------------

_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_MESSAGE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character")
_VALUE_FORMAT = f"({_NAME_FORMAT})?"
_VALUE_MESSAGE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                  "and must start and end with an alphanumeric character")
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FORMAT = rf"{_DNS_LABEL}(\.{_DNS_LABEL})*"
_SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                      "'.', and must start and end with an alphanumeric character")

_NAME = re.compile(_NAME_FORMAT)
_VALUE = re.compile(_VALUE_FORMAT)
_SUBDOMAIN = re.compile(_SUBDOMAIN_FORMAT)


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    # Kube's wording, down to the doubled space its template leaves before each " or ".
    shown = "".join((" or " if i else "") + f"'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _byte_length(text: str) -> int:
    # Go measures strings in bytes; only non-ASCII text (invalid anyway) can tell the difference.
    return len(text) if text.isascii() else len(text.encode())


def validate_label_key(key: str) -> list[str]:
    """What is wrong with `key` as a label key (`[prefix/]name`), in kube's words; [] when it is valid."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _regex_error(_NAME_MESSAGE, _NAME_FORMAT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errors = _prefix_errors(parts[0]) if len(parts) == 2 else []
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_length(name) > 63:
        errors.append("name part " + _too_long(63))
    if not _NAME.fullmatch(name):
        errors.append("name part " + _regex_error(_NAME_MESSAGE, _NAME_FORMAT, "MyName", "my.name", "123-abc"))
    return errors


def _prefix_errors(prefix: str) -> list[str]:
    if not prefix:
        return ["prefix part must be non-empty"]
    errors = []
    if _byte_length(prefix) > 253:
        errors.append("prefix part " + _too_long(253))
    if not _SUBDOMAIN.fullmatch(prefix):
        errors.append("prefix part " + _regex_error(_SUBDOMAIN_MESSAGE, _SUBDOMAIN_FORMAT, "example.com"))
    return errors


def validate_label_value(value: str) -> list[str]:
    """What is wrong with `value` as a label value, in kube's words; [] when it is valid."""
    errors = []
    if _byte_length(value) > 63:
        errors.append(_too_long(63))
    if not _VALUE.fullmatch(value):
        errors.append(_regex_error(_VALUE_MESSAGE, _VALUE_FORMAT, "MyValue", "my_value", "12345"))
    return errors


# --- label requirements ---------------------------------------------------------------------------------

# kube's `selection.Operator` values
IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"

_INT64 = re.compile(r"[+-]?[0-9]+")


def _parse_int64(text: str | None) -> int | None:
    """`text` as Go's ParseInt(text, 10, 64) reads it, or None when Go would fail."""
    if text is None or not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True)
class LabelRequirement:
    """One comma-separated term of a label selector: a key, an operator and its values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EXISTS:
            return self.key
        shown = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({shown})"
        return self.key + _OPERATOR_SYMBOLS[self.operator] + shown

    def matcher(self) -> Callable[[Labels], bool]:
        """A predicate over an object's labels, built once so matching costs a lookup or two."""
        key, allowed = self.key, frozenset(self.values)
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            # A missing label reads as None, which is in no set of strings.
            return lambda labels: labels.get(key) in allowed
        if self.operator in (NOT_IN, NOT_EQUALS):
            return lambda labels: labels.get(key) not in allowed
        if self.operator == EXISTS:
            return lambda labels: key in labels
        if self.operator == DOES_NOT_EXIST:
            return lambda labels: key not in labels
        return _comparison(key, self.operator, int(self.values[0]))


_OPERATOR_SYMBOLS = {EQUALS: "=", DOUBLE_EQUALS: "==", NOT_EQUALS: "!=", GREATER_THAN: ">", LESS_THAN: "<"}


def _comparison(key: str, operator: str, bound: int) -> Callable[[Labels], bool]:
    def compare(labels: Labels) -> bool:
        number = _parse_int64(labels.get(key))
        if number is None:
            return False
        return number > bound if operator == GREATER_THAN else number < bound

    return compare


def _go_strings(values: tuple[str, ...]) -> str:
    """A []string as Go's `%#v` prints it, which kube uses for a whole bad value set."""
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def _operator_errors(operator: str, values: tuple[str, ...]) -> list[str]:
    if operator in (IN, NOT_IN) and not values:
        return [f"values: Invalid value: {_go_strings(values)}: for 'in', 'notin' operators, values set can't "
                "be empty"]
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        return [f"values: Invalid value: {_go_strings(values)}: values set must be empty for exists and does "
                "not exist"]
    if operator in (GREATER_THAN, LESS_THAN):
        return [f"values[{i}]: Invalid value: {go_quote(v)}: for 'Gt', 'Lt' operators, the value must be an "
                "integer" for i, v in enumerate(values) if _parse_int64(v) is None]
    return []


def _aggregate(errors: list[str]) -> str:
    """Several messages as kube's aggregate error prints them: one alone, more in brackets, no repeats."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def new_requirement(key: str, operator: str, values: Iterable[str] = ()) -> LabelRequirement:
    """A validated requirement (kube's `labels.NewRequirement`); a 400 BadRequest when it is not valid."""
    values = tuple(values)
    errors = []
    if key_errors := validate_label_key(key):
        errors.append(f"key: Invalid value: {go_quote(key)}: " + "; ".join(key_errors))
    errors += _operator_errors(operator, values)
    for i, value in enumerate(values):
        if value_errors := validate_label_value(value):
            errors.append(f"values[{i}][{key}]: Invalid value: {go_quote(value)}: " + "; ".join(value_errors))
    if errors:
        raise bad_request(_aggregate(errors))
    return LabelRequirement(key, operator, values)


# --- the label selector string grammar ------------------------------------------------------------------

_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = frozenset("=!(),<>")
_KEYWORDS = frozenset((IN, NOT_IN))
_IDENTIFIER, _END = "identifier", "end"
_BINARY_OPERATORS = {IN: IN, NOT_IN: NOT_IN, "=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS,
                     ">": GREATER_THAN, "<": LESS_THAN}
_EXPECTED_OPERATOR = "in, notin, =, ==, !=, gt, lt"


def _scan(text: str) -> list[tuple[str, str]]:
    """The tokens of a label selector as (kind, literal); symbols and keywords are their own kind."""
    tokens, i, end = [], 0, len(text)
    while True:
        while i < end and text[i] in _WHITESPACE:
            i += 1
        if i == end:
            tokens.append((_END, ""))
            return tokens
        literal = _symbol_at(text, i) if text[i] in _SYMBOLS else _word_at(text, i)
        kind = _IDENTIFIER if text[i] not in _SYMBOLS and literal not in _KEYWORDS else literal
        tokens.append((kind, literal))
        i += len(literal)


def _symbol_at(text: str, i: int) -> str:
    # The longest symbol wins, and only `==` and `!=` are longer than one character.
    pair = text[i:i + 2]
    return pair if pair in ("==", "!=") else text[i]


def _word_at(text: str, i: int) -> str:
    end = i
    while end < len(text) and text[end] not in _SYMBOLS and text[end] not in _WHITESPACE:
        end += 1
    return text[i:end]


class _LabelParser:
    """Recursive descent over the tokens, with kube's grammar and kube's messages.

    Outside operator position the words `in` and `notin` are ordinary identifiers, so `in=notin` is a
    valid selector; `operator()` is the one place that sees them as keywords.
    """

    def __init__(self, text: str) -> None:
        self.tokens = _scan(text)
        self.position = 0

    def peek(self, keywords: bool = False) -> tuple[str, str]:
        kind, literal = self.tokens[self.position]
        return (_IDENTIFIER if kind in _KEYWORDS and not keywords else kind), literal

    def take(self, keywords: bool = False) -> tuple[str, str]:
        token = self.peek(keywords)
        self.position += 1
        return token

    def requirements(self) -> list[LabelRequirement]:
        found: list[LabelRequirement] = []
        kind, literal = self.peek()
        while kind != _END:
            if kind not in (_IDENTIFIER, "!"):
                raise bad_request(f"found '{literal}', expected: !, identifier, or 'end of string'")
            found.append(self.requirement())
            kind, literal = self.take()
            if kind == _END:
                break
            if kind != ",":
                raise bad_request(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self.peek()
            if kind not in (_IDENTIFIER, "!"):
                raise bad_request(f"found '{literal}', expected: identifier after ','")
        return found

    def requirement(self) -> LabelRequirement:
        try:
            key, operator = self.key_and_operator()
            if operator in (EXISTS, DOES_NOT_EXIST):
                return new_requirement(key, operator)
            operator = self.operator()
            values = self.value_set() if operator in (IN, NOT_IN) else self.exact_value()
            return new_requirement(key, operator, sorted(values))
        except APIError as error:
            raise bad_request(f"unable to parse requirement: {error.message}") from None

    def key_and_operator(self) -> tuple[str, str]:
        kind, literal = self.take()
        operator = ""
        if kind == "!":
            operator = DOES_NOT_EXIST
            kind, literal = self.take()
        if kind != _IDENTIFIER:
            raise bad_request(f"found '{literal}', expected: identifier")
        if errors := validate_label_key(literal):
            # kube validates the key against a nil field path here, which prints as "<nil>".
            raise bad_request(f"<nil>: Invalid value: {go_quote(literal)}: " + "; ".join(errors))
        if self.peek()[0] in (_END, ","):
            operator = operator or EXISTS
        return literal, operator

    def operator(self) -> str:
        kind, literal = self.take(keywords=True)
        if kind not in _BINARY_OPERATORS:
            raise bad_request(f"found '{literal}', expected: {_EXPECTED_OPERATOR}")
        return _BINARY_OPERATORS[kind]

    def value_set(self) -> set[str]:
        kind, literal = self.take()
        if kind != "(":
            raise bad_request(f"found '{literal}' expected: '('")
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return {""}
        if kind not in (_IDENTIFIER, ","):
            raise bad_request(f"found '{literal}', expected: ',', ')' or identifier")
        values = self.identifiers()
        self.take()  # the ')' that identifiers() stopped in front of
        return values

    def identifiers(self) -> set[str]:
        # Empty slots between commas are the empty value: "(a,)" and "(,a)" both mean {"", "a"}.
        values: set[str] = set()
        while True:
            kind, literal = self.take()
            if kind == _IDENTIFIER:
                values.add(literal)
                following, seen = self.peek()
                if following == ")":
                    return values
                if following != ",":
                    raise bad_request(f"found '{seen}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                following, _ = self.peek()
                if following == ")":
                    values.add("")
                    return values
                if following == ",":
                    # 1.32 swallows the second comma here, so "(a,,)" then fails on the ')'.
                    self.take()
                    values.add("")
            else:
                raise bad_request(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_END, ","):
            return {""}
        kind, literal = self.take()
        if kind != _IDENTIFIER:
            raise bad_request(f"found '{literal}', expected: identifier")
        return {literal}


# --- label selectors ----------------------------------------------------------------------------------

_NO_LABELS: Labels = {}

_API_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: requirements sorted by key, all of which must hold (AND)."""

    requirements: tuple[LabelRequirement, ...] = ()
    matches_nothing: bool = False
    _matchers: tuple[Callable[[Labels], bool], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.requirements, key=lambda r: r.key))
        object.__setattr__(self, "requirements", ordered)
        object.__setattr__(self, "_matchers", tuple(r.matcher() for r in ordered))

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """The selector a `labelSelector` query parameter spells; a 400 BadRequest when it is invalid."""
        return cls(tuple(_LabelParser(text).requirements()))

    @classmethod
    def from_api(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """The selector a `metav1.LabelSelector` object describes; None selects nothing, {} everything."""
        if selector is None:
            return NOTHING
        match_labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
        requirements = [new_requirement(key, EQUALS, (value,)) for key, value in match_labels.items()]
        requirements += [_expression_requirement(expression) for expression in expressions]
        return cls(tuple(requirements))

    @classmethod
    def from_set(cls, labels: Labels) -> LabelSelector:
        """The selector that requires every one of `labels` (a Service's or ReplicationController's selector)."""
        return cls(tuple(LabelRequirement(key, EQUALS, (value,)) for key, value in labels.items()))

    @property
    def empty(self) -> bool:
        """Whether the selector selects everything, so the caller may skip matching altogether."""
        return not self.requirements and not self.matches_nothing

    def matches(self, labels: Labels | None) -> bool:
        if self.matches_nothing:
            return False
        labels = labels or _NO_LABELS
        for matcher in self._matchers:
            if not matcher(labels):
                return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The single value the selector pins `key` to (`key=v` or `key in (v)`), else None."""
        for requirement in self.requirements:
            if requirement.key == key:
                exact = requirement.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(requirement.values) == 1
                return requirement.values[0] if exact else None
        return None

    def to_string(self) -> str:
        """The canonical string form, which parses back to the same selector (`Scale.status.selector`)."""
        return ",".join(str(requirement) for requirement in self.requirements)

    __str__ = to_string


def _expression_requirement(expression: Mapping[str, Any]) -> LabelRequirement:
    operator = _API_OPERATORS.get(expression.get("operator", ""))
    if operator is None:
        raise bad_request(f"{go_quote(str(expression.get('operator', '')))} is not a valid label selector operator")
    return new_requirement(expression.get("key", ""), operator, expression.get("values") or ())


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(matches_nothing=True)


# --- field selectors -----------------------------------------------------------------------------------

_TERM_OPERATOR = re.compile("!=|==|=")
_ESCAPABLE = frozenset("\\,=")


def _split_terms(text: str) -> list[str]:
    """`text` cut at every comma not escaped by a backslash."""
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def escape_field_value(value: str) -> str:
    """`value` with `\\`, `,` and `=` escaped, as a field selector term needs it."""
    if not _ESCAPABLE.intersection(value):
        return value
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    if not _ESCAPABLE.intersection(value):
        return value
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in _ESCAPABLE:
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the offending rune with %v, i.e. as its code point.
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True)
class FieldRequirement:
    """One term of a field selector: `field=value` or `field!=value` (`==` is read as `=`)."""

    field: str
    operator: str
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_field_value(self.value)}"


def _field_requirement(text: str, term: str) -> FieldRequirement:
    found = _TERM_OPERATOR.search(term)
    if found is None:
        raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
    operator = NOT_EQUALS if found.group() == NOT_EQUALS else EQUALS
    return FieldRequirement(term[:found.start()], operator, _unescape_field_value(term[found.end():]))


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: terms in kube's order (sorted by their text), all of which must hold."""

    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str, resource: Resource | None = None) -> FieldSelector:
        """The selector a `fieldSelector` query parameter spells, its labels checked against `resource`.

        Syntax errors come first, then the first label (in sorted order) the resource does not support;
        both are 400 BadRequest. Legacy labels come back renamed (`spec.host` as `spec.nodeName`).
        """
        requirements = [_field_requirement(text, term) for term in sorted(_split_terms(text)) if term]
        if resource is not None:
            requirements = [replace(r, field=convert_field_label(resource, r.field)) for r in requirements]
        return cls(tuple(requirements))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether an object with these selectable fields (see `fields.field_set`) is selected."""
        for requirement in self.requirements:
            equal = fields.get(requirement.field, "") == requirement.value
            if equal != (requirement.operator == EQUALS):
                return False
        return True

    def requires_exact_match(self, field_label: str) -> str | None:
        """The value an `=` term pins `field_label` to (`metadata.name=x` names one object), else None."""
        for requirement in self.requirements:
            if requirement.field == field_label and requirement.operator == EQUALS:
                return requirement.value
        return None

    def to_string(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)

    __str__ = to_string
