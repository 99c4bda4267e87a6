"""Admission: the plugins every write passes through after authorization (see interface.py)."""
