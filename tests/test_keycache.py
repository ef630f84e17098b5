"""The key checks' verdict cache (zkgpu.groth16.keycache) and the numpy zkey reader: a key's points are
checked once per content; an entry that is missing, damaged, foreign or for other bytes is never trusted;
a key changed in place is checked again. Uses the committed mulchain-8 key (zkgpu/groth16/fixtures)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from zkgpu.app.cli import main
from zkgpu.arith.field import FR, fr_to_ints
from zkgpu.groth16 import formats, keycache
from zkgpu.groth16.formats import FormatError, read_sections, read_zkey

FIXTURE = Path(__file__).resolve().parent.parent / "zkgpu" / "groth16" / "fixtures"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh verdict folder, no in-memory cache, and a counter of check_key calls."""
    folder = tmp_path / "keys"
    monkeypatch.setattr(keycache, "_FOLDER", None)
    keycache.configure(folder=folder)
    monkeypatch.setattr(formats, "_CACHE", type(formats._CACHE)())
    calls = []
    real = formats.check_key

    def counted(zkey, **kw):
        calls.append(zkey.path)
        return real(zkey, **kw)

    monkeypatch.setattr(formats, "check_key", counted)
    key = tmp_path / "k.zkey"
    shutil.copyfile(FIXTURE / "circuit.zkey", key)
    return folder, calls, key


def _forget(monkeypatch):
    monkeypatch.setattr(formats, "_CACHE", type(formats._CACHE)())


def test_digest_is_a_tree_of_sha256(rng):
    data = rng.integers(0, 256, size=keycache.CHUNK * 2 + 123, dtype=np.uint8)
    leaves = [hashlib.sha256(data[i : i + keycache.CHUNK].tobytes()).digest() for i in range(0, data.size, keycache.CHUNK)]
    root = hashlib.sha256(b"zkgpu-zkey-tree-sha256-v1" + data.size.to_bytes(8, "little") + keycache.CHUNK.to_bytes(8, "little"))
    for leaf in leaves:
        root.update(leaf)
    assert keycache.digest(data) == keycache.digest(data, threads=1) == keycache.digest(data.tobytes()) == root.digest()
    flipped = data.copy()
    flipped[-1] ^= 1
    assert keycache.digest(flipped) != root.digest()
    assert keycache.digest(b"") != keycache.digest(b"\0")


def test_checked_once_then_from_disk(cache, monkeypatch):
    folder, calls, key = cache
    zk = read_zkey(key)
    assert zk.checked == "checked" and len(calls) == 1
    (entry,) = folder.iterdir()
    assert entry.suffix == ".json" and entry.stat().st_mode & 0o077 == 0
    assert read_zkey(key) is zk and len(calls) == 1  # the in-memory cache
    _forget(monkeypatch)  # another process: only the disk verdict
    again = read_zkey(key)
    assert again.checked == "disk" and len(calls) == 1
    assert (again.a == zk.a).all() and (again.coef_raw == zk.coef_raw).all()


@pytest.mark.parametrize("damage", ["verdict", "seal", "garbage", "bytes", "huge", "group-writable", "symlink", "checks"])
def test_a_damaged_or_foreign_entry_is_not_trusted(cache, monkeypatch, damage):
    folder, calls, key = cache
    read_zkey(key)
    (entry,) = folder.iterdir()
    doc = json.loads(entry.read_text())
    if damage in ("verdict", "bytes", "checks"):
        doc[{"verdict": "verdict", "bytes": "bytes", "checks": "checks"}[damage]] = {"verdict": "failed", "bytes": 1,
                                                                                  "checks": "old"}[damage]
        entry.write_text(json.dumps(doc))
    elif damage == "seal":
        doc["seal"] = "0" * 64
        entry.write_text(json.dumps(doc))
    elif damage == "garbage":
        entry.write_bytes(b"\xff{not json")
    elif damage == "huge":
        entry.write_text(json.dumps({**doc, "pad": "x" * 5000}))
    elif damage == "group-writable":
        folder.chmod(0o777)
    elif damage == "symlink":
        other = folder.parent / "elsewhere.json"
        entry.rename(other)
        entry.symlink_to(other)
    _forget(monkeypatch)
    assert read_zkey(key).checked == "checked" and len(calls) == 2


