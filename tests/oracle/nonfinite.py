"""NaN and infinity in attention inputs: IEEE propagation, checked against numpy.

    nonfinite.py --attnc PATH [--backend mlir|halide] [--keep DIR]

The rule (docs/design/attention-semantics.md, "Non-finite inputs"): a query row
sees the scores of its visible keys; if any of them is NaN (a NaN in its query
or in a visible key, or +inf against +inf) its softmax, output and lse are NaN;
+inf or -inf scores and infinite values follow IEEE arithmetic; masked keys are
not seen, so what they hold never reaches the row; a row with no visible key is
exactly 0. One exception, documented there too: a NaN or infinite *value* (v)
of a key that a row masks but that shares a key tile with keys the row sees
may still reach it as 0 x v = NaN (the kernels multiply the whole tile), so
the cases put non-finite values only where that cannot happen. The expected outputs come from plain numpy float64 (np.max and
np.exp propagate NaN), written here independently of attnc's reference; the
test also checks `attnc reference` and that `run --check` passes exactly when
the non-finite entries agree.

Five more cases fill v with finite values near f32's limit (about 2e38): the
output, a weighted mean of v, is finite, and so must the kernels' be. Two more
give every row one visible key of many and scores near 1e-6: the row's lse is
its score, so the kernels' shift of the softmax must cancel exactly.

Each case puts one non-finite value into q, k or v of a small graph (prefill
with a causal mask in f32 and in bf16, the MHA decode path at S=1 over T=40 with a key-length
mask, a GQA decode in bf16, and a key-split decode on 2 threads) and runs it
through `attnc run --input ... --output-dir`. Prints one line per case and
exits 1 if any fails.
"""

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402  (bf16 encoding of .npy files)

GRAPHS = {
    "prefill": {
        "attnc": 1, "name": "prefill", "dims": {},
        "inputs": {n: {"shape": [1, 2, 7, 8], "dtype": "f32"} for n in "qkv"},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                   "mask": [{"kind": "causal"}], "return_lse": True}],
        "outputs": ["o", "o.lse"],
    },
    "decode": {
        "attnc": 1, "name": "decode", "dims": {},
        "inputs": {"q": {"shape": [2, 4, 1, 16], "dtype": "f32"},
                   "k": {"shape": [2, 4, 40, 16], "dtype": "f32"},
                   "v": {"shape": [2, 4, 40, 16], "dtype": "f32"},
                   "n": {"shape": [2], "dtype": "i32"}},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                   "mask": [{"kind": "key_length", "input": "n"}]}],
        "outputs": ["o"],
    },
    "gqa_bf16": {
        "attnc": 1, "name": "gqa_bf16", "dims": {},
        "inputs": {"q": {"shape": [1, 8, 1, 32], "dtype": "bf16"},
                   "k": {"shape": [1, 2, 50, 32], "dtype": "bf16"},
                   "v": {"shape": [1, 2, 50, 32], "dtype": "bf16"}},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}],
        "outputs": ["o"],
    },
    # More rows than one vector: bf16 products with queries in lanes
    # (vdpbf16ps on a CPU with AVX512-BF16).
    "prefill_bf16": {
        "attnc": 1, "name": "prefill_bf16", "dims": {},
        "inputs": {n: {"shape": [1, 2, 37, 16], "dtype": "bf16"} for n in "qkv"},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                   "mask": [{"kind": "causal"}]}],
        "outputs": ["o"],
    },
    # One kv head and one batch: one task, so 2 threads split its keys.
    "split": {
        "attnc": 1, "name": "split", "dims": {},
        "inputs": {"q": {"shape": [1, 4, 1, 32], "dtype": "f32"},
                   "k": {"shape": [1, 1, 3000, 32], "dtype": "f32"},
                   "v": {"shape": [1, 1, 3000, 32], "dtype": "f32"}},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}],
        "outputs": ["o"],
    },
    # Every row sees one key (key_length 1) of T > 1: with tiny scores its
    # lse is its score, about 1e-6, which a shift by a rounded log2 T (or
    # m + log2 T added before subtracting) would swamp.
    "one_key": {
        "attnc": 1, "name": "one_key", "dims": {},
        "inputs": {"q": {"shape": [2, 3, 5, 8], "dtype": "f32"},
                   "k": {"shape": [2, 3, 9, 8], "dtype": "f32"},
                   "v": {"shape": [2, 3, 9, 8], "dtype": "f32"},
                   "n": {"shape": [2], "dtype": "i32"}},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                   "mask": [{"kind": "key_length", "input": "n"}],
                   "return_lse": True}],
        "outputs": ["o", "o.lse"],
    },
    "one_key_decode": {
        "attnc": 1, "name": "one_key_decode", "dims": {},
        "inputs": {"q": {"shape": [1, 8, 1, 16], "dtype": "f32"},
                   "k": {"shape": [1, 2, 33, 16], "dtype": "f32"},
                   "v": {"shape": [1, 2, 33, 16], "dtype": "f32"},
                   "n": {"shape": [1], "dtype": "i32"}},
        "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                   "mask": [{"kind": "key_length", "input": "n"}],
                   "return_lse": True}],
        "outputs": ["o", "o.lse"],
    },
}

