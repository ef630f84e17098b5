"""A sparse matrix-vector product over Fr on the GPU (``zkgpu/kernels/spmv.cu``): Groth16 synthesis, ``A.w`` and
``B.w``, written into the buffers the NTTs read.

:func:`upload_csr` cuts each row into segments of at most ``segment`` terms, one thread per segment (row splitting
as in Merrill and Garland, "Merge-based parallel sparse matrix-vector multiplication", SC 2016, fixed on the host);
a multi-segment row writes partial sums to scratch slots that ``spmv_combine`` adds. Coefficients are kept as
``v * R^2 mod r``, the vector canonical, so the output is in **Montgomery form**.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zkgpu.arith.sparse import FrCsr, check_csr
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.fr_device import check_canonical, check_device_array, device_words, to_montgomery

__all__ = ["SEGMENT", "DeviceCsr", "segments", "upload_csr", "new_buffer", "spmv_into", "spmv_device", "fr_mul_device"]

SEGMENT = 16
"""Default terms per segment (one thread): short enough that a thread's serial chain stays short, long enough
that typical R1CS rows (a few terms) are one segment and need no combine step."""
BLOCK = 256
"""Threads per block of both kernels."""
_U32 = 1 << 32


@dataclass
class DeviceCsr:
    """A segmented CSR on the device, built by :func:`upload_csr`.

    Attributes:
        n_cols: the vector length. out_rows: the output region's rows. buffer_rows: ``out_rows`` plus scratch slots.
        nnz, n_seg, n_groups: terms, segments, rows of several segments.
        coef: ``(nnz, 4)`` uint64 ``v * R^2 mod r``, by row. col: ``(nnz,)`` uint32.
        seg_ptr: ``(n_seg + 1,)`` uint32. seg_dest: ``(n_seg,)`` uint32 buffer row.
        grp_first: ``(n_groups + 1,)`` uint32 first scratch slot. grp_dest: ``(n_groups,)`` uint32.
    """

    n_cols: int
    out_rows: int
    buffer_rows: int
    nnz: int
    n_seg: int
    n_groups: int
    coef: Any
    col: Any
    seg_ptr: Any
    seg_dest: Any
    grp_first: Any
    grp_dest: Any


def _kernel(name: str) -> Any:
    return _cuda.get_kernel("spmv", name)


def segments(row_ptr: np.ndarray, dest: np.ndarray, out_rows: int, segment: int) -> dict[str, np.ndarray]:
    """The host side of :func:`upload_csr` (numpy, vectorised): the int64 arrays ``seg_ptr``, ``seg_dest``,
    ``grp_first`` and ``grp_dest`` of :class:`DeviceCsr` for rows ``row_ptr`` (CSR offsets) written to ``dest``;
    ``grp_first[-1]`` is the buffer's row count."""
    lens = np.diff(row_ptr)
    nseg_row = (lens + segment - 1) // segment
    n_seg = int(nseg_row.sum())
    row_of = np.repeat(np.arange(lens.size, dtype=np.int64), nseg_row)
    seg_first = np.zeros(lens.size, dtype=np.int64)  # each row's first segment index
    np.cumsum(nseg_row[:-1], out=seg_first[1:])
    j = np.arange(n_seg, dtype=np.int64) - seg_first[row_of]  # a segment's index within its row
    seg_ptr = np.append(row_ptr[row_of] + j * segment, row_ptr[-1]) if n_seg else np.zeros(1, dtype=np.int64)
    multi = nseg_row > 1
    slot_base = np.zeros(lens.size, dtype=np.int64)
    slot_base[multi] = out_rows + np.concatenate(([0], np.cumsum(nseg_row[multi])[:-1])) if multi.any() else 0
    seg_dest = np.where(multi[row_of], slot_base[row_of] + j, dest[row_of])
    grp_first = np.append(slot_base[multi], out_rows + int(nseg_row[multi].sum()))
    return {"seg_ptr": seg_ptr, "seg_dest": seg_dest, "grp_first": grp_first, "grp_dest": dest[multi]}


