"""The GPU :class:`~zkgpu.pipeline.backend.Backend`: H as supraseal's ``execute_ntt_msm_h`` on three streams, MSMs and
batch additions on the GPU, the B_G2 multiexp on the CPU."""

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
    """Window c of each base set's precomputed table: H over n scalars; L, A, B_G1 over their expected significant count."""
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
    """Decorator: run the method with the backend's GPU current on the calling thread, restoring the caller's."""

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
    """CuPy/CUDA math on GPU ``device_id``; each worker passes its own stream. :meth:`for_device`: another GPU's."""

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
        """Bases (generated from ``config.seed``, or ``config.real``'s), G2 bases, and prep="gpu"'s pinned staging buffers."""
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
        """Build each base set's precomputed table (timed into ``setup_details``), then :meth:`_msm_bench`. Raises
        ValueError: tables plus workspaces and a/b/c buffers exceed the GPU's free memory."""
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
        """Median ms of the H and L-tail MSMs, plain and precomputed, at setup: ``h_plain``, ``h_precomp``, ``tail_*``."""
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
        """The backend of GPU ``gpu`` (set up if this one is). Raises ValueError: no such ordinal."""
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
        """H2D of a, b, c by ``config.transfer`` on ``stream``: the device arrays and bytes moved."""
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
        """H2D of a, b, c, each followed on its own stream by its coset evaluations (supraseal
        ``groth16_ntt_h.cu:75-157``). ``stream`` is stream 0; device inputs (``resident``) are not copied. Finish with
        :meth:`finish_h`. Raises what :mod:`zkgpu.transfer.paths` raises."""
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
        """Rest of H on stream 0: h (n, 4) uint64 canonical on the device; ``wait=False`` only queues
        (:meth:`complete_h`). Raises ValueError: a value >= r in a, b or c."""
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
        """Deferred value checks and ``st.timing`` of :meth:`finish_h`; idempotent. Raises ValueError: a value >= r."""
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
        """MSM over ``bases[name]`` (rows ``idx``), plain or precomputed; queues kernels only (checks deferred). Result
        on the host, or on the device with ``defer``. Raises ValueError: a scalar >= r."""
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
        """Batch addition over prepared ``bases[name]`` (no sync); host result unless ``defer``. Raises ValueError: bad bitmap."""
        cp = self.cp
        with stream:
            bm = cp.ascontiguousarray(cp.asarray(bitmap))
            n = self._mont[name].shape[0]
            if bm.dtype != np.uint64 or bm.ndim != 1 or bm.shape[0] < -(-n // 64):
                raise ValueError(f"bitmap: expected >= {-(-n // 64)} uint64 words, got dtype {bm.dtype}, shape {bm.shape}")
            r = msm.batch_add_device(None, bm, mont=self._mont[name])
            return self._host_point(r, DeferredCheck(), stream, defer)

    def _on_side_stream(self, stream: Stream, call: Callable[[Any], Array], defer: bool) -> Array:
        """``call(side)`` on a free side stream ordered after ``stream``; synced, or (``defer``) joined back into ``stream``."""
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
        """:meth:`msm` of each ``name: (scalars, idx)``, each on its own stream if ``concurrent``."""
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
        """prep_msm of one partition: ``cpu``/``cpu_parallel`` on the host, ``gpu`` on the thread's prep stream. Returns
        ``{"l", "a", "b_g1"}`` (CuPy arrays for ``gpu``). Raises ValueError: a scalar >= r or unknown ``prep``."""
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
        """H2D of aux through a pinned staging buffer (pageable if none can be had), returning after the copy."""
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
