"""Throughput and memory benchmark of the conversion, with its baselines."""