def test_a_key_changed_in_place_is_checked_again(cache, monkeypatch):
    folder, calls, key = cache
    read_zkey(key)
    data, secs = read_sections(key, b"zkey", 2)
    off, _ = secs[5][0]  # the A points: the first point's x, last byte but one
    raw = bytearray(key.read_bytes())
    raw[off + 40] ^= 0x01
    with open(key, "r+b") as f:  # in place: same path, same size
        f.write(raw)
    with pytest.raises(FormatError, match="A"):
        read_zkey(key)
    assert len(calls) == 2 and len(list(folder.iterdir())) == 1  # no verdict for the bad content


def test_no_folder_no_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(keycache, "_FOLDER", None)
    assert not keycache.lookup(b"\0" * 32, 1) and not keycache.record(b"\0" * 32, 1)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        keycache.configure(folder=tmp_path / "f")


def test_an_unwritable_folder_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(keycache, "_FOLDER", None)
    keycache.configure(folder=tmp_path / "ro" / "keys")
    (tmp_path / "ro").mkdir(mode=0o500)
    if os.access(tmp_path / "ro", os.W_OK):
        pytest.skip("running as root: permissions do not stop writes")
    assert keycache.record(b"\1" * 32, 5) is False


def test_coefficients_as_stored_and_canonical():
    zk = read_zkey(FIXTURE / "circuit.zkey", check=False)
    r = FR.modulus
    assert zk.coef_raw.dtype == np.uint64 and zk.coef_raw.shape == (len(zk.coef_signal), 4)
    want = [v * pow(FR.R2, -1, r) % r for v in fr_to_ints(zk.coef_raw)]  # snarkjs's writeFr2: v R^2
    assert zk.coef_value == want and fr_to_ints(zk.coef_values) == want
    assert not zk.coef_values.flags.writeable


def test_prove_command_reports_the_check(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(formats, "_CACHE", type(formats._CACHE)())
    monkeypatch.setattr(keycache, "_FOLDER", None)
    seen = []
    for i in range(2):
        t = tmp_path / f"t{i}.json"
        res = CliRunner().invoke(main, ["prove", "--zkey", str(FIXTURE / "circuit.zkey"), "--wtns", str(FIXTURE / "circuit.wtns"),
                                        "--proof", str(tmp_path / f"p{i}.json"), "--public", str(tmp_path / f"q{i}.json"),
                                        "--device", "cpu", "--seed", "1", "--timings", str(t)])  # fmt: skip
        assert res.exit_code == 0, res.output
        seen.append(json.loads(t.read_text())["key_check"])
        monkeypatch.setattr(formats, "_CACHE", type(formats._CACHE)())  # as a new process
    assert seen == ["checked", "disk"]
    assert len(list((tmp_path / "xdg" / "zkgpu" / "keys").iterdir())) == 1


@pytest.mark.gpu
def test_device_conversions_match_the_host(monkeypatch):
    """The device paths of the reader (points: fq_from_mont; coefficients: two from_montgomery) give the
    host paths' arrays (the tiny fixture, forced onto the device by lowering the size threshold)."""
    monkeypatch.setattr(formats, "_GPU_MIN", 10**12)
    host = read_zkey(FIXTURE / "circuit.zkey", check=False)
    want = host.coef_values.copy()
    monkeypatch.setattr(formats, "_GPU_MIN", 1)
    dev = read_zkey(FIXTURE / "circuit.zkey", check=False)
    for name in ("alpha1", "beta2", "ic", "a", "b1", "b2", "c", "h"):
        got, ref = getattr(dev, name), getattr(host, name)
        assert got.dtype == np.uint64 and got.flags.c_contiguous and np.array_equal(got, ref), name
    assert np.array_equal(dev.coef_values, want) and dev.coef_value == host.coef_value
