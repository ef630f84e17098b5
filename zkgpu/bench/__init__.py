"""Benchmark runners and their click commands; app layer."""
