"""Shared test set-up: tests marked ``gpu`` are skipped when no CUDA GPU (CuPy) is present."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from zkgpu._cuda import gpu_available  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (CuPy) available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
