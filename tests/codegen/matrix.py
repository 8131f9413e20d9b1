#!/usr/bin/python3
"""Randomized test matrix of the compiled attention kernels (MLIR CPU or Halide).

    matrix.py --attnc PATH [-j N] [--seed S] [--count N | --full] [--only I[,J...]]
              [--list] [--keep DIR] [--backend B] [--halide-schedule auto:NAME] [-v]

The axes below span the attention op: score kinds, masks (alone, combined, and
with fully masked rows), biases, scales and softcaps (ordinary ones and the
extremes: 1e-6, 0, 1e3, 1e4, negative; softcaps 1e-6 to 1e6), layouts,
GQA/MQA, dtypes, S and T, Dk (and Dv != Dk), each of the sizes B, H (the
head counts Hq and Hkv), S, T, Dk and Dv independently a literal, a fixed
named dim or a run-time one (equal sizes sometimes sharing one name), window
bounds L and R independently small, near S, T or T - S, or huge (2^31 - 1
up to 2^63 - 1), return_lse, thread counts, CPU targets (host, x86-64,
x86-64-avx2) and schedules (default, small tiles, odd tiles).  Their full
product is far too large, so the default run is a *pairwise covering sample*
built greedily with a fixed seed: every pair of values of every two axes
appears in at least one case (so every value of every axis does too).  The
default run takes the whole covering arrays of seeds S to S+3 (64 to about
70 cases each, 269 for seed 0, so each pair appears at least four times with
different concrete sizes and values).  `--count N` takes the first N cases of
the sequence of arrays (for seed 0 the first covering array is the first 64),
and `--full` is `--count 2000` (about thirty arrays).

Each case writes its graph and every input as a .npy file (q, k, v, biases,
weights standard normal; bool masks, key lengths, ALiBi slopes) into a
temporary directory and runs

    attnc run graph.json --backend mlir --threads N [--target T] [--schedule F]
          [--dim N=V]... --input NAME=F.npy... --output-dir out

(the run-time dims by --dim, or some or all of them left to attnc to take
from the files).  The verdict is independent of attnc: the same graph is
evaluated on the same files by the numpy float64 oracle of tests/oracle
(oracle.py, written from docs/graph-format.md alone), and every output must be
within the project tolerance of it, normwise: ||out - ref|| / ||ref|| <= 1e-4
for f32 outputs and NAME.lse, <= 2e-2 for f16/bf16, each plus the output's
f32 rounding floor (check_reference.compare; it matters only at extreme
scales, where the softmax is near one-hot; an all-zero reference needs an
exactly zero output); NaN never passes and the -inf of lse must be
exactly where the oracle has them (check_reference.compare).  attnc must exit
0, and the files must have these properties: the declared .npy dtype and
shape; no NaN; every query row whose keys are all masked is exactly 0 and its
lse is -inf, every other row has a finite lse.  attnc's own `--check` is not
used.  On failure it prints the graph JSON, the command to reproduce, and
keeps the case's directory (graph, input files, outputs).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "oracle"))
import check_reference  # noqa: E402  (compare: the normwise verdict)
import oracle           # noqa: E402  (the independent float64 evaluator)

# --------------------------------------------------------------------------
# the axes
# --------------------------------------------------------------------------

SIZES = [1, 7, 63, 64, 65, 300]
DSIZES = [16, 40, 64, 80, 128, 256]

# every size of the attention op is, independently, an integer in the shapes
# (`literal`), a name bound to an integer in `dims` (`fixed`) or a name bound to
# null, given at run time (`runtime`); one axis `H` is both head counts (Hq
# and Hkv take its mode, or now and then one of them is a literal)
DIM_LETTERS = ["B", "Hq", "Hkv", "S", "T", "Dk", "Dv"]
DIM_AXES = ["B", "H", "S", "T", "Dk", "Dv"]
DIM_MODES = ["literal", "fixed", "runtime"]

# window bounds: `small` ones, ones `near` S, T or T - S, and `huge` ones up to
# the largest int64 (L and R are two axes, drawn independently)
HUGE = [2**31 - 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63 - 1]

AXES = [
    ("score", ["dot", "general", "additive", "cosine"]),
    ("mask", ["none", "causal", "window", "key_length", "tensor", "causal+window",
              "key_length+tensor", "all4", "dead_rows"]),
    ("bias", ["none", "tensor", "alibi", "alibi_slopes", "tensor+alibi"]),
    ("scale", ["default", "moderate", "tiny", "huge", "negative"]),
    ("softcap", ["none", "moderate", "tiny", "huge"]),
    ("layout", ["bhsd", "bshd"]),
    ("heads", ["mha", "gqa", "mqa"]),
    ("dtype", ["f32", "f16", "bf16"]),
    ("S", SIZES),
    ("T", SIZES),
    ("Dk", DSIZES),
    ("Dv", ["=Dk", "other"]),
] + [("dim_" + l, DIM_MODES) for l in DIM_AXES] + [
    ("window_L", ["small", "near", "huge"]),
    ("window_R", ["small", "near", "huge"]),
    ("lse", [False, True]),
    ("threads", [1, 2, 0]),
    ("target", ["host", "x86-64", "x86-64-avx2"]),
    ("schedule", ["default", "small", "odd"]),
]

LANES = {"x86-64": 4, "x86-64-avx2": 8, "x86-64-avx512": 16}


def schedule_for(kind, target_class):
    """A valid non-default schedule for target_class: `small` tiles (4 lanes,
    8 queries, 8 keys, decode steps of 4 keys, no V prefetch, K prefetched
    into L2) or `odd` ones (3 query rows per P.V block, 9 keys, decode steps
    of 3 score blocks, prefetched into L1)."""
    lanes = LANES[target_class]
    if kind == "small":
        s = {"query_tile": 8, "key_tile": 8, "vector_width": 4,
             "score_block": [2, 4], "pv_block": [2, 2],
             "value_prefetch_bytes": 0, "decode_step": 4,
             "decode_prefetch_level": 2}
    else:
        vw = min(8, lanes)
        # Decode steps of 3 score blocks (6 keys at 8 lanes): the key tile of
        # 9 ends with a partial step.
        s = {"query_tile": 3 * vw, "key_tile": 9, "vector_width": vw,
             "score_block": [1, 3], "pv_block": [3, 1],
             "value_prefetch_bytes": 2, "decode_step": 3 * (vw // min(vw, 4)),
             "decode_prefetch_level": 1}
    s.update({"attnc_schedule": 1, "target_class": target_class, "threads": 0,
              "measured": "test schedule of tests/codegen/matrix.py"})
    return s


def halide_schedule_for(kind, target_class):
    """The Halide backend's counterpart of schedule_for: `small` tiles or `odd`
    ones that divide nothing evenly (key tiles of 7 keys: the online softmax
    folds many tiles, the last one partial)."""
    lanes = LANES[target_class]
    if kind == "small":
        # The decode form (fewer queries than 4) in blocks of one head, its
        # keys in parts of at most 64 (more than 64 keys split on any thread),
        # P·V in chunks of 16 keys (a part's last chunk partial).
        s = {"task_queries": 16, "query_tile": 8, "key_tile": 8, "vector_width": 4,
             "score_block": [1, 2], "pv_block": [2, 1],
             "decode_score_block": [1, 2], "decode_pv_block": [1, 1],
             "decode_part_keys": 64, "decode_pv_keys": 16}
    else:
        # Blocks of 3 heads, which round a kv head's query heads up (padded
        # heads) or split them unevenly.
        vw = min(8, lanes)
        s = {"task_queries": 3 * 3 * vw, "query_tile": 3 * vw, "key_tile": 7,
             "vector_width": vw, "score_block": [1, 3], "pv_block": [3, 1],
             "decode_score_block": [3, 3], "decode_pv_block": [3, 3]}
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

TOL = check_reference.TOL      # 1e-4 for f32 (and NAME.lse), 2e-2 for f16 and bf16
NPY_DESCR = {"f32": "<f4", "f16": "<f2", "bf16": "<u2"}


def pairwise_sample(seed, candidates=40, tries=1):
    """Greedy pairwise covering array over AXES (deterministic for a seed):
    the smallest of `tries` greedy constructions.

    Every new row starts from the uncovered pair whose two values are in the
    most uncovered pairs, and fills the other axes by trying `candidates`
    random completions, keeping the one that covers the most still-uncovered
    pairs (ties: the first)."""
    best_rows = None
    for t in range(tries):
        rows = _greedy_pairwise(random.Random("%d/%d" % (seed, t)), candidates)
        if best_rows is None or len(rows) < len(best_rows):
            best_rows = rows
    return best_rows


def _greedy_pairwise(rng, candidates):
    n = len(AXES)
    sizes = [len(v) for _, v in AXES]
    axes = range(n)
    # unc[x][y][v][w]: the pair (axis x = value v, axis y = value w) is not
    # covered yet; kept for both orders of x and y
    unc = [[[[x != y] * sizes[y] for _ in range(sizes[x])] for y in axes] for x in axes]
    left = sum(sizes[a] * sizes[b] for a, b in itertools.combinations(axes, 2))
    rows = []
    while left:
        cnt = [[sum(sum(unc[x][y][v]) for y in axes) for v in range(sizes[x])] for x in axes]
        a, i, b, j = max(((x, v, y, w) for x in axes for v in range(sizes[x])
                          for y in range(x + 1, n) for w in range(sizes[y]) if unc[x][y][v][w]),
                         key=lambda t: cnt[t[0]][t[1]] + cnt[t[2]][t[3]])
        best, best_gain = None, -1
        for _ in range(candidates):
            row = [rng.randrange(s) for s in sizes]
            row[a], row[b] = i, j
            # a greedy pass: per free axis, the value covering most pairs
            order = [x for x in axes if x not in (a, b)]
            rng.shuffle(order)
            for x in order:
                ux = unc[x]
                gains = [sum(ux[y][v][row[y]] for y in axes) for v in range(sizes[x])]
                top = max(gains)
                row[x] = rng.choice([v for v, g in enumerate(gains) if g == top])
            gain = sum(unc[p][q][row[p]][row[q]] for p, q in itertools.combinations(axes, 2))
            if gain > best_gain:
                best, best_gain = row, gain
        for p, q in itertools.combinations(axes, 2):
            if unc[p][q][best[p]][best[q]]:
                unc[p][q][best[p]][best[q]] = unc[q][p][best[q]][best[p]] = False
                left -= 1
        rows.append({AXES[x][0]: AXES[x][1][best[x]] for x in axes})
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
        rng = np.random.default_rng([seed, index])
        self.rng = rng
        self.stream = (seed, index)
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
        # keep the biggest cases affordable for attnc and the float64 oracle
        while B * Hq * S * T * max(Dk, Dv) > 60e6 and Hq > Hkv:
            Hq -= Hkv
        self.A = None
        if ax["score"] == "additive":
            # the oracle holds the [B, Hq, S, T, A] tanh argument in float64
            A = int(rng.choice([1, 8, 16, 33]))
            while B * Hq * S * T * A > 4e6 and Hq > Hkv:
                Hq -= Hkv
            while B * Hq * S * T * A > 4e6 and A > 1:
                A //= 2
            self.A = A
        self.B, self.Hq, self.Hkv, self.S, self.T, self.Dk, self.Dv = B, Hq, Hkv, S, T, Dk, Dv
        self.bshd = ax["layout"] == "bshd"
        self.files = {}        # input name -> array written to .npy, or a recipe
        #                        (shape, dtype, std) of a random float input
        self.dim_args = {}     # run-time dim -> value passed as --dim
        self.inputs = {}
        self.desc = []
        self._build()

    # -- dims ------------------------------------------------------------
    def _dims(self):
        """Each size independently a literal, a fixed named dim or a run-time
        one; equal sizes of the same mode sometimes share one name
        (self-attention S = T, Hq = Hkv, Dk = Dv)."""
        rng = self.rng
        size = {"B": self.B, "Hq": self.Hq, "Hkv": self.Hkv, "S": self.S, "T": self.T,
                "Dk": self.Dk, "Dv": self.Dv}
        mode = {l: self.axes["dim_" + l] for l in DIM_AXES if l != "H"}
        mode["Hq"] = mode["Hkv"] = self.axes["dim_H"]
        if mode["Hq"] != "literal" and rng.random() < 0.25:
            mode[str(rng.choice(["Hq", "Hkv"]))] = "literal"
        names = {"B": "B", "Hq": "Hq", "Hkv": "Hkv", "S": "S", "T": "T", "Dk": "Dk", "Dv": "Dv"}
        for a, b, shared in (("S", "T", "S"), ("Hq", "Hkv", "H"), ("Dk", "Dv", "D")):
            if mode[a] == mode[b] != "literal" and size[a] == size[b] and rng.random() < 0.5:
                names[a] = names[b] = shared
        decl, ref = {}, {}
        for l in DIM_LETTERS:
            if mode[l] == "literal":
                ref[l] = size[l]
            else:
                ref[l] = names[l]
                decl[names[l]] = size[l] if mode[l] == "fixed" else None
        runtime = [n for n, v in decl.items() if v is None]
        # every dim is in q, k or v, so attnc can also take it from the files
        how = rng.choice(["all", "all", "none", "some"])
        give = runtime if how == "all" else [] if how == "none" else \
            [n for n in runtime if rng.random() < 0.5]
        values = {names[l]: size[l] for l in DIM_LETTERS}
        self.dim_args = {n: values[n] for n in give}
        self.bound = {n: values[n] for n in decl}     # the oracle's dim binding
        self.decl = decl
        self.ref = ref
        self.desc.append("dims[%s]%s" % (
            " ".join("%s=%s" % (l, "i" if mode[l] == "literal" else
                                ("%s:%s" % (names[l], "f" if mode[l] == "fixed" else "r")))
                     for l in DIM_LETTERS),
            "" if not runtime else " --dim:" + (",".join(give) if give else "none")))

    def _shape(self, letters):
        return [l if isinstance(l, int) else self.ref[l] for l in letters]

    def _concrete(self, shape):
        return tuple(d if isinstance(d, int) else self.bound[d] for d in shape)

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

    def _add_input(self, name, shape, dtype, values=None, std=1.0):
        """Declares an input with its file's contents: `values`, or standard
        normal (times std) for floats, as attnc's own random inputs would be;
        those are only made when the case runs (input_arrays)."""
        self.inputs[name] = {"shape": shape, "dtype": dtype}
        if values is None:
            self.files[name] = (self._concrete(shape), dtype, std)
        else:
            self.files[name] = encode(values, dtype)
        return name

    def input_arrays(self):
        """Every input as its .npy array (the random ones drawn from the case's
        own stream, one per input position)."""
        out = {}
        for pos, (name, f) in enumerate(self.files.items()):
            if isinstance(f, tuple):
                shape, dtype, std = f
                r = np.random.default_rng(list(self.stream) + [pos])
                f = encode(r.standard_normal(shape) * std, dtype)
            out[name] = f
        return out

    def _window_bound(self, kind):
        rng = self.rng
        S, T = self.S, self.T
        if kind == "small":
            return int(rng.choice([0, 0, 1, 2, 5, 31, 64, 200]))
        if kind == "near":
            c = int(rng.choice([S, T, abs(T - S), S + T]))
            return max(0, c + int(rng.choice([-1, 0, 1])))
        return int(HUGE[int(rng.integers(len(HUGE)))])

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
        self.desc.insert(0, "%s B%d Hq%d Hkv%d S%d T%d Dk%d Dv%d %s %s" % (
            ax["score"], self.B, self.Hq, self.Hkv, self.S, self.T, self.Dk, self.Dv, dt,
            ax["layout"]))
        Dk = self.ref["Dk"]
        wdt = dt if rng.random() < 0.7 else "f32"
        if ax["score"] == "general":
            w = self._add_input("w", [Dk, Dk], wdt, std=1 / math.sqrt(self.Dk))
            node["score"] = {"kind": "general", "w": w}
        elif ax["score"] == "additive":
            A = self.A
            wq = self._add_input("wq", [A, Dk], wdt, std=1 / math.sqrt(self.Dk))
            wk = self._add_input("wk", [A, Dk], wdt, std=1 / math.sqrt(self.Dk))
            va = self._add_input("va", [A], wdt)
            node["score"] = {"kind": "additive", "wq": wq, "wk": wk, "v": va}
            self.desc.append("A%d" % A)
        elif ax["score"] == "cosine":
            node["score"] = {"kind": "cosine"}
        elif rng.random() < 0.3:
            node["score"] = {"kind": "dot"}
        cos = ax["score"] == "cosine"
        scale = {"default": [None, None, "default"],
                 "moderate": [5.0, 10.0, 1.0] if cos else [0.5, 2.0, 0.125],
                 "tiny": [1e-6, 1e-6, 0.0],
                 "huge": [1e3, 1e4],
                 "negative": [-5.0, -1e3] if cos else [-0.5, -2.0, -1e3]}[ax["scale"]]
        scale = scale[int(rng.integers(len(scale)))]
        if scale is not None:
            node["scale"] = scale if isinstance(scale, str) else float(scale)
            self.desc.append("scale=%s" % scale)
        if ax["softcap"] != "none":
            caps = {"moderate": [1.0, 5.0, 30.0, 50.0], "tiny": [1e-6, 1e-3],
                    "huge": [1e4, 1e6]}[ax["softcap"]]
            node["softcap"] = float(caps[int(rng.integers(len(caps)))])
            if node["softcap"] >= 1e3 and isinstance(scale, float) and abs(scale) >= 1e3:
                # a cap of 1e4 after a scale of 1e3 or more crowds the scores just
                # under 1e4, where f32 resolves only 1e-3: near-tied softmax rows
                # are then off by more than 1e-4 in any f32 kernel; a cap of 1e6
                # stays in tanh's linear part
                node["softcap"] = 1e6
            self.desc.append("softcap=%g" % node["softcap"])
        # biases
        biases = []
        bias_kind = ax["bias"]
        if "tensor" in bias_kind:
            shape = self._bcast()
            bdt = str(rng.choice(["f32", dt]))
            self._add_input("bias", shape, bdt)
            biases.append({"kind": "tensor", "input": "bias"})
            self.desc.append("bias%s:%s" % (list(self._concrete(shape)), bdt))
        if bias_kind in ("alibi", "tensor+alibi"):
            biases.append({"kind": "alibi"})
            self.desc.append("alibi")
        if bias_kind == "alibi_slopes":
            self._add_input("slopes", self._shape(["Hq"]), "f32",
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
                L = self._window_bound(ax["window_L"])
                R = self._window_bound(ax["window_R"])
                masks.append({"kind": "window", "left": L, "right": R})
                # i' - L <= j <= i' + R without int64 overflow: i' - j <= L, j - i' <= R
                keep &= ((ip - j) <= min(L, S + T)) & ((j - ip) <= min(R, S + T))
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
        self.desc.append("threads=%d target=%s schedule=%s" % (
            ax["threads"], ax["target"], ax["schedule"]))
        self.graph = {"attnc": 1, "name": "m%d" % self.index}
        if self.decl:
            self.graph["dims"] = self.decl
        self.graph["inputs"] = self.inputs
        self.graph["nodes"] = [node]
        self.graph["outputs"] = outputs

    def reference(self, arrays, floors=None):
        """The oracle's float64 outputs on the input files `arrays`:
        {output: (values, dtype)}; the f32 rounding floors into `floors`."""
        inputs = {n: oracle.decode_from_file(a, self.inputs[n]["dtype"])
                  for n, a in arrays.items()}
        return oracle.evaluate_typed(self.graph, inputs, self.bound, floors)

    def describe(self):
        return " ".join(self.desc)


# --------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------

def run_case(case, attnc, workdir, backend, host_class, halide_schedule=None):
    """Returns (ok, summary, command, directory). `halide_schedule` (e.g.
    auto:adams2019) replaces the case's schedule axis for --backend halide."""
    d = os.path.join(workdir, "case%d" % case.index)
    os.makedirs(d, exist_ok=True)
    gpath = os.path.join(d, "graph.json")
    with open(gpath, "w") as f:
        json.dump(case.graph, f, indent=1)
    cmd = [attnc, "run", gpath, "--backend", backend, "--threads", str(case.axes["threads"])]
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
    arrays = case.input_arrays()
    for name, arr in arrays.items():
        p = os.path.join(d, "%s.npy" % name)
        np.save(p, arr)
        cmd += ["--input", "%s=%s" % (name, p)]
    out = os.path.join(d, "out")
    cmd += ["--output-dir", out]
    qcmd = " ".join(shlex.quote(c) for c in cmd)
    try:
        floors = {}
        ref = case.reference(arrays, floors)
    except Exception as e:      # a generator or oracle bug, not an attnc one
        return False, "oracle error: %s" % e, qcmd, d
    del arrays
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "attnc timed out (300 s)", qcmd, d
    took = time.time() - t0
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return False, "exit %d%s" % (p.returncode, ": " + msg[0] if msg else ""), qcmd, d
    problems = check_files(case, out)
    worst = 0.0
    for oname in case.graph["outputs"]:
        path = os.path.join(out, oname + ".npy")
        if not os.path.exists(path):
            continue                    # check_files said so
        rval, rdt = ref[oname]
        good, err, msg = check_reference.compare(np.load(path, allow_pickle=False), rval, rdt,
                                                 floors.get(oname))
        if not good:
            problems.append("%s: %s" % (oname, msg))
        elif err is not None:
            worst = max(worst, err / TOL[rdt])
    ok = not problems
    summary = ("worst err/base tol %.2g, %.1f s" % (worst, took)) if ok else "; ".join(problems)
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

