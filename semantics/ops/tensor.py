"""Operator family tensor (being written)."""
