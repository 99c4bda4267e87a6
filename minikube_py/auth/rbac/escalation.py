"""Escalation prevention: nobody may grant, through a role or a binding, permissions they do not hold.

kube's RBAC registry checks every create and update of a Role, ClusterRole, RoleBinding or
ClusterRoleBinding (the apiserver calls `confirm_no_escalation` from `apiserver/rbac.py`):

* members of `system:masters` may always write them;
* a role: allowed if the user may `escalate` that role, else every rule of the new object must be covered
  by the rules the user already holds in the role's namespace (cluster-wide for a ClusterRole);
* a binding: allowed if the user may `bind` the role it references, else the referenced role must exist
  (404 otherwise, as kube) and its rules must be covered the same way.

"Covered" follows kube's `Covers`: each rule is broken down into pieces of one verb, one API group, one
resource and one resource name (or one non-resource URL and one verb), and each piece must be allowed by
the user's rules (`*` in a piece is covered only by `*`). The refusal lists the pieces not covered,
compacted per resource the way kube does, in kube's words:
`user "alice" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not
currently held:` then one `{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}` a line, sorted.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..authn import UserInfo
from .authorizer import allows
from .policy import Policy, Rule

PRIVILEGED_GROUP = "system:masters"


def breakdown(rule: Rule) -> list[Rule]:
    """`rule` as pieces of one verb and one group/resource/name, or one URL, in kube's order."""
    pieces = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                names = rule.resource_names or ("",)
                pieces += [Rule((verb,), (group,), (resource,), (name,) if name else ()) for name in names]
    pieces += [Rule((verb,), non_resource_urls=(url,)) for url in rule.non_resource_urls for verb in rule.verbs]
    return pieces


def missing_rules(policy: Policy, user: UserInfo, namespace: str, rules: Iterable[Rule]) -> list[Rule]:
    """The pieces of `rules` that `user` does not hold in `namespace` ("" = cluster-wide)."""
    missing = []
    for rule in rules:
        for piece in breakdown(rule):
            if piece.non_resource_urls:
                held = allows(policy, user, "", piece.verbs[0], "", "", "", piece.non_resource_urls[0])
            else:
                name = piece.resource_names[0] if piece.resource_names else ""
                held = allows(policy, user, namespace, piece.verbs[0], piece.api_groups[0], piece.resources[0],
                              name, "")
            if not held:
                missing.append(piece)
    return missing


def compact(rules: list[Rule]) -> list[Rule]:
    """Pieces for the same group, resource and name merged into one rule with all their verbs."""
    merged: dict[tuple[str, str, tuple[str, ...]], Rule] = {}
    others = []
    for rule in rules:
        if rule.non_resource_urls or len(rule.api_groups) != 1 or len(rule.resources) != 1:
            others.append(rule)
            continue
        key = (rule.api_groups[0], rule.resources[0], rule.resource_names)
        seen = merged.get(key)
        merged[key] = rule if seen is None else Rule(seen.verbs + rule.verbs, seen.api_groups, seen.resources,
                                                     seen.resource_names)
    return others + list(merged.values())


def compact_string(rule: Rule) -> str:
    """kube's `CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`."""
    fields = (("APIGroups", rule.api_groups), ("Resources", rule.resources),
              ("NonResourceURLs", rule.non_resource_urls), ("ResourceNames", rule.resource_names),
              ("Verbs", rule.verbs))
    return "{" + ", ".join(f"{label}:{go_strings(values)}" for label, values in fields if values) + "}"


def go_strings(values: Iterable[str]) -> str:
    """A string list as Go's `%q` prints it: `["a" "b"]`."""
    return "[" + " ".join(go_quote(value) for value in values) + "]"


def go_quote(value: str) -> str:
    """Go's `%q` of a string (printable characters kept, the rest escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else _escape(c) for c in escaped) + '"'


def _escape(char: str) -> str:
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return named.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")


def escalation_error(user: UserInfo, missing: list[Rule], resolution_errors: list[str]) -> str:
    """Why a grant is refused, in kube's words (the text after `... is forbidden: `)."""
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (f"user {go_quote(user.username)} (groups={go_strings(user.groups)}) is attempting to grant RBAC "
               f"permissions not currently held:\n" + "\n".join(lines))
    if resolution_errors:  # kube prints a one-element list of the aggregated error
        aggregate = resolution_errors[0] if len(resolution_errors) == 1 else f"[{', '.join(resolution_errors)}]"
        message += f"; resolution errors: [{aggregate}]"
    return message


def confirm_no_escalation(policy: Policy, user: UserInfo, namespace: str, rules: Iterable[Rule]) -> str | None:
    """None when `user` holds every rule in `namespace`; else the refusal message."""
    if PRIVILEGED_GROUP in user.groups:
        return None
    missing = missing_rules(policy, user, namespace, rules)
    if not missing:
        return None
    return escalation_error(user, missing, list(dict.fromkeys(policy.rules_for(user, namespace)[1])))
