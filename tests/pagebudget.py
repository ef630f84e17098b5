"""Page budgets of the report (issue 21), measured on rendered pages: prose words, screens at 1400 px
(headless Chromium), tables longer than 12 rows, absolute paths. Used by tests/test_notebooks.py and
tests/test_report_pages.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from zkgpu.app.lecture import LONG_TABLE_ROWS, table_rows

#: The budgets: a notebook reads in <= 10 minutes.
MAX_WORDS, MAX_SCREENS, MAX_LONG_TABLES = 1200, 8, 3
#: One screen: 1400 px wide, 900 px high (a 1400-px laptop's browser window).
SCREEN = (1400, 900)
#: Chromium's flags: no network, no profile, no GPU (CI runs it as root without a sandbox).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def prose_words(nb) -> int:
    """Words of a notebook's markdown cells (its prose), without code spans' punctuation counted apart."""
    return sum(len(str(c.source).split()) for c in nb.cells if c.cell_type == "markdown")


def long_tables(page: str, limit: int = LONG_TABLE_ROWS) -> int:
    """Tables with more than ``limit`` body rows that a page shows unfolded (a table inside a closed
    ``<details>`` is folded away)."""
    unfolded = re.sub(r"<details\b(?![^>]*\bopen\b).*?</details>", "", page, flags=re.S | re.I)
    return sum(1 for n in table_rows(unfolded) if n > limit)


def absolute_paths(page: str, roots: tuple[str, ...]) -> list[str]:
    """The absolute paths of this machine (under any of ``roots``) a page prints."""
    found = []
    for r in roots:
        if r and r != "/":
            found += [m.group(0) for m in re.finditer(re.escape(r) + r"[^\s\"'<]*", page)]
    return found


def chromium() -> str | None:
    """The Chromium binary (Debian's ``chromium``), or None."""
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


def page_height(path: Path, width: int = SCREEN[0]) -> int:
    """The rendered height in px of an HTML page at ``width`` px, in headless Chromium with a fresh profile.

    Raises:
        RuntimeError: Chromium is missing or gave no height (its stderr's end).
    """
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed")
    probe = ("<script>window.addEventListener('load',()=>{document.body.setAttribute('data-zkgpu-height',"
             "String(document.documentElement.scrollHeight))});</script>")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / path.name
        f.write_text(path.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
        out = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={d}/profile", f"--window-size={width},{SCREEN[1]}",
                              "--virtual-time-budget=5000", "--dump-dom", f.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'data-zkgpu-height="(\d+)"', out.stdout)
    if m is None:
        raise RuntimeError(f"no page height from chromium for {path.name}: {out.stderr[-300:]}")
    return int(m.group(1))


def screens(path: Path) -> float:
    """A page's height in screens (:data:`SCREEN`)."""
    return page_height(path) / SCREEN[1]


def conflicting_numbers(pages: dict[str, dict]) -> list[str]:
    """Key numbers shown under one name (the key, or the label a page prints) and scenario with
    different values on different pages, where they do not name different recordings:
    ``pages`` is ``{page: {key: {"value", "label", "scenario", "recording"}}}``."""
    groups: dict[tuple[str, str, str], list[tuple[str, object, str]]] = {}
    for page, numbers in pages.items():
        for key, e in numbers.items():
            if not isinstance(e, dict) or not isinstance(e.get("value"), (int, float)) or isinstance(e.get("value"), bool):
                continue
            for name in {("key", key), ("label", str(e.get("label") or key))}:
                groups.setdefault((*name, str(e.get("scenario") or "")), []).append((page, e["value"], str(e.get("recording") or "")))
    bad = []
    for (kind, name, scen), shown in groups.items():
        by_rec: dict[str, set] = {}
        for _, v, rec in shown:
            by_rec.setdefault(rec, set()).add(round(float(v), 9))
        values = {v for vs in by_rec.values() for v in vs}
        if len(values) > 1 and ("" in by_rec or any(len(vs) > 1 for vs in by_rec.values())):
            bad.append(f"{kind} {name!r} (scenario {scen!r}): " + ", ".join(f"{p} {v:.4g} [{r or 'no recording named'}]" for p, v, r in shown))
    return bad


_KEY_UNITS = {"%": "%", "ms": "ms", "partitions/min": "/min", "GB/s": "GB/s", "x": "×", "": ""}


def _decimals(text: str) -> int | None:
    """Decimals of the number a shown text prints ("65.0%" -> 1, "1,056 /min" -> 0; None: no number)."""
    m = re.search(r"-?[\d,]*\.?\d+", text)
    if m is None:
        return None
    return len(m.group(0).split(".")[1]) if "." in m.group(0) else 0


def _same(a: tuple, b: tuple, unit: str) -> bool:
    """Two shown values (page, value, decimals printed, ...) that print alike at the coarser precision of the two."""
    d = min(x for x in (a[2], b[2], 9) if x is not None)
    scale = 100.0 if unit == "%" else 1.0  # a % value is a fraction, printed in percent
    return round(a[1] * scale, d) == round(b[1] * scale, d)


def conflicting_shown(shown: dict[str, list[dict]], numbers: dict[str, dict] | None = None) -> list[str]:
    """One value per name across the report (issue 21): what pages showed under a name of
    :data:`zkgpu.analysis.keynumbers.STATISTICS` (``shown``: ``{page: [{"name", "value", "text", "scenario",
    "recording", "statistic", "unit"}]}``, ``zkgpu.analysis.keynumbers.show``) and the key numbers whose key is
    ``<scenario>_<name>`` (``numbers``: ``{page: {key: entry}}``), grouped by name, scenario, statistic and unit:
    two values that differ at the precision printed, from one recording or where one names none, conflict."""
    from zkgpu.analysis import keynumbers

    groups: dict[tuple[str, str, str, str], list[tuple[str, float, int | None, str, str]]] = {}
    for page, entries in shown.items():
        for e in entries:
            key = (e["name"], e.get("scenario", ""), e.get("statistic", ""), e.get("unit", ""))
            groups.setdefault(key, []).append((page, float(e["value"]), _decimals(e["text"]), str(e.get("recording") or ""), e["text"]))
    for page, nums in (numbers or {}).items():
        for k, e in nums.items():
            if not isinstance(e, dict) or isinstance(e.get("value"), bool) or not isinstance(e.get("value"), (int, float)):
                continue
            scen = str(e.get("scenario") or "")
            name = keynumbers.base_name(k.removeprefix(f"{scen}_") if scen else k)
            if name is None or e.get("unit") not in _KEY_UNITS:
                continue
            # a label that says "mean per partition" gives the statistic of the bars that add up (the name's own for h2d_exposed)
            stat = keynumbers.MEAN_PER_PARTITION if "mean per partition" in str(e.get("label")) and name != "h2d_exposed" else ""
            groups.setdefault((name, scen, stat, _KEY_UNITS[e["unit"]]), []).append(
                (page, float(e["value"]), None, str(e.get("recording") or ""), f"key number {k}"))
    bad = []
    for (name, scen, stat, unit), vals in groups.items():
        clash = [(a, b) for i, a in enumerate(vals) for b in vals[i + 1:] if (a[3] == b[3] or not a[3] or not b[3]) and not _same(a, b, unit)]
        if clash:
            a, b = clash[0]
            bad.append(f"{name!r} (scenario {scen!r}, statistic {stat or 'its own'!r}, {unit or 'no unit'}): "
                       f"{a[0]} shows {a[4]!r} [{a[3] or 'no recording named'}], {b[0]} {b[4]!r} [{b[3] or 'no recording named'}]"
                       + (f" (and {len(clash) - 1} more pairs)" if len(clash) > 1 else ""))
    return bad


def screenshot(path: Path, png: Path, width: int = SCREEN[0]) -> int:
    """A full-page screenshot of an HTML page at ``width`` px (headless Chromium, the window as tall as
    the page, :func:`page_height`) into ``png``; returns the height in px. For reading a page as a
    class sees it: ``python tests/pagebudget.py reports/ shots/`` shoots every page of a report.

    Raises:
        RuntimeError: Chromium is missing or wrote no picture.
    """
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium is not installed")
    height = page_height(path, width)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={d}/profile", f"--window-size={width},{height}",
                        "--hide-scrollbars", "--virtual-time-budget=5000", f"--screenshot={png.resolve()}", path.resolve().as_uri()],
                       capture_output=True, text=True, timeout=180)
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {path.name}")
    return height


if __name__ == "__main__":  # python tests/pagebudget.py REPORT_DIR OUT_DIR: the landing page and every lecture page, with their screens
    import sys

    report_dir, shots = Path(sys.argv[1]), Path(sys.argv[2])
    shots.mkdir(parents=True, exist_ok=True)
    for page in [report_dir / "index.html", *sorted((report_dir / "lecture").glob("*.html"))]:
        stem = "landing" if page.parent == report_dir else "lecture_" + page.stem
        h = screenshot(page, shots / f"{stem}.png")
        print(f"{stem}: {h} px, {h / SCREEN[1]:.1f} screens")
