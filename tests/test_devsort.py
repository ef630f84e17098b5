"""zkgpu.gpu.msm.devsort: the CUB radix sort of uint64 keys by a bit field, without a host sync.

CPU: the library's source compiles with nvcc (and is cached by source + nvcc version), argument
checks, the host (NumPy) path against Python's stable sort, the MSM's key layout (sentinel keys sort
last with the bucket field MSM uses), and the fallbacks with the GPU hidden or no nvcc.
GPU (@pytest.mark.gpu): the CUB sort against NumPy's stable sort on seeded random keys (the seed is
printed on failure) at sizes 0 .. 2^24 and several bit ranges, no host sync counted, the CuPy
fallback, and the MSM with the new sort against arkworks at 2^20.
"""

from __future__ import annotations

import ctypes
import os
import shutil

import numpy as np
import pytest

from seeding import new_pyrng, new_rng
from zkgpu.arith.field import fr_random
from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import bases, devsort
from zkgpu.gpu.msm import pippenger as msm


def _ref(keys: np.ndarray, begin: int, end: int) -> np.ndarray:
    """Stable sort by bits [begin, end): NumPy's stable argsort of the field (independent of devsort)."""
    width = end - begin
    field = [(int(k) >> begin) & ((1 << width) - 1) for k in keys] if keys.size <= 4096 else None
    if field is not None:  # small inputs: Python's own stable sort of Python ints
        order = sorted(range(keys.size), key=field.__getitem__)
        return keys[np.array(order, dtype=np.int64)]
    f = keys >> np.uint64(begin)
    if width < 64:
        f &= np.uint64((1 << width) - 1)
    return keys[np.argsort(f, kind="stable")]


def _random_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, size=n, dtype=np.uint64)


@pytest.fixture
def backend():
    """Each test leaves devsort.BACKEND as it found it."""
    old = devsort.BACKEND
    yield
    devsort.configure(backend=old)


# ----------------------------------------------------------------------------- CPU: the library


def _need_nvcc() -> None:
    if devsort._nvcc() is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found: CI must compile zkgpu/kernels/nvcc/devsort.cu")
        pytest.skip("nvcc not found")


@pytest.mark.slow
def test_library_compiles_and_loads():
    """nvcc builds the shared library (CUB's onesweep instantiation, ~5-15 s on one core); it loads with
    ctypes and speaks this module's ABI; a second build() is the cached file."""
    _need_nvcc()
    path = devsort.build()
    assert path.is_file() and path == devsort.library_path()
    mtime = path.stat().st_mtime_ns
    assert devsort.build() == path and path.stat().st_mtime_ns == mtime
    lib = devsort._declare(ctypes.CDLL(str(path)))
    assert lib.zk_devsort_abi() == devsort._ABI
    assert lib.zk_devsort_error_string(0) == b"no error"
    assert path.stat().st_size < 5 * 2**20  # carryable


@pytest.mark.slow
def test_library_calls_without_a_device_return_the_cuda_error():
    """The ctypes signatures of both entry points, and a CUDA error as a one-line RuntimeError (on a
    machine without a GPU, where the runtime answers cudaErrorNoDevice)."""
    _need_nvcc()
    if _cuda.gpu_available():
        pytest.skip("a GPU is present")
    lib = devsort._declare(ctypes.CDLL(str(devsort.build())))
    with pytest.raises(RuntimeError, match=r"temp-size query failed: .* \(cudaError \d+\)$"):
        devsort._temp_bytes(lib, 1000, 32, 52, 0)
    sel = ctypes.c_int(-1)
    err = lib.zk_devsort_keys(None, 0, None, None, 1000, 32, 52, None, 0, ctypes.byref(sel))
    assert err != 0 and sel.value == -1
    with pytest.raises(RuntimeError, match=r"launch failed: .*\(cudaError \d+\)$"):
        devsort._raise_on(lib, err, "launch")


@pytest.mark.slow
def test_a_library_that_does_not_load_is_rebuilt(tmp_path, monkeypatch):
    """A cached file that dlopen refuses (e.g. carried from another image) is rebuilt, not fallen back from."""
    _need_nvcc()
    monkeypatch.setattr(devsort, "_cache_dir", lambda: tmp_path)
    path = devsort.library_path()
    path.write_bytes(b"not an ELF file")
    lib = devsort._open()
    assert not isinstance(lib, str), lib
    assert lib.zk_devsort_abi() == devsort._ABI and path.read_bytes()[:4] == b"\x7fELF"


