"""The package layering from DESIGN.md, checked on the source: who may import whom.

* only the apiserver imports the storage layer (the CLI may use `store.etcd_server` to start etcd);
* the shared packages (`api`, `auth`, `client`) import no component package;
* no component package imports another, except that the apiserver runs the admission plugins (in kube
  they are compiled into kube-apiserver; here they are a package of their own so each reads alone).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "minikube_py"
COMPONENTS = {"apiserver", "admission", "store", "kcm", "ccm", "scheduler", "kubelet"}
SHARED = {"api", "auth", "client"}


def imported_packages(path: Path) -> set[str]:
    """Top-level minikube_py subpackages (and `store.<module>`) imported by one source file."""
    tree = ast.parse(path.read_text())
    package_parts = path.relative_to(ROOT.parent).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package_parts[: len(package_parts) - node.level + 1])
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "minikube_py" and len(parts) > 1:
                found.add(parts[1] if parts[1] != "store" or len(parts) < 3 else f"store.{parts[2]}")
    return found


def sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_respect_the_layering(path: Path) -> None:
    owner = path.relative_to(ROOT).parts[0]
    imported = imported_packages(path)
    stores = {i for i in imported if i == "store" or i.startswith("store.")}
    if owner not in ("apiserver", "store"):
        allowed = {"store.etcd_server"} if owner == "cli" else set()
        assert stores <= allowed, f"{path}: only the apiserver may use the storage layer, found {stores}"
    if owner in SHARED:
        assert not (imported & COMPONENTS), f"{path}: shared package imports a component: {imported & COMPONENTS}"
    if owner in COMPONENTS:
        hosted = {"store", "admission"} if owner == "apiserver" else set()
        others = {i.split(".")[0] for i in imported} & COMPONENTS - {owner} - hosted
        assert not others, f"{path}: component imports another component: {others}"
