"""Operator family creation (being written)."""
