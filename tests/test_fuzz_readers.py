"""Fuzzing the .zkey and .wtns readers (issue 22): any bytes give a result or a one-line FormatError, never
another exception, a hang or memory beyond a small multiple of the file. Bounded: a fixed number of
examples (``max_examples``), small files, no deadline flakiness (CI time stays a few seconds per test)."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from zkgpu.groth16.formats import FormatError, read_wtns, read_zkey  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "zkgpu" / "groth16" / "fixtures"
ZKEY = (FIXTURE / "circuit.zkey").read_bytes()
WTNS = (FIXTURE / "circuit.wtns").read_bytes()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _read(reader, data: bytes, tmp: Path) -> None:
    path = tmp / "fuzz.bin"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        reader(path, check=False) if reader is read_zkey else reader(path)
    except FormatError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith(str(path)), msg
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 200 * len(data) + (8 << 20), f"{peak} bytes for a {len(data)}-byte file"


@st.composite
def _mutated(draw, base: bytes):
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "u32", "u64"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[pos : pos + draw(st.integers(1, 200))]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=40))
        elif kind == "u32" and pos + 4 <= len(data):  # a count, a type or a size field set to an extreme
            struct.pack_into("<I", data, pos, draw(st.sampled_from([0, 1, 2**31, 2**32 - 1])))
        elif kind == "u64" and pos + 8 <= len(data):
            struct.pack_into("<Q", data, pos, draw(st.sampled_from([0, 2**40, 2**63, 2**64 - 1])))
    return bytes(data)


@FUZZ
@given(data=_mutated(ZKEY))
def test_zkey_reader_mutations(data, tmp_path):
    _read(read_zkey, data, tmp_path)


@FUZZ
@given(data=_mutated(WTNS))
def test_wtns_reader_mutations(data, tmp_path):
    _read(read_wtns, data, tmp_path)


@FUZZ
@given(magic=st.sampled_from([b"zkey", b"wtns"]), version=st.integers(0, 3), body=st.binary(max_size=600))
def test_readers_random_bodies(magic, version, body, tmp_path):
    data = magic + struct.pack("<I", version) + body
    _read(read_zkey if magic == b"zkey" else read_wtns, data, tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_mutated(ZKEY))
def test_zkey_point_checks_on_mutations(data, tmp_path):
    """With the point checks on (every point on its curve and in its subgroup): still a result or a FormatError."""
    path = tmp_path / "fuzz.zkey"
    path.write_bytes(data)
    try:
        read_zkey(path)
    except FormatError as exc:
        assert "\n" not in str(exc)