def test_library_path_keys_on_source_and_nvcc(tmp_path, monkeypatch):
    _need_nvcc()
    first = devsort.library_path()
    src = tmp_path / "devsort.cu"
    src.write_bytes(devsort.SOURCE.read_bytes() + b"\n// edited\n")
    monkeypatch.setattr(devsort, "SOURCE", src)
    assert devsort.library_path() != first
    monkeypatch.setattr(devsort, "_nvcc_version", lambda nvcc: "another nvcc")
    assert devsort.library_path() not in (first, None)


def test_no_nvcc(monkeypatch):
    monkeypatch.setattr(devsort, "_nvcc", lambda: None)
    monkeypatch.setattr(devsort, "_ACTIVE", [])
    assert devsort.library_path() is None
    assert not devsort.available()
    assert "nvcc not found" in devsort._load()
    with pytest.raises(RuntimeError, match="nvcc not found"):
        devsort.build()


def test_nvcc_failure_names_the_error(tmp_path, monkeypatch):
    _need_nvcc()
    src = tmp_path / "devsort.cu"
    src.write_text("this is not C++\n")
    monkeypatch.setattr(devsort, "SOURCE", src)
    monkeypatch.setattr(devsort, "_cache_dir", lambda: tmp_path)
    with pytest.raises(RuntimeError, match=r"nvcc failed \(exit"):
        devsort.build()
    assert list(tmp_path.glob("*.so")) == [] and list(tmp_path.glob("*.tmp")) == []


def test_gpu_hidden_means_not_available(monkeypatch, rng):
    monkeypatch.setattr(_cuda, "GPU_ENABLED", False)
    assert not devsort.available()
    keys = _random_keys(rng, 100)
    before = _cuda.sync_counts()
    assert (devsort.sort_keys(keys, begin_bit=8, end_bit=24) == _ref(keys, 8, 24)).all()
    assert _cuda.sync_counts() == before  # the host path waits for no device


# ----------------------------------------------------------------------------- CPU: arguments, host path


@pytest.mark.parametrize(
    "keys,kw,match",
    [
        (np.zeros(4, dtype=np.int64), {}, "must be uint64, got dtype int64"),
        (np.zeros(4, dtype=np.uint32), {}, "must be uint64, got dtype uint32"),
        (np.zeros((2, 2), dtype=np.uint64), {}, r"must be 1-D, got shape \(2, 2\)"),
        ([1, 2, 3], {}, "must be a CuPy or NumPy array, got list"),
        (np.zeros(4, dtype=np.uint64), {"begin_bit": -1}, "begin_bit must be an int in \\[0, 64\\], got -1"),
        (np.zeros(4, dtype=np.uint64), {"end_bit": 65}, "end_bit must be an int in \\[0, 64\\], got 65"),
        (np.zeros(4, dtype=np.uint64), {"end_bit": 3.0}, "end_bit must be an int in \\[0, 64\\], got 3.0"),
        (np.zeros(4, dtype=np.uint64), {"begin_bit": True}, "begin_bit must be an int in \\[0, 64\\], got True"),
        (np.zeros(4, dtype=np.uint64), {"begin_bit": 32, "end_bit": 32}, "begin_bit must be < end_bit, got 32 >= 32"),
        (np.zeros(4, dtype=np.uint64), {"begin_bit": 40, "end_bit": 8}, "begin_bit must be < end_bit, got 40 >= 8"),
    ],
)
def test_bad_input_one_line_error(keys, kw, match):
    with pytest.raises(ValueError, match=match) as exc:
        devsort.sort_keys(keys, **kw)
    assert "\n" not in str(exc.value) and str(exc.value).startswith("zkgpu.gpu.msm.devsort.sort_keys: ")


