#!/usr/bin/env python3
"""Runs the primitive ops lowered to linalg and compares with the numpy oracle.

    primitives_ir.py --attnc build/bin/attnc --attn-opt build/bin/attn-opt [-v]

attn-lower-primitives (every attn op but attention and the tile ops, as
linalg on tensors) is checked by FileCheck for its structure; this checks its
numbers. For each graph below: `attnc import` gives the unfused attn
function, `attn-opt --attn-lower-primitives --attn-approximate-math` lowers
it, upstream `mlir-opt` bufferizes and lowers it (the same passes as
tiled_ir.py), `mlir-cpu-runner` runs it on random inputs, and
tests/oracle/oracle.py (float64, independent of attnc) decides: normwise
relative error <= 1e-4 (2e-2 for f16 and bf16 outputs), infinities exactly
where the oracle has them, NaN never passes. The cases cover every primitive
op, numpy broadcasting (batch dims of matmul, static 1s, missing leading
dims), 1-D matmul operands, run-time sizes, f16, bf16 and i32, softmax of
all -inf rows (masked_fill and causal_mask with S > T), exporter-style
unfused attention chains (GPT-2's projections, heads and causal softmax;
GQA by repeat with a padding mask in bf16) and Llama's rotary embeddings
(cos, sin, slice).
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
sys.path.insert(0, HERE)
import oracle  # noqa: E402
from tiled_ir import (TOLERANCES, main_function,  # noqa: E402
                      relative_error, require_tools, run, run_on_cpu)


def graph(name, inputs, nodes, outputs, dims=None, values=None):
    """A graph of `nodes` on `inputs` ({name: (shape, dtype)}); `dims` binds
    its run-time sizes (declared null); `values` fixes some inputs."""
    document = {"attnc": 1, "name": name,
                "inputs": {n: {"shape": s, "dtype": t}
                           for n, (s, t) in inputs.items()},
                "nodes": [dict(node, name=n, op=op)
                          for n, op, node in nodes],
                "outputs": outputs}
    if dims:
        document["dims"] = {d: None for d in dims}
    return document, dims or {}, values or {}


def f(shape, dtype="f32"):
    return (shape, dtype)


def gpt2_like(dtype):
    """GPT-2's attention block as an exporter writes it, small."""
    return graph(
        "exporter_gpt2_" + dtype,
        {"x": f(["B", "S", 8], dtype), "wq": f([8, 8], dtype),
         "bq": f([8], dtype), "wk": f([8, 8], dtype), "bk": f([8], dtype),
         "wv": f([8, 8], dtype), "bv": f([8], dtype), "wo": f([8, 8], dtype),
         "bo": f([8], dtype)},
        [("q", "linear", {"x": "x", "w": "wq", "b": "bq"}),
         ("k", "linear", {"x": "x", "w": "wk", "b": "bk"}),
         ("v", "linear", {"x": "x", "w": "wv", "b": "bv"}),
         ("q4", "reshape", {"x": "q", "shape": ["B", "S", 2, 4]}),
         ("k4", "reshape", {"x": "k", "shape": ["B", "S", 2, 4]}),
         ("v4", "reshape", {"x": "v", "shape": ["B", "S", 2, 4]}),
         ("qh", "transpose", {"x": "q4", "perm": [0, 2, 1, 3]}),
         ("kh", "transpose", {"x": "k4", "perm": [0, 2, 1, 3]}),
         ("vh", "transpose", {"x": "v4", "perm": [0, 2, 1, 3]}),
         ("s", "matmul", {"a": "qh", "b": "kh", "transpose_b": True}),
         ("ss", "scale", {"x": "s", "value": 0.5}),
         ("sm", "causal_mask", {"x": "ss"}),
         ("p", "softmax", {"x": "sm", "axis": -1}),
         ("a", "matmul", {"a": "p", "b": "vh"}),
         ("at", "transpose", {"x": "a", "perm": [0, 2, 1, 3]}),
         ("a2", "reshape", {"x": "at", "shape": ["B", "S", -1]}),
         ("y", "linear", {"x": "a2", "w": "wo", "b": "bo"})],
        ["y"], dims={"B": 2, "S": 5})