# Key lengths (i32 inputs) per graph; [40, 30] for the others.
KEY_LENGTHS = {"one_key": [1, 1], "one_key_decode": [1]}

# (graph, input, index, value): one non-finite entry each.
CASES = [
    ("prefill", "q", (0, 0, 3, 2), np.nan),      # row 3 of head 0 is NaN
    ("prefill", "k", (0, 1, 4, 0), np.nan),      # rows >= 4 of head 1 see it
    ("prefill", "k", (0, 0, 6, 5), np.inf),      # +-inf scores for row 6 only
    ("prefill", "v", (0, 0, 0, 7), np.nan),      # column 7 of every row
    ("prefill", "v", (0, 1, 0, 1), -np.inf),
    ("prefill", "q", (0, 1, 5, 4), np.inf),
    ("decode", "k", (1, 2, 37, 3), np.nan),      # masked when n[1] <= 37
    ("decode", "k", (0, 1, 10, 3), np.nan),      # visible
    ("decode", "q", (1, 3, 0, 0), np.nan),
    ("decode", "v", (0, 0, 5, 9), np.inf),
    ("decode", "v", (1, 2, 35, 3), np.nan),      # past n[1] = 30: never read
    ("decode", "k", (1, 1, 31, 0), np.inf),      # likewise
    ("decode", "k", (1, 0, 3, 8), -np.inf),
    ("gqa_bf16", "k", (0, 1, 20, 4), np.nan),    # query heads 4..7
    ("gqa_bf16", "v", (0, 0, 7, 30), np.inf),
    ("prefill_bf16", "k", (0, 1, 30, 9), np.nan),  # rows >= 30 of head 1
    ("prefill_bf16", "v", (0, 0, 0, 3), np.inf),   # every row of head 0
    ("prefill_bf16", "q", (0, 0, 20, 0), np.nan),
    ("split", "k", (0, 0, 2900, 1), np.nan),     # in the second part
    ("split", "v", (0, 0, 100, 3), -np.inf),     # in the first part
    # Finite values near f32's limit: the output (a weighted mean of v) is
    # finite, so the kernels must not overflow on the way (a sum of p·v
    # with p = exp(s - m) reaches T·max |v|).
    ("prefill", "v", "all", 2e38),
    ("decode", "v", "all", 2e38),
    ("gqa_bf16", "v", "all", 2e38),
    ("prefill_bf16", "v", "all", -2e38),
    ("split", "v", "all", 2e38),
    # Tiny scores where every row sees one key: its lse must be its score.
    ("one_key", "q", "all", 1e-6),
    ("one_key_decode", "q", "all", 1e-6),
]


