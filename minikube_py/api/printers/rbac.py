"""Printers for rbac.authorization.k8s.io/v1 RoleBindings and ClusterRoleBindings.

ROLE reads `<Kind>/<name>` of the roleRef; the wide USERS, GROUPS and SERVICEACCOUNTS columns list the
subjects of each kind, service accounts as `<namespace>/<name>`, joined by `, `. Roles and ClusterRoles
have no kube printer and get the default Name/Created At table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from minikube_py.api.printers.base import AGE, NAME, Cell, Column, Printer
from minikube_py.api.printers.format import age, object_name


def subjects_by_kind(subjects: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """Users, groups and service accounts among a binding's subjects; other kinds are left out."""
    users, groups, service_accounts = [], [], []
    for subject in subjects:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            service_accounts.append(f"{subject.get('namespace', '')}/{name}")
    return users, groups, service_accounts


def _binding_cells(binding: dict[str, Any], now: datetime) -> list[Cell]:
    role_ref = binding.get("roleRef") or {}
    subjects = subjects_by_kind(binding.get("subjects") or [])
    return [
        object_name(binding), f"{role_ref.get('kind', '')}/{role_ref.get('name', '')}",
        age(binding, now), *(", ".join(names) for names in subjects),
    ]


def _binding_printer(kind: str, role_ref_doc: str) -> Printer:
    subject_kind = kind[0].lower() + kind[1:]
    return Printer(
        (
            NAME,
            Column("Role", role_ref_doc),
            AGE,
            Column("Users", f"Users in the {subject_kind}", priority=1),
            Column("Groups", f"Groups in the {subject_kind}", priority=1),
            Column("ServiceAccounts", f"ServiceAccounts in the {subject_kind}", priority=1),
        ),
        _binding_cells,
    )


_RBAC = "rbac.authorization.k8s.io"

PRINTERS = {
    (_RBAC, "v1", "RoleBinding"): _binding_printer(
        "RoleBinding", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
                       "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."),
    (_RBAC, "v1", "ClusterRoleBinding"): _binding_printer(
        "ClusterRoleBinding", "RoleRef can only reference a ClusterRole in the global namespace. If the "
                              "RoleRef cannot be resolved, the Authorizer must return an error."),
}
