"""Stands in for a machine without RealtimeGym (put first on PYTHONPATH by a test): importing
it fails exactly as a missing package would."""

raise ModuleNotFoundError("No module named 'realtimegym'", name="realtimegym")