DEFAULT_ARRAYS = 4
FULL_COUNT = 2000


def make_cases(seed, count, full):
    """The first `count` rows of the pairwise covering arrays of seeds seed,
    seed + 1, ... (`full`: FULL_COUNT; neither: the first DEFAULT_ARRAYS
    arrays whole): each complete array covers every pair once more, with
    other concrete sizes, heads and values."""
    if count is None and full:
        count = FULL_COUNT
    rows = []
    first = None
    s = seed
    while (len(rows) < count) if count is not None else (s < seed + DEFAULT_ARRAYS):
        # the first array is the smallest of four constructions (CI's Halide
        # run takes the first 67 cases: all of it)
        sample = pairwise_sample(s, tries=4 if first is None else 1)
        if first is None:
            first = len(sample)
        rows += sample
        s += 1
    rows = rows[:count] if count is not None else rows
    return [Case(i, r, seed) for i, r in enumerate(rows)], first


SCHEDULE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schedules", "cpu")
HALIDE_SCHEDULE_DIR = os.path.join(os.path.dirname(SCHEDULE_DIR), "halide")


def host_class():
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return "x86-64-avx512" if " avx512f" in flags else "x86-64-avx2"


def splits_keys(case, backend):
    """Whether the backend's kernel splits this case's keys over threads
    (FlashDecoding; planKeySplit in compiler/Codegen/AttentionKernel.cpp, and
    runDecode in compiler/Codegen/HalideEntry.cpp for Halide's decode form,
    fewer queries than its vector): fewer tasks (MLIR: batch x kv heads x row
    tiles; Halide: batch x kv heads) than threads, and at least two key
    tiles per part for two parts; or, for Halide, more keys than the
    schedule's decode_part_keys."""
    ax = case.axes
    threads = ax["threads"] or os.cpu_count()
    target = host_class() if ax["target"] == "host" else ax["target"]
    halide = backend == "halide"
    if ax["schedule"] == "default":
        directory = HALIDE_SCHEDULE_DIR if halide else SCHEDULE_DIR
        with open(os.path.join(directory, target + ".json")) as f:
            sched = json.load(f)
    else:
        sched = (halide_schedule_for if halide else schedule_for)(ax["schedule"], target)
    key_tile = sched["key_tile"]
    if halide:
        if case.S >= sched["vector_width"]:
            return False
        # Parts of at most decode_part_keys keys, whatever the threads.
        if 0 < sched.get("decode_part_keys", 0) < case.T:
            return True
        tasks = case.B * case.Hkv
    else:
        tasks = case.B * case.Hkv * -(-(case.Hq // case.Hkv) * case.S // sched["query_tile"])
    return tasks < threads and -(-case.T // key_tile) // 2 >= 2


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
    ap.add_argument("--count", type=int, help="number of cases (default: the first %d covering arrays)" % DEFAULT_ARRAYS)
    ap.add_argument("--full", action="store_true", help="run %d cases" % FULL_COUNT)
    ap.add_argument("--only", help="comma list of case indices to run")
    ap.add_argument("--split", type=int, metavar="N",
                    help="with 4 threads each, run the first N cases of the first %d whose "
                         "keys the backend's kernel splits over those threads" % FULL_COUNT)
    ap.add_argument("--list", action="store_true", help="print the cases and coverage, run nothing")
    ap.add_argument("--keep", metavar="DIR", help="keep every case's files under DIR")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel attnc processes (default 2)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the graph of every case")
    a = ap.parse_args()

    if a.split:
        cases, n_pairwise = make_cases(a.seed, FULL_COUNT, False)
        for c in cases:
            c.axes["threads"] = 4
            c.desc = [re.sub(r"^threads=\d+", "threads=4", d) for d in c.desc]
        cases = [c for c in cases if splits_keys(c, a.backend)][:a.split]
    else:
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
