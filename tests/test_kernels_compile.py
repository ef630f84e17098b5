"""Every kernel file compiles with nvcc for sm_90 (the H200), so a kernel that does not build
fails CI even without a GPU. Skipped only where nvcc is absent and CI is not set."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from zkgpu._cuda import KERNEL_DIR

KERNEL_FILES = sorted(KERNEL_DIR.glob("*.cu"))


# extra builds of a module that the host compiles with several option sets (the default one is above)
VARIANT_BUILDS = [
    ("ntt_fused.cu", "-DNTT_FUSED_R=2 -DZK_NTT_PTX=1"),
    ("ntt_fused.cu", "-DNTT_FUSED_R=8"),
    ("ntt_fused.cu", "-DNTT_FUSED_MAXK=12 -DNTT_FUSED_THREADS=512 -DNTT_FUSED_MIN_BLOCKS=1"),
]


def _nvcc_cubin(path, tmp_path, *flags):
    nvcc = shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc")
    if not nvcc:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found: CI must compile every kernel")
        pytest.skip("nvcc not found")
    res = subprocess.run(
        [nvcc, "-arch=sm_90", "-std=c++17", "-cubin", f"-I{KERNEL_DIR}", *flags, str(path), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("path", KERNEL_FILES, ids=[p.name for p in KERNEL_FILES])
def test_kernel_compiles_sm90(path, tmp_path):
    _nvcc_cubin(path, tmp_path)


@pytest.mark.parametrize("name,flag", VARIANT_BUILDS, ids=[f"{n}{f}" for n, f in VARIANT_BUILDS])
def test_kernel_variant_compiles_sm90(name, flag, tmp_path):
    _nvcc_cubin(KERNEL_DIR / name, tmp_path, *flag.split())


def test_there_are_kernels():
    assert KERNEL_FILES, "no .cu files found"


def _nvrtc_unsafe_includes(text: str) -> list[str]:
    """``#include <...>`` lines that NVRTC would see: not inside ``#if defined(__CUDACC_RTC__) ... #else``
    nor ``#ifndef __CUDACC_RTC__`` (NVRTC, which compiles our kernels at run time, has no host headers)."""
    stack: list[list] = []  # [directive text, in_else]
    bad = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("#if", "#ifdef", "#ifndef")):
            stack.append([s, False])
        elif s.startswith("#else") and stack:
            stack[-1][1] = True
        elif s.startswith("#endif") and stack:
            stack.pop()
        elif s.startswith("#include <"):
            guarded = False
            for cond, in_else in stack:
                if "__CUDACC_RTC__" not in cond:
                    continue
                negated = cond.startswith("#ifndef") or "!defined" in cond.replace(" ", "")
                guarded |= (negated and not in_else) or (not negated and in_else)
            if not guarded:
                bad.append(s)
    return bad


@pytest.mark.parametrize("path", sorted(KERNEL_DIR.glob("*.cu*")), ids=lambda p: p.name)
def test_no_host_header_reaches_nvrtc(path):
    assert _nvrtc_unsafe_includes(path.read_text()) == []


def test_the_include_guard_check_itself():
    assert _nvrtc_unsafe_includes("#include <cstdint>\n") == ["#include <cstdint>"]
    assert _nvrtc_unsafe_includes("#if defined(__CUDACC_RTC__)\ntypedef int x;\n#else\n#include <cstdint>\n#endif\n") == []
    assert _nvrtc_unsafe_includes("#ifndef __CUDACC_RTC__\n#include <cstdint>\n#endif\n") == []
    assert _nvrtc_unsafe_includes('#include "ff.cuh"\n') == []
