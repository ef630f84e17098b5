"""Thin adapters between the pipeline and the math/transfer modules, for both devices.

The pipeline calls only what is here: bases (the scaled-down SRS), H2D of a/b/c, ``compute_h``,
the H MSM, prep_msm, batch_add, the tail MSMs, the CPU G2 multiexp and host point sums.

* :class:`CpuBackend` (``device="cpu"``): ``zkgpu.qap.compute_h_reference`` on Python ints, MSMs
  and batch additions with py-arkworks-bls12381 (an independent library) over the same bases.
* :class:`GpuBackend` (``device="gpu"``): ``zkgpu.qap.compute_h`` on CuPy arrays,
  ``zkgpu.msm.msm`` / ``batch_add`` / ``generate_points`` and ``zkgpu.transfer`` for the H2D.

Point format everywhere: (1, 12) or (m, 12) uint64, affine x (6 limbs) then y (6 limbs),
little-endian canonical Fq; the identity is all zeros. This is byte-for-byte arkworks'
``to_xy_bytes_le`` (whose identity is 96 zero bytes too).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib
import threading
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from zkgpu import _cuda
from zkgpu.field import FR, fr_from_ints, fr_to_ints
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.synthesis import Circuit

__all__ = [
    "Prep",
    "prep_scalars",
    "CpuBackend",
    "GpuBackend",
    "make_backend",
    "g1_add",
    "g1_sum",
    "g1_from_arkworks",
    "g1_to_arkworks",
    "cpu_points",
    "cpu_compute_h",
    "cpu_msm",
    "malloc_trim",
]


def _optional(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# --------------------------------------------------------------------------------------------
# host points (py-arkworks-bls12381)
# --------------------------------------------------------------------------------------------
def _ark() -> Any:
    import py_arkworks_bls12381 as ark  # noqa: PLC0415

    return ark


def g1_to_arkworks(p: np.ndarray) -> Any:
    """(12,) or (1, 12) uint64 affine -> ``G1Point`` (on-curve check, no subgroup check)."""
    arr = np.ascontiguousarray(p, dtype=np.uint64).reshape(12)
    return _ark().G1Point.from_xy_bytes_unchecked_le(arr.tobytes())


def g1_from_arkworks(pt: Any) -> np.ndarray:
    """``G1Point`` -> (1, 12) uint64 affine (identity = zeros)."""
    return np.frombuffer(pt.to_xy_bytes_le(), dtype="<u8").astype(np.uint64).reshape(1, 12)


def g1_add(*points: np.ndarray) -> np.ndarray:
    """Sum of (1, 12) affine points (host, arkworks)."""
    acc = _ark().G1Point.identity()
    for p in points:
        acc = acc + g1_to_arkworks(p)
    return g1_from_arkworks(acc)


def g1_sum(points: np.ndarray) -> np.ndarray:
    """Sum of the rows of an (m, 12) array."""
    return g1_add(*[points[i] for i in range(points.shape[0])])


def _scalars_ark(s: np.ndarray) -> list[Any]:
    ark = _ark()
    raw = np.ascontiguousarray(s, dtype=np.uint64).tobytes()
    return [ark.Scalar.from_le_bytes(raw[32 * i : 32 * i + 32]) for i in range(s.shape[0])]


def cpu_points(m: int, seed: int, tag: int = 0) -> np.ndarray:
    """m deterministic G1 points ``k_i * G`` (k_i from ``(seed, tag)``), (m, 12) uint64."""
    ark = _ark()
    rng = np.random.default_rng([seed, 0x5B5, tag])
    ks = rng.integers(1, 2**62, size=m)
    g = ark.G1Point()
    out = np.empty((m, 12), dtype=np.uint64)
    for i, k in enumerate(ks):
        out[i] = g1_from_arkworks(g * ark.Scalar(int(k)))
    return out


def cpu_msm(points: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """sum scalars[i] * points[i] on the host (arkworks Pippenger), (1, 12)."""
    if points.shape[0] != scalars.shape[0]:
        raise ValueError(f"msm: {points.shape[0]} points vs {scalars.shape[0]} scalars")
    if points.shape[0] == 0:
        return np.zeros((1, 12), dtype=np.uint64)
    ark = _ark()
    pts = [g1_to_arkworks(points[i]) for i in range(points.shape[0])]
    return g1_from_arkworks(ark.G1Point.multiexp_unchecked(pts, _scalars_ark(scalars)))


def cpu_compute_h(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """H coefficients (n, 4) on the CPU: :func:`zkgpu.qap.compute_h_reference` (Python ints)."""
    from zkgpu.qap import compute_h_reference  # noqa: PLC0415

    return fr_from_ints(compute_h_reference(fr_to_ints(a), fr_to_ints(b), fr_to_ints(c)))


# --------------------------------------------------------------------------------------------
# prep_msm
# --------------------------------------------------------------------------------------------
@dataclass
class Prep:
    """prep_msm output for one MSM (cuzk groth16_cuda.cu:509-840, one circuit).

    Attributes:
        size: number of bases/scalars.
        split: True when ``n_sig <= size // 2`` (upstream's split decision): batch_add over the
            ones + tail MSM over the significant scalars; False: one full MSM over all scalars.
        ones_bitmap: uint64 words, bit i (LSB first) set iff scalar i == 1.
        n_ones, n_sig: popcounts.
        sig_idx: int64 indices of the significant scalars (neither 0 nor 1).
        sig_scalars: (n_sig, 4) uint64.
    """

    size: int
    split: bool
    ones_bitmap: np.ndarray
    n_ones: int
    n_sig: int
    sig_idx: np.ndarray
    sig_scalars: np.ndarray


def _prep_local(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    zero_hi = (s[:, 1] == 0) & (s[:, 2] == 0) & (s[:, 3] == 0)
    one = zero_hi & (s[:, 0] == 1)
    sig = ~(zero_hi & (s[:, 0] <= 1))
    words = (s.shape[0] + 63) // 64
    packed = np.zeros(words * 8, dtype=np.uint8)
    bits = np.packbits(one, bitorder="little")
    packed[: bits.size] = bits
    bitmap = packed.view("<u8").astype(np.uint64)
    sig_idx = np.flatnonzero(sig).astype(np.int64)
    return bitmap, sig_idx, s[sig_idx], int(one.sum())


def prep_scalars(scalars: np.ndarray) -> Prep:
    """Split one MSM's scalars ((m, 4) uint64 canonical) into ones bitmap + significant tail.

    Uses ``zkgpu.msm.prep_msm`` when it exists and returns the documented pieces, else a local
    vectorised numpy version of the same definition.
    """
    m = scalars.shape[0]
    bitmap = sig_idx = sig = None
    n_ones = -1
    msm_mod = _optional("zkgpu.msm")
    fn = getattr(msm_mod, "prep_msm", None) if msm_mod is not None else None
    if fn is not None:
        r = fn(scalars)
        bitmap = _get(r, "ones_bitmap", "bitmap", "ones")
        sig_idx = _get(r, "sig_idx", "significant_indices", "indices", "idx")
        sig = _get(r, "sig_scalars", "significant_scalars", "significant", "scalars")
        n_ones = _get(r, "n_ones", "ones_count", "count_ones")
    if bitmap is None or sig_idx is None or sig is None:
        bitmap, sig_idx, sig, n_ones = _prep_local(scalars)
    bitmap = np.asarray(bitmap, dtype=np.uint64)
    sig_idx = np.asarray(sig_idx, dtype=np.int64)
    sig = np.asarray(sig, dtype=np.uint64).reshape(-1, 4)
    if n_ones is None or int(n_ones) < 0:
        n_ones = int(np.unpackbits(bitmap.view(np.uint8)).sum())
    n_sig = int(sig_idx.size)
    return Prep(m, n_sig <= m // 2, bitmap, int(n_ones), n_sig, sig_idx, sig)


def _get(obj: Any, *names: str) -> Any:
    for nm in names:
        if isinstance(obj, dict) and nm in obj:
            return obj[nm]
        if hasattr(obj, nm):
            return getattr(obj, nm)
    return None


def bitmap_indices(bitmap: np.ndarray, size: int) -> np.ndarray:
    """Indices of the set bits (LSB first) of a uint64 word bitmap, below ``size``."""
    bits = np.unpackbits(np.ascontiguousarray(bitmap, dtype="<u8").view(np.uint8), bitorder="little")[:size]
    return np.flatnonzero(bits)


# --------------------------------------------------------------------------------------------
# malloc_trim
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _libc_trim() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def malloc_trim() -> bool | None:
    """glibc ``malloc_trim(0)`` (cuzk engine.rs:456-492 after every partition). Returns whether
    memory was released, or None where unavailable (non-glibc)."""
    fn = _libc_trim()
    if fn is None:
        return None
    return bool(fn(0))


# --------------------------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------------------------
BASE_NAMES = ("h", "l", "a", "b_g1")


class CpuBackend:
    """Reference math on the host (see the module docstring). Thread-safe (no shared state
    mutated after :meth:`setup`)."""

    device = "cpu"

    def __init__(self, config: PipelineConfig, circuit: Circuit) -> None:
        self.config, self.circuit = config, circuit
        self.bases: dict[str, np.ndarray] = {}
        self._ark_bases: dict[str, list[Any]] = {}
        self._g2: list[Any] = []

    def setup(self) -> None:
        sizes = {"h": self.config.n, "l": self.circuit.l_size, "a": self.circuit.a_size, "b_g1": self.circuit.b_size}
        for tag, nm in enumerate(BASE_NAMES):
            self.bases[nm] = cpu_points(sizes[nm], self.config.seed, tag)
            self._ark_bases[nm] = [g1_to_arkworks(self.bases[nm][i]) for i in range(sizes[nm])]
        self._g2 = g2_bases(self.config.b_g2_terms, self.config.seed)

    def new_stream(self) -> Any:
        return None

    def last_transfers(self) -> list[Any]:
        return []

    def h2d(self, host: Sequence[np.ndarray], stream: Any) -> tuple[list[Any], int]:
        """CPU: no copy (the "device" arrays are the host arrays); returns the bytes a GPU would move."""
        return list(host), int(sum(x.nbytes for x in host))

    def compute_h(self, dev: Sequence[Any], stream: Any) -> Any:
        return cpu_compute_h(*dev)

    def synchronize(self, stream: Any) -> None:
        pass

    def msm(self, name: str, scalars: np.ndarray, idx: np.ndarray | None, stream: Any) -> np.ndarray:
        ark = _ark()
        pts = self._ark_bases[name]
        if idx is not None:
            pts = [pts[int(i)] for i in idx]
        if len(pts) == 0:
            return np.zeros((1, 12), dtype=np.uint64)
        return g1_from_arkworks(ark.G1Point.multiexp_unchecked(pts, _scalars_ark(np.asarray(scalars))))

    def batch_add(self, name: str, bitmap: np.ndarray, stream: Any) -> np.ndarray:
        pts = self._ark_bases[name]
        acc = _ark().G1Point.identity()
        for i in bitmap_indices(bitmap, len(pts)):
            acc = acc + pts[int(i)]
        return g1_from_arkworks(acc)

    def b_g2(self, scalars: np.ndarray) -> bytes:
        return cpu_g2_msm(self._g2, scalars)


def g2_bases(m: int, seed: int) -> list[Any]:
    """m deterministic G2 points ``k_i * G2`` (arkworks objects)."""
    ark = _ark()
    rng = np.random.default_rng([seed, 0x6B2])
    g = ark.G2Point()
    return [g * ark.Scalar(int(k)) for k in rng.integers(1, 2**62, size=m)]


def cpu_g2_msm(bases: list[Any], scalars: np.ndarray) -> bytes:
    """The scaled-down CPU B_g2 multiexp: the first ``len(bases)`` of ``scalars`` against ``bases``
    (arkworks ``G2Point.multiexp_unchecked``), compressed 96-byte result. Upstream runs a full
    sppark ``mult_pippenger`` over the significant B scalars on the CPU (groth16_cuda.cu:852-890);
    we keep its place in the thread (after prep_msm, outside the mutex), not its size."""
    ark = _ark()
    k = min(len(bases), scalars.shape[0])
    if k == 0:
        return ark.G2Point.identity().to_compressed_bytes()
    return ark.G2Point.multiexp_unchecked(bases[:k], _scalars_ark(scalars[:k])).to_compressed_bytes()


class GpuBackend:
    """CuPy/CUDA math through zkgpu.qap, zkgpu.msm, zkgpu.transfer (see the module docstring)."""

    device = "gpu"

    def __init__(self, config: PipelineConfig, circuit: Circuit) -> None:
        self.config, self.circuit = config, circuit
        self.cp = _cuda.cupy()
        self.qap = importlib.import_module("zkgpu.qap")
        self.msm_mod = importlib.import_module("zkgpu.msm")
        self.transfer = importlib.import_module("zkgpu.transfer")
        self._local = threading.local()
        self.bases: dict[str, Any] = {}
        self._g2: list[Any] = []

    def setup(self) -> None:
        sizes = {"h": self.config.n, "l": self.circuit.l_size, "a": self.circuit.a_size, "b_g1": self.circuit.b_size}
        gen = getattr(self.msm_mod, "generate_points", None)
        if gen is None:
            gen = importlib.import_module("zkgpu.curve").generate_points
        for tag, nm in enumerate(BASE_NAMES):
            self.bases[nm] = gen(sizes[nm], seed=self.config.seed * 16 + tag)
        self._g2 = g2_bases(self.config.b_g2_terms, self.config.seed)
        self.cp.cuda.Device().synchronize()

    def new_stream(self) -> Any:
        return self.cp.cuda.Stream(non_blocking=True)

    def h2d(self, host: Sequence[np.ndarray], stream: Any) -> tuple[list[Any], int]:
        """H2D of a, b, c by ``config.transfer`` on ``stream`` through :mod:`zkgpu.transfer`
        (``pageable``, ``registered`` or ``pinned_pool``; a pool fallback buffer that is not
        page-locked is copied anyway). Returns the device arrays and the bytes moved; the
        :class:`~zkgpu.transfer.TransferResult` of each copy is kept in ``self.last_transfers``
        (per thread)."""
        cp, tr = self.cp, self.transfer
        out, results = [], []
        for x in host:
            d = cp.empty(x.shape, dtype=x.dtype)
            if self.config.transfer == "pageable":
                r = tr.pageable(x, d, stream=stream)
            elif self.config.transfer == "registered":
                r = tr.registered(x, d, stream=stream)
            else:
                r = tr.pinned_pool(x, d, stream=stream, require_pinned=False)
            results.append(r)
            out.append(d)
        self._local.last_transfers = results
        return out, int(sum(x.nbytes for x in host))

    def last_transfers(self) -> list[Any]:
        return getattr(self._local, "last_transfers", [])

    def compute_h(self, dev: Sequence[Any], stream: Any) -> Any:
        return self.qap.compute_h(*dev, stream=stream)

    def synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def msm(self, name: str, scalars: Any, idx: np.ndarray | None, stream: Any) -> np.ndarray:
        cp = self.cp
        with stream:
            pts = self.bases[name]
            if idx is not None:
                if idx.size == 0:
                    return np.zeros((1, 12), dtype=np.uint64)
                pts = pts[cp.asarray(idx)]
            r = self.msm_mod.msm(pts, cp.asarray(scalars))
        return np.asarray(cp.asnumpy(r) if _cuda.is_device_array(r) else r, dtype=np.uint64).reshape(1, 12)

    def batch_add(self, name: str, bitmap: np.ndarray, stream: Any) -> np.ndarray:
        cp = self.cp
        with stream:
            r = self.msm_mod.batch_add(self.bases[name], cp.asarray(bitmap))
        return np.asarray(cp.asnumpy(r) if _cuda.is_device_array(r) else r, dtype=np.uint64).reshape(1, 12)

    def b_g2(self, scalars: np.ndarray) -> bytes:
        return cpu_g2_msm(self._g2, scalars)


def make_backend(config: PipelineConfig, circuit: Circuit) -> CpuBackend | GpuBackend:
    """The backend for ``config.device``.

    Raises:
        RuntimeError: device="gpu" without a usable GPU.
    """
    if config.device == "gpu":
        if not _cuda.gpu_available():
            raise RuntimeError("PipelineConfig.device='gpu' but no CUDA GPU is available; use device='cpu'")
        return GpuBackend(config, circuit)
    return CpuBackend(config, circuit)


def now_ms() -> float:
    return time.perf_counter_ns() / 1e6