def upload_csr(csr: FrCsr, *, dest: Any = None, out_rows: int | None = None, segment: int = SEGMENT) -> DeviceCsr:
    """Copy ``csr`` (canonical coefficients) to the device in the segmented layout, on the current stream. ``dest``:
    ``(n_rows,)`` distinct output rows below ``out_rows`` (default identity); ``segment``: terms per segment (>= 1).

    Raises:
        ValueError: a csr that breaks its invariants (:func:`zkgpu.arith.sparse.check_csr`), a segment < 1, a bad
            ``dest`` (length, range, repeat; named), more than 2^32 - 1 terms or buffer rows.
    """
    if isinstance(segment, bool) or not isinstance(segment, (int, np.integer)) or segment < 1:
        raise ValueError(f"segment must be an int >= 1, got {segment!r}")
    check_csr(csr)  # the kernels index with col and row_ptr unchecked
    out_rows = csr.n_rows if out_rows is None else out_rows
    if isinstance(out_rows, bool) or not isinstance(out_rows, (int, np.integer)) or out_rows < 0:
        raise ValueError(f"out_rows must be an int >= 0, got {out_rows!r}")
    d = np.arange(csr.n_rows, dtype=np.int64) if dest is None else np.asarray(dest).astype(np.int64)
    if d.shape != (csr.n_rows,):
        raise ValueError(f"dest must have one entry per row ({csr.n_rows}), got shape {d.shape}")
    bad = np.flatnonzero((d < 0) | (d >= out_rows))
    if bad.size:
        raise ValueError(f"dest[{int(bad[0])}] = {int(d[bad[0]])} is outside 0..{out_rows - 1}")
    if d.size and np.bincount(d, minlength=int(out_rows)).max() > 1:  # O(rows + out_rows); np.unique hashes (0.5 s at 2^20)
        raise ValueError("dest repeats an output row: two rows would write the same place")
    seg = segments(csr.row_ptr, d, int(out_rows), int(segment))
    rows = int(seg["grp_first"][-1])
    if csr.nnz >= _U32 or rows >= _U32 or csr.n_cols >= _U32:
        raise ValueError(f"spmv: {csr.nnz} terms, {rows} buffer rows, {csr.n_cols} columns: the kernels index with uint32")
    cp = _cuda.cupy()
    coef = cp.array(np.ascontiguousarray(csr.val, dtype=np.uint64))  # a copy: converted in place below
    to_montgomery(to_montgomery(coef))  # v -> v R -> v R^2
    u32 = {k: cp.array(np.asarray(seg[k], dtype=np.uint32)) for k in ("seg_ptr", "seg_dest", "grp_first", "grp_dest")}
    return DeviceCsr(
        n_cols=csr.n_cols, out_rows=int(out_rows), buffer_rows=rows, nnz=csr.nnz,
        n_seg=int(seg["seg_ptr"].size) - 1, n_groups=int(seg["grp_dest"].size), coef=coef,
        col=cp.array(csr.col.astype(np.uint32)), **u32,
    )  # fmt: skip


def new_buffer(dcsr: DeviceCsr) -> Any:
    """A zeroed ``(buffer_rows, 4)`` uint64 device buffer for :func:`spmv_into` (on the current stream)."""
    return _cuda.cupy().zeros((dcsr.buffer_rows, 4), dtype=np.uint64)


def spmv_into(dcsr: DeviceCsr, w: Any, buf: Any, *, check: bool = True) -> Any:
    """``buf[dest[i]] = sum over row i of coef * w[col]`` (Montgomery form), on the current stream, no host sync unless
    ``check`` (verify every ``w`` < r). ``w``: ``(n_cols, 4)`` uint64 canonical CuPy; ``buf``: ``(>= buffer_rows, 4)``
    uint64 C-contiguous (:func:`new_buffer`), rows no matrix row names keep their value. Returns ``buf``.

    Raises:
        TypeError / ValueError: a ``w`` or ``buf`` of another dtype, shape or layout; with ``check``, a ``w`` >= r.
    """
    check_device_array(w, name="w")
    if w.shape[0] != dcsr.n_cols:
        raise ValueError(f"spmv: w has {w.shape[0]} entries, the matrix {dcsr.n_cols} columns")
    check_device_array(buf, name="buf")
    if buf.shape[0] < dcsr.buffer_rows:
        raise ValueError(f"spmv: buf has {buf.shape[0]} rows, the matrix needs {dcsr.buffer_rows}")
    if check:
        check_canonical(device_words(w, name="w"), "w")
    if dcsr.n_seg:
        _cuda.launch_1d(_kernel("spmv_segments"), dcsr.n_seg,
                        (dcsr.coef, dcsr.col, dcsr.seg_ptr, dcsr.seg_dest, w, buf, np.uint64(dcsr.n_seg)), block=BLOCK)
    if dcsr.n_groups:
        _cuda.launch_1d(_kernel("spmv_combine"), dcsr.n_groups,
                        (buf, dcsr.grp_first, dcsr.grp_dest, np.uint64(dcsr.n_groups)), block=BLOCK)
    return buf


def spmv_device(dcsr: DeviceCsr, w: Any, *, check: bool = True) -> Any:
    """The product in a new buffer: ``(out_rows, 4)`` uint64, Montgomery form (a view of a :func:`new_buffer`),
    rows that no matrix row names 0. Raises as :func:`spmv_into`."""
    return spmv_into(dcsr, w, new_buffer(dcsr), check=check)[: dcsr.out_rows]


def fr_mul_device(a: Any, b: Any, out: Any) -> Any:
    """``out = a * b`` pointwise (Montgomery in, Montgomery out: fr_ops.cu's ``fr_mul``), on the current stream: the
    synthesis step's ``c = a * b``. a, b, out: CuPy arrays of n Fr elements (:func:`zkgpu.gpu.fr_device.device_words`
    layouts); out may be a or b. Returns out.

    Raises:
        ValueError: sizes that differ; TypeError / ValueError: as :func:`~zkgpu.gpu.fr_device.device_words`.
    """
    wa, wb, wo = (device_words(x, name=nm) for x, nm in ((a, "a"), (b, "b"), (out, "out")))
    if not wa.size == wb.size == wo.size:
        raise ValueError(f"fr_mul_device: a, b, out sizes differ ({wa.size // 8}, {wb.size // 8}, {wo.size // 8})")
    n = wa.size // 8
    if n:
        _cuda.launch_1d(_cuda.get_kernel("fr_ops", "fr_mul"), n, (wa, wb, wo, np.uint64(n)))
    return out
