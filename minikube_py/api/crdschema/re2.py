"""Go regular expressions (RE2 syntax) run with Python's `re`.

A CRD's `pattern` is a Go regexp: kube rejects the CRD when `regexp.Compile` fails and matches values with
`MatchString` (a search, not a full match). The two dialects mostly agree; `translate` rewrites the parts
where they don't, so that a pattern means in Python what it means in Go:

* Go rejects what RE2 can't do: lookaround `(?=`, `(?!`, `(?<=`, `(?<!`, atomic groups `(?>`, backreferences
  `\\1`, possessive or doubled repetition (`a*+`, `a**`), repeat counts above 1000, unknown escapes. Those
  raise `PatternError` with Go's message (`error parsing regexp: invalid or unsupported Perl syntax: `(?=``).
* `$` is the end of the text in Go unless `(?m)` is on (Python's also matches before a final newline): it
  becomes `\\Z`; Go's `\\z` is Python's `\\Z`.
* `\\d`, `\\w`, `\\s` are ASCII in Go: they become explicit ASCII sets; POSIX classes (`[[:alpha:]]`) become
  ranges; `\\x{10FFFF}`, octal escapes and `\\Q...\\E` are rewritten; `(?<name>` becomes `(?P<name>`; flags
  set in the middle of a group (`a(?i)b`) become a scoped group up to the end of that group.
* Unicode classes (`\\pL`, `\\p{Greek}`) and the `U` flag have no Python equivalent: `PatternUnsupported`.
  Callers accept such patterns (kube does) and skip the check rather than guess.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

__all__ = ["PatternError", "PatternUnsupported", "compile_go", "go_compile_error"]


class PatternError(ValueError):
    """Go's `regexp.Compile` would fail; the message is Go's error text."""


class PatternUnsupported(ValueError):
    """Valid Go syntax that Python's `re` can't express."""


_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~", "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}
_CLASS_IN = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r ",
             "D": "\\x00-/:-\\U0010ffff", "W": "\\x00-/:-@\\[-^`{-\\U0010ffff",
             "S": "\\x00-\\x08\\x0b\\x0e-\\x1f!-\\U0010ffff"}
_CLASS_OUT = {"d": "[0-9]", "w": "[0-9A-Za-z_]", "s": "[\\t\\n\\f\\r ]",
              "D": "[^0-9]", "W": "[^0-9A-Za-z_]", "S": "[^\\t\\n\\f\\r ]"}
_SIMPLE_ESCAPES = {"a": "\\a", "f": "\\f", "t": "\\t", "n": "\\n", "r": "\\r", "v": "\\v"}
_REPEAT = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")


def _err(code: str, expr: str) -> PatternError:
    return PatternError(f"error parsing regexp: {code}: `{expr}`")


class _Group:
    __slots__ = ("flags", "multiline")

    def __init__(self, multiline: bool) -> None:
        self.flags: list[str] = []  # `(?i)`-style flags set inside this group: open as scoped groups
        self.multiline = multiline


def translate(pattern: str) -> str:
    """The Python `re` pattern equivalent to a Go `regexp` pattern."""
    out: list[str] = []
    stack = [_Group(False)]
    i, n = 0, len(pattern)
    repeatable = False  # an atom precedes (a repetition operator may follow)
    after_repeat = ""   # the repetition operator just read, if any
    lazy_ok = False     # it may still be made lazy with `?`
    while i < n:
        c = pattern[i]
        if c in "*+?" or (c == "{" and _REPEAT.match(pattern, i)):
            match = _REPEAT.match(pattern, i) if c == "{" else None
            op = match.group(0) if match else c
            i += len(op)
            if after_repeat:
                if op == "?" and lazy_ok:  # lazy: `*?`, `{2,3}?`, `??`
                    after_repeat += "?"
                    lazy_ok = False
                    out.append("?")
                    continue
                raise _err("invalid nested repetition operator", after_repeat + op)
            if not repeatable:
                raise _err("missing argument to repetition operator", op)
            if match:
                low, high = match.group(1), match.group(3)
                if int(low) > 1000 or (high and (int(high) > 1000 or int(high) < int(low))):
                    raise _err("invalid repeat count", op)
            out.append(op)
            after_repeat, lazy_ok = op, True
            repeatable = False
            continue
        after_repeat = ""
        if c == "\\":
            i, piece = _escape(pattern, i, in_class=False)
            out.append(piece)
            repeatable = piece not in ("\\A", "\\Z", "\\b", "\\B")
            continue
        if c == "[":
            i, piece = _char_class(pattern, i)
            out.append(piece)
            repeatable = True
            continue
        if c == "(":
            i = _open_group(pattern, i, out, stack)
            repeatable = False
            continue
        if c == ")":
            if len(stack) == 1:
                raise _err("unexpected )", pattern)
            group = stack.pop()
            out.append(")" * len(group.flags) + ")")
            repeatable = True
            i += 1
            continue
        if c == "|":
            # flags set earlier in the group still apply in the next branch (RE2 keeps them until the
            # group ends): close the scoped groups before `|` and open them again after it
            flags = stack[-1].flags
            out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
            repeatable = False
            i += 1
            continue
        if c == "$":
            out.append("$" if stack[-1].multiline else "\\Z")
            repeatable = True
            i += 1
            continue
        if c == "^":
            out.append("^")
            repeatable = True
            i += 1
            continue
        out.append("\\{" if c == "{" else "\\}" if c == "}" else c)
        repeatable = True
        i += 1
    if len(stack) > 1:
        raise _err("missing closing )", pattern)
    out.append(")" * len(stack[0].flags))
    return "".join(out)


def _open_group(pattern: str, i: int, out: list[str], stack: list[_Group]) -> int:
    parent = stack[-1]
    if not pattern.startswith("(?", i):
        out.append("(")
        stack.append(_Group(parent.multiline))
        return i + 1
    j = i + 2
    if pattern.startswith(("P<", "<"), j):  # named capture, as Go parses it
        start = j + (2 if pattern[j] == "P" else 1)
        end = pattern.find(">", start)
        if end < 0:
            raise _err("invalid named capture", pattern[i:])
        name = pattern[start:end]
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise _err("invalid named capture", pattern[i:end + 1])
        out.append(f"(?P<{name}>")
        stack.append(_Group(parent.multiline))
        return end + 1
    # flags, as Go's parsePerlFlags reads them: `(?i)`, `(?i-s:`, `(?:`, `(?)`
    on, off, sign, saw, t = "", "", 1, False, j
    while t < len(pattern):
        c = pattern[t]
        t += 1
        if c in "imsU":
            on, off = (on + c, off) if sign > 0 else (on, off + c)
            saw = True
            continue
        if c == "-" and sign > 0:
            sign, saw = -1, False
            continue
        if c in ":)" and (sign > 0 or saw):
            break
        raise _err("invalid or unsupported Perl syntax", pattern[i:t])
    else:
        raise _err("invalid or unsupported Perl syntax", pattern[i:])
    if "U" in on + off:
        raise PatternUnsupported("the U (ungreedy) flag")
    spec = on + (f"-{off}" if off else "")
    multiline = ("m" in on) or (parent.multiline and "m" not in off)
    if c == ":":
        out.append(f"(?{spec}:" if spec else "(?:")
        stack.append(_Group(multiline))
    elif spec:  # (?i) applies to the rest of the enclosing group
        out.append(f"(?{spec}:")
        parent.flags.append(spec)
        parent.multiline = multiline
    return t


def _escape(pattern: str, i: int, in_class: bool) -> tuple[int, str]:
    if i + 1 >= len(pattern):
        raise _err("trailing backslash at end of expression", "")
    c = pattern[i + 1]
    if c in "1234567":
        if i + 2 < len(pattern) and pattern[i + 2] in "01234567":
            return _octal(pattern, i + 1)
        raise _err("invalid escape sequence", pattern[i:i + 2])
    if c == "0":
        return _octal(pattern, i + 1)
    if c == "x":
        return _hex(pattern, i)
    if c in "pP":
        raise PatternUnsupported("Unicode character classes")
    if c == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
        escaped = "".join(_literal(ch, in_class) for ch in literal)
        return (len(pattern) if end < 0 else end + 2), (escaped if in_class or len(literal) <= 1
                                                        else f"(?:{escaped})")
    if c in _CLASS_IN:
        return i + 2, (_CLASS_IN[c] if in_class else _CLASS_OUT[c])
    if c in _SIMPLE_ESCAPES:
        return i + 2, _SIMPLE_ESCAPES[c]
    if not in_class:
        if c == "z":
            return i + 2, "\\Z"
        if c in "AbB":
            return i + 2, "\\" + c
    if c.isascii() and not c.isalnum():
        return i + 2, "\\" + c
    raise _err("invalid escape sequence", pattern[i:i + 2])


def _octal(pattern: str, start: int) -> tuple[int, str]:
    end = start
    while end < len(pattern) and end - start < 3 and pattern[end] in "01234567":
        end += 1
    return end, _code_point(int(pattern[start:end], 8))


def _hex(pattern: str, i: int) -> tuple[int, str]:
    rest = pattern[i + 2:]
    if rest.startswith("{"):
        close = rest.find("}")
        digits = rest[1:close] if close > 0 else ""
        if close < 0 or not digits or not re.fullmatch(r"[0-9A-Fa-f]+", digits) or int(digits, 16) > 0x10FFFF:
            raise _err("invalid escape sequence", pattern[i:i + 3 + max(close, 0)])
        return i + 3 + close, _code_point(int(digits, 16))
    if len(rest) >= 2 and re.fullmatch(r"[0-9A-Fa-f]{2}", rest[:2]):
        return i + 4, _code_point(int(rest[:2], 16))
    raise _err("invalid escape sequence", pattern[i:i + 4])


def _code_point(value: int) -> str:
    return f"\\U{value:08x}"


def _literal(ch: str, in_class: bool) -> str:
    if ch.isalnum() or ch == "_" or ord(ch) > 0x7F:
        return ch
    if ch == "\n":
        return "\\n"
    return "\\" + ch


def _char_class(pattern: str, i: int) -> tuple[int, str]:
    start = i
    i += 1
    out = ["["]
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    first = True
    while True:
        if i >= len(pattern):
            raise _err("missing closing ]", pattern[start:])
        c = pattern[i]
        if c == "]" and not first:
            out.append("]")
            return i + 1, "".join(out)
        first = False
        if c == "[" and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end > 0 else ""
            if end > 0 and name in _POSIX:
                out.append(_POSIX[name])
                i = end + 2
                continue
            if end > 0 and name.startswith("^") and name[1:] in _POSIX:
                raise PatternUnsupported("negated POSIX classes")
        if c == "\\":
            i, piece = _escape(pattern, i, in_class=True)
            out.append(piece)
            continue
        out.append("\\" + c if c in "[]&~|" else c)
        i += 1


_PY_ERRORS = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("unterminated character set", "missing closing ]"),
    ("bad character range", "invalid character class range"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    translated = translate(pattern)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(translated)
    except re.error as exc:
        for python, go in _PY_ERRORS:
            if str(exc).startswith(python):
                raise _err(go, pattern if exc.pos is None else pattern[min(exc.pos, len(pattern)):] or pattern
                           ) from None
        raise _err("invalid regexp", pattern) from None


def compile_go(pattern: str) -> re.Pattern[str]:
    """Compile a Go regexp for Python (`search` is Go's `MatchString`); raises PatternError or
    PatternUnsupported."""
    return _compile(pattern)


def go_compile_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error text for `pattern`, or None when Go accepts it."""
    try:
        compile_go(pattern)
    except PatternError as exc:
        return str(exc)
    except PatternUnsupported:
        return None
    return None
