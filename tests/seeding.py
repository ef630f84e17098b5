"""Seeded random inputs for the tests (issue 10): every random draw of a test comes from the
test's seed, which ``conftest.py`` derives from one session seed and the test's id and prints on
failure; ``ZKGPU_TEST_SEED=<session seed>`` replays it.

``new_rng()`` / ``new_pyrng()`` hand out a fresh numpy Generator / ``random.Random`` for the running
test (the n-th call of a test always gets the same stream); the ``rng`` / ``pyrng`` fixtures are
the first of them.
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets

import numpy as np

__all__ = ["SESSION_SEED", "seed_for", "start", "current_seed", "new_rng", "new_pyrng"]


def _session_seed() -> int:
    env = os.environ.get("ZKGPU_TEST_SEED", "").strip()
    if env:
        try:
            return int(env, 0)
        except ValueError as exc:
            raise ValueError(f"ZKGPU_TEST_SEED must be an integer (the seed printed by a failing test), got {env!r}") from exc
    return secrets.randbits(32)


SESSION_SEED = _session_seed()
_state = {"seed": SESSION_SEED, "n": 0}


def seed_for(nodeid: str) -> int:
    """The seed of one test: a hash of the session seed and the test id (64 bits)."""
    return int.from_bytes(hashlib.sha256(f"{SESSION_SEED}:{nodeid}".encode()).digest()[:8], "little")


def start(seed: int) -> None:
    """Set the running test's seed (conftest's autouse fixture)."""
    _state["seed"], _state["n"] = seed, 0


def current_seed() -> int:
    return _state["seed"]


def _next() -> int:
    _state["n"] += 1
    return int.from_bytes(hashlib.sha256(f"{_state['seed']}:{_state['n']}".encode()).digest()[:8], "little")


def new_rng() -> np.random.Generator:
    """A numpy Generator seeded from the running test's seed (the n-th call: the n-th stream)."""
    return np.random.default_rng(_next())


def new_pyrng() -> random.Random:
    """A ``random.Random`` seeded from the running test's seed (for Python-int draws)."""
    return random.Random(_next())
