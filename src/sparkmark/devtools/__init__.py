"""Helpers for sparkmark's own tests and benchmarks (not part of the public API)."""
