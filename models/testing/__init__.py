"""Test doubles for the model client (never used to report results)."""
