"""nsys SQLite exports → the event table (:func:`read_nsys_sqlite`), and a writer of that layout (:func:`demo_nsys_sqlite`)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pandas as pd

from zkgpu.core.events import normalize_events

__all__ = ["read_nsys_sqlite", "demo_nsys_sqlite"]

#: CUPTI_ACTIVITY_MEMCPY_KIND values (CUPTI ``CUpti_ActivityMemcpyKind``) → short names.
_COPY_KIND = {0: "unknown", 1: "htod", 2: "dtoh", 3: "htoa", 4: "atoh", 5: "atoa", 6: "atod", 7: "dtoa", 8: "dtod", 9: "htoh", 10: "ptop"}
#: CUPTI_ACTIVITY_MEMORY_KIND values → names.
_MEM_KIND = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed", 6: "device_static", 7: "managed_static"}
_NVTX_RANGE_TYPES = (59, 60, 70, 71)  # push/pop, start/end (and their payload variants)


def _tables(con: sqlite3.Connection) -> dict[str, set[str]]:
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')"):
        cols = {r[1] for r in con.execute(f'PRAGMA table_info("{name}")')}
        out[name] = cols
    return out


def _enum(con: sqlite3.Connection, tables: dict[str, set[str]], name: str, fallback: dict[int, str]) -> dict[int, str]:
    if name in tables and {"id", "name"} <= tables[name]:
        m = {int(i): str(n).lower() for i, n in con.execute(f'SELECT id, name FROM "{name}"')}
        return {k: v.replace("cuda_memcpy_kind_", "").replace("cuda_memopr_", "").replace("cupti_activity_memory_kind_", "") for k, v in m.items()}
    return fallback


_INT_FIELD = re.compile(r"\b(partition|worker|gpu)[=:](\d+)\b")
_SHORT_FIELD = re.compile(r"(?<![\w=])([pwg])(\d+)\b")  # zkgpu.pipeline.trace labels: "ntt_msm_h p3 w1"
_SHORT_NAME = {"p": "partition", "w": "worker", "g": "gpu"}


def read_nsys_sqlite(path: str | Path, run: str | None = None) -> pd.DataFrame:
    """Event table from an ``nsys export --type sqlite`` file (ns since session start). Rows: NVTX ranges (phase = first
    word of the label; ``pN``/``wN``/``gN`` or ``partition=`` fill columns); CUPTI kernels (phase ``kernel``); CUPTI
    memcpys (phase ``memcpy_<kind>``, bytes). Bad rows are skipped and counted in ``df.attrs["skipped_rows"]``; run
    defaults to the file stem. Raises FileNotFoundError: no such file. ValueError: not SQLite, none of the tables, or a
    damaged one."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"nsys SQLite export not found: {p}")
    run = run or p.stem
    try:  # read-only; as_uri() escapes '?', '#' and '%' in the file name
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
        tables = _tables(con)
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{p} is not an SQLite database: {e}") from e
    try:
        return _read_nsys(con, tables, p, run)
    except (sqlite3.DatabaseError, TypeError) as e:  # a damaged or cut file, a table without start/end, a text id
        raise ValueError(f"{p}: unreadable nsys export ({e})") from e
    finally:
        con.close()


def _times(start: object, end: object) -> tuple[int, int] | None:
    """(start_ns, end_ns) of a row, or None where a time is missing, not an integer, or end < start."""
    try:
        s, e = int(start), int(end)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return (s, e) if e >= s else None


