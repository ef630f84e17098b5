"""The GPU :class:`~zkgpu.pipeline.backend.Backend`: CuPy/CUDA math through :mod:`zkgpu.gpu.ntt.qap`,
:mod:`zkgpu.gpu.msm.pippenger`, :mod:`zkgpu.gpu.msm.prep` and :mod:`zkgpu.transfer.paths`.

The H computation runs as upstream's ``execute_ntt_msm_h`` (supraseal ``groth16_ntt_h.cu:75-157``):
a, b, c each copied and transformed on its own stream; the MSMs and batch additions with
:func:`zkgpu.gpu.msm.pippenger.msm` / :func:`zkgpu.gpu.msm.pippenger.batch_add` over bases from :func:`zkgpu.gpu.msm.bases.generate_points`;
the B_G2 multiexp on the CPU (:func:`zkgpu.pipeline.points.cpu_g2_msm`), as upstream.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from zkgpu.arith.field import fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.core.events import h2d_overlap
from zkgpu.gpu import fr_device
from zkgpu.gpu.fr_device import DeferredCheck
from zkgpu.gpu.msm import bases
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.msm import precomp as msm_precomp
from zkgpu.gpu.msm.precomp import PrecomputedBases
from zkgpu.gpu.msm.precomp_rows import msm_precomputed_rows
from zkgpu.gpu.msm.prep import prep_msm_device
from zkgpu.gpu.ntt import qap
from zkgpu.gpu.ntt import transform as ntt
from zkgpu.pipeline.backend import BASE_NAMES, Array, HStart, Stream, fan_out
from zkgpu.pipeline.config import PipelineConfig
from zkgpu.pipeline.points import cpu_g2_msm, g2_bases
from zkgpu.pipeline.split import Prep, prep_partition, selections
from zkgpu.pipeline.synthesis import Circuit
from zkgpu.transfer import paths as transfer
from zkgpu.transfer.pinned_pool import PinnedPool

__all__ = ["GpuBackend", "precomp_windows"]

_log = logging.getLogger(__name__)


def precomp_windows(config: PipelineConfig, sizes: Mapping[str, int]) -> dict[str, int]:
    """The window c of each base set's precomputed table (``msm_bases="precomputed"``): H's MSM runs over
    all n uniform scalars, so :func:`zkgpu.gpu.msm.precomp.window_bits` of n (2^22 -> 20); the L, A and B_G1
    MSMs run over the significant (full-size) scalars only, so ``window_bits`` of their expected count,
    ``density.full * size`` (the synthetic witness; 2^22 at aux_ratio 0.5: ~1e5 rows), and of the
    whole size for a real circuit (its densities are its own). ``sizes``: bases per set (``BASE_NAMES``)."""
    out = {"h": msm_precomp.window_bits(int(sizes["h"]))}
    for nm in BASE_NAMES[1:]:
        out[nm] = msm_precomp.window_bits(_tail_rows(config, int(sizes[nm])))
    return out


def _tail_rows(config: PipelineConfig, size: int) -> int:
    """The expected rows of a tail MSM over ``size`` bases: all of them for a real circuit, else the synthetic
    witness's significant share ``density.full * size`` (at least 1)."""
    return size if config.real is not None else max(1, round(config.density.full * size))


_F = TypeVar("_F", bound=Callable[..., Any])


def _on_device(fn: _F) -> _F:
    """Run the method with the backend's GPU (``device_id``) current on the calling thread, whatever thread
    calls it (a worker, the prep thread, the shared fan-out pool), and the caller's device restored after:
    CuPy allocates, launches and records events on the current device, which is per thread."""

    @functools.wraps(fn)
    def wrapped(self: GpuBackend, *args: Any, **kw: Any) -> Any:
        with self.cp.cuda.Device(self.device_id):
            return fn(self, *args, **kw)

    return wrapped  # type: ignore[return-value]


@dataclass
class _Pending:
    """A (1, 12) device point whose MSM's scalar check is still queued (``defer=True``)."""

    point: Any
    check: DeferredCheck


