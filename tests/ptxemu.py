"""A small PTX interpreter for tests: runs one thread of a straight-line kernel entry of nvcc's ``-ptx``
output in Python, so the inline-asm carry chains of zkgpu/kernels/ff.cuh (operand numbering, the
condition code, immediates) are checked on a machine without a GPU, exactly as nvcc emitted them.

Covers the instructions nvcc emits for the kernels tests/test_kernels_emulated.py runs this way: integer
add/sub/mul/mad with the carry flag (``.cc``, ``addc``/``madc``/``subc``), 32/64-bit moves, conversions,
shifts, logic, ``setp``/``selp``/predicated branches, ``ld.param``, ``ld.global``/``st.global`` of u32.
Anything else raises NotImplementedError naming the instruction (extend it then)."""

from __future__ import annotations

import re
from typing import Any

_M32, _M64 = (1 << 32) - 1, (1 << 64) - 1


def entry_body(ptx: str, name: str) -> list[str]:
    """The instruction lines and labels of ``.entry name`` (comments, declarations and braces removed)."""
    start = ptx.index(f".entry {name}(")
    end = ptx.index("\n}\n", start)
    out = []
    for raw in ptx[start:end].splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith((".reg", ".param", ".entry", ".local", ".shared")) or line in ("{", "}", ")"):
            continue
        out.append(line.rstrip(";").strip())
    return out


def _width(typ: str) -> int:
    return 64 if typ.endswith("64") else 32


def run(lines: list[str], params: list[int], memory: dict[int, int], *, tid: int = 0, ctaid: int = 0, ntid: int = 256) -> None:
    """Execute one thread. ``params``: the kernel's parameters in order (pointers are plain addresses into
    ``memory``, a dict from byte address to u32 word, read and written in place)."""
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if ln.endswith(":")}
    regs: dict[str, int] = {"%tid.x": tid, "%ctaid.x": ctaid, "%ntid.x": ntid}
    cc = 0

    def val(tok: str, mask: int) -> int:
        tok = tok.strip()
        if tok.startswith("%"):
            return regs[tok] & mask
        if tok.lower().startswith(("0x", "-0x")):
            return int(tok, 16) & mask
        return int(tok) & mask

    def addr(tok: str) -> int:
        inner = tok.strip()[1:-1]
        base, _, off = inner.partition("+")
        return regs[base.strip()] + (int(off) if off else 0)

    pc = 0
    while pc < len(lines):
        line = lines[pc]
        pc += 1
        if line.endswith(":"):
            continue
        if line.startswith("@"):
            pred, line = line.split(None, 1)
            neg = pred.startswith("@!")
            if bool(regs[pred.lstrip("@!")]) == neg:
                continue
        op, _, rest = line.partition(" ")
        args = [a.strip() for a in rest.split(",")] if rest.strip() else []
        parts = op.split(".")
        base, typ = parts[0], parts[-1]
        m = _M64 if _width(typ) == 64 else _M32
        bits = _width(typ)
        if base == "ret":
            return
        if base == "bra":
            pc = labels[args[0]]
            continue
        if base == "ld" and parts[1] == "param":
            idx = int(re.search(r"_param_(\d+)\]", args[1]).group(1))
            regs[args[0]] = params[idx] & m
        elif base == "ld" and parts[1] == "global" and typ in ("u32", "b32", "s32"):
            regs[args[0]] = memory.get(addr(args[1]), 0)
        elif base == "st" and parts[1] == "global" and typ in ("u32", "b32", "s32"):
            memory[addr(args[0])] = val(args[1], _M32)
        elif base == "cvta" or (base == "mov" and typ != "pred"):
            regs[args[0]] = val(args[-1], m)
        elif base == "cvt":
            dst_t, src_t = parts[-2], parts[-1]
            v = val(args[1], _M64 if _width(src_t) == 64 else _M32)
            if src_t.startswith("s") and _width(src_t) == 32 and v >> 31:
                v -= 1 << 32
            regs[args[0]] = v & (_M64 if _width(dst_t) == 64 else _M32)
        elif base in ("add", "sub", "addc", "subc"):
            a, b = val(args[1], m), val(args[2], m)
            carry_in = cc if base in ("addc", "subc") else 0
            if base.startswith("add"):
                s = a + b + carry_in
                carry_out = s >> bits
            else:
                s = a - b - carry_in
                carry_out = 1 if s < 0 else 0
            regs[args[0]] = s & m
            if "cc" in parts:
                cc = carry_out
        elif base in ("mad", "madc", "mul"):
            a, b = val(args[1], m), val(args[2], m)
            if "wide" in parts:
                regs[args[0]] = (a * b) & _M64
                continue
            prod = a * b
            part = (prod >> bits) if "hi" in parts else prod
            if base == "mul":
                regs[args[0]] = part & m
                continue
            s = (part & m) + val(args[3], m) + (cc if base == "madc" else 0)
            regs[args[0]] = s & m
            if "cc" in parts:
                cc = s >> bits
        elif base == "neg":
            regs[args[0]] = (-val(args[1], m)) & m
        elif base in ("and", "or", "xor") and typ != "pred":
            a, b = val(args[1], m), val(args[2], m)
            regs[args[0]] = (a & b) if base == "and" else (a | b) if base == "or" else (a ^ b)
        elif base in ("and", "or") and typ == "pred":
            a, b = bool(regs[args[1]]), bool(regs[args[2]])
            regs[args[0]] = int(a and b) if base == "and" else int(a or b)
        elif base == "not" and typ != "pred":
            regs[args[0]] = (~val(args[1], m)) & m
        elif base == "not":
            regs[args[0]] = int(not regs[args[1]])
        elif base in ("shl", "shr"):
            a, sh = val(args[1], m), val(args[2], _M32)
            if base == "shl":
                regs[args[0]] = (a << sh) & m if sh < bits else 0
            elif typ.startswith("s"):
                signed = a - (1 << bits) if a >> (bits - 1) else a
                regs[args[0]] = (signed >> min(sh, bits - 1)) & m
            else:
                regs[args[0]] = a >> sh if sh < bits else 0
        elif base == "selp":
            regs[args[0]] = val(args[1], m) if regs[args[3]] else val(args[2], m)
        elif base == "setp":
            cmp = parts[1]
            a, b = val(args[1], m), val(args[2], m)
            if typ.startswith("s"):
                a = a - (1 << bits) if a >> (bits - 1) else a
                b = b - (1 << bits) if b >> (bits - 1) else b
            res = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                   "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}[cmp]
            regs[args[0]] = int(res)
        else:
            raise NotImplementedError(f"ptxemu: {line}")


def call(ptx_lines: list[str], params: list[Any], memory: dict[int, int]) -> None:
    """``run`` with thread 0 of block 0."""
    run(ptx_lines, [int(p) for p in params], memory)
