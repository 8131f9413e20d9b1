#!/usr/bin/python3
"""Randomized test matrix of the compiled (MLIR CPU) attention kernels.

    matrix.py --attnc PATH [-j N] [--seed S] [--count N | --full] [--only I[,J...]]
              [--list] [--keep DIR] [--backend B] [--halide-schedule auto:NAME] [-v]

The axes below span the attention op: score kinds, masks (alone, combined, and
with fully masked rows), biases, softcap, layouts, GQA/MQA, dtypes, S and T,
Dk (and Dv != Dk), fixed and run-time dims, return_lse, thread counts, CPU
targets (host, x86-64, x86-64-avx2) and schedules (default, small tiles, odd
tiles).  Their
full product is far too large, so the default run is a *pairwise covering
sample* built greedily with a fixed seed: every pair of values of every two
axes appears in at least one case (so every value of every axis does too).
The default run takes 800 cases: the covering arrays of seeds S, S+1, ...
(about 65 cases each, twelve of them and part of a thirteenth), so each pair
appears about twelve times with different concrete sizes and values (each
case compiles a kernel in about 0.3 s of CPU: 2-3 minutes on 2 idle cores).
`--count N` takes the first N cases of that sequence (N=67 is the first
covering array), and `--full` is `--count 2000`.

Each case writes its graph (and the bool masks, key lengths, ALiBi slopes and
score weights, so that the test knows them) into a temporary directory and
runs

    attnc run graph.json --backend mlir --check --seed N --threads N
          [--dim N=V]... [--input NAME=F.npy]... --output-dir out

It needs exit 0 and one `check OUT: rel_err X (tolerance T) ok` line per
output with the project tolerance of the output's dtype (1e-04 for f32 and
NAME.lse, 2e-02 for f16/bf16), and then checks cheap properties of the files
the compiled kernel wrote: the declared .npy dtype and shape; no NaN; every
query row whose keys are all masked is exactly 0 and its lse is -inf, every
other row has a finite lse.  On failure it prints the graph JSON, the command
to reproduce, and keeps the case's directory.
"""
import argparse
import concurrent.futures
import itertools
import json
import math
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

# --------------------------------------------------------------------------
# the axes
# --------------------------------------------------------------------------

SIZES = [1, 7, 63, 64, 65, 300]
DSIZES = [16, 40, 64, 80, 128, 256]

AXES = [
    ("score", ["dot", "general", "additive", "cosine"]),
    ("mask", ["none", "causal", "window", "key_length", "tensor", "causal+window",
              "key_length+tensor", "all4", "dead_rows"]),
    ("bias", ["none", "tensor", "alibi", "alibi_slopes", "tensor+alibi"]),
    ("softcap", ["none", "softcap"]),
    ("layout", ["bhsd", "bshd"]),
    ("heads", ["mha", "gqa", "mqa"]),
    ("dtype", ["f32", "f16", "bf16"]),
    ("S", SIZES),
    ("T", SIZES),
    ("Dk", DSIZES),
    ("Dv", ["=Dk", "other"]),
    ("dims", ["fixed", "dynamic", "partial"]),
    ("lse", [False, True]),
    ("threads", [1, 2, 0]),
    ("target", ["host", "x86-64", "x86-64-avx2"]),
    ("schedule", ["default", "small", "odd"]),
]

LANES = {"x86-64": 4, "x86-64-avx2": 8, "x86-64-avx512": 16}


def schedule_for(kind, target_class):
    """A valid non-default schedule for target_class: `small` tiles (4 lanes,
    8 queries, 8 keys) or `odd` ones (3 query rows per P.V block, 9 keys)."""
    lanes = LANES[target_class]
    if kind == "small":
        s = {"query_tile": 8, "key_tile": 8, "vector_width": 4,
             "score_block": [2, 4], "pv_block": [2, 2]}
    else:
        vw = min(8, lanes)
        s = {"query_tile": 3 * vw, "key_tile": 9, "vector_width": vw,
             "score_block": [1, 3], "pv_block": [3, 1]}
    s.update({"attnc_schedule": 1, "target_class": target_class, "threads": 0,
              "measured": "test schedule of tests/codegen/matrix.py"})
    return s


