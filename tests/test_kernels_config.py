"""The kernel-side settings without environment variables: ``_cuda.configure(gpu=)``,
``ntt.configure(radix=, defines=)`` and ``msm.configure(chunk=, level0=, inline_mul=, cubin=)`` check
their arguments (one-line ValueError naming the value) and change what the next kernel call uses."""

from __future__ import annotations

import pytest

from zkgpu.core import cuda as _cuda
from zkgpu.gpu.msm import pippenger as msm
from zkgpu.gpu.ntt import transform as ntt


@pytest.fixture
def saved(monkeypatch):
    """Restore every module setting the tests change."""
    monkeypatch.setattr(_cuda, "GPU_ENABLED", _cuda.GPU_ENABLED)
    for name in ("RADIX", "DEFINES"):
        monkeypatch.setattr(ntt, name, getattr(ntt, name))
    for name in ("CHUNK", "LEVEL0", "INLINE_MUL", "CUBIN"):
        monkeypatch.setattr(msm, name, getattr(msm, name))


def test_gpu_can_be_hidden(saved):
    _cuda.configure(gpu=False)
    assert not _cuda.gpu_available() and not _cuda.is_device_array(object())
    with pytest.raises(RuntimeError, match="no CUDA GPU available"):
        _cuda.cupy()
    _cuda.configure()  # None keeps the setting
    assert not _cuda.gpu_available()
    with pytest.raises(ValueError, match="gpu must be True or False, got 'no'"):
        _cuda.configure(gpu="no")
    _cuda.configure(gpu=True)
    assert _cuda.GPU_ENABLED


def test_ntt_defines(saved):
    """configure(defines=) takes the build options that remain (DEFINE_NAMES), integers only; a removed variant's macro
    (or any other name) is refused in one line naming it, and a refused call changes nothing."""
    ntt.configure(defines={"NTT_MIN_BLOCKS": 4, "NTT_THREADS": 256})
    assert ntt._defines() == (("NTT_MIN_BLOCKS", "4"), ("NTT_THREADS", "256"))
    assert ntt._threads() == 256
    ntt.configure(defines={})
    assert ntt._defines() == () and ntt._threads() == ntt._THREADS
    assert ntt.DEFINE_NAMES == ("ZK_FF_ASM_TAIL", "ZK_PTXAS_O", "NTT_THREADS", "NTT_MIN_BLOCKS", "NTT_R4_MIN_BLOCKS")
    for bad, msg in (({"ZK_NTT_PTX": 0}, "unknown NTT build option 'ZK_NTT_PTX'"),
                     ({"NTT_SHFL": 1}, "unknown NTT build option 'NTT_SHFL'"),
                     ({"NTT_FOLD": 1}, "unknown NTT build option 'NTT_FOLD'"),
                     ({"NTT_BIG_LAST": 1}, "unknown NTT build option 'NTT_BIG_LAST'"),
                     ({"NTT_SKIP_ONE": 2}, "unknown NTT build option 'NTT_SKIP_ONE'"),
                     ({"1X": 1}, "unknown NTT build option '1X'"),
                     ({"NTT_THREADS": "128"}, "NTT_THREADS='128' must have an integer value"),
                     ({"NTT_THREADS": True}, "NTT_THREADS=True must have an integer value")):
        with pytest.raises(ValueError, match=msg):
            ntt.configure(defines=bad)
    assert ntt.DEFINES == {}


def test_msm_settings(saved, tmp_path):
    msm.configure(chunk=7, level0="runs", inline_mul=True)
    assert (msm._chunk_size(), msm._level0_mode(), msm._defines()) == (7, "runs", (("ZK_G1_INLINE_MUL", "1"),))
    msm.configure(inline_mul=False)
    assert msm._defines() == ()
    for kw, msg in (
        (dict(chunk=0), "must be a positive integer, got 0"),
        (dict(chunk=True), "got True"),
        (dict(level0="fast"), "level0 must be 'balanced' or 'runs', got 'fast'"),
        (dict(inline_mul=1), "inline_mul must be True or False, got 1"),
        (dict(cubin=str(tmp_path / "none.cubin")), "none.cubin' is not a file"),
    ):
        with pytest.raises(ValueError, match=msg):
            msm.configure(**kw)
    cubin = tmp_path / "msm.cubin"
    cubin.write_bytes(b"")
    msm.configure(cubin=str(cubin))
    assert msm.CUBIN == str(cubin)
    msm.configure(cubin="")
    assert msm.CUBIN is None
    assert (msm.CHUNK, msm.LEVEL0) == (7, "runs")  # the failed calls changed nothing
