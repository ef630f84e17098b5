"""``zkgpu report``: execute the notebook suite and render it to HTML with an index page.

Each notebook in ``notebooks/`` (sorted by name) is executed with nbclient in its own kernel,
with ``ZKGPU_MODE`` set (``replay`` without a GPU by default), then exported with nbconvert's
HTML exporter into ``reports/``; the index names the data the notebooks read (live GPU, a recording
in ``data/``, or the CPU stand-in) and lists the key numbers each notebook wrote into
``reports/key_numbers/`` (``ZKGPU_NB_OUT``). A failing notebook is reported by name with the error of the
failing cell, rendered up to that cell, and the remaining notebooks still run; the run then
returns False (the command exits non-zero).
"""

from __future__ import annotations

import datetime as _dt
import html
import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NotebookResult", "run_report", "find_notebooks"]

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class NotebookResult:
    """Outcome of one notebook: name, status ("ok" or "failed"), seconds, HTML path, error text."""

    name: str
    status: str
    seconds: float
    html: Path | None
    error: str = ""


def find_notebooks(root: Path | None = None, only: tuple[str, ...] = ()) -> list[Path]:
    """The notebooks of the suite, sorted by name; ``only`` keeps names containing any given text."""
    nb_dir = (root or REPO_ROOT) / "notebooks"
    paths = sorted(p for p in nb_dir.glob("*.ipynb") if not p.name.startswith("_"))
    if only:
        paths = [p for p in paths if any(s in p.name for s in only)]
    return paths


def _execute(path: Path, out_dir: Path, mode: str, timeout: int) -> NotebookResult:
    import nbformat  # noqa: PLC0415
    from nbclient import NotebookClient  # noqa: PLC0415
    from nbclient.exceptions import CellExecutionError  # noqa: PLC0415
    from nbconvert import HTMLExporter  # noqa: PLC0415

    nb = nbformat.read(path, as_version=4)
    env_before = os.environ.get("ZKGPU_MODE")
    os.environ["ZKGPU_MODE"] = mode
    t0 = time.perf_counter()
    status, error = "ok", ""
    try:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        client.execute()
    except CellExecutionError as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # kernel died, timeout, ...
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        if env_before is None:
            os.environ.pop("ZKGPU_MODE", None)
        else:
            os.environ["ZKGPU_MODE"] = env_before
    seconds = time.perf_counter() - t0
    body, _ = HTMLExporter().from_notebook_node(nb)
    out = out_dir / f"{path.stem}.html"
    out.write_text(body, encoding="utf-8")
    nbformat.write(nb, out_dir / path.name)
    return NotebookResult(path.stem, status, seconds, out, error)


def _data_note(mode: str) -> str:
    """One sentence naming the data the notebooks read (see zkgpu.replay)."""
    if mode == "live":
        return "Data: measured live on this machine's GPU while the notebooks ran."
    from .replay import latest_recording  # noqa: PLC0415

    rec = latest_recording()
    if rec is None:
        return ("Data: no recording in data/ yet, so every notebook uses a tiny CPU stand-in run of the pipeline "
                "(CPU milliseconds, NOT GPU numbers). Record one on a GPU with `zkgpu record`.")
    return f"Data: replay of {rec.label}."


def _key_numbers_html(key_dir: Path) -> str:
    import json  # noqa: PLC0415

    rows = []
    for f in sorted(key_dir.glob("*.json")):
        try:
            obj = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            continue
        items = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in obj.items())
        rows.append(f"<tr><td>{html.escape(f.stem)}</td><td><code>{html.escape(items)}</code></td></tr>")
    return f"<h2>Key numbers</h2><table>{''.join(rows)}</table>" if rows else ""


def _write_index(out_dir: Path, results: list[NotebookResult], mode: str, note: str, extra_html: str = "") -> Path:
    from .cli import environment  # noqa: PLC0415

    env = environment()
    rows = "\n".join(
        f"<tr><td><a href='{html.escape(r.html.name) if r.html else '#'}'>{html.escape(r.name)}</a></td>"
        f"<td class='{r.status}'>{r.status}</td><td>{r.seconds:.1f}</td>"
        f"<td><pre>{html.escape(r.error.splitlines()[-1] if r.error else '')}</pre></td></tr>"
        for r in results
    )
    env_rows = "\n".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in env.items())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>zkgpu report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}} td,th{{padding:.2em .8em;text-align:left}}
.ok{{color:#070}} .failed{{color:#b00;font-weight:bold}} pre{{margin:0;white-space:pre-wrap}}</style></head><body>
<h1>zkgpu: GPU bottlenecks in a Groth16 prover</h1>
<p>Generated {_dt.datetime.now().isoformat(timespec='seconds')} in <b>{html.escape(mode)}</b> mode. {html.escape(note)}</p>
<h2>Notebooks</h2><table><tr><th>notebook</th><th>status</th><th>seconds</th><th>error</th></tr>{rows}</table>
{extra_html}
<h2>Environment</h2><table>{env_rows}</table></body></html>"""
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def run_report(out_dir: str | Path = "reports", mode: str | None = None, only: tuple[str, ...] = (), timeout: int = 1800) -> bool:
    """Execute the notebooks into ``out_dir``; True when every notebook ran without error.

    Args:
        out_dir: folder for the executed notebooks, their HTML and ``index.html``.
        mode: ``live``, ``replay`` or ``auto`` (default: ``$ZKGPU_MODE`` or ``auto``; auto is
            live when a GPU is present, else replay).
        only: run only notebooks whose file name contains one of these strings.
        timeout: seconds allowed per cell.
    """
    from tqdm.auto import tqdm  # noqa: PLC0415

    from ._cuda import gpu_available  # noqa: PLC0415

    mode = mode or os.environ.get("ZKGPU_MODE", "auto")
    if mode == "auto":
        mode = "live" if gpu_available() else "replay"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notebooks = find_notebooks(only=only)
    note = _data_note(mode) if notebooks else "No notebooks exist yet in notebooks/: nothing was executed."
    key_dir = out / "key_numbers"
    key_dir.mkdir(exist_ok=True)
    nb_out_before = os.environ.get("ZKGPU_NB_OUT")
    os.environ["ZKGPU_NB_OUT"] = str(key_dir.resolve())  # notebooks drop their key numbers here
    results: list[NotebookResult] = []
    try:
        for path in tqdm(notebooks, desc="notebooks", unit="nb"):
            res = _execute(path, out, mode, timeout)
            results.append(res)
            if res.status != "ok":
                tqdm.write(f"FAILED {path.name}:\n{res.error[-3000:]}")
    finally:
        if nb_out_before is None:
            os.environ.pop("ZKGPU_NB_OUT", None)
        else:
            os.environ["ZKGPU_NB_OUT"] = nb_out_before
    index = _write_index(out, results, mode, note, _key_numbers_html(key_dir))
    failed = [r.name for r in results if r.status != "ok"]
    print(f"report: {len(results) - len(failed)}/{len(results)} notebooks ok -> {index}")
    if note:
        print(f"report: {note}")
    if failed:
        print(f"report: failed: {', '.join(failed)}")
    return not failed