def halide_schedule_for(kind, target_class):
    """The Halide backend's counterpart of schedule_for: `small` tiles or `odd`
    ones that divide nothing evenly."""
    lanes = LANES[target_class]
    if kind == "small":
        s = {"task_queries": 16, "query_tile": 8, "vector_width": 4,
             "score_block": [1, 2], "pv_block": [2, 1]}
    else:
        vw = min(8, lanes)
        s = {"task_queries": 3 * 3 * vw, "query_tile": 3 * vw, "vector_width": vw,
             "score_block": [1, 3], "pv_block": [3, 1]}
    s.update({"attnc_halide_schedule": 1, "target_class": target_class,
              "measured": "test schedule of tests/codegen/matrix.py"})
    return s


def host_target_class(attnc, workdir):
    """The target class `--target host` resolves to, from a compiled manifest."""
    g = {"attnc": 1, "name": "probe",
         "inputs": {"q": {"shape": [1, 1, 1, 16], "dtype": "f32"},
                    "k": {"shape": [1, 1, 1, 16], "dtype": "f32"},
                    "v": {"shape": [1, 1, 1, 16], "dtype": "f32"}},
         "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}],
         "outputs": ["o"]}
    d = os.path.join(workdir, "probe")
    os.makedirs(d, exist_ok=True)
    gpath = os.path.join(d, "graph.json")
    with open(gpath, "w") as f:
        json.dump(g, f)
    try:
        subprocess.run([attnc, "compile", gpath, "-o", os.path.join(d, "out")],
                       capture_output=True, timeout=120)
        with open(os.path.join(d, "out", "probe.json")) as f:
            return json.load(f)["schedule"]["target_class"]
    except Exception:
        return None
    finally:
        shutil.rmtree(d, ignore_errors=True)
AXIS_NAMES = [a for a, _ in AXES]
AXIS_VALUES = dict(AXES)

TOL = {"f32": 1e-4, "f16": 2e-2, "bf16": 2e-2}
NPY_DESCR = {"f32": "<f4", "f16": "<f2", "bf16": "<u2"}


def pairwise_sample(seed, candidates=40):
    """Greedy pairwise covering array over AXES (deterministic for a seed).

    Every new row starts from an uncovered pair and fills the other axes by
    trying `candidates` random completions, keeping the one that covers the
    most still-uncovered pairs (ties: the first)."""
    rng = random.Random(seed)
    n = len(AXES)
    sizes = [len(v) for _, v in AXES]
    uncovered = set()
    for a, b in itertools.combinations(range(n), 2):
        for i in range(sizes[a]):
            for j in range(sizes[b]):
                uncovered.add((a, i, b, j))
    rows = []
    while uncovered:
        a, i, b, j = min(uncovered)   # deterministic starting pair
        best, best_gain = None, -1
        for _ in range(candidates):
            row = [rng.randrange(s) for s in sizes]
            row[a], row[b] = i, j
            # a few greedy passes: per free axis, the value covering most pairs
            order = [x for x in range(n) if x not in (a, b)]
            rng.shuffle(order)
            for x in order:
                gains = []
                for v in range(sizes[x]):
                    g = 0
                    for y in range(n):
                        if y == x:
                            continue
                        key = (x, v, y, row[y]) if x < y else (y, row[y], x, v)
                        g += key in uncovered
                    gains.append(g)
                top = max(gains)
                row[x] = rng.choice([v for v, g in enumerate(gains) if g == top])
            gain = sum((p, row[p], q, row[q]) in uncovered
                       for p, q in itertools.combinations(range(n), 2))
            if gain > best_gain:
                best, best_gain = row, gain
        for p, q in itertools.combinations(range(n), 2):
            uncovered.discard((p, best[p], q, best[q]))
        rows.append({AXES[x][0]: AXES[x][1][best[x]] for x in range(n)})
    return rows


# --------------------------------------------------------------------------
# a case: graph, files, expected fully-masked rows
# --------------------------------------------------------------------------

