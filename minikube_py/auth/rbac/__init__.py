"""Role-based access control: Kubernetes RBAC evaluated by Casbin (see `model.py` for the mapping)."""