def test_configure_checks_backend(backend):
    with pytest.raises(ValueError, match="backend must be one of .*got 'thrust'"):
        devsort.configure(backend="thrust")
    devsort.configure(backend="cupy")
    assert devsort.BACKEND == "cupy"


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 4000])
@pytest.mark.parametrize("bits", [(0, 64), (32, 52), (0, 1), (63, 64), (13, 47)])
def test_host_path_is_a_stable_sort_by_the_field(n, bits, rng):
    keys = _random_keys(rng, n)
    keys[: n // 3] &= np.uint64(0xFFFF_0000_0000_FFFF)  # many equal fields: stability matters
    got = devsort.sort_keys(keys, begin_bit=bits[0], end_bit=bits[1])
    assert isinstance(got, np.ndarray) and got.dtype == np.uint64 and got.shape == (n,)
    assert (got == _ref(keys, *bits)).all()


def test_host_path_leaves_input_alone(rng):
    keys = _random_keys(rng, 100)
    copy = keys.copy()
    devsort.sort_keys(keys, begin_bit=32, end_bit=52)
    assert (keys == copy).all()


def _msm_keys(sc_ints: list[int], c: int) -> tuple[np.ndarray, int]:
    """The keys msm.cu's msm_digits writes for these scalars (window-major), and how many are not sentinels."""
    nwin, m, n = msm.num_windows(c), 1 << (c - 1), len(sc_ints)
    keys = np.empty(nwin * n, dtype=np.uint64)
    for i, k in enumerate(sc_ints):
        for w, d in enumerate(msm.signed_digits(k, c)):
            bucket = msm._SENTINEL_KEY >> 32 if d == 0 else w * m + abs(d) - 1
            keys[w * n + i] = (bucket << 32) | ((d < 0) << 31) | i
    return keys, int((keys < np.uint64(msm._SENTINEL_KEY)).sum())


@pytest.mark.parametrize("c", [2, 4, 13, 16, 20])
def test_msm_sentinel_keys_sort_last_with_the_bucket_field(c):
    """msm_device sorts bits [32, 32 + bit_length(nwin * m)): the sentinel's field (all ones) is above
    every bucket, also where nwin * m is a power of two (c = 2, 4, 16); buckets come out in order."""
    pyrng = new_pyrng()
    sc = [0, 1, 2, (1 << 255) - 1, *(pyrng.randrange(2**255) for _ in range(12))]
    keys, valid = _msm_keys(sc, c)
    bits = (msm.num_windows(c) * (1 << (c - 1))).bit_length()
    got = devsort.sort_keys(keys, begin_bit=32, end_bit=32 + bits)
    assert (got[valid:] >> np.uint64(32) == msm._SENTINEL_KEY >> 32).all()
    buckets = got[:valid] >> np.uint64(32)
    assert (np.diff(buckets.astype(np.int64)) >= 0).all()
    assert int(np.searchsorted(got, np.uint64(msm._SENTINEL_KEY))) == valid  # msm_device's E


# ----------------------------------------------------------------------------- GPU


def _gpu_check(keys_host: np.ndarray, begin: int, end: int, **kw) -> None:
    cp = _cuda.cupy()
    keys = cp.asarray(keys_host)
    before = _cuda.sync_counts()
    got = devsort.sort_keys(keys, begin_bit=begin, end_bit=end, **kw)
    assert _cuda.sync_counts() == before, "sort_keys counted a host sync"
    assert isinstance(got, cp.ndarray) and got.dtype == cp.uint64 and got.shape == keys_host.shape
    assert (cp.asnumpy(got) == _ref(keys_host, begin, end)).all()
    if not kw.get("overwrite"):
        assert (cp.asnumpy(keys) == keys_host).all(), "sort_keys changed its input"


@pytest.mark.gpu
def test_gpu_library_available():
    """On the GPU host nvcc builds the library: the MSM must not be on the synchronising fallback."""
    assert devsort.available(), devsort._load()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1, 2, 1000, (1 << 20) + 3, 1 << 24])
def test_gpu_sizes_full_range(n, rng):
    _gpu_check(_random_keys(rng, n), 0, 64)


