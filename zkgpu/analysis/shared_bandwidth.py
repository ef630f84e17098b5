"""Copies sharing a bandwidth budget, for the simpy model (:mod:`zkgpu.analysis.model`): the pageable H2D
copies of several GPUs, each one host thread's memcpy, draw on one host memory bandwidth."""

from __future__ import annotations

import itertools

import simpy

__all__ = ["SharedBandwidth"]


class SharedBandwidth:
    """Copies that share a host bandwidth budget (fluid model): while k copies are in flight each moves
    ``min(per_copy, total / k)`` bytes per ms; the rates are re-shared whenever a copy starts or ends.
    Rates in bytes/ms."""

    def __init__(self, env: simpy.Environment, total: float, per_copy: float) -> None:
        self.env, self.total, self.per_copy = env, total, per_copy
        self.left: dict[int, float] = {}  # copy id -> bytes still to move
        self.done: dict[int, simpy.Event] = {}
        self.ids = itertools.count()
        self.t = 0.0  # when ``left`` was last brought up to date
        self.generation = 0

    def _rate(self) -> float:
        return min(self.per_copy, self.total / len(self.left)) if self.left else self.per_copy

    def _advance(self) -> None:
        moved = (self.env.now - self.t) * self._rate()
        self.t = self.env.now
        for k in list(self.left):
            self.left[k] -= moved
            if self.left[k] <= 1e-6:  # finished (a byte's rounding)
                del self.left[k]
                self.done.pop(k).succeed()

    def _schedule(self) -> None:
        self.generation += 1
        if self.left:
            self.env.process(self._wake(self.generation, min(self.left.values()) / self._rate()))

    def _wake(self, generation: int, after: float):
        yield self.env.timeout(after)
        if generation == self.generation:  # no start or end since: the first copy is done now
            self._advance()
            self._schedule()

    def copy(self, nbytes: float) -> simpy.Event:
        """An event that fires when ``nbytes`` have moved."""
        self._advance()
        k = next(self.ids)
        ev = self.env.event()
        self.left[k], self.done[k] = float(nbytes), ev
        self._schedule()
        return ev
