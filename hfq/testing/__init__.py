"""Helpers for testing code that uses hfq: hypothesis strategies for tick data."""

__all__ = ["strategies"]
