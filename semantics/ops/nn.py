"""Operator family nn (being written)."""
