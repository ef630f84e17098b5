"""circom2/snarkjs for the real-proof tests: skipped when node is missing, a failure under
``ZKGPU_REQUIRE_NODE=1`` (``make test``, so CI never skips them silently)."""

from __future__ import annotations

import os

import pytest

from zkgpu.groth16.circuits import NodeTools, ToolError, tools


def need_node() -> NodeTools:
    """The node tools, else skip (or fail under ``ZKGPU_REQUIRE_NODE``) naming what is missing."""
    try:
        return tools()
    except ToolError as exc:
        if os.environ.get("ZKGPU_REQUIRE_NODE"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
