"""circom2 and snarkjs from the repository's ``node_modules``: compile, set up, witness, prove, verify.

:func:`tools` finds node (given, :func:`configure`'s, else on PATH) and the node_modules (likewise, else the
repository's). :func:`build` runs the snarkjs flow for one circuit into a folder, skipping every step whose output
exists: circom2 (``--prime bls12381``), powers of tau (shared per size), ``groth16 setup``, one contribution,
verification key, witness. Entropy is fixed text: keys are for tests and benchmarks only. Built-in circuits
(:data:`CIRCUITS`): ``mulchain-N`` and ``poseidon-N`` (N chained ``Poseidon(2)``, 517 constraints each).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from zkgpu.groth16.formats import FormatError, read_sections
from zkgpu.groth16.setup import MAX_LOG_DOMAIN, fast_setup, r1cs_header

__all__ = [
    "configure",
    "NodeTools",
    "ToolError",
    "tools",
    "CIRCUITS",
    "circuit_source",
    "CircuitFiles",
    "build",
    "ptau_power",
    "snarkjs_verify",
    "snarkjs_prove",
]

REPO = Path(__file__).resolve().parents[2]
VERIFY_TIMEOUT_S = 600
"""The longest one ``snarkjs groth16 verify`` may take (a few seconds in practice; no run ever waits on it forever)."""
_NODE: dict[str, str | Path | None] = {"node": None, "node_modules": None}  # configure(...)


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP


def configure(*, node: str | os.PathLike[str] | None | _Keep = _KEEP, node_modules: str | os.PathLike[str] | None | _Keep = _KEEP) -> None:
    """Where :func:`tools` looks by default: ``node`` (None: on PATH) and ``node_modules`` (None: the repository's);
    a keyword not given keeps its value.

    Raises:
        ValueError: an empty value.
    """
    for name, value in (("node", node), ("node_modules", node_modules)):
        if value is not None and value is not _KEEP and not str(value):
            raise ValueError(f"circuits.configure: {name} must be a path or None, got ''")
    if node is not _KEEP:
        _NODE["node"] = None if node is None else str(node)
    if node_modules is not _KEEP:
        _NODE["node_modules"] = None if node_modules is None else Path(node_modules)


class ToolError(RuntimeError):
    """node, circom2 or snarkjs missing, or one of their commands failed (message: the command and
    the last line of its output)."""


@dataclass(frozen=True)
class NodeTools:
    """The node binary and the two CLIs' entry scripts."""

    node: str
    modules: Path

    @property
    def snarkjs(self) -> list[str]:
        return [self.node, str(self.modules / "snarkjs" / "build" / "cli.cjs")]

    @property
    def circom2(self) -> list[str]:
        return [self.node, str(self.modules / "circom2" / "cli.js")]

    @property
    def circomlib(self) -> Path:
        return self.modules / "circomlib" / "circuits"

    def run(self, cmd: list[str], *, cwd: Path | None = None, timeout: float | None = None) -> str:
        """Run a node command; returns stdout. Raises ToolError with the last output line on failure."""
        try:
            res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(cmd[1:3])}: timed out after {timeout} s") from None
        if res.returncode != 0:
            lines = [ln for ln in (res.stderr + res.stdout).splitlines() if ln.strip()]
            last = _strip_ansi(lines[-1]) if lines else f"exit {res.returncode}"
            tool = "snarkjs" if "snarkjs" in cmd[1] else "circom2"
            raise ToolError(f"{tool} {' '.join(cmd[2:4])}: {last}")
        return res.stdout