def padding_mask(shape, rng):
    """masked_fill's mask (true = fill): mostly false, batch 1's last key
    row all true so that a whole softmax row is -inf."""
    mask = rng.random(shape) < 0.2
    mask[(1,) + (0,) * (len(shape) - 2)] = True
    return mask


CASES = [
    graph("matmul_broadcast_transpose_b",
          {"a": f(["B", 1, "S", 4]), "b": f([1, 3, "T", 4])},
          [("s", "matmul", {"a": "a", "b": "b", "transpose_b": True})],
          ["s"], dims={"B": 2, "S": 3, "T": 5}),
    graph("matmul_vectors",
          {"a": f([2, 3, 5]), "v": f([5]), "r": f([3]), "m": f([2, "K"])},
          [("av", "matmul", {"a": "a", "b": "v"}),
           ("ra", "matmul", {"a": "r", "b": "a"}),
           ("rv", "matmul", {"a": "v", "b": "v"}),
           ("mm", "matmul", {"a": "a", "b": "a", "transpose_b": True}),
           ("mk", "matmul", {"a": "m", "b": "m", "transpose_b": True})],
          ["av", "ra", "rv", "mm", "mk"], dims={"K": 6}),
    graph("linear",
          {"x": f(["B", "S", 6]), "w": f([5, 6]), "b": f([5]),
           "x1": f([6])},
          [("y", "linear", {"x": "x", "w": "w", "b": "b"}),
           ("z", "linear", {"x": "x", "w": "w"}),
           ("y1", "linear", {"x": "x1", "w": "w", "b": "b"})],
          ["y", "z", "y1"], dims={"B": 2, "S": 3}),
    graph("elementwise_broadcast",
          {"a": f(["B", 3, "T"]), "b": f([3, 1]), "c": f(["T"]),
           "d": f([1, 1, "T"])},
          [("s", "add", {"a": "a", "b": "b"}),
           ("t", "sub", {"a": "c", "b": "a"}),
           ("u", "mul", {"a": "a", "b": "d"}),
           ("w", "div", {"a": "b", "b": "d"})],
          ["s", "t", "u", "w"], dims={"B": 2, "T": 4}),
    graph("unary",
          {"x": f(["N", 7])},
          [("s", "scale", {"x": "x", "value": -0.375}),
           ("t", "tanh", {"x": "s"}),
           ("e", "exp", {"x": "x"}),
           ("n", "neg", {"x": "x"}),
           ("r", "sqrt", {"x": "e"})],
          ["s", "t", "e", "n", "r"], dims={"N": 3}),
    graph("softmax_all_masked_rows",
          {"x": f(["B", 3, "T"]), "pad": f(["B", 1, "T"], "bool")},
          [("m", "masked_fill", {"x": "x", "mask": "pad", "value": "-inf"}),
           ("p", "softmax", {"x": "m"}),
           ("p1", "softmax", {"x": "x", "axis": 1})],
          ["m", "p", "p1"], dims={"B": 2, "T": 6},
          values={"pad": padding_mask}),
    graph("masked_fill_value",
          {"x": f([2, "S", 4], "f16"), "m": f([4], "bool")},
          [("y", "masked_fill", {"x": "x", "mask": "m", "value": -1e4})],
          ["y"], dims={"S": 3}),
    graph("causal_s_gt_t",
          {"x": f(["B", 2, "S", "T"])},
          [("c", "causal_mask", {"x": "x"}),
           ("p", "softmax", {"x": "c"})],
          ["c", "p"], dims={"B": 1, "S": 5, "T": 3}),
    graph("causal_s_lt_t",
          {"x": f(["S", "T"])},
          [("c", "causal_mask", {"x": "x"}),
           ("p", "softmax", {"x": "c", "axis": -1})],
          ["p"], dims={"S": 3, "T": 7}),
    graph("data_movement",
          {"x": f(["B", "S", 12]), "y": f([2, 3, 4])},
          [("r", "reshape", {"x": "x", "shape": ["B", "S", 3, 4]}),
           ("t", "transpose", {"x": "r", "perm": [2, 0, 3, 1]}),
           ("u", "unsqueeze", {"x": "t", "axis": 2}),
           ("u4", "unsqueeze", {"x": "t", "axis": 4}),
           ("f", "reshape", {"x": "t", "shape": [12, "B", "S"]}),
           ("g", "reshape", {"x": "y", "shape": [4, 6]})],
          ["u", "u4", "f", "g"], dims={"B": 2, "S": 5}),
    graph("repeat_reduce_concat",
          {"x": f(["B", 2, "T", 3]), "y": f(["B", 1, "T", 3])},
          [("r", "repeat", {"x": "x", "axis": 1, "times": 3}),
           ("r3", "repeat", {"x": "x", "axis": 3, "times": 2}),
           ("s", "reduce_sum", {"x": "x", "axis": -1, "keepdims": True}),
           ("s2", "reduce_sum", {"x": "x", "axis": 2}),
           ("c", "concat", {"inputs": ["x", "y", "x"], "axis": 1})],
          ["r", "r3", "s", "s2", "c"], dims={"B": 2, "T": 4}),
    graph("integers",
          {"a": f(["N", 3], "i32"), "b": f([3], "i32")},
          [("s", "add", {"a": "a", "b": "b"}),
           ("d", "sub", {"a": "s", "b": "a"}),
           ("m", "mul", {"a": "a", "b": "b"}),
           ("n", "neg", {"x": "m"}),
           ("r", "reduce_sum", {"x": "n", "axis": 0}),
           ("t", "transpose", {"x": "a", "perm": [1, 0]})],
          ["d", "n", "r", "t"], dims={"N": 4}),
    graph("f16_ops",
          {"a": f(["B", 3, 4], "f16"), "b": f([4, "N"], "f16"),
           "c": f(["N"], "f16")},
          [("p", "matmul", {"a": "a", "b": "b"}),
           ("q", "add", {"a": "p", "b": "c"}),
           ("e", "exp", {"x": "q"}),
           ("s", "softmax", {"x": "q", "axis": 1}),
           ("r", "reduce_sum", {"x": "e", "axis": -1}),
           ("t", "tanh", {"x": "q"})],
          ["q", "s", "r", "t"], dims={"B": 2, "N": 5}),
    graph("bf16_ops",
          {"x": f(["S", 6], "bf16"), "w": f([4, 6], "bf16"),
           "b": f([4], "bf16")},
          [("y", "linear", {"x": "x", "w": "w", "b": "b"}),
           ("s", "scale", {"x": "y", "value": 0.25}),
           ("d", "div", {"a": "s", "b": "b"}),
           ("n", "neg", {"x": "d"}),
           ("r", "repeat", {"x": "n", "axis": 1, "times": 2}),
           ("m", "mul", {"a": "y", "b": "y"}),
           ("q", "sqrt", {"x": "m"})],
          ["y", "r", "q"], dims={"S": 3}),
    # Llama's rotary embedding: cos/sin tables from positions x inv_freq,
    # rotate_half by two slices, neg and concat (D/2 = 3); bf16 cos and a
    # bf16 slice beside it.
    graph("rotary",
          {"x": f(["B", 3, "S", 6]), "pos": f(["S"]), "inv": f([3]),
           "h": f(["S", 7], "bf16")},
          [("p2", "reshape", {"x": "pos", "shape": ["S", 1]}),
           ("fr", "mul", {"a": "p2", "b": "inv"}),
           ("emb", "concat", {"inputs": ["fr", "fr"], "axis": -1}),
           ("c", "cos", {"x": "emb"}),
           ("s", "sin", {"x": "emb"}),
           ("x1", "slice", {"x": "x", "axis": -1, "start": 0, "end": 3}),
           ("x2", "slice", {"x": "x", "axis": 3, "start": 3, "end": 6}),
           ("n2", "neg", {"x": "x2"}),
           ("rh", "concat", {"inputs": ["n2", "x1"], "axis": -1}),
           ("xc", "mul", {"a": "x", "b": "c"}),
           ("rs", "mul", {"a": "rh", "b": "s"}),
           ("y", "add", {"a": "xc", "b": "rs"}),
           ("hc", "cos", {"x": "h"}),
           ("hl", "slice", {"x": "h", "axis": 1, "start": 2, "end": 7}),
           ("hs", "sin", {"x": "hl"})],
          ["y", "s", "hc", "hs", "x2"], dims={"B": 2, "S": 5},
          values={"pos": lambda shape, rng: np.arange(shape[0]) + 3.0,
                  "inv": lambda shape, rng: 10000.0 ** (-np.arange(3) / 3)}),
    gpt2_like("f32"),
    gpt2_like("f16"),
    graph("exporter_gqa_padding_bf16",
          {"q": f(["B", 4, "S", 8], "bf16"), "k": f(["B", 2, "T", 8], "bf16"),
           "v": f(["B", 2, "T", 8], "bf16"),
           "pad": f(["B", 1, 1, "T"], "bool"), "c": f([1], "bf16")},
          [("kr", "repeat", {"x": "k", "axis": 1, "times": 2}),
           ("vr", "repeat", {"x": "v", "axis": 1, "times": 2}),
           ("s", "matmul", {"a": "q", "b": "kr", "transpose_b": True}),
           ("ss", "div", {"a": "s", "b": "c"}),
           ("sm", "masked_fill", {"x": "ss", "mask": "pad", "value": "-inf"}),
           ("p", "softmax", {"x": "sm", "axis": 3}),
           ("o", "matmul", {"a": "p", "b": "vr"})],
          ["o"], dims={"B": 2, "S": 3, "T": 5},
          # c: sqrt(8) in bf16, broadcast from [1].
          values={"pad": padding_mask,
                  "c": lambda shape, rng: np.full(shape, 2.828125)}),
]


