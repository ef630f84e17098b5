"""Fr/Fq parameters derived in code, host layout and validation, and the CUDA header arithmetic
(ff.cuh, built for the host by tests/native) against plain Python ints."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from native import KERNELS, load

from seeding import new_pyrng, new_rng
from zkgpu.arith.field import (
    FQ,
    FR,
    PrimeField,
    check_array,
    fr_from_ints,
    fr_random,
    fr_reduce,
    fr_to_ints,
    from_ints,
    to_ints,
)

R_HEX = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def test_fr_constants_derived():
    r = FR.modulus
    assert r == R_HEX
    assert FR.R == 2**256 % r and FR.R2 == FR.R * FR.R % r
    assert FR.R * FR.R_inv % r == 1
    assert (FR.inv32 * r) % 2**32 == 2**32 - 1  # -r^-1 * r = -1 mod 2^32
    assert (FR.inv64 * r) % 2**64 == 2**64 - 1
    assert FR.two_adicity == 32
    w = FR.two_adic_root
    assert pow(w, 2**32, r) == 1 and pow(w, 2**31, r) == r - 1  # order exactly 2^32
    for k in (0, 1, 5, 24, 28, 32):
        wk = FR.root_of_unity(k)
        assert pow(wk, 2**k, r) == 1
        if k:
            assert pow(wk, 2 ** (k - 1), r) != 1
    # 7 generates: 7^((r-1)/q) != 1 for the small prime factors q of r-1 (2 and 3)
    assert pow(7, (r - 1) // 2, r) != 1 and pow(7, (r - 1) // 3, r) != 1
    with pytest.raises(ValueError, match="2-adicity"):
        FR.root_of_unity(33)


def test_fq_constants_derived():
    q = FQ.modulus
    assert q.bit_length() == 381 and q % 4 == 3
    assert FQ.R2 == pow(2, 768, q) and (FQ.inv32 * q) % 2**32 == 2**32 - 1


@pytest.mark.parametrize("field,header", [(FR, "fr.cuh"), (FQ, "fq.cuh")])
def test_header_modulus_matches(field: PrimeField, header: str):
    """The only constant written in the CUDA headers is the modulus; it must equal ours."""
    text = (KERNELS / header).read_text()
    limbs = [int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{8})u", text)]
    assert len(limbs) == 2 * field.limbs
    assert sum(v << (32 * i) for i, v in enumerate(limbs)) == field.modulus


def test_from_to_ints_roundtrip_and_layout():
    r = FR.modulus
    vals = [0, 1, 2, r - 1, 2**64, 2**128 + 5, new_pyrng().randrange(r)]
    a = fr_from_ints(vals)
    assert a.dtype == np.uint64 and a.shape == (len(vals), 4) and a.flags.c_contiguous
    assert a[4].tolist() == [0, 1, 0, 0]  # little-endian 64-bit limbs
    assert fr_to_ints(a) == vals
    assert fr_to_ints(fr_from_ints([])) == []


@pytest.mark.parametrize("bad,idx", [([1, R_HEX], 1), ([-1], 0), ([0, 1, 2, R_HEX + 7], 3), ([2**300], 0)])
def test_from_ints_rejects_out_of_range(bad, idx):
    with pytest.raises(ValueError, match=rf"element {idx} "):
        fr_from_ints(bad)


def test_from_ints_rejects_non_int():
    with pytest.raises(TypeError, match="element 1"):
        fr_from_ints([1, 2.0])


def test_reduce_is_explicit():
    r = FR.modulus
    assert fr_reduce([r, r + 5, -1, 2 * r + 3]) == [0, 5, r - 1, 3]


def test_check_array_errors():
    good = fr_random(8, 1)
    assert check_array(FR, good) is not None
    with pytest.raises(TypeError, match="uint64"):
        check_array(FR, good.astype(np.int64))
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        check_array(FR, good.reshape(-1))
    bad = good.copy()
    bad[5] = [2**64 - 1] * 4
    with pytest.raises(ValueError, match=r"values\[5\]"):
        check_array(FR, bad)
    edge = fr_from_ints([R_HEX - 1])
    check_array(FR, edge)
    edge[0, 0] += 1  # exactly r
    with pytest.raises(ValueError, match=r"\[0\]"):
        check_array(FR, edge)


def test_random_is_canonical_and_fresh():
    a, b = fr_random(5000, new_rng()), fr_random(5000, new_rng())
    assert all(v < FR.modulus for v in fr_to_ints(a))
    assert not np.array_equal(a, b)
    assert np.array_equal(fr_random(100, 7), fr_random(100, 7))


OPS = {"add": 0, "sub": 1, "mul": 2, "inv": 3, "to_mont": 4, "from_mont": 5, "neg": 6, "sqr": 7, "one": 8}


def _shim(field: PrimeField, xs: list[int], ys: list[int], op: str) -> list[int]:
    lib = load("ff_shim")
    fn = lib.fr_binop if field is FR else lib.fq_binop
    a, b = from_ints(field, xs), from_ints(field, ys)
    out = np.zeros_like(a)
    p = ctypes.c_void_p
    fn(p(a.ctypes.data), p(b.ctypes.data), p(out.ctypes.data), ctypes.c_size_t(len(xs)), OPS[op])
    return to_ints(field, out)


@pytest.mark.parametrize("field", [FR, FQ], ids=["Fr", "Fq"])
def test_header_arithmetic_matches_python(field: PrimeField):
    p = field.modulus
    edge = [0, 1, 2, p - 1, p - 2, field.R % p, (p - 1) // 2]
    xs = edge + [new_pyrng().randrange(p) for _ in range(300)]
    ys = list(reversed(edge)) + [new_pyrng().randrange(p) for _ in range(300)]
    mx, my = [field.to_mont(x) for x in xs], [field.to_mont(y) for y in ys]

    def back(vs):
        return [field.from_mont(v) for v in vs]

    assert back(_shim(field, mx, my, "add")) == [(x + y) % p for x, y in zip(xs, ys, strict=True)]
    assert back(_shim(field, mx, my, "sub")) == [(x - y) % p for x, y in zip(xs, ys, strict=True)]
    assert back(_shim(field, mx, my, "mul")) == [(x * y) % p for x, y in zip(xs, ys, strict=True)]
    assert back(_shim(field, mx, my, "sqr")) == [(x * x) % p for x in xs]
    assert back(_shim(field, mx, my, "neg")) == [(-x) % p for x in xs]
    assert back(_shim(field, mx, my, "inv")) == [pow(x, p - 2, p) for x in xs]  # inv(0) = 0
    assert _shim(field, xs, ys, "to_mont") == mx
    assert _shim(field, mx, ys, "from_mont") == xs
    assert _shim(field, xs[:1], ys[:1], "one") == [field.R % p]


def test_header_inv32():
    lib = load("ff_shim")
    lib.fr_inv32.restype = lib.fq_inv32.restype = ctypes.c_uint32
    assert lib.fr_inv32() == FR.inv32 and lib.fq_inv32() == FQ.inv32
