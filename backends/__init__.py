"""Backends: compiled executors for Relay programs (ARCHITECTURE.md §2)."""
