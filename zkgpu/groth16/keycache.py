"""The key checks' verdicts kept on disk, by the key's content hash: a key is checked once per content.

:func:`zkgpu.groth16.formats.read_zkey` checks every point of a key (:func:`zkgpu.groth16.keycheck.check_key`);
with a folder configured (:func:`configure`; ``zkgpu prove`` uses ``$XDG_CACHE_HOME/zkgpu/keys``, default
``~/.cache/zkgpu/keys``) a passed check is written there and a later read of the same bytes (any path, any
process) skips the point checks.

* **The content hash** (:func:`digest`): SHA-256 (FIPS 180-4) of each 8 MiB chunk of the file's bytes, on a
  thread pool (hashlib releases the GIL), then SHA-256 of a domain tag, the byte count, the chunk size and the
  chunk digests in order. A collision of this tree gives a collision of SHA-256 (the chunk size and length are
  fixed inputs of the root), so a crafted key cannot borrow another key's verdict. The bytes hashed are the
  bytes then parsed (one read into private memory): a key file changed in place hashes differently and is
  checked again.
* **An entry** is ``<digest hex>.json``: the format tag, the digest, the byte count, :data:`CHECKS` (the
  checks' version and rounds: a change of the checks invalidates every entry) and a seal, the SHA-256 of the
  other fields. An entry is trusted only when it is a regular file owned by this user in a folder owned by
  this user that neither group nor others may write, at most 4 KiB, JSON with exactly these fields and
  values, and its seal matches; anything else is ignored (the key is checked again), never an error. The seal
  catches damage, not a forger with write access to the user's own cache (who could as well edit the code).
* **Written atomically**: a temporary file in the folder, flushed and synced, then linked into place only
  if no entry of that name exists (a valid entry is never rewritten; an invalid one is replaced by
  ``os.replace``). A folder that cannot be written is skipped silently: the cache only saves time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from zkgpu.groth16.keycheck import ROUNDS

__all__ = ["CHECKS", "CHUNK", "configure", "folder", "digest", "lookup", "record"]

CHECKS = f"zkgpu-keycheck-2/rounds={ROUNDS}"
"""The checks a verdict vouches for: bump the version when :func:`zkgpu.groth16.keycheck.check_key` changes."""
CHUNK = 8 << 20
"""Bytes per leaf of :func:`digest`."""
_TAG = b"zkgpu-zkey-tree-sha256-v1"
_FORMAT = "zkgpu-key-verdict/1"
_MAX_ENTRY = 4096
_FOLDER: Path | None = None


def configure(*, folder: str | Path | None) -> None:
    """Where verdicts go (created on first write, mode 0700); None (the library's default): no disk cache.

    Raises:
        ValueError: ``folder`` names an existing file that is not a folder.
    """
    global _FOLDER
    if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
        raise ValueError(f"key cache {folder} is a file, not a folder")
    _FOLDER = None if folder is None else Path(folder)


def folder() -> Path | None:
    """The configured folder, or None."""
    return _FOLDER


def digest(data: Any, *, threads: int | None = None) -> bytes:
    """The 32-byte tree SHA-256 of ``data`` (a C-contiguous buffer: bytes, bytearray, uint8 array; module docstring).

    Args:
        threads: hashing threads (default ``min(8, os.cpu_count())``).
    """
    view = memoryview(data).cast("B")
    size = len(view)
    chunks = [view[i : i + CHUNK] for i in range(0, size, CHUNK)] or [view]
    workers = max(1, min(threads or min(8, os.cpu_count() or 1), len(chunks)))
    if workers == 1:
        leaves = [hashlib.sha256(c).digest() for c in chunks]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            leaves = list(pool.map(lambda c: hashlib.sha256(c).digest(), chunks))
    root = hashlib.sha256(_TAG)
    root.update(size.to_bytes(8, "little") + CHUNK.to_bytes(8, "little"))
    for leaf in leaves:
        root.update(leaf)
    return root.digest()


def _seal(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _entry(dig: bytes, size: int) -> dict:
    fields = {"format": _FORMAT, "digest": dig.hex(), "bytes": size, "checks": CHECKS, "verdict": "ok"}
    return {**fields, "seal": _seal(fields)}


def _private(st: os.stat_result, *, folder: bool) -> bool:
    kind = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    owner = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return kind and owner and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def lookup(dig: bytes, size: int) -> bool:
    """Whether the configured folder holds a valid "checks passed" entry for this digest and byte count
    (module docstring); False without a folder, or for a missing, unreadable, foreign or damaged entry."""
    if _FOLDER is None:
        return False
    path = _FOLDER / f"{dig.hex()}.json"
    try:
        if not _private(os.stat(_FOLDER), folder=True):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            if not _private(os.fstat(fd), folder=False):
                return False
            raw = os.read(fd, _MAX_ENTRY + 1)
        finally:
            os.close(fd)
        entry = json.loads(raw) if len(raw) <= _MAX_ENTRY else None
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser's stack
        return False
    return entry == _entry(dig, size)


def record(dig: bytes, size: int) -> bool:
    """Write the "checks passed" entry for this digest and byte count (atomically; module docstring).
    Returns whether an entry is now in place; False without a folder or when it cannot be written."""
    if _FOLDER is None:
        return False
    if lookup(dig, size):
        return True
    path = _FOLDER / f"{dig.hex()}.json"
    tmp = None
    try:
        _FOLDER.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=_FOLDER)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(_entry(dig, size), f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # never over an entry that appeared meanwhile
        except FileExistsError:
            if not lookup(dig, size):
                os.replace(tmp, path)  # an invalid entry: replaced whole
                tmp = None
    except OSError:
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return lookup(dig, size)
