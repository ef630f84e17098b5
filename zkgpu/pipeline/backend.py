"""Thin adapters between the pipeline and the math/transfer modules, for both devices.

The pipeline calls only what is here: bases (the scaled-down SRS), H2D of a/b/c and the H
computation (``start_h`` / ``finish_h``),
the H MSM, prep_msm, batch_add, the tail MSMs, the CPU G2 multiexp and host point sums.

* :class:`CpuBackend` (``device="cpu"``): ``zkgpu.qap.compute_h_reference`` on Python ints, MSMs
  and batch additions with py-arkworks-bls12381 (an independent library) over the same bases.
* :class:`GpuBackend` (``device="gpu"``): the steps of ``zkgpu.qap.compute_h`` on CuPy arrays, three streams,
  ``zkgpu.msm.msm`` / ``batch_add`` / ``generate_points`` and ``zkgpu.transfer`` for the H2D.

Point format everywhere: (1, 12) or (m, 12) uint64, affine x (6 limbs) then y (6 limbs),
little-endian canonical Fq; the identity is all zeros. This is byte-for-byte arkworks'
``to_xy_bytes_le`` (whose identity is 96 zero bytes too).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zkgpu import _cuda, fr_device, msm, ntt, qap, transfer
from zkgpu.field import fr_from_ints, fr_to_ints
from zkgpu.metrics import h2d_overlap
from zkgpu.pinned_pool import PinnedPool
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.synthesis import Circuit
from zkgpu.prep import prep_msm_device, prep_msm_parallel

__all__ = [
    "Prep",
    "HStart",
    "prep_scalars",
    "prep_partition",
    "selections",
    "fan_out",
    "CpuBackend",
    "GpuBackend",
    "make_backend",
    "g1_add",
    "g1_from_arkworks",
    "g1_to_arkworks",
    "cpu_points",
    "bitmap_indices",
    "g2_bases",
    "cpu_g2_msm",
    "BASE_NAMES",
    "cpu_compute_h",
    "malloc_trim",
]


@dataclass
class HStart:
    """The H computation between :meth:`GpuBackend.start_h` and :meth:`GpuBackend.finish_h`.

    Attributes:
        bufs: the three working buffers (device, or host arrays on the CPU backend).
        nbytes: bytes copied host-to-device (0 for device-resident inputs).
        transfers: the :class:`zkgpu.transfer.TransferResult` of each copy (GPU only).
        timing: filled by ``finish_h``: ``copy_ms`` (sum of the copies' intervals on the GPU
            timeline, from their CUDA events; clipped so that consecutive copies do not overlap),
            ``exposed_ms`` (copy time not overlapped by any kernel of the H computation: the part
            of the H2D that lengthens ntt_msm_h), ``hidden_ms`` and ``kernel_ms``
            (:func:`zkgpu.metrics.h2d_overlap`), all ms.
    """

    bufs: list[Any]
    nbytes: int
    transfers: list[Any] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    # GPU only: the reference event, then per vector (copy end event, kernel end event, copy ms or
    # None); the deferred value check and the device inputs it reads
    ref: Any = field(default=None, repr=False)
    marks: list[tuple[Any, Any, float | None]] = field(default_factory=list, repr=False)
    check: Any = field(default=None, repr=False)
    inputs: list[Any] = field(default_factory=list, repr=False)


# --------------------------------------------------------------------------------------------
# host points (py-arkworks-bls12381)
# --------------------------------------------------------------------------------------------
def _ark() -> Any:
    import py_arkworks_bls12381 as ark

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


def cpu_compute_h(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """H coefficients (n, 4) on the CPU: :func:`zkgpu.qap.compute_h_reference` (Python ints)."""
    from zkgpu.qap import compute_h_reference

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


def prep_scalars(scalars: np.ndarray) -> Prep:
    """prep_msm for one MSM: :func:`zkgpu.msm.prep_msm` (ones bitmap, significant scalars and
    indices) plus upstream's split decision (groth16_cuda.cu:641-659).

    Raises:
        ValueError: a scalar >= r (named by index, from zkgpu.field.check_array).
    """
    from zkgpu.msm import prep_msm

    return _as_prep(prep_msm(scalars))


def _as_prep(r: Any) -> Prep:
    """A :class:`zkgpu.msm.PrepMsm` (host or device arrays) with upstream's split decision."""
    n_sig = r.significant
    return Prep(r.n, n_sig <= r.n // 2, r.bitmap, int(r.ones), n_sig, r.sig_indices, r.sig_scalars)


_SEL_LOCK = threading.Lock()
_SEL_CACHE: dict[int, tuple[Circuit, np.ndarray, np.ndarray]] = {}


def selections(circuit: Circuit) -> tuple[np.ndarray, np.ndarray]:
    """Row indices into ``[circuit.inp; aux]`` of the A and B scalar vectors (int64, ascending):
    A = every input then the aux rows in ``a_aux_density``; B = the inputs in ``b_inp_density``
    then the aux rows in ``b_aux_density`` (cuzk-pipeline.md §1.6). Cached per circuit (the
    structure is fixed for a run)."""
    with _SEL_LOCK:
        hit = _SEL_CACHE.get(id(circuit))
        if hit is not None and hit[0] is circuit:
            return hit[1], hit[2]
        k = circuit.inp.shape[0]
        a_sel = np.concatenate([np.arange(k), k + np.flatnonzero(circuit.a_aux_density)]).astype(np.int64)
        b_sel = np.concatenate([np.flatnonzero(circuit.b_inp_density), k + np.flatnonzero(circuit.b_aux_density)]).astype(np.int64)
        if len(_SEL_CACHE) >= 4:
            _SEL_CACHE.clear()
        _SEL_CACHE[id(circuit)] = (circuit, a_sel, b_sel)
        return a_sel, b_sel


def _pack_bits(mask: np.ndarray) -> np.ndarray:
    words = (mask.size + 63) // 64
    buf = np.zeros(words * 8, dtype=np.uint8)
    packed = np.packbits(mask, bitorder="little")
    buf[: packed.size] = packed
    return buf.view("<u8").astype(np.uint64)


def prep_partition(circuit: Circuit, aux: np.ndarray, prep: str = "cpu", *, threads: int | None = None) -> dict[str, Prep]:
    """prep_msm of one partition for the L, A and B MSMs on the host, as upstream's pass 1 + split
    decision (groth16_cuda.cu:514-659).

    ``prep="cpu_parallel"``: :func:`zkgpu.prep.prep_msm_parallel` (``threads`` threads) over aux
    for L and over :func:`selections` of ``[inputs; aux]`` for A and B (the filtered vectors are
    never gathered). ``prep="cpu"``: one numpy pass over aux: :func:`zkgpu.msm.prep_msm` classifies
    every aux scalar once (validating it; ones bitmap, significant indices) and is the L split;
    the A and B splits are the same classification restricted to the density-filtered positions
    (inputs first, then aux where ``a_aux_density`` / ``b_aux_density`` is set), packed compactly
    by position in the filtered base list, as upstream packs a_bits / b_bits.

    Returns:
        ``{"l": Prep, "a": Prep, "b_g1": Prep}``; each equals :func:`prep_scalars` of the
        gathered scalar vector (tested), without gathering the 0/1 majority.

    Raises:
        ValueError: a scalar >= r, or ``prep`` not ``cpu`` / ``cpu_parallel`` (``gpu`` is
        :meth:`GpuBackend.prep`).
    """
    from zkgpu.msm import prep_msm

    if prep == "cpu_parallel":
        a_sel, b_sel = selections(circuit)
        return {
            "l": _as_prep(prep_msm_parallel(aux, threads=threads)),
            "a": _as_prep(prep_msm_parallel(aux, sel=a_sel, head=circuit.inp, threads=threads)),
            "b_g1": _as_prep(prep_msm_parallel(aux, sel=b_sel, head=circuit.inp, threads=threads)),
        }
    if prep != "cpu":
        raise ValueError(f"prep_partition runs prep='cpu' or 'cpu_parallel' on the host, got {prep!r} (prep='gpu': GpuBackend.prep)")
    lp = prep_msm(aux)
    m = aux.shape[0]
    one_aux = np.unpackbits(lp.bitmap.view(np.uint8), bitorder="little")[:m].astype(bool)
    sig_aux = np.zeros(m, dtype=bool)
    sig_aux[lp.sig_indices] = True
    ip = prep_msm(circuit.inp)
    k = circuit.inp.shape[0]
    one_inp = np.unpackbits(ip.bitmap.view(np.uint8), bitorder="little")[:k].astype(bool)
    sig_inp = np.zeros(k, dtype=bool)
    sig_inp[ip.sig_indices] = True
    out = {"l": _as_prep(lp)}
    for name, inp_mask, aux_mask in (("a", np.ones(k, dtype=bool), circuit.a_aux_density), ("b_g1", circuit.b_inp_density, circuit.b_aux_density)):
        inp_idx = np.flatnonzero(inp_mask)
        aux_idx = np.flatnonzero(aux_mask)
        ones = np.concatenate([one_inp[inp_idx], one_aux[aux_idx]])
        sig = np.concatenate([sig_inp[inp_idx], sig_aux[aux_idx]])
        size = ones.size
        sig_pos = np.flatnonzero(sig).astype(np.int64)
        n_in = inp_idx.size
        head, tail = sig_pos[sig_pos < n_in], sig_pos[sig_pos >= n_in]
        sig_scalars = np.concatenate([circuit.inp[inp_idx[head]], aux[aux_idx[tail - n_in]]]).reshape(-1, 4)
        out[name] = Prep(size, sig_pos.size <= size // 2, _pack_bits(ones), int(ones.sum()), int(sig_pos.size), sig_pos, np.ascontiguousarray(sig_scalars))
    return out


def bitmap_indices(bitmap: np.ndarray, size: int) -> np.ndarray:
    """Indices of the set bits (LSB first) of a uint64 word bitmap, below ``size``."""
    bits = np.unpackbits(np.ascontiguousarray(bitmap, dtype="<u8").view(np.uint8), bitorder="little")[:size]
    return np.flatnonzero(bits)


# --------------------------------------------------------------------------------------------
# several small GPU calls at once (batch_add x3, tail MSM x3)
# --------------------------------------------------------------------------------------------
_FAN_POOL: ThreadPoolExecutor | None = None
_FAN_LOCK = threading.Lock()


def _fan_pool() -> ThreadPoolExecutor:
    global _FAN_POOL
    with _FAN_LOCK:
        if _FAN_POOL is None:
            _FAN_POOL = ThreadPoolExecutor(max_workers=12, thread_name_prefix="zkgpu-fan")
        return _FAN_POOL


def fan_out(fn: Callable[[str, Any], np.ndarray], jobs: dict[str, Any], concurrent: bool) -> dict[str, np.ndarray]:
    """``{name: fn(name, job)}``; with ``concurrent`` each call on a thread of a shared pool (the
    calls are independent: their inputs are ready and each returns a host point), else in order.
    The first exception of a call is re-raised after all have ended."""
    if not concurrent or len(jobs) <= 1:
        return {nm: fn(nm, job) for nm, job in jobs.items()}
    futs = {nm: _fan_pool().submit(fn, nm, job) for nm, job in jobs.items()}
    errors = [f.exception() for f in futs.values()]
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return {nm: f.result() for nm, f in futs.items()}


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

    def start_h(self, inputs: Sequence[np.ndarray], stream: Any) -> HStart:
        """CPU: no copy; the bytes a GPU would move (see :meth:`GpuBackend.start_h`)."""
        return HStart(list(inputs), int(sum(x.nbytes for x in inputs)))

    def finish_h(self, st: HStart, stream: Any) -> Any:
        """CPU: :func:`cpu_compute_h` (Python ints); no copy to expose."""
        st.timing.update(copy_ms=0.0, exposed_ms=0.0)
        return cpu_compute_h(*st.bufs)

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

    def msm_many(self, jobs: dict[str, tuple[Any, np.ndarray | None]], stream: Any, concurrent: bool = False) -> dict[str, np.ndarray]:
        """:meth:`msm` of each ``name: (scalars, idx)``; ``concurrent``: on threads (:func:`fan_out`)."""
        return fan_out(lambda nm, j: self.msm(nm, j[0], j[1], stream), jobs, concurrent)

    def batch_add_many(self, jobs: dict[str, Any], stream: Any, concurrent: bool = False) -> dict[str, np.ndarray]:
        """:meth:`batch_add` of each ``name: bitmap``; ``concurrent``: on threads (:func:`fan_out`)."""
        return fan_out(lambda nm, bm: self.batch_add(nm, bm, stream), jobs, concurrent)

    def b_g2(self, scalars: np.ndarray) -> bytes:
        return cpu_g2_msm(self._g2, scalars)

    def prep(self, aux: np.ndarray, prep: str = "cpu", threads: int | None = None) -> dict[str, Prep]:
        """:func:`prep_partition` (``prep`` = ``cpu`` or ``cpu_parallel``)."""
        return prep_partition(self.circuit, aux, prep, threads=threads)


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
        self.qap, self.ntt, self.msm_mod, self.transfer = qap, ntt, msm, transfer
        self._local = threading.local()
        self.bases: dict[str, Any] = {}
        self._g2: list[Any] = []
        self._prep_streams: list[Any] = []  # idle streams of prep="gpu" (one per concurrent prep thread)
        self._side_free: list[Any] = []  # idle streams of msm_many / batch_add_many (concurrent)
        self._staging = PinnedPool()  # pinned staging of aux for prep="gpu"

    def setup(self) -> None:
        sizes = {"h": self.config.n, "l": self.circuit.l_size, "a": self.circuit.a_size, "b_g1": self.circuit.b_size}
        for tag, nm in enumerate(BASE_NAMES):
            self.bases[nm] = self.msm_mod.generate_points(sizes[nm], seed=self.config.seed * 16 + tag)
        self._g2 = g2_bases(self.config.b_g2_terms, self.config.seed)
        # pinned staging buffers for prep="gpu" (one per concurrent prep thread, up to 3 workers),
        # allocated here so that no cudaHostAlloc lands in a timed partition
        held = [self._staging.checkout(self.circuit.aux_size * 32) for _ in range(3)]
        for b in held:
            self._staging.checkin(b)
        self.cp.cuda.Device().synchronize()

    def new_stream(self) -> Any:
        return self.cp.cuda.Stream(non_blocking=True)

    def h2d(self, host: Sequence[np.ndarray], stream: Any) -> tuple[list[Any], int]:
        """H2D of a, b, c by ``config.transfer`` on ``stream`` through :mod:`zkgpu.transfer`
        (``pageable``, ``registered`` or ``pinned_pool``; a pool fallback buffer that is not
        page-locked is copied anyway). Returns the device arrays and the bytes moved; the
        :class:`~zkgpu.transfer.TransferResult` of each copy is kept for :meth:`last_transfers`
        (per thread).

        Every device allocation and launch of a worker happens under ``with stream`` (CuPy's
        memory pool is per stream, and the worker's stream is non-blocking, so nothing may be
        left on the legacy default stream)."""
        cp = self.cp
        out, results = [], []
        with stream:
            for x in host:
                d = cp.empty(x.shape, dtype=x.dtype)
                results.append(self._copy(x, d, stream))
                out.append(d)
        self._local.last_transfers = results
        return out, int(sum(x.nbytes for x in host))

    def last_transfers(self) -> list[Any]:
        return getattr(self._local, "last_transfers", [])

    def _side_streams(self) -> list[Any]:
        side = getattr(self._local, "side_streams", None)
        if side is None:
            side = self._local.side_streams = [self.cp.cuda.Stream(non_blocking=True) for _ in range(2)]
        return side

    def _copy(self, x: np.ndarray, d: Any, s: Any) -> Any:
        tr = self.transfer
        if self.config.transfer in ("pageable", "resident"):
            return tr.pageable(x, d, stream=s)
        if self.config.transfer == "registered":
            return tr.registered(x, d, stream=s)
        return tr.pinned_pool(x, d, stream=s, require_pinned=False)

    def start_h(self, inputs: Sequence[Any], stream: Any) -> HStart:
        """H2D of a, b, c, each followed on its own stream by its coset evaluations, as upstream's
        ``execute_ntt_msm_h`` (groth16_ntt_h.cu:75-157, cuzk-pipeline.md §6: a on stream 0, b on
        stream 1, c on stream 2). ``stream`` is stream 0; streams 1 and 2 belong to this thread.

        Per vector: the copy by ``config.transfer`` through :mod:`zkgpu.transfer` (the call
        returns once the copy has completed: a pageable copy blocks the host anyway, and the
        pinned DMA is event-timed), then, queued on that vector's stream without a host wait,
        :func:`zkgpu.qap.prepare_input` (its value check deferred to :meth:`finish_h`) and
        :func:`zkgpu.ntt.coset_evals_inplace`; the host time of this call is the copies plus
        kernel launches. So the copy of b runs while the NTTs of a run, and the copy of c while
        those of b run; only the first copy cannot overlap any compute. Device-array inputs (transfer ``resident``) are not copied.
        Stream 0 then waits for the other two. Finish with :meth:`finish_h`.

        Raises:
            what :mod:`zkgpu.transfer` raises (a value >= r is reported by :meth:`finish_h`).
        """
        cp, qap = self.cp, self.qap
        n = self.config.n
        streams = [stream, *self._side_streams()]
        st = HStart([], 0, ref=cp.cuda.Event(), check=qap.DeferredCheck())  # checks read in finish_h
        st.ref.record(stream)
        for x, s, nm in zip(inputs, streams, "abc"):
            with s:
                if _cuda.is_device_array(x):
                    d, ms = x, None
                else:
                    d = cp.empty(x.shape, dtype=x.dtype)
                    r = self._copy(x, d, s)
                    st.transfers.append(r)
                    st.nbytes += int(x.nbytes)
                    ms = float(r.stream_ms)
                ce = cp.cuda.Event()
                ce.record(s)
                buf = qap.prepare_input(d, n, name=nm, deferred=st.check)
                st.inputs.append(d)  # alive until the deferred check has been read
                self.ntt.coset_evals_inplace(buf)
                ke = cp.cuda.Event()
                ke.record(s)
            st.bufs.append(buf)
            st.marks.append((ce, ke, ms))
        for _, ke, _ in st.marks[1:]:
            stream.wait_event(ke)
        self._local.last_transfers = st.transfers
        return st

    def finish_h(self, st: HStart, stream: Any) -> Any:
        """The rest of the H computation on stream 0 (:func:`zkgpu.qap.combine_h_inplace`, out of
        Montgomery form), a sync of stream 0, the deferred value checks, and ``st.timing`` from
        the CUDA events (see :class:`HStart`). Returns h, (n, 4) uint64 canonical, on the device.

        Raises:
            ValueError: a value >= r in a, b or c (the first bad index named).
        """
        cp = self.cp
        with stream:
            cs = cp.cuda.Event()
            cs.record(stream)
            self.qap.combine_h_inplace(*st.bufs)
            h = fr_device.from_montgomery(st.bufs[0])
            end = cp.cuda.Event()
            end.record(stream)
        end.synchronize()
        st.bufs = []
        try:
            st.check.raise_if_bad()  # ValueError naming a value >= r in a, b or c
        finally:
            st.inputs = []

        def t(e: Any) -> float:
            return float(cp.cuda.get_elapsed_time(st.ref, e))

        copies, kernels = [], []
        prev = 0.0
        for ce, ke, ms in st.marks:
            tc = t(ce)
            if ms is not None:
                copies.append((max(prev, tc - ms), tc))
            kernels.append((tc, t(ke)))
            prev = tc
        kernels.append((t(cs), t(end)))
        st.timing.update(h2d_overlap(copies, kernels))
        return h

    def synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def _host_point(self, r: Any, stream: Any) -> np.ndarray:
        if _cuda.is_device_array(r):
            r = r.get(stream=stream)
            stream.synchronize()
        return np.asarray(r, dtype=np.uint64).reshape(1, 12)

    def msm(self, name: str, scalars: Any, idx: np.ndarray | None, stream: Any) -> np.ndarray:
        """zkgpu.msm.msm over ``bases[name]`` (or its rows ``idx``: the compacted tail bases,
        gathered on the device) and ``scalars`` (host or device); result on the host."""
        cp = self.cp
        with stream:
            pts = self.bases[name]
            if idx is not None:
                if idx.size == 0:
                    return np.zeros((1, 12), dtype=np.uint64)
                pts = pts[cp.asarray(idx)]
            r = self.msm_mod.msm(pts, cp.asarray(scalars))
            return self._host_point(r, stream)

    def batch_add(self, name: str, bitmap: np.ndarray, stream: Any) -> np.ndarray:
        cp = self.cp
        with stream:
            r = self.msm_mod.batch_add(self.bases[name], cp.asarray(bitmap))
            return self._host_point(r, stream)

    def _on_side_stream(self, stream: Any, call: Callable[[Any], np.ndarray]) -> np.ndarray:
        """``call(side)`` on a stream from the backend's free list, ordered after everything
        already queued on ``stream`` (an event); ``call`` returns a host point (its stream synced)."""
        cp = self.cp
        ev = cp.cuda.Event(disable_timing=True)
        ev.record(stream)
        with _SEL_LOCK:
            side = self._side_free.pop() if self._side_free else cp.cuda.Stream(non_blocking=True)
        try:
            side.wait_event(ev)
            return call(side)
        finally:
            side.synchronize()
            with _SEL_LOCK:
                self._side_free.append(side)

    def msm_many(self, jobs: dict[str, tuple[Any, Any]], stream: Any, concurrent: bool = False) -> dict[str, np.ndarray]:
        """:meth:`msm` of each ``name: (scalars, idx)``. ``concurrent``: each on its own stream from
        a thread (:func:`fan_out`), so that the small tail MSMs' latency-bound kernels and host
        syncs overlap; else in order on ``stream``."""
        if not concurrent:
            return fan_out(lambda nm, j: self.msm(nm, j[0], j[1], stream), jobs, False)
        return fan_out(lambda nm, j: self._on_side_stream(stream, lambda s: self.msm(nm, j[0], j[1], s)), jobs, True)

    def batch_add_many(self, jobs: dict[str, Any], stream: Any, concurrent: bool = False) -> dict[str, np.ndarray]:
        """:meth:`batch_add` of each ``name: bitmap``, like :meth:`msm_many`."""
        if not concurrent:
            return fan_out(lambda nm, bm: self.batch_add(nm, bm, stream), jobs, False)
        return fan_out(lambda nm, bm: self._on_side_stream(stream, lambda s: self.batch_add(nm, bm, s)), jobs, True)

    def b_g2(self, scalars: Any) -> bytes:
        if _cuda.is_device_array(scalars):  # gpu prep: only the first b_g2_terms rows are used
            scalars = scalars[: len(self._g2)].get()
        return cpu_g2_msm(self._g2, scalars)

    def prep(self, aux: np.ndarray, prep: str = "cpu", threads: int | None = None) -> dict[str, Prep]:
        """prep_msm of one partition. ``cpu`` / ``cpu_parallel``: :func:`prep_partition` on the host.
        ``gpu``: on this thread's own non-blocking prep stream, copy ``[inputs; aux]`` to the
        device (pageable H2D of aux), then :func:`zkgpu.prep.prep_msm_device` for L (the aux rows)
        and for A and B (their :func:`selections`); the bitmaps, significant scalars and indices
        stay on the device for batch_add and the tail MSMs (which read them after the barrier,
        so after this call's final stream sync). Returns ``{"l", "a", "b_g1"}`` Preps."""
        if prep != "gpu":
            return prep_partition(self.circuit, aux, prep, threads=threads)
        cp = self.cp
        k = self.circuit.inp.shape[0]
        a_d, b_d = self._device_selections()
        with _SEL_LOCK:  # a stream from the backend's free list: CuPy's pool reuses memory per stream
            s = self._prep_streams.pop() if self._prep_streams else cp.cuda.Stream(non_blocking=True)
        try:
            with s:
                full = cp.empty((k + aux.shape[0], 4), dtype=cp.uint64)
                full[:k].set(np.ascontiguousarray(self.circuit.inp), stream=s)
                self._stage_aux(np.ascontiguousarray(aux), full[k:], s)
                out = {
                    "l": _as_prep(prep_msm_device(full, offset=k, stream=s, name="aux")),
                    "a": _as_prep(prep_msm_device(full, sel=a_d, stream=s, name="a_scalars")),
                    "b_g1": _as_prep(prep_msm_device(full, sel=b_d, stream=s, name="b_scalars")),
                }
        finally:
            s.synchronize()
            with _SEL_LOCK:
                self._prep_streams.append(s)
        return out

    def _stage_aux(self, aux: np.ndarray, dst: Any, stream: Any) -> None:
        """H2D of aux for prep="gpu" through a pinned staging buffer (:func:`zkgpu.transfer.pinned_staging`:
        a host memcpy, then an async DMA), returning after the copy. Measured on the H200
        (2026-12-01, 48 partitions): a direct pageable copy of aux on the prep thread tripled the
        other worker's h2d window while they overlapped (34 vs 12.5 ms median), although its copies'
        own DMA time did not change: the pageable copy holds up the other thread's CUDA calls. Falls
        back to the pageable copy when no pinned buffer can be had."""
        buf = self._staging.checkout(aux.nbytes)
        try:
            if buf.pinned:
                self.transfer.pinned_staging(aux, dst, stream=stream, staging=buf)
            else:
                dst.set(aux, stream=stream)
            stream.synchronize()  # the staging buffer is reused after checkin
        finally:
            self._staging.checkin(buf)

    def _device_selections(self) -> tuple[Any, Any]:
        with _SEL_LOCK:
            sel = getattr(self, "_sel_d", None)
        if sel is None:
            a_sel, b_sel = selections(self.circuit)
            sel = (self.cp.asarray(a_sel), self.cp.asarray(b_sel))
            self.cp.cuda.Device().synchronize()
            with _SEL_LOCK:
                self._sel_d = sel
        return sel


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
