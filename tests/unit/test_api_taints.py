"""Taints and tolerations match as kube's `ToleratesTaint` does, and malformed entries are reported, not raised."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.taints import (
    DO_NOT_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
    parse_taints,
    parse_tolerations,
    pod_tolerations,
    tolerates,
)


def case(name: str, *values: object) -> Any:
    return pytest.param(*values, id=name)


def taint(key: str = "k", value: str = "v", effect: str = "NoSchedule") -> Taint:
    return Taint(key, value, effect)


@pytest.mark.parametrize("toleration, the_taint, expected", [
    case("an exact key, value and effect tolerate", Toleration("k", "Equal", "v", "NoSchedule"), taint(), True),
    case("a different value does not tolerate", Toleration("k", "Equal", "w", "NoSchedule"), taint(), False),
    case("an empty value only tolerates an empty value", Toleration("k", "Equal", ""), taint(value=""), True),
    case("Exists tolerates any value of the key", Toleration("k", "Exists"), taint(value="anything"), True),
    case("Exists with another key does not tolerate", Toleration("other", "Exists"), taint(), False),
    case("an empty key with Exists tolerates every taint", Toleration("", "Exists"), taint("x", "y", "NoExecute"),
         True),
    case("an empty effect tolerates every effect", Toleration("k", "Equal", "v", ""), taint(effect="NoExecute"), True),
    case("another effect does not tolerate", Toleration("k", "Equal", "v", "NoExecute"), taint(), False),
    case("PreferNoSchedule toleration does not cover NoSchedule", Toleration("k", "Exists", "", "PreferNoSchedule"),
         taint(), False),
])
def test_tolerates(toleration: Toleration, the_taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, the_taint) is expected


@pytest.mark.parametrize("taints, tolerations, effects, expected", [
    case("no taints leave nothing untolerated", [], [], DO_NOT_SCHEDULE, None),
    case("the first untolerated taint is returned",
         [taint("a"), taint("b")], [Toleration("a", "Exists")], DO_NOT_SCHEDULE, taint("b")),
    case("taints outside the effect filter are ignored",
         [taint("soft", effect="PreferNoSchedule")], [], DO_NOT_SCHEDULE, None),
    case("no filter considers every effect",
         [taint("soft", effect="PreferNoSchedule")], [], None, taint("soft", effect="PreferNoSchedule")),
    case("a NoExecute-only filter skips NoSchedule taints",
         [taint("a"), taint("b", effect="NoExecute")], [], {"NoExecute"}, taint("b", effect="NoExecute")),
    case("all tolerated gives None", [taint("a"), taint("b")], [Toleration("", "Exists")], DO_NOT_SCHEDULE, None),
])
def test_find_untolerated_taint(taints: list[Taint], tolerations: list[Toleration], effects: Any,
                                expected: Taint | None) -> None:
    assert find_untolerated_taint(taints, tolerations, effects) == expected


def test_a_taint_prints_as_scheduler_messages_show_it() -> None:
    assert str(Taint("node.kubernetes.io/not-ready", "", "NoSchedule")) == "{node.kubernetes.io/not-ready: }"


@pytest.mark.parametrize("raw, parsed, errors", [
    case("None means no taints", None, [], []),
    case("well-formed taints are parsed",
         [{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}],
         [Taint("a", "1", "NoSchedule"), Taint("b", "", "NoExecute")], []),
    case("a taint list that is not a list is reported", "a=b:NoSchedule", [],
         ['spec.taints: Invalid value: "a=b:NoSchedule": must be a list']),
    case("an entry that is not an object is reported and skipped", ["a", {"key": "b", "effect": "NoSchedule"}],
         [Taint("b", "", "NoSchedule")], ['spec.taints[0]: Invalid value: "a": must be an object']),
    case("a missing key is reported", [{"effect": "NoSchedule"}], [], ["spec.taints[0].key: Required value"]),
    case("a missing effect is reported", [{"key": "a"}], [], ["spec.taints[0].effect: Required value"]),
    case("an unknown effect is reported", [{"key": "a", "effect": "Sometimes"}], [],
         ['spec.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
          '"PreferNoSchedule", "NoExecute"']),
    case("a value that is not a string is reported", [{"key": "a", "value": 3, "effect": "NoSchedule"}], [],
         ["spec.taints[0].value: Invalid value: 3: must be a string"]),
    case("a key that is not a label name is reported", [{"key": "a b", "effect": "NoSchedule"}], [],
         ['spec.taints[0].key: Invalid value: "a b": name part must consist of alphanumeric characters, \'-\', '
          "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
          "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
])
def test_parse_taints(raw: Any, parsed: list[Taint], errors: list[str]) -> None:
    assert parse_taints(raw) == (parsed, errors)


@pytest.mark.parametrize("raw, parsed, errors", [
    case("an operator defaults to Equal", [{"key": "a", "value": "1"}], [Toleration("a", "Equal", "1")], []),
    case("tolerationSeconds is kept", [{"key": "a", "operator": "Exists", "effect": "NoExecute",
                                        "tolerationSeconds": 300}],
         [Toleration("a", "Exists", "", "NoExecute", 300)], []),
    case("an unknown operator is reported", [{"key": "a", "operator": "Gt"}], [],
         ['spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists"']),
    case("an unknown effect is reported", [{"operator": "Exists", "effect": "Never"}], [],
         ['spec.tolerations[0].effect: Unsupported value: "Never": supported values: "NoSchedule", '
          '"PreferNoSchedule", "NoExecute"']),
    case("tolerationSeconds that is not an integer is reported",
         [{"operator": "Exists", "tolerationSeconds": "5m"}], [],
         ['spec.tolerations[0].tolerationSeconds: Invalid value: "5m": must be an integer']),
    case("a malformed entry is skipped and the others kept", [None, {"operator": "Exists"}],
         [Toleration("", "Exists")], ["spec.tolerations[0]: Invalid value: None: must be an object"]),
    case("tolerations that are not a list are reported", {"key": "a"}, [],
         ["spec.tolerations: Invalid value: {'key': 'a'}: must be a list"]),
])
def test_parse_tolerations(raw: Any, parsed: list[Toleration], errors: list[str]) -> None:
    assert parse_tolerations(raw) == (parsed, errors)


def test_pod_tolerations_keeps_only_the_well_formed_ones() -> None:
    pod = {"spec": {"tolerations": [{"key": "a", "operator": "Bogus"}, {"key": "b", "operator": "Exists"}]}}
    assert pod_tolerations(pod) == [Toleration("b", "Exists")]
    assert pod_tolerations({}) == []