def _strip_ansi(s: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", s).strip()


def tools(*, node: str | os.PathLike[str] | None = None, node_modules: str | os.PathLike[str] | None = None) -> NodeTools:
    """Locate node and the node_modules (module docstring): ``node`` / ``node_modules`` when
    given, else those of :func:`configure`, else ``node`` on PATH and the repository's ``node_modules``.

    Raises:
        ToolError: node or the modules not found (says to run ``make node``).
    """
    given = node if node is not None else _NODE["node"]
    if given is not None:
        node = shutil.which(str(given))
        if not node:
            raise ToolError(f"node {given}: not an executable file (check ZKGPU_NODE)")
    else:
        node = shutil.which("node")
    if not node:
        raise ToolError("node not found: install Node.js (apt-get install nodejs) or set ZKGPU_NODE")
    mods = node_modules if node_modules is not None else _NODE["node_modules"]
    candidates = [Path(mods) if mods is not None else REPO / "node_modules"]
    for mods in candidates:
        if (mods / "snarkjs/build/cli.cjs").exists() and (mods / "circom2/cli.js").exists():
            return NodeTools(node=node, modules=mods)
    raise ToolError(f"snarkjs/circom2 not found in {', '.join(map(str, candidates))}: run `make node` (npm ci)")


_MULCHAIN = """pragma circom 2.0.0;
// t_0 = x*y, t_i = t_{i-1}*x + y: N multiplication constraints; y public, out public.
template MulChain(N) {
    signal input x;
    signal input y;
    signal output out;
    signal t[N];
    t[0] <== x * y;
    for (var i = 1; i < N; i++) { t[i] <== t[i-1] * x + y; }
    out <== t[N-1];
}
component main {public [y]} = MulChain(%d);
"""

_POSEIDON = """pragma circom 2.0.0;
include "poseidon.circom";
// N chained Poseidon(2) hashes of circomlib: h_0 = Poseidon(a, b), h_i = Poseidon(h_{i-1}, b).
template PoseidonChain(N) {
    signal input a;
    signal input b;
    signal output out;
    component h[N];
    for (var i = 0; i < N; i++) {
        h[i] = Poseidon(2);
        h[i].inputs[0] <== i == 0 ? a : h[i-1].out;
        h[i].inputs[1] <== b;
    }
    out <== h[N-1].out;
}
component main {public [b]} = PoseidonChain(%d);
"""

CIRCUITS = {"mulchain": (_MULCHAIN, {"x": "3", "y": "5"}), "poseidon": (_POSEIDON, {"a": "1", "b": "2"})}
"""Built-in circuit families: name -> (circom source with %d for N, input JSON)."""


CONSTRAINTS_PER_N = {"mulchain": 1, "poseidon": 517}
"""Constraints per unit of N of each family (circom2's default optimisation); with the public signals and the
constant they must fit the largest domain, 2^:data:`zkgpu.groth16.setup.MAX_LOG_DOMAIN`."""


def circuit_source(name: str) -> tuple[str, dict]:
    """``"mulchain-8"`` / ``"poseidon-1080"`` -> (circom source, input).

    Raises:
        ValueError: an unknown family, or an N below 1 or whose constraints would not fit a 2^28 domain
            (checked before circom runs: it would fail with an unreadable error, or run for hours).
    """
    fam, _, num = name.partition("-")
    if fam not in CIRCUITS or not num.isdigit() or int(num) < 1:
        raise ValueError(f"unknown circuit {name!r}: use one of {', '.join(f'{f}-N' for f in CIRCUITS)} (N >= 1)")
    most = ((1 << MAX_LOG_DOMAIN) - 3) // CONSTRAINTS_PER_N[fam]
    if int(num) > most:
        raise ValueError(f"circuit {name!r}: N = {int(num)} is more than {most}, the most whose constraints fit a 2^{MAX_LOG_DOMAIN} domain")
    src, inp = CIRCUITS[fam]
    return src % int(num), dict(inp)


@dataclass(frozen=True)
class CircuitFiles:
    """Paths of one built circuit (folder ``root``) and the seconds each step took (0 if cached)."""

    root: Path
    name: str
    r1cs: Path
    wasm: Path
    zkey: Path
    vkey: Path
    wtns: Path
    input: Path
    step_s: dict


def ptau_power(r1cs: Path) -> int:
    """The powers-of-tau size for a circuit: log2 of the domain, the next power of two >= constraints
    + public signals + 1 (snarkjs adds one constraint per public signal and the constant), at least 4
    (read from the r1cs header: section 1 holds n8, the prime, nWires, nPubOut, nPubIn, nPrvIn,
    nLabels, nConstraints)."""
    data, secs = read_sections(r1cs, b"r1cs", 1)
    _wires, pub_out, pub_in, _prv, cons = r1cs_header(r1cs, data, secs)
    need = cons + pub_out + pub_in + 1
    return max(4, (need - 1).bit_length())


def _whole(out: Path) -> bool:
    """Whether a cached output is whole: a binfile (``.r1cs``, ``.zkey``, ``.wtns``) whose sections all fit the file, a
    JSON file that parses. A file an interrupted step of an older version left cut short is not."""
    if out.suffix in (".r1cs", ".zkey", ".wtns"):
        try:
            read_sections(out, out.suffix[1:].encode(), 2, payload=False)
        except FormatError:
            return False
        return True
    if out.suffix == ".json":
        try:
            json.loads(out.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return False
    return True


def _step(steps: dict, name: str, out: Path, fn) -> None:
    """Run a build step unless its output exists and is whole (:func:`_whole`; a cut one is removed and made again).
    Each step writes its output under a temporary name and renames it into place, so an interrupted step leaves no
    output under the real name."""
    if out.exists() and _whole(out):
        steps[name] = 0.0
        return
    out.unlink(missing_ok=True)
    t = time.perf_counter()
    fn()
    steps[name] = round(time.perf_counter() - t, 3)


def _into_place(out: Path, run) -> None:
    """``run(tmp)`` writes ``out``'s content to a temporary name beside it; then it is renamed to ``out``."""
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.unlink(missing_ok=True)
    run(tmp)
    os.replace(tmp, out)


@contextlib.contextmanager
def _locked(lock: Path):
    """Hold an exclusive advisory lock on ``lock`` (created if missing) for the block: concurrent builds
    (pytest-xdist workers, two shells) of one circuit or one powers-of-tau file wait instead of racing."""
    with open(lock, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(name: str, folder: str | Path, *, ptau_dir: str | Path | None = None, setup: str = "snarkjs") -> CircuitFiles:
    """Compile, set up and compute the witness of a built-in circuit, cached; concurrent calls for one circuit wait
    on a file lock.

    Args:
        name: ``"mulchain-N"`` or ``"poseidon-N"``.
        folder: output, ``<folder>/<name>/`` (``<name>-fast/`` for the fast set-up); existing outputs reused.
        ptau_dir: powers-of-tau cache (default: ``folder``).
        setup: ``"snarkjs"`` or ``"fast"`` (:func:`zkgpu.groth16.setup.fast_setup`, known toxic waste).

    Returns:
        :class:`CircuitFiles`.

    Raises:
        ValueError: unknown circuit, or a symlink in the circuit's folder. ToolError: node tools missing or a step
            failed.
    """
    src, _ = circuit_source(name)
    if setup not in ("snarkjs", "fast"):
        raise ValueError(f"setup must be 'snarkjs' or 'fast', got {setup!r}")
    Path(folder).mkdir(parents=True, exist_ok=True)
    label = name if setup == "snarkjs" else f"{name}-fast"
    with _locked(Path(folder) / f".{label}.lock"):
        return _build(name, folder, ptau_dir=ptau_dir, setup=setup)


def _build(name: str, folder: str | Path, *, ptau_dir: str | Path | None, setup: str) -> CircuitFiles:
    src, inp = circuit_source(name)
    t = tools()
    root = Path(folder) / (name if setup == "snarkjs" else f"{name}-fast")
    root.mkdir(parents=True, exist_ok=True)
    _refuse_links(root, Path(folder))
    pdir = Path(ptau_dir) if ptau_dir else Path(folder)
    pdir.mkdir(parents=True, exist_ok=True)
    circ = root / "circuit.circom"
    if not circ.exists() or circ.read_text() != src:
        circ.write_text(src)
        for old in root.iterdir():
            if old != circ:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
    inp_path = root / "input.json"
    inp_path.write_text(json.dumps(inp))
    steps: dict = {}
    r1cs, wasm = root / "circuit.r1cs", root / "circuit_js" / "circuit.wasm"
    def compile_() -> None:
        # circom2 (WASI) cannot follow an include path that leaves its working folder through "..":
        # run it in the circuit's folder with a copy of circomlib's circuits there. It writes into a
        # temporary folder; the wasm moves into place first, the r1cs (this step's output) last.
        shutil.copytree(t.circomlib, root / "circomlib", dirs_exist_ok=True)
        tmp = root / ".compile.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        t.run([*t.circom2, circ.name, "--r1cs", "--wasm", "--prime", "bls12381", "-l", "circomlib", "-o", tmp.name], cwd=root)
        shutil.rmtree(root / "circuit_js", ignore_errors=True)
        os.replace(tmp / "circuit_js", root / "circuit_js")
        os.replace(tmp / "circuit.r1cs", r1cs)
        shutil.rmtree(tmp, ignore_errors=True)

    if not wasm.is_file():  # a compile stopped before its wasm (older versions wrote the r1cs first): compile again
        r1cs.unlink(missing_ok=True)
    _step(steps, "compile", r1cs, compile_)
    z0, zkey, vkey, wtns = root / "circuit_0.zkey", root / "circuit.zkey", root / "vkey.json", root / "circuit.wtns"
    if setup == "fast":
        _step(steps, "fast_setup", zkey, lambda: fast_setup(r1cs, zkey))
        return _finish(t, name, root, r1cs, wasm, zkey, vkey, wtns, inp_path, steps)
    power = ptau_power(r1cs)
    ptau = pdir / f"bls12381_{power}.ptau"

    def make_ptau() -> None:  # each stage's file is kept until the last exists: an interrupted run resumes
        p0, p1 = pdir / f"bls12381_{power}.0.ptau", pdir / f"bls12381_{power}.1.ptau"
        for out, args in (
            (p0, ["powersoftau", "new", "bls12381", str(power), "OUT"]),
            (p1, ["powersoftau", "contribute", str(p0), "OUT", "--name=zkgpu", "-e=zkgpu test ptau"]),
            (ptau, ["powersoftau", "prepare", "phase2", str(p1), "OUT"]),
        ):
            if not out.exists():
                tmp = f"{out}.tmp"
                t.run([*t.snarkjs, *(tmp if a == "OUT" else a for a in args)])
                os.replace(tmp, out)
        p0.unlink()
        p1.unlink()

    with _locked(pdir / f".bls12381_{power}.lock"):
        _step(steps, "ptau", ptau, make_ptau)

    def snarkjs_setup() -> None:
        t.run([*t.snarkjs, "groth16", "setup", str(r1cs), str(ptau), str(z0)])
        t.run([*t.snarkjs, "zkey", "contribute", str(z0), str(zkey) + ".tmp", "--name=zkgpu", "-e=zkgpu test key"])
        os.replace(str(zkey) + ".tmp", zkey)
        z0.unlink()

    _step(steps, "setup", zkey, snarkjs_setup)
    return _finish(t, name, root, r1cs, wasm, zkey, vkey, wtns, inp_path, steps)


def _refuse_links(root: Path, folder: Path) -> None:
    """Raise ValueError if writing the circuit's files could leave ``folder``: ``root`` is a symlink or
    resolves outside it, or one of its entries (or ``circuit_js``'s) is a symlink."""
    if root.is_symlink() or not root.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"{root} is a symlink or leads out of {folder}: zkgpu circuit never writes through one (remove it)")
    for d in (root, root / "circuit_js"):
        if d.is_symlink():
            raise ValueError(f"{d} is a symlink: zkgpu circuit never writes through one (remove it)")
        for entry in d.iterdir() if d.is_dir() else ():
            if entry.is_symlink():
                raise ValueError(f"{entry} is a symlink: zkgpu circuit never writes through one (remove it)")


def _finish(t: NodeTools, name: str, root: Path, r1cs: Path, wasm: Path, zkey: Path, vkey: Path, wtns: Path, inp: Path, steps: dict) -> CircuitFiles:
    _step(steps, "vkey", vkey, lambda: _into_place(vkey, lambda tmp: t.run([*t.snarkjs, "zkey", "export", "verificationkey", str(zkey), str(tmp)])))
    _step(steps, "witness", wtns, lambda: _into_place(wtns, lambda tmp: t.run([*t.snarkjs, "wtns", "calculate", str(wasm), str(inp), str(tmp)])))
    return CircuitFiles(root=root, name=name, r1cs=r1cs, wasm=wasm, zkey=zkey, vkey=vkey, wtns=wtns, input=inp, step_s=steps)


def snarkjs_verify(vkey: str | Path, public: str | Path, proof: str | Path) -> bool:
    """``snarkjs groth16 verify``: True when it prints OK (exit 0), False for "Invalid proof".

    Raises:
        ToolError: node tools missing, or no answer within :data:`VERIFY_TIMEOUT_S` (a vkey that never ends).
    """
    t = tools()
    try:
        res = subprocess.run([*t.snarkjs, "groth16", "verify", str(vkey), str(public), str(proof)], capture_output=True, text=True, check=False,
                             timeout=VERIFY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ToolError(f"snarkjs groth16 verify {vkey}: no answer within {VERIFY_TIMEOUT_S} s") from None
    return res.returncode == 0 and "OK" in res.stdout


def snarkjs_prove(zkey: str | Path, wtns: str | Path, proof: str | Path, public: str | Path) -> float:
    """``snarkjs groth16 prove`` as a whole command; returns its wall-clock seconds.

    Raises:
        ToolError: node tools missing or the command failed.
    """
    t = tools()
    t0 = time.perf_counter()
    t.run([*t.snarkjs, "groth16", "prove", str(zkey), str(wtns), str(proof), str(public)])
    return time.perf_counter() - t0
