"""Benchmark runners and their ``zkgpu bench`` commands."""