class GpuBackend:
    """CuPy/CUDA math (see the module docstring). Each GPU worker thread passes its own stream;
    the side streams of ``start_h`` are per thread, the streams of prep and of the concurrent
    tail calls come from free lists.

    One instance per GPU: ``device_id`` is the CUDA ordinal its bases, streams and kernels live on; every
    public method runs with that device current (``cupy.cuda.Device(device_id)``), and
    :meth:`for_device` makes the instance of another GPU (its own bases, generated there from the same seed)."""

    device = "gpu"

    def __init__(self, config: PipelineConfig, circuit: Circuit, device_id: int = 0) -> None:
        """Raises RuntimeError (from :func:`zkgpu.core.cuda.cupy`) without a usable GPU, ValueError for a
        ``device_id`` the host does not have (naming the count)."""
        self.config, self.circuit = config, circuit
        self.cp = _cuda.cupy()
        count = int(self.cp.cuda.runtime.getDeviceCount())
        if isinstance(device_id, bool) or not isinstance(device_id, int) or not 0 <= device_id < count:
            raise ValueError(f"GPU device_id={device_id!r}: this host has {count} CUDA device(s) (ordinals 0..{count - 1})")
        self.device_id = device_id
        self._local = threading.local()
        self._lock = threading.Lock()  # guards the stream free lists and the device selections
        self.bases: dict[str, Any] = {}
        self._mont: dict[str, Any] = {}  # the bases checked once and in Montgomery form (msm.prepare_points)
        self._tables: dict[str, PrecomputedBases] = {}  # msm_bases="precomputed": the shifted-bases tables
        self.setup_details: dict[str, Any] = {}  # what setup built and how long it took (s, bytes, windows)
        self._g2: list[Any] = []
        self._prep_streams: list[Any] = []  # idle streams of prep="gpu" (one per concurrent prep thread)
        self._side_free: list[Any] = []  # idle streams of msm_many / batch_add_many (concurrent)
        self._staging = PinnedPool()  # pinned staging of aux for prep="gpu"
        self._sel_d: tuple[Any, Any] | None = None

    @_on_device
    def setup(self) -> None:
        """The bases (:func:`zkgpu.gpu.msm.bases.generate_points`, seeded by ``config.seed``) and the G2
        bases, or ``config.real``'s key points (copied to the device),
        and the pinned staging buffers of prep="gpu" (one per concurrent prep thread, up to 3
        workers), allocated here so that no cudaHostAlloc lands in a timed partition."""
        real = self.config.real
        if real is not None:  # the key's points, on the device once
            real.setup("gpu")
            self.bases.update({nm: self.cp.asarray(pts) for nm, pts in real.bases().items()})
        else:
            sizes = {"h": self.config.n, "l": self.circuit.l_size, "a": self.circuit.a_size, "b_g1": self.circuit.b_size}
            for tag, nm in enumerate(BASE_NAMES):
                self.bases[nm] = bases.generate_points(sizes[nm], seed=self.config.seed * 16 + tag)
            self._g2 = g2_bases(self.config.b_g2_terms, self.config.seed)
        for nm in BASE_NAMES:  # checked and in Montgomery form once: the MSMs take their rows from these
            self._mont[nm] = msm.prepare_points(self.bases[nm])
        if self.config.msm_bases == "precomputed":
            self._build_tables()
        held = [self._staging.checkout(self.circuit.aux_size * 32) for _ in range(3)]
        for b in held:
            self._staging.checkin(b)
        self.cp.cuda.Device().synchronize()

    def _build_tables(self) -> None:
        """The :class:`~zkgpu.gpu.msm.precomp.PrecomputedBases` table of each base set at :func:`precomp_windows`,
        timed (``setup_details``: ``precomp_s``, ``precomp_bytes``, ``precomp_windows``; and a log line),
        then :meth:`_msm_bench` (``msm_bench``), whose warm-ups also compile the kernels before any timed
        partition.

        Raises:
            ValueError: the tables plus, per GPU worker, the largest table's MSM workspace and two sets of
                a/b/c buffers exceed the GPU's free memory (bytes named), or a table does not fit
                (:meth:`~zkgpu.gpu.msm.precomp.PrecomputedBases.build`).
        """
        cp = self.cp
        sizes = {nm: int(self._mont[nm].shape[0]) for nm in BASE_NAMES}
        windows = precomp_windows(self.config, sizes)
        tables = sum(msm_precomp.table_bytes(sizes[nm], windows[nm]) for nm in BASE_NAMES)
        per_worker = max(msm_precomp.workspace_bytes(sizes[nm], windows[nm]) for nm in BASE_NAMES) + 2 * self.config.abc_bytes
        need = tables + self.config.gw * per_worker
        free = msm_precomp.free_bytes()
        if need > free:
            raise ValueError(f"msm_bases='precomputed': the tables ({tables / 1e9:.2f} GB at windows {windows}) and {self.config.gw} "
                             f"workers' MSM workspace and a/b/c buffers need {need / 1e9:.2f} GB, {free / 1e9:.2f} GB free on the GPU; "
                             f"use msm_bases='plain' or a smaller n")
        t0 = time.perf_counter()
        for nm in BASE_NAMES:
            self._tables[nm] = PrecomputedBases.build(self._mont[nm], windows[nm])
        cp.cuda.Device().synchronize()
        secs = time.perf_counter() - t0
        bench = self._msm_bench(sizes)
        self.setup_details.update(precomp_s=round(secs, 3), precomp_bytes=int(tables), precomp_windows=windows, msm_bench=bench)
        _log.info("msm_bases=precomputed: %d tables, %.2f GB, windows %s, built in %.2f s; MSM ms plain -> precomputed %s",
                  len(self._tables), tables / 1e9, windows, secs, bench)

    def _msm_bench(self, sizes: Mapping[str, int], repeat: int = 5) -> dict[str, float]:
        """The H MSM (n uniform scalars) and the L tail MSM (``density.full * l_size`` uniform scalars at
        random rows; a real circuit: all rows) plain and over the tables, median ms of ``repeat`` runs
        after two warm-ups (CUDA events, :func:`zkgpu.core.cuda.benchmark`): ``h_plain``, ``h_precomp``,
        ``tail_plain``, ``tail_precomp``. Measured at setup, before any partition (the warm-ups also
        compile the kernels), on this run's bases: what :func:`zkgpu.story.bottleneck.predictions` scales the
        calibrated ``h_msm`` and ``tail_msm`` phases by (never the scenario's own pipeline times)."""
        cp = self.cp
        rng = np.random.default_rng(self.config.seed + 7)
        rows = _tail_rows(self.config, sizes["l"])
        h_sc = cp.asarray(fr_random(sizes["h"], rng))
        t_sc = cp.asarray(fr_random(rows, rng))
        idx = cp.asarray(np.sort(rng.choice(sizes["l"], size=rows, replace=False)).astype(np.int64))
        calls = {
            "h_plain": lambda: msm.msm_device(None, h_sc, mont=self._mont["h"], deferred=DeferredCheck()),
            "h_precomp": lambda: msm_precomp.msm_precomputed(self._tables["h"], h_sc, deferred=DeferredCheck()),
            "tail_plain": lambda: msm.msm_device(None, t_sc, mont=self._mont["l"][idx], deferred=DeferredCheck()),
            "tail_precomp": lambda: msm_precomputed_rows(self._tables["l"], t_sc, idx, deferred=DeferredCheck()),
        }
        return {k: round(float(np.median(_cuda.benchmark(f, repeat=repeat).times_ms)), 3) for k, f in calls.items()}

    def for_device(self, gpu: int) -> GpuBackend:
        """The backend of GPU ``gpu`` (this one for its own ordinal): a new instance on that device, set up
        (its own bases, from the same seed) when this one is. Raises ValueError for an ordinal the host does
        not have."""
        if gpu == self.device_id:
            return self
        other = GpuBackend(self.config, self.circuit, device_id=gpu)
        if self.bases:
            other.setup()
        return other

    def bind_thread(self) -> None:
        """Make this backend's GPU the calling thread's current device (a worker thread, before it records
        CUDA events on its streams)."""
        self.cp.cuda.Device(self.device_id).use()

    @_on_device
    def new_stream(self) -> Stream:
        return self.cp.cuda.Stream(non_blocking=True)

    @_on_device
    def h2d(self, host: Sequence[np.ndarray], stream: Stream) -> tuple[list[Array], int]:
        """H2D of a, b, c by ``config.transfer`` on ``stream`` through :mod:`zkgpu.transfer.paths`
        (``pageable``, ``registered`` or ``pinned_pool``; a pool fallback buffer that is not
        page-locked is copied anyway). Returns the device arrays and the bytes moved; the
        :class:`~zkgpu.transfer.paths.TransferResult` of each copy is kept for :meth:`last_transfers`
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

    def _copy(self, x: np.ndarray, d: Array, s: Stream) -> Any:
        if self.config.transfer in ("pageable", "resident"):
            return transfer.pageable(x, d, stream=s)
        if self.config.transfer == "registered":
            return transfer.registered(x, d, stream=s)
        return transfer.pinned_pool(x, d, stream=s, require_pinned=False)

    @_on_device
    def start_h(self, inputs: Sequence[Array], stream: Stream) -> HStart:
        """H2D of a, b, c, each followed on its own stream by its coset evaluations, as upstream's
        ``execute_ntt_msm_h`` (groth16_ntt_h.cu:75-157, notes/cuzk-pipeline.md §6: a on stream 0, b on
        stream 1, c on stream 2). ``stream`` is stream 0; streams 1 and 2 belong to this thread.

        Per vector: the copy by ``config.transfer`` through :mod:`zkgpu.transfer.paths` (the call
        returns once the copy has completed: a pageable copy blocks the host anyway, and the
        pinned DMA is event-timed), then, queued on that vector's stream without a host wait,
        :func:`zkgpu.gpu.ntt.qap.prepare_input` (its value check deferred to :meth:`finish_h`) and
        :func:`zkgpu.gpu.ntt.transform.coset_evals_inplace`; the host time of this call is the copies plus
        kernel launches. So the copy of b runs while the NTTs of a run, and the copy of c while
        those of b run; only the first copy cannot overlap any compute. Device-array inputs
        (transfer ``resident``) are not copied. Stream 0 then waits for the other two. Finish
        with :meth:`finish_h`.

        Raises:
            what :mod:`zkgpu.transfer.paths` raises (a value >= r is reported by :meth:`finish_h`).
        """
        cp = self.cp
        n = self.config.n
        streams = [stream, *self._side_streams()]
        st = HStart([], 0, ref=cp.cuda.Event(), check=qap.DeferredCheck())  # checks read in finish_h
        st.ref.record(stream)
        for x, s, nm in zip(inputs, streams, "abc", strict=True):
            if s is not stream:  # queued behind what stream 0 already holds (lock_scope="submit": another worker's partition)
                s.wait_event(st.ref)
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
                ntt.coset_evals_inplace(buf)
                ke = cp.cuda.Event()
                ke.record(s)
            st.bufs.append(buf)
            st.marks.append((ce, ke, ms))
        for _, ke, _ in st.marks[1:]:
            stream.wait_event(ke)
        self._local.last_transfers = st.transfers
        return st

    @_on_device
    def finish_h(self, st: HStart, stream: Stream, wait: bool = True) -> Array:
        """The rest of the H computation on stream 0 (:func:`zkgpu.gpu.ntt.qap.combine_h_inplace`, out of
        Montgomery form), then (``wait``) a sync of stream 0 and :meth:`complete_h`. Returns h,
        (n, 4) uint64 canonical, on the device. ``wait=False`` only queues the work: call
        :meth:`complete_h` after a :meth:`wait` past it (h and ``st`` keep the inputs alive).

        Raises:
            ValueError: a value >= r in a, b or c (the first bad index named; with ``wait=False``
            from :meth:`complete_h`).
        """
        cp = self.cp
        with stream:
            cs = cp.cuda.Event()
            cs.record(stream)
            qap.combine_h_inplace(*st.bufs)
            h = fr_device.from_montgomery(st.bufs[0])
            end = cp.cuda.Event()
            end.record(stream)
        st.bufs = []
        st.marks.append((cs, end, None))  # the combine step: its (start, end) events; read by complete_h
        if wait:
            self.complete_h(st)
        return h

    @_on_device
    def complete_h(self, st: HStart) -> None:
        """The deferred value checks and ``st.timing`` of :meth:`finish_h` (syncs on its last
        event: a no-op wait once the stream has passed it). Idempotent.

        Raises:
            ValueError: a value >= r in a, b or c (the first bad index named).
        """
        if st.ref is None or not st.marks or st.timing:
            return
        cp = self.cp
        cs, end, _ = st.marks[-1]
        end.synchronize()
        _cuda.count_sync("h_done")
        try:
            st.check.raise_if_bad()  # ValueError naming a value >= r in a, b or c
        finally:
            st.inputs = []

        def t(e: Any) -> float:
            return float(cp.cuda.get_elapsed_time(st.ref, e))

        copies, kernels = [], []
        prev = 0.0
        for ce, ke, ms in st.marks[:-1]:
            tc = t(ce)
            if ms is not None:
                copies.append((max(prev, tc - ms), tc))
            kernels.append((tc, t(ke)))
            prev = tc
        kernels.append((t(cs), t(end)))
        st.timing.update(h2d_overlap(copies, kernels))

    @_on_device
    def synchronize(self, stream: Stream) -> None:
        stream.synchronize()
        _cuda.count_sync("stream_sync")

    @_on_device
    def mark(self, stream: Stream) -> Any:
        """A CUDA event (timed: the anchor of :meth:`zkgpu.pipeline.trace.Tracer.place_on_gpu_clock`)
        recorded on ``stream``."""
        ev = self.cp.cuda.Event()
        ev.record(stream)
        return ev

    @_on_device
    def ready(self, mark: Any) -> bool:
        return bool(mark.done)

    @_on_device
    def wait(self, mark: Any) -> None:
        mark.synchronize()
        _cuda.count_sync("event_wait")

    @_on_device
    def to_host(self, point: Any) -> np.ndarray:
        """A deferred (1, 12) point on the host, after the caller's :meth:`wait`: its deferred
        scalar check (ValueError naming a scalar >= r), then a D2H copy of the ready value."""
        if isinstance(point, _Pending):
            point.check.raise_if_bad()
            point = _cuda.read_back(point.point, "result_d2h")
        return np.asarray(point, dtype=np.uint64).reshape(1, 12)

    def _host_point(self, r: Any, check: Any, stream: Stream, defer: bool) -> Any:
        if defer:
            return _Pending(r, check)
        r = self.cp.asnumpy(r, stream=stream)
        stream.synchronize()
        _cuda.count_sync("result_d2h")
        check.raise_if_bad()  # ValueError naming a scalar >= r (a ready flag: no wait)
        return np.asarray(r, dtype=np.uint64).reshape(1, 12)

    @_on_device
    def msm(self, name: str, scalars: Array, idx: np.ndarray | None, stream: Stream, defer: bool = False) -> Any:
        """:func:`zkgpu.gpu.msm.pippenger.msm_device` over ``bases[name]`` (or its rows ``idx``: the compacted
        tail bases, gathered on the device) and ``scalars`` (host or device); with
        ``msm_bases="precomputed"`` :func:`zkgpu.gpu.msm.precomp.msm_precomputed` over the base set's table
        (its rows ``idx``: :func:`zkgpu.gpu.msm.precomp_rows.msm_precomputed_rows`, nothing gathered). The bases were
        checked and converted once (:func:`zkgpu.gpu.msm.pippenger.prepare_points` in :meth:`setup`) and the
        scalar check is deferred (:class:`zkgpu.gpu.fr_device.DeferredCheck`), and the MSM keeps its
        sizes on the device (:mod:`zkgpu.gpu.msm.reduce`): the call only queues kernels. Result on the host, or with ``defer`` still on the device
        (no D2H, no wait for the last kernels; :meth:`to_host` after :meth:`wait`).

        Raises:
            ValueError: a scalar >= r (its index named; with ``defer`` from :meth:`to_host`).
        """
        cp = self.cp
        with stream:
            if idx is not None and idx.size == 0:
                return np.zeros((1, 12), dtype=np.uint64)
            sc = cp.ascontiguousarray(cp.asarray(scalars))
            if sc.ndim != 2 or sc.shape[1] != 4 or sc.dtype != np.uint64:
                raise ValueError(f"scalars: expected (m, 4) uint64, got dtype {sc.dtype}, shape {sc.shape}")
            check = DeferredCheck()
            table = self._tables.get(name)
            if table is not None:
                r = (msm_precomp.msm_precomputed(table, sc, deferred=check) if idx is None
                     else msm_precomputed_rows(table, sc, idx, deferred=check))
            else:
                mont = self._mont[name] if idx is None else self._mont[name][cp.asarray(idx)]
                r = msm.msm_device(None, sc, mont=mont, deferred=check)
            return self._host_point(r, check, stream, defer)

    @_on_device
    def batch_add(self, name: str, bitmap: Array, stream: Stream, defer: bool = False) -> Any:
        """:func:`zkgpu.gpu.msm.pippenger.batch_add_device` over the prepared ``bases[name]`` (no host sync);
        result on the host (``defer``: the device, as :meth:`msm`).

        Raises:
            ValueError: a bitmap of the wrong dtype or too few words (names it).
        """
        cp = self.cp
        with stream:
            bm = cp.ascontiguousarray(cp.asarray(bitmap))
            n = self._mont[name].shape[0]
            if bm.dtype != np.uint64 or bm.ndim != 1 or bm.shape[0] < -(-n // 64):
                raise ValueError(f"bitmap: expected >= {-(-n // 64)} uint64 words, got dtype {bm.dtype}, shape {bm.shape}")
            r = msm.batch_add_device(None, bm, mont=self._mont[name])
            return self._host_point(r, DeferredCheck(), stream, defer)

    def _on_side_stream(self, stream: Stream, call: Callable[[Any], Array], defer: bool) -> Array:
        """``call(side)`` on a stream from the backend's free list, ordered after everything
        already queued on ``stream`` (an event). Without ``defer`` ``call`` returns a host point
        and the side stream is synced; with ``defer`` ``stream`` instead waits for the side
        stream's work (an event), so a later :meth:`mark` on ``stream`` covers it."""
        cp = self.cp
        ev = cp.cuda.Event(disable_timing=True)
        ev.record(stream)
        with self._lock:
            side = self._side_free.pop() if self._side_free else cp.cuda.Stream(non_blocking=True)
        try:
            side.wait_event(ev)
            return call(side)
        finally:
            if defer:
                stream.wait_event(self.mark(side))
            else:
                side.synchronize()
                _cuda.count_sync("stream_sync")
            with self._lock:
                self._side_free.append(side)

    @_on_device
    def msm_many(self, jobs: dict[str, tuple[Array, np.ndarray | None]], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, Array]:
        """:meth:`msm` of each ``name: (scalars, idx)``. ``concurrent``: each on its own stream from
        a thread (:func:`~zkgpu.pipeline.backend.fan_out`), so that the small tail MSMs'
        latency-bound kernels and host syncs overlap; else in order on ``stream``."""
        if not concurrent:
            return fan_out(lambda nm, j: self.msm(nm, j[0], j[1], stream, defer), jobs, False)
        return fan_out(lambda nm, j: self._on_side_stream(stream, lambda s: self.msm(nm, j[0], j[1], s, defer), defer), jobs, True)

    @_on_device
    def batch_add_many(self, jobs: dict[str, Array], stream: Stream, concurrent: bool = False, defer: bool = False) -> dict[str, Array]:
        """:meth:`batch_add` of each ``name: bitmap``, like :meth:`msm_many`."""
        if not concurrent:
            return fan_out(lambda nm, bm: self.batch_add(nm, bm, stream, defer), jobs, False)
        return fan_out(lambda nm, bm: self._on_side_stream(stream, lambda s: self.batch_add(nm, bm, s, defer), defer), jobs, True)

    def b_g2(self, scalars: Array) -> bytes:
        """:func:`zkgpu.pipeline.points.cpu_g2_msm` (device scalars: only the first
        ``b_g2_terms`` rows are copied back)."""
        if _cuda.is_device_array(scalars):  # gpu prep: only the first b_g2_terms rows are used
            scalars = scalars[: len(self._g2)].get()
        return cpu_g2_msm(self._g2, scalars)

    @_on_device
    def prep(self, aux: np.ndarray, prep: str = "cpu", threads: int | None = None, circuit: Circuit | None = None) -> Mapping[str, Prep]:
        """prep_msm of one partition. ``cpu`` / ``cpu_parallel``: :func:`~zkgpu.pipeline.split.prep_partition`
        on the host. ``gpu``: on this thread's own non-blocking prep stream, copy ``[inputs; aux]``
        to the device (aux through pinned staging, :meth:`_stage_aux`), then
        :func:`zkgpu.gpu.msm.prep.prep_msm_device` for L (the aux rows) and for A and B (their
        :func:`~zkgpu.pipeline.split.selections`); the bitmaps, significant scalars and indices
        stay on the device for batch_add and the tail MSMs (which read them after the barrier,
        so after this call's final stream sync). Returns ``{"l", "a", "b_g1"}``
        (:class:`zkgpu.gpu.msm.pippenger.PrepMsm` with CuPy arrays for ``gpu``).

        ``circuit``: the partition's structure (default the run's): its inputs head the A and B
        vectors; its densities are the run's.

        Raises:
            ValueError: a scalar >= r (its index named), or an unknown ``prep``.
        """
        circuit = circuit or self.circuit
        if prep != "gpu":
            return prep_partition(circuit, aux, prep, threads=threads)
        cp = self.cp
        k = circuit.inp.shape[0]
        a_d, b_d = self._device_selections()
        with self._lock:  # a stream from the backend's free list: CuPy's pool reuses memory per stream
            s = self._prep_streams.pop() if self._prep_streams else cp.cuda.Stream(non_blocking=True)
        try:
            with s:
                full = cp.empty((k + aux.shape[0], 4), dtype=cp.uint64)
                full[:k].set(np.ascontiguousarray(circuit.inp), stream=s)
                self._stage_aux(np.ascontiguousarray(aux), full[k:], s)
                out: dict[str, Prep] = {
                    "l": prep_msm_device(full, offset=k, stream=s, name="aux"),
                    "a": prep_msm_device(full, sel=a_d, stream=s, name="a_scalars"),
                    "b_g1": prep_msm_device(full, sel=b_d, stream=s, name="b_scalars"),
                }
        finally:
            s.synchronize()
            with self._lock:
                self._prep_streams.append(s)
        return out

    def _stage_aux(self, aux: np.ndarray, dst: Array, stream: Stream) -> None:
        """H2D of aux for prep="gpu" through a pinned staging buffer (:func:`zkgpu.transfer.paths.pinned_staging`:
        a host memcpy, then an async DMA), returning after the copy. Measured on the H200
        (2026-12-01, 48 partitions): a direct pageable copy of aux on the prep thread tripled the
        other worker's h2d window while they overlapped (34 vs 12.5 ms median), although its copies'
        own DMA time did not change: the pageable copy holds up the other thread's CUDA calls. Falls
        back to the pageable copy when no pinned buffer can be had."""
        buf = self._staging.checkout(aux.nbytes)
        try:
            if buf.pinned:
                transfer.pinned_staging(aux, dst, stream=stream, staging=buf)
            else:
                dst.set(aux, stream=stream)
            stream.synchronize()  # the staging buffer is reused after checkin
        finally:
            self._staging.checkin(buf)

    def _device_selections(self) -> tuple[Any, Any]:
        with self._lock:
            sel = self._sel_d
        if sel is None:
            a_sel, b_sel = selections(self.circuit)
            sel = (self.cp.asarray(a_sel), self.cp.asarray(b_sel))
            self.cp.cuda.Device().synchronize()
            with self._lock:
                self._sel_d = sel
        return sel