def expected(graph, inputs):
    """float64 numpy attention with IEEE arithmetic and the fully-masked rule."""
    q, k, v = (inputs[n].astype(np.float64) for n in "qkv")
    B, Hq, S, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    k = np.repeat(k, Hq // Hkv, axis=1)
    v = np.repeat(v, Hq // Hkv, axis=1)
    node = graph["nodes"][0]
    with np.errstate(all="ignore"):
        s = np.einsum("bhsd,bhtd->bhst", q, k) / np.sqrt(D)
        visible = np.ones((B, 1, S, T), bool)
        for mask in node.get("mask", []):
            if mask["kind"] == "causal":
                i = np.arange(S)[:, None] + (T - S)
                visible &= (np.arange(T)[None, :] <= i)[None, None]
            elif mask["kind"] == "key_length":
                n = inputs[mask["input"]]
                visible &= (np.arange(T)[None, :] < n[:, None])[:, None, None, :]
        s = np.where(visible, s, -np.inf)
        m = s.max(axis=-1, keepdims=True)           # NaN propagates
        empty = np.isneginf(m)
        p = np.where(visible, np.exp(s - np.where(empty, 0, m)), 0.0)
        l = p.sum(axis=-1, keepdims=True)
        # Masked keys are not seen: their weight is exactly 0 and their
        # values (even inf or NaN) never enter the row.
        vv = np.where(np.isfinite(v), v, 0.0)
        o = np.einsum("bhst,bhtd->bhsd", p, vv)
        # Non-finite values enter through the keys each row sees.
        for (b, h, t, d) in zip(*np.nonzero(~np.isfinite(v))):
            o[b, h, :, d] += np.where(visible[b, 0, :, t], p[b, h, :, t] * v[b, h, t, d], 0.0)
        o = np.where(empty, 0.0, o / np.where(empty, 1.0, l))
        lse = np.where(empty[..., 0], -np.inf, (m + np.log(l))[..., 0])
    return {"o": o, "o.lse": lse}


def run(attnc, backend, name, graph, inputs, work, threads):
    d = os.path.join(work, "%s_%s" % (name, backend))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "g.json")
    json.dump(graph, open(path, "w"))
    args = [attnc, "run", path, "--backend", backend, "--check", "--threads",
            str(threads), "--output-dir", os.path.join(d, "out")]
    for n, spec in graph["inputs"].items():
        f = os.path.join(d, n + ".npy")
        np.save(f, oracle.encode_for_file(inputs[n], spec["dtype"])
                if spec["dtype"] in ("bf16", "f16") else inputs[n])
        args.append("--input=%s=%s" % (n, f))
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    outs = {}
    for n in graph["outputs"]:
        f = os.path.join(d, "out", n + ".npy")
        if os.path.exists(f):
            outs[n] = oracle.decode_from_file(np.load(f), "bf16" if np.load(f).dtype == np.uint16 else "f32")
    return r, outs


def agree(out, ref, tol):
    """NaN and infinite entries identical, finite ones within tol normwise."""
    if out.shape != ref.shape:
        return False, "shape %s, expected %s" % (out.shape, ref.shape)
    if not np.array_equal(np.isnan(out), np.isnan(ref)):
        return False, "NaN at %d entries, expected %d" % (np.isnan(out).sum(), np.isnan(ref).sum())
    inf = np.isinf(ref) | np.isinf(out)
    if not np.array_equal(out[inf], ref[inf]):
        return False, "infinite entries differ"
    fin = np.isfinite(ref)
    nref = np.linalg.norm(ref[fin])
    err = np.linalg.norm(out[fin] - ref[fin]) / (nref if nref else 1.0)
    return err <= tol, "rel err %.2g, %d NaN, %d inf" % (err, np.isnan(ref).sum(), np.isinf(ref).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--backend", default="mlir", choices=["mlir", "halide"])
    ap.add_argument("--keep")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="nonfinite-")
    if not a.keep:  # --keep DIR keeps the files to look at
        atexit.register(shutil.rmtree, work, True)
    rng = np.random.default_rng(5)
    failures = 0
    for number, (name, where, index, value) in enumerate(CASES):
        graph = GRAPHS[name]
        inputs = {}
        for n, spec in graph["inputs"].items():
            if spec["dtype"] == "i32":
                lengths = KEY_LENGTHS.get(name, [40, 30])
                inputs[n] = np.array(lengths[:spec["shape"][0]], np.int32)
            else:
                x = rng.standard_normal(spec["shape"]).astype(np.float32)
                if spec["dtype"] == "bf16":
                    x = oracle.decode_from_file(oracle.encode_for_file(x, "bf16"), "bf16").astype(np.float32)
                inputs[n] = x
        if index == "all":
            # Every value near `value`, within f32 (and bf16) range.
            x = value * (1 + 0.05 * rng.uniform(-1, 1, inputs[where].shape))
            x = x.astype(np.float32)
            if graph["inputs"][where]["dtype"] == "bf16":
                x = oracle.decode_from_file(oracle.encode_for_file(x, "bf16"), "bf16").astype(np.float32)
            inputs[where] = x
        else:
            inputs[where][index] = value
        ref = expected(graph, inputs)
        tol = 2e-2 if graph["inputs"]["q"]["dtype"] == "bf16" else 1e-4
        r, outs = run(a.attnc, a.backend, "%s%d" % (name, number), graph, inputs, work,
                      2 if name == "split" else 1)
        problems = []
        if r.returncode != 0:
            problems.append("run --check exit %d: %s" % (r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1:]))
        for n in graph["outputs"]:
            if n not in outs:
                problems.append("no output " + n)
                continue
            ok, note = agree(outs[n], ref[n], tol)
            if not ok:
                problems.append("%s: %s" % (n, note))
        desc = "%s %s%s=%s" % (name, where, "" if index == "all" else list(index),
                               ("~%g" % value) if index == "all" else value)
        print("%-4s %s %s" % ("ok" if not problems else "FAIL", a.backend, desc)
              + ("" if not problems else ": " + "; ".join(problems)))
        failures += bool(problems)
    print("%d passed, %d failed" % (len(CASES) - failures, failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
