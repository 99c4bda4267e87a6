"""Cloud providers: the contract (interface.py), how one is found by name (registry.py), and mkpy's own."""