def random_inputs(document, dims, fixed, rng):
    values = {}
    for name, decl in document["inputs"].items():
        shape = tuple(dims[d] if isinstance(d, str) else d
                      for d in decl["shape"])
        if name in fixed:
            value = fixed[name](shape, rng)
            if decl["dtype"] not in ("bool", "i32"):
                value = oracle.round_to_dtype(value, decl["dtype"])
            values[name] = value
        elif decl["dtype"] == "i32":
            values[name] = rng.integers(-9, 10, size=shape).astype(np.int32)
        elif decl["dtype"] == "bool":
            values[name] = rng.random(shape) < 0.3
        else:
            # Exactly representable in the input's dtype, so the kernel and
            # the oracle read the same numbers.
            values[name] = oracle.round_to_dtype(rng.standard_normal(shape),
                                                 decl["dtype"])
    return values


def check(args, document, dims, fixed, rng, scratch):
    path = os.path.join(scratch, document["name"] + ".json")
    with open(path, "w") as out:
        json.dump(document, out)
    values = random_inputs(document, dims, fixed, rng)
    imported = run([args.attnc, "import", path], None, "attnc import")
    lowered = run([args.attn_opt, "--attn-lower-primitives",
                   "--attn-approximate-math"], imported, "attn-opt")
    if re.search(r"= attn\.", lowered):
        raise RuntimeError("attn ops left after lowering:\n" + lowered)
    body = lowered.rstrip()
    end = body.rindex("}")
    module = body[:end] + main_function(lowered, document, dims, values) + \
        "\n}\n"
    got = run_on_cpu(module)
    typed = oracle.evaluate_typed(document,
                                  {n: values[n] for n in document["inputs"]},
                                  dict(dims))
    if len(got) != len(document["outputs"]):
        return [(name, math.inf, 0.0) for name in document["outputs"]]
    checked = []
    for g, name in zip(got, document["outputs"]):
        want, dtype = typed[name]
        error = relative_error(g, np.asarray(want, np.float64).ravel())
        checked.append((name, error, TOLERANCES.get(dtype, 0.0)))
    return checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnc", required=True)
    parser.add_argument("--attn-opt", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    require_tools("primitives_ir.py")
    rng = np.random.default_rng(args.seed)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="attnc_primitives_") as scratch:
        for document, dims, fixed in CASES:
            try:
                checked = check(args, document, dims, fixed, rng, scratch)
                # i32 outputs must be exact (tolerance 0).
                ok = all(e <= limit for _, e, limit in checked)
                detail = ", ".join("%s %.2g" % (n, e) for n, e, _ in checked)
            except Exception as error:  # noqa: BLE001 - reported per case
                ok, detail = False, "%s: %s" % (type(error).__name__, error)
            failed += not ok
            if args.verbose or not ok:
                print("%s %s: rel_err %s" % ("ok  " if ok else "FAIL",
                                             document["name"], detail))
    print("%d of %d primitive cases pass" % (len(CASES) - failed, len(CASES)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