def _read_nsys(con: sqlite3.Connection, tables: dict[str, set[str]], p: Path, run: str) -> pd.DataFrame:
    wanted = ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")
    if not any(t in tables for t in wanted):
        raise ValueError(f"{p} has none of the nsys tables {wanted}; found {sorted(tables)[:10]}")
    for t in wanted:
        if t in tables and not {"start", "end"} <= tables[t]:  # SQLite would read a missing "end" as the text 'end'
            raise ValueError(f"{p}: unreadable nsys export (table {t} has no start/end columns: {', '.join(sorted(tables[t]))})")
    strings: dict[int, str] = {}
    if "StringIds" in tables:
        strings = {int(i): str(v) for i, v in con.execute("SELECT id, value FROM StringIds")}
    rows: list[dict] = []
    skipped = 0
    if "NVTX_EVENTS" in tables:
        cols = tables["NVTX_EVENTS"]
        sel = ["start", '"end"']
        for c in ("text", "textId", "domainId", "globalTid", "eventType"):
            sel.append(c if c in cols else f"NULL AS {c}")
        q = f"SELECT {', '.join(sel)} FROM NVTX_EVENTS"
        recs = con.execute(q).fetchall()
        domains: dict[int, str] = {}
        for _start, _end, text, tid, dom, _gtid, et in recs:
            if et == 75 and dom is not None:  # NvtxDomainCreate
                domains[int(dom)] = text if text is not None else strings.get(tid, str(dom))
        for start, end, text, tid, dom, gtid, et in recs:
            if end is None or start is None or (et is not None and et not in _NVTX_RANGE_TYPES):
                continue  # a mark, a domain or an open range: not a range
            if _times(start, end) is None:
                skipped += 1
                continue
            txt = text if text is not None else (strings.get(int(tid)) if tid is not None else None)
            txt = txt or ""
            first = re.split(r"[\s:,]+", txt.strip(), maxsplit=1)[0] if txt.strip() else "nvtx"
            r = {"run": run, "source": "nsys", "phase": first, "start_ns": int(start), "end_ns": int(end)}
            rest = txt.strip()[len(first):]
            for k, v in _SHORT_FIELD.findall(rest):
                r[_SHORT_NAME[k]] = int(v)
            for k, v in _INT_FIELD.findall(rest):
                r[k] = int(v)
            d = [f"text={txt}"]
            if dom is not None:
                d.append(f"domain={domains.get(int(dom), dom)}")
            if gtid is not None:
                d.append(f"tid={int(gtid) & 0xFFFFFF}")
            r["detail"] = ",".join(d)
            rows.append(r)
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        cols = tables["CUPTI_ACTIVITY_KIND_KERNEL"]
        name_col = next((c for c in ("shortName", "demangledName", "mangledName") if c in cols), None)
        sel = ["start", '"end"', "deviceId" if "deviceId" in cols else "NULL", "streamId" if "streamId" in cols else "NULL", name_col or "NULL"]
        for start, end, dev, stream, name in con.execute(f"SELECT {', '.join(sel)} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            if _times(start, end) is None:
                skipped += 1
                continue
            nm = strings.get(int(name), str(name)) if isinstance(name, int) else (name or "")
            rows.append(
                {
                    "run": run,
                    "source": "nsys",
                    "gpu": dev,
                    "phase": "kernel",
                    "start_ns": int(start),
                    "end_ns": int(end),
                    "gpu_ms": (int(end) - int(start)) / 1e6,
                    "detail": f"name={nm},stream={stream}",
                }
            )
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        cols = tables["CUPTI_ACTIVITY_KIND_MEMCPY"]
        copy_kind = _enum(con, tables, "ENUM_CUDA_MEMCPY_OPER", _COPY_KIND)
        mem_kind = _enum(con, tables, "ENUM_CUDA_MEM_KIND", _MEM_KIND)
        sel = ["start", '"end"']
        for c in ("bytes", "copyKind", "srcKind", "dstKind", "deviceId", "streamId"):
            sel.append(c if c in cols else f"NULL AS {c}")
        for start, end, nbytes, ck, sk, dk, dev, stream in con.execute(f"SELECT {', '.join(sel)} FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            if _times(start, end) is None:
                skipped += 1
                continue
            kind = copy_kind.get(int(ck), str(ck)) if ck is not None else "unknown"
            d = []
            if sk is not None:
                d.append(f"src={mem_kind.get(int(sk), sk)}")
            if dk is not None:
                d.append(f"dst={mem_kind.get(int(dk), dk)}")
            d.append(f"stream={stream}")
            rows.append(
                {
                    "run": run,
                    "source": "nsys",
                    "gpu": dev,
                    "phase": f"memcpy_{kind}",
                    "start_ns": int(start),
                    "end_ns": int(end),
                    "gpu_ms": (int(end) - int(start)) / 1e6,
                    "bytes": nbytes,
                    "detail": ",".join(d),
                }
            )
    df = normalize_events(pd.DataFrame(rows)) if rows else normalize_events(pd.DataFrame({"start_ns": [], "end_ns": []}))
    df = df.sort_values(["start_ns", "end_ns"], kind="stable").reset_index(drop=True)
    df.attrs["skipped_rows"] = skipped
    return df



def demo_nsys_sqlite(events: pd.DataFrame, path: str | Path) -> Path:
    """Write an event table as a small SQLite file in nsys' export layout (NVTX ranges, kernels, HtoD memcpys). Raises
    FileExistsError: ``path`` exists."""
    p = Path(path)
    if p.exists():
        raise FileExistsError(f"{p} exists; demo_nsys_sqlite writes new files only")
    con = sqlite3.connect(p)
    try:
        con.executescript(
            """
            CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
                text TEXT, textId INTEGER, domainId INTEGER, globalTid INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
                deviceId INTEGER, streamId INTEGER, shortName INTEGER);
            CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
                bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER, deviceId INTEGER, streamId INTEGER);
            """
        )
        strings: dict[str, int] = {}

        def sid(s: str) -> int:
            if s not in strings:
                strings[s] = len(strings) + 1
                con.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
            return strings[s]

        con.execute("INSERT INTO NVTX_EVENTS VALUES (0, NULL, 75, 'zkgpu', NULL, 1, NULL)")
        kernels = {"ntt": "ntt_radix_pass", "h_msm": "msm_bucket_accumulate", "batch_add": "batch_addition", "tail_msm": "msm_bucket_accumulate"}
        for r in events.itertuples(index=False):
            w = None if pd.isna(r.worker) else int(r.worker)
            part = None if pd.isna(r.partition) else int(r.partition)
            text = str(r.phase) + (f" p{part}" if part is not None else "") + (f" w{w}" if w is not None else "")  # zkgpu.pipeline.trace label
            tid = 1000 + (w if w is not None else 99)
            con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, 1, ?)", (int(r.start_ns), int(r.end_ns), sid(text), tid))
            dev = 0 if pd.isna(r.gpu) else int(r.gpu)
            if r.phase in kernels:
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?)",
                            (int(r.start_ns), int(r.end_ns), dev, 7 + (w or 0), sid(kernels[r.phase])))
            elif r.phase == "h2d" and not pd.isna(r.bytes):
                src = 1 if "pageable" in str(r.detail) else 2
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, ?, 3, ?, ?)",
                            (int(r.start_ns), int(r.end_ns), int(r.bytes), src, dev, 7 + (w or 0)))
        con.commit()
    finally:
        con.close()
    return p