def to_bf16_bits(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def encode(values, dtype):
    if dtype == "f32":
        return np.asarray(values, "<f4")
    if dtype == "f16":
        return np.asarray(values, "<f2")
    if dtype == "bf16":
        return to_bf16_bits(values)
    if dtype == "i32":
        return np.asarray(values, "<i4")
    if dtype == "bool":
        return np.asarray(values, "|b1")
    raise AssertionError(dtype)


class Case:
    """One point of the matrix, made concrete with its own random stream."""

    def __init__(self, index, axes, seed):
        self.index = index
        self.axes = axes
        self.seed = seed * 100003 + index
        rng = np.random.default_rng([seed, index])
        self.rng = rng
        ax = axes
        self.dtype = ax["dtype"]
        S, T = ax["S"], ax["T"]
        Dk = ax["Dk"]
        Dv = Dk if ax["Dv"] == "=Dk" else int(rng.choice([d for d in DSIZES if d != Dk]))
        if ax["heads"] == "mha":
            Hkv = int(rng.choice([1, 2, 3]))
            Hq = Hkv
        elif ax["heads"] == "gqa":
            Hkv = int(rng.choice([2, 3]))
            Hq = Hkv * int(rng.choice([2, 3]))
        else:
            Hkv = 1
            Hq = int(rng.choice([2, 3, 4, 5]))
        B = int(rng.choice([1, 2]))
        if "dead" in ax["mask"] or "key_length" in ax["mask"]:
            B = 2   # one sequence may have length 0
        # keep the biggest cases affordable (the reference is float64 numpy-free C++,
        # but S*T*Hq*D of 300*300*6*256 is still a few hundred MFLOP per batch)
        while B * Hq * S * T * max(Dk, Dv) > 60e6 and Hq > Hkv:
            Hq -= Hkv
        self.B, self.Hq, self.Hkv, self.S, self.T, self.Dk, self.Dv = B, Hq, Hkv, S, T, Dk, Dv
        self.bshd = ax["layout"] == "bshd"
        self.files = {}        # input name -> array written to .npy
        self.dim_args = {}
        self.inputs = {}
        self.desc = []
        self._build()

    # -- dims ------------------------------------------------------------
    def _dims(self):
        mode = self.axes["dims"]
        rng = self.rng
        decl = {}
        ref = {"B": self.B, "S": self.S, "T": self.T}
        if mode == "fixed":
            if rng.random() < 0.5:     # named fixed dims, else plain integers
                decl = {"B": self.B, "S": self.S, "T": self.T}
                ref = {"B": "B", "S": "S", "T": "T"}
                if self.S == self.T and rng.random() < 0.5:
                    del decl["T"]
                    ref["T"] = "S"
        elif mode == "dynamic":
            decl = {"B": None, "S": None, "T": None}
            ref = {"B": "B", "S": "S", "T": "T"}
            if self.S == self.T and rng.random() < 0.5:
                del decl["T"]
                ref["T"] = "S"        # self-attention: one run-time size
            self.dim_args = {n: {"B": self.B, "S": self.S, "T": self.T}[n] for n in decl}
        else:   # partial: the key length at run time, the rest fixed
            name = "T" if rng.random() < 0.7 else "S"
            decl = {name: None, "B": self.B}
            ref = {"B": "B", "S": self.S, "T": self.T}
            ref[name] = name
            self.dim_args = {name: {"S": self.S, "T": self.T}[name]}
        self.decl = decl
        self.ref = ref

    def _shape(self, letters):
        out = []
        for l in letters:
            if isinstance(l, int):
                out.append(l)
            elif l in self.ref:
                out.append(self.ref[l])
            else:
                out.append({"Hq": self.Hq, "Hkv": self.Hkv, "Dk": self.Dk, "Dv": self.Dv}[l])
        return out

    def _concrete(self, shape):
        vals = {"B": self.B, "S": self.S, "T": self.T}
        return tuple(d if isinstance(d, int) else vals[d] for d in shape)

    def _bcast(self, keep_last=False):
        """A shape broadcastable to [B, Hq, S, T]: a trailing subset of the
        axes, each kept or 1."""
        rng = self.rng
        full = self._shape(["B", "Hq", "S", "T"])
        rank = int(rng.integers(1 if keep_last else 2, 5))
        shape = []
        for ax in range(4 - rank, 4):
            if (keep_last and ax == 3) or rng.random() < 0.6:
                shape.append(full[ax])
            else:
                shape.append(1)
        return shape

    def _add_input(self, name, shape, dtype, values=None):
        self.inputs[name] = {"shape": shape, "dtype": dtype}
        if values is not None:
            self.files[name] = encode(values, dtype)
        return name

    # -- the graph ---------------------------------------------------------
    def _build(self):
        ax = self.axes
        rng = self.rng
        self._dims()
        dt = self.dtype
        lay = (lambda H, L, D: ["B", L, H, D]) if self.bshd else (lambda H, L, D: ["B", H, L, D])
        q = self._add_input("q", self._shape(lay("Hq", "S", "Dk")), dt)
        k = self._add_input("k", self._shape(lay("Hkv", "T", "Dk")), dt)
        v = self._add_input("v", self._shape(lay("Hkv", "T", "Dv")), dt)
        node = {"name": "o", "op": "attention", "q": q, "k": k, "v": v}
        if self.bshd or rng.random() < 0.3:
            node["layout"] = ax["layout"]
        self.desc.append("%s B%d Hq%d Hkv%d S%d T%d Dk%d Dv%d %s %s" % (
            ax["score"], self.B, self.Hq, self.Hkv, self.S, self.T, self.Dk, self.Dv, dt,
            ax["layout"]))
        Dk = self.Dk
        wdt = dt if rng.random() < 0.7 else "f32"
        if ax["score"] == "general":
            w = self._add_input("w", [Dk, Dk], wdt, rng.standard_normal((Dk, Dk)) / math.sqrt(Dk))
            node["score"] = {"kind": "general", "w": w}
        elif ax["score"] == "additive":
            A = int(rng.choice([1, 8, 16, 33]))
            wq = self._add_input("wq", [A, Dk], wdt, rng.standard_normal((A, Dk)) / math.sqrt(Dk))
            wk = self._add_input("wk", [A, Dk], wdt, rng.standard_normal((A, Dk)) / math.sqrt(Dk))
            va = self._add_input("va", [A], wdt, rng.standard_normal(A))
            node["score"] = {"kind": "additive", "wq": wq, "wk": wk, "v": va}
            self.desc.append("A%d" % A)
        elif ax["score"] == "cosine":
            node["score"] = {"kind": "cosine"}
        elif rng.random() < 0.3:
            node["score"] = {"kind": "dot"}
        scale = rng.choice([None, None, "default", 0.5, 2.0]) if ax["score"] != "cosine" \
            else rng.choice([None, 5.0, 10.0])
        if scale is not None:
            node["scale"] = scale if isinstance(scale, str) else float(scale)
            self.desc.append("scale=%s" % scale)
        if ax["softcap"] == "softcap":
            node["softcap"] = float(rng.choice([1.0, 5.0, 30.0, 50.0]))
            self.desc.append("softcap=%g" % node["softcap"])
        # biases
        biases = []
        bias_kind = ax["bias"]
        if "tensor" in bias_kind:
            shape = self._bcast()
            bdt = rng.choice(["f32", dt])
            self._add_input("bias", shape, str(bdt))
            biases.append({"kind": "tensor", "input": "bias"})
            self.desc.append("bias%s:%s" % (list(self._concrete(shape)), bdt))
        if bias_kind in ("alibi", "tensor+alibi"):
            biases.append({"kind": "alibi"})
            self.desc.append("alibi")
        if bias_kind == "alibi_slopes":
            self._add_input("slopes", [self.Hq], "f32",
                            rng.uniform(0.01, 1.0, self.Hq))
            biases.append({"kind": "alibi", "slopes": "slopes"})
            self.desc.append("alibi(slopes)")
        if len(biases) > 1 and rng.random() < 0.5:
            biases.reverse()
        if biases:
            node["bias"] = biases
        # masks; keep[B, Hq, S, T] follows them for the property checks
        B, Hq, S, T = self.B, self.Hq, self.S, self.T
        keep = np.ones((B, Hq, S, T), bool)
        ip = np.arange(S)[:, None] + T - S
        j = np.arange(T)[None, :]
        masks = []
        mk = ax["mask"]
        kinds = {"none": [], "causal": ["causal"], "window": ["window"],
                 "key_length": ["key_length"], "tensor": ["tensor"],
                 "causal+window": ["causal", "window"],
                 "key_length+tensor": ["key_length", "tensor"],
                 "all4": ["causal", "window", "key_length", "tensor"],
                 "dead_rows": ["key_length", "tensor"]}[mk]
        dead = mk == "dead_rows"
        if dead and rng.random() < 0.5:
            kinds = kinds + ["causal"]
        rng.shuffle(kinds)
        for kind in kinds:
            if kind == "causal":
                masks.append({"kind": "causal"})
                keep &= (j <= ip)
            elif kind == "window":
                L = int(rng.choice([0, 1, 5, 31, 64, 200]))
                R = int(rng.choice([0, 0, 1, 3, 64]))
                masks.append({"kind": "window", "left": L, "right": R})
                keep &= (j >= ip - L) & (j <= ip + R)
                self.desc.append("window(%d,%d)" % (L, R))
            elif kind == "key_length":
                lens = rng.integers(0 if dead else 1, T + 1, size=B)
                if dead:
                    lens[int(rng.integers(0, B))] = 0
                elif rng.random() < 0.3:
                    lens[:] = T
                self._add_input("lens", self._shape(["B"]), "i32", lens)
                masks.append({"kind": "key_length", "input": "lens"})
                keep &= (np.arange(T)[None, :] < lens[:, None])[:, None, None, :]
                self.desc.append("keylen%s" % [int(x) for x in lens])
            elif kind == "tensor":
                shape = self._bcast(keep_last=not dead or rng.random() < 0.5)
                cshape = self._concrete(shape)
                vals = rng.random(cshape) < float(rng.choice([0.9, 0.7, 0.5]))
                if dead and vals.size:
                    rows = vals.reshape(-1, cshape[-1])
                    rows[rng.random(rows.shape[0]) < 0.3] = False
                    vals = rows.reshape(cshape)
                self._add_input("keep", shape, "bool", vals)
                masks.append({"kind": "tensor", "input": "keep"})
                keep &= np.broadcast_to(vals, keep.shape)
                self.desc.append("mask%s" % list(cshape))
            if kind == "causal":
                self.desc.append("causal")
        if masks:
            node["mask"] = masks
        self.keep = keep
        self.desc.append("dead_rows=%d" % int((~keep.any(-1)).sum()))
        outputs = ["o"]
        if ax["lse"]:
            node["return_lse"] = True
            outputs = [["o", "o.lse"], ["o.lse", "o"], ["o.lse"]][int(rng.choice(3, p=[.6, .2, .2]))]
            self.desc.append("lse")
        self.desc.append("dims=%s threads=%d target=%s schedule=%s" % (
            ax["dims"], ax["threads"], ax["target"], ax["schedule"]))
        self.graph = {"attnc": 1, "name": "m%d" % self.index}
        if self.decl:
            self.graph["dims"] = self.decl
        self.graph["inputs"] = self.inputs
        self.graph["nodes"] = [node]
        self.graph["outputs"] = outputs

    def describe(self):
        return " ".join(self.desc)


# --------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------

CHECK_RE = re.compile(r"^check (\S+): rel_err (\S+) \(tolerance (\S+)\) (\S+)$")


def run_case(case, attnc, workdir, backend, host_class, halide_schedule=None):
    """Returns (ok, summary, command, directory). `halide_schedule` (e.g.
    auto:adams2019) replaces the case's schedule axis for --backend halide."""
    d = os.path.join(workdir, "case%d" % case.index)
    os.makedirs(d, exist_ok=True)
    gpath = os.path.join(d, "graph.json")
    with open(gpath, "w") as f:
        json.dump(case.graph, f, indent=1)
    cmd = [attnc, "run", gpath, "--backend", backend, "--check", "--seed", str(case.seed),
           "--threads", str(case.axes["threads"])]
    target = case.axes["target"]
    if target != "host":
        if host_class == "x86-64" and target == "x86-64-avx2":
            target = "x86-64"          # a host without AVX2 cannot run avx2 code
        cmd += ["--target", target]
    if backend == "halide" and halide_schedule:
        cmd += ["--schedule", halide_schedule]
    elif case.axes["schedule"] != "default":
        spath = os.path.join(d, "schedule.json")
        make = halide_schedule_for if backend == "halide" else schedule_for
        with open(spath, "w") as f:
            json.dump(make(case.axes["schedule"],
                           host_class if target == "host" else target), f, indent=1)
        cmd += ["--schedule", spath]
    for n, val in case.dim_args.items():
        cmd += ["--dim", "%s=%d" % (n, val)]
    for name, arr in case.files.items():
        p = os.path.join(d, "%s.npy" % name)
        np.save(p, arr)
        cmd += ["--input", "%s=%s" % (name, p)]
    out = os.path.join(d, "out")
    cmd += ["--output-dir", out]
    qcmd = " ".join(shlex.quote(c) for c in cmd)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "attnc timed out (300 s)", qcmd, d
    took = time.time() - t0
    problems = []
    lines = p.stdout.splitlines()
    checks = {}
    for line in lines:
        m = CHECK_RE.match(line)
        if m:
            checks[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    if p.returncode != 0:
        msg = (p.stderr.strip() or "").splitlines()
        bad = ["%s rel_err %s > %s" % (n, c[0], c[1]) for n, c in checks.items() if c[2] != "ok"]
        problems.append("exit %d%s%s" % (p.returncode,
                                         ": " + msg[0] if msg else "",
                                         "; " + ", ".join(bad) if bad else ""))
    worst = 0.0
    for oname in case.graph["outputs"]:
        dt = "f32" if oname.endswith(".lse") else case.dtype
        c = checks.get(oname)
        if c is None:
            if p.returncode == 0:
                problems.append("%s: no check line" % oname)
            continue
        try:
            err, tol = float(c[0]), float(c[1])
        except ValueError:
            problems.append("%s: unparsable check line" % oname)
            continue
        if c[2] != "ok" or not err <= TOL[dt]:
            if p.returncode == 0:
                problems.append("%s: rel_err %s (tolerance %s) %s" % (oname, c[0], c[1], c[2]))
        if abs(tol - TOL[dt]) > 1e-12:
            problems.append("%s: tolerance %s printed, %g expected for %s" % (oname, c[1], TOL[dt], dt))
        if err == err:
            worst = max(worst, err / TOL[dt])
    if p.returncode == 0:
        problems += check_files(case, out)
    ok = not problems
    summary = ("worst err/tol %.2g, %.1f s" % (worst, took)) if ok else "; ".join(problems)
    return ok, summary, qcmd, d


def check_files(case, out):
    problems = []
    dead = ~case.keep.any(-1)            # [B, Hq, S]
    for oname in case.graph["outputs"]:
        path = os.path.join(out, oname + ".npy")
        if not os.path.exists(path):
            problems.append("%s.npy not written" % oname)
            continue
        arr = np.load(path, allow_pickle=False)
        if oname.endswith(".lse"):
            descr, shape = "<f4", (case.B, case.Hq, case.S)
        else:
            descr = NPY_DESCR[case.dtype]
            shape = (case.B, case.S, case.Hq, case.Dv) if case.bshd else \
                (case.B, case.Hq, case.S, case.Dv)
        if arr.dtype.str != descr or arr.shape != shape:
            problems.append("%s: %s %s, expected %s %s" % (oname, arr.dtype.str, list(arr.shape),
                                                          descr, list(shape)))
            continue
        if descr == "<u2":
            vals = (arr.astype(np.uint32) << 16).view(np.float32)
        else:
            vals = arr.astype(np.float32)
        if np.isnan(vals).any():
            problems.append("%s: %d NaN" % (oname, int(np.isnan(vals).sum())))
            continue
        if oname.endswith(".lse"):
            if not np.all(np.isneginf(vals[dead])):
                problems.append("%s: %d fully masked rows without lse -inf" % (
                    oname, int((~np.isneginf(vals[dead])).sum())))
            if not np.all(np.isfinite(vals[~dead])):
                problems.append("%s: %d rows with kept keys but non-finite lse" % (
                    oname, int((~np.isfinite(vals[~dead])).sum())))
        else:
            if not np.all(np.isfinite(vals)):
                problems.append("%s: %d infinite entries" % (oname, int((~np.isfinite(vals)).sum())))
            rows = vals.transpose(0, 2, 1, 3) if case.bshd else vals   # -> [B, Hq, S, Dv]
            deadrows = rows[dead]
            if deadrows.size and np.any(deadrows != 0):
                problems.append("%s: %d of %d fully masked rows are not exactly 0" % (
                    oname, int(np.any(deadrows != 0, axis=-1).sum()), int(dead.sum())))
    return problems


# --------------------------------------------------------------------------

DEFAULT_COUNT = 800
FULL_COUNT = 2000


def make_cases(seed, count, full):
    """The first `count` rows of the pairwise covering arrays of seeds seed,
    seed + 1, ...: each complete array covers every pair once more, with
    other concrete sizes, heads and values."""
    if count is None:
        count = FULL_COUNT if full else DEFAULT_COUNT
    rows = []
    first = None
    s = seed
    while len(rows) < count:
        sample = pairwise_sample(s)
        if first is None:
            first = len(sample)
        rows += sample
        s += 1
    rows = rows[:count]
    return [Case(i, r, seed) for i, r in enumerate(rows)], first


def coverage(cases):
    """Values of each axis that no case has, and uncovered pairs (counts)."""
    missing = []
    for name, values in AXES:
        seen = {c.axes[name] for c in cases}
        for v in values:
            if v not in seen:
                missing.append("%s=%s" % (name, v))
    pairs = set()
    for c in cases:
        for a, b in itertools.combinations(AXIS_NAMES, 2):
            pairs.add((a, repr(c.axes[a]), b, repr(c.axes[b])))
    total = sum(len(AXIS_VALUES[a]) * len(AXIS_VALUES[b]) for a, b in itertools.combinations(AXIS_NAMES, 2))
    return missing, len(pairs), total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnc", help="path of the attnc binary")
    ap.add_argument("--backend", default="mlir", help="backend to test (default mlir)")
    ap.add_argument("--halide-schedule", metavar="auto:NAME",
                    help="with --backend halide: --schedule for every case (an "
                         "autoscheduler), instead of the schedule axis")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    ap.add_argument("--count", type=int, help="number of cases (default %d)" % DEFAULT_COUNT)
    ap.add_argument("--full", action="store_true", help="run %d cases" % FULL_COUNT)
    ap.add_argument("--only", help="comma list of case indices to run")
    ap.add_argument("--list", action="store_true", help="print the cases and coverage, run nothing")
    ap.add_argument("--keep", metavar="DIR", help="keep every case's files under DIR")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel attnc processes (default 2)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the graph of every case")
    a = ap.parse_args()

    cases, n_pairwise = make_cases(a.seed, a.count, a.full)
    missing, covered, total = coverage(cases)
    print("%d cases (the first covering array, seed %d, has %d); %d of %d value pairs covered%s" % (
        len(cases), a.seed, n_pairwise, covered, total,
        "; values never used: " + ", ".join(missing) if missing else ""), flush=True)
    if a.only:
        wanted = {int(x) for x in a.only.split(",")}
        cases = [c for c in cases if c.index in wanted]
    if a.list:
        for c in cases:
            print("#%d %s" % (c.index, c.describe()))
            if a.verbose:
                print(json.dumps(c.graph))
        return 0
    if not a.attnc:
        ap.error("--attnc is required (or --list)")
    if a.halide_schedule and a.backend != "halide":
        ap.error("--halide-schedule needs --backend halide")
    attnc = os.path.abspath(a.attnc)
    if not os.access(attnc, os.X_OK):
        print("attnc not found or not executable: %s" % attnc)
        return 1
    if a.keep:
        workdir = os.path.abspath(a.keep)
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = tempfile.mkdtemp(prefix="attnc_matrix_")
    host_class = host_target_class(attnc, workdir) if a.backend in ("mlir", "halide") \
        else "x86-64"
    if host_class is None:
        print("note: `attnc compile` of a probe graph failed; assuming the host is x86-64-avx2")
        host_class = "x86-64-avx2"
    print("host target class: %s" % host_class, flush=True)
    if a.halide_schedule:
        print("every case: --schedule %s (the schedule axis is unused)" % a.halide_schedule,
              flush=True)
    t0 = time.time()
    failures = []
    passed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = [ex.submit(run_case, c, attnc, workdir, a.backend, host_class,
                          a.halide_schedule) for c in cases]
        for c, fut in zip(cases, futs):
            ok, summary, cmd, d = fut.result()
            print("%-4s #%d %s | %s" % ("ok" if ok else "FAIL", c.index, c.describe(), summary),
                  flush=True)
            if a.verbose:
                print("  " + json.dumps(c.graph))
            if ok:
                passed += 1
                if not a.keep:
                    shutil.rmtree(d, ignore_errors=True)
            else:
                failures.append((c, summary, cmd, d))
    for c, summary, cmd, d in failures:
        print("\n==== FAILED #%d (seed %d): %s" % (c.index, a.seed, summary))
        print("axes: " + json.dumps(c.axes))
        print("graph: " + json.dumps(c.graph))
        print("command: " + cmd)
        print("files kept in %s (or: matrix.py --attnc %s --seed %d --count %d --only %d)" % (
            d, shlex.quote(attnc), a.seed, c.index + 1, c.index))
    if not failures and not a.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d passed, %d failed in %.0f s" % (passed, len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