@pytest.mark.gpu
@pytest.mark.parametrize("bits", [(0, 64), (32, 52), (32, 33), (13, 47), (0, 8), (56, 64)])
@pytest.mark.parametrize("n", [1000, (1 << 20) + 3])
def test_gpu_bit_ranges_stable(bits, n, rng):
    keys = _random_keys(rng, n)
    keys[::2] &= np.uint64(0x000F_FFFF_FFFF_FFFF)  # equal high fields with differing low bits
    keys[1::3] &= np.uint64(0xFFFF_FFFF_0000_0000)
    _gpu_check(keys, *bits)


@pytest.mark.gpu
@pytest.mark.parametrize("order", ["sorted", "reversed", "equal"])
def test_gpu_presorted_reversed_equal(order, rng):
    keys = np.sort(_random_keys(rng, (1 << 20) + 3))
    if order == "reversed":
        keys = keys[::-1].copy()
    elif order == "equal":
        keys[:] = keys[0]
    for bits in ((0, 64), (32, 52)):
        _gpu_check(keys, *bits)


@pytest.mark.gpu
def test_gpu_msm_bucket_field_low_bits_keep_input_order(rng):
    """begin_bit = 32 on MSM-like keys: the index bits below stay in input order within a bucket."""
    n = 1 << 20
    keys = (rng.integers(0, 1 << 20, size=n, dtype=np.uint64) << np.uint64(32)) | rng.permutation(n).astype(np.uint64)
    _gpu_check(keys, 32, 52)
    _gpu_check(keys, 32, 52, overwrite=True)


@pytest.mark.gpu
def test_gpu_on_another_stream(rng):
    cp = _cuda.cupy()
    keys = _random_keys(rng, (1 << 20) + 3)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        dev = cp.asarray(keys)
    got = devsort.sort_keys(dev, begin_bit=0, end_bit=40, stream=s)
    s.synchronize()
    assert (cp.asnumpy(got) == _ref(keys, 0, 40)).all()


@pytest.mark.gpu
def test_gpu_cupy_backend_counts_its_sync(rng, backend):
    cp = _cuda.cupy()
    keys = _random_keys(rng, 5000)
    devsort.configure(backend="cupy")
    before = _cuda.sync_counts().get("msm.sort", 0)
    got = devsort.sort_keys(cp.asarray(keys), begin_bit=32, end_bit=52)
    assert _cuda.sync_counts().get("msm.sort", 0) == before + 1
    assert (cp.asnumpy(got) == _ref(keys, 32, 52)).all()


@pytest.mark.gpu
def test_gpu_cub_backend_without_library_raises(monkeypatch, backend):
    cp = _cuda.cupy()
    monkeypatch.setattr(devsort, "_nvcc", lambda: None)
    monkeypatch.setattr(devsort, "_ACTIVE", [])
    devsort.configure(backend="cub")
    with pytest.raises(RuntimeError, match="CUB library is not available"):
        devsort.sort_keys(cp.arange(10, dtype=cp.uint64))


@pytest.mark.gpu
def test_gpu_msm_2_20_with_cub_sort_vs_arkworks():
    """msm_device at 2^20 with the CUB bucket-field sort equals the CPU (arkworks) reference (~10-30 s
    of CPU); c = 16: nwin * m = 2^19, the power-of-two case of the sentinel field. No host sync from the sort."""
    cp = _cuda.cupy()
    assert devsort.available(), devsort._load()
    n = 1 << 20
    pts = bases.generate_points(n, new_pyrng().randrange(2**64))
    sc = fr_random(n, new_rng())
    sc[: n // 4] = 0  # many sentinel keys
    before = _cuda.sync_counts()
    got = cp.asnumpy(msm.msm_device(pts, cp.asarray(sc), 16))
    syncs = {k: v - before.get(k, 0) for k, v in _cuda.sync_counts().items() if v != before.get(k, 0)}
    assert "msm.sort" not in syncs, syncs
    assert (got == msm.msm_cpu(cp.asnumpy(pts), sc)).all()


def test_nvcc_found_where_the_kernel_tests_find_it():
    """devsort looks for nvcc where tests/test_kernels_compile.py does (PATH, then /usr/local/cuda/bin)."""
    found = shutil.which("nvcc") or (os.access("/usr/local/cuda/bin/nvcc", os.X_OK) and "/usr/local/cuda/bin/nvcc") or None
    assert devsort._nvcc() == found
