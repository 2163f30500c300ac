"""Operator family transform (being written)."""
