#!/usr/bin/env python3
"""The loops of two kernels in one disassembly, matched: called by `dev/sass.sh IMAGE A B`.

Usage: sass_loops.py ALL_SASS KERNEL_A KERNEL_B

A loop is a backward branch and the instructions from its target to it (an inner loop is listed
too, and inside its outer one). Each of A's loops is printed with its start, its length, and
SAME plus the start of B's loop with the very same instructions once registers, predicates,
constants and labels are renamed away, or DIFF; then the memory, barrier and clock instructions
it holds, which say which loop of the source it is (run 188: the pipelined push path's store loop
is the one with ST.E.128 and no LDG.E.128; its reduce loop polls LDG.E.64.STRONG.SYS flags and
reads LDG.E.128.STRONG.GPU). Two kernels whose hot loops are all SAME differ only in their
straight-line code.
"""
import re
import sys

path, kern_a, kern_b = sys.argv[1:4]
lines = open(path).read().split("\n")


def body(name):
    out, on = [], False
    for line in lines:
        if re.match(r"^[A-Za-z_$][\w$]*:\s*$", line) and not line.startswith(".L"):
            on = line.rstrip(":").strip() == name
            continue
        if on:
            out.append(line)
    if not out:
        sys.exit(f"sass_loops: no function {name} in {path}")
    return out


def norm(ins):
    ins = re.sub(r"/\*[0-9a-f]+\*/", "", ins)
    ins = re.sub(r"\bU?R\d+\b", "R", ins)
    ins = re.sub(r"\bU?P\d\b", "P", ins)
    ins = re.sub(r"0x[0-9a-f]+", "X", ins)
    ins = re.sub(r"\.L_x_\d+", "L", ins)
    return " ".join(ins.split())


def loops(name):
    label_at, ins = {}, []
    for line in body(name):
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            label_at[m.group(1)] = len(ins)
        elif "/*" in line:
            ins.append(line)
    found = []
    for i, line in enumerate(ins):
        m = re.search(r"BRA.*\((\.L_x_\d+)\)", line)
        if m and m.group(1) in label_at and label_at[m.group(1)] <= i:
            a = label_at[m.group(1)]
            found.append((ins[a].split()[0], [norm(x) for x in ins[a:i + 1]]))
    return found, len(ins)


def opcode(n):
    return n.split()[1] if n.startswith("@") else n.split()[0]


la, na = loops(kern_a)
lb, nb = loops(kern_b)
print(f"{kern_a}: {na} instructions, {len(la)} loops; {kern_b}: {nb} instructions, {len(lb)} loops")
in_b = {}
for start, n in lb:
    in_b.setdefault(tuple(n), start)
for start, n in la:
    hit = in_b.get(tuple(n))
    kinds = sorted({opcode(x) for x in n
                    if re.search(r"\b(LD|ST|LDG|STG|LDS|STS|LDL|STL|ATOM|RED|BAR|CS2R|MEMBAR)", x)})
    print(f"{start} {len(n):5d} {'SAME ' + hit if hit else 'DIFF':14s} {' '.join(kinds)}")
