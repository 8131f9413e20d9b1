#!/usr/bin/env python3
"""Runs the tiled attention IR and compares it with the numpy oracle.

    tiled_ir.py --attnc build/bin/attnc --attn-opt build/bin/attn-opt [-v]
                [--random N [--seed S]]

attn-tile-attention (the FlashAttention-2 decomposition every backend shares)
is checked by FileCheck for its structure; this checks its numbers. For each
case below: `attnc import --fused` gives the attn.attention function,
`attn-opt --attn-tile-attention --attn-lower-tile-ops --attn-approximate-math`
tiles it (row and key tiles small enough to leave partial tiles and skip
whole ones), upstream `mlir-opt` bufferizes and lowers it, `mlir-cpu-runner`
runs it on random inputs, and tests/oracle/oracle.py (float64, independent of
attnc) decides: normwise relative error <= 1e-4 (2e-2 for f16 and bf16
outputs), -inf lse exactly where the oracle has it, NaN never passes. Cases cover every score kind, the masks
(causal, windows up to 2^63 - 1, key lengths with a fully masked batch,
tensor masks), biases and ALiBi, softcap, GQA, both layouts, the lse,
f16 and bf16, and run-time sizes. Each case runs twice: one query head per
row tile, and with pack-query-heads (the G query heads of a kv head share
the row tiles; tiles that straddle two heads included).

With --random N it runs instead the first N cases of the codegen matrix
(tests/codegen/matrix.py: every score kind, mask combination, bias, scale
and softcap extreme, layout, head grouping, dtype and run-time dim) whose
inputs are small enough to be MLIR constants, each unpacked and packed with
random tiles, under the matrix's verdict (the tolerance plus the oracle's
f32 rounding floor).
"""

import argparse
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "oracle"))
import oracle  # noqa: E402

LLVM_BIN = "/usr/lib/llvm-19/bin"
LLVM_LIB = "/usr/lib/llvm-19/lib"

# Upstream lowering of the tiled tensor code (the tile ops are linalg by
# then): one-shot bufferization, loops, the LLVM dialect.
LOWER = [
    "--convert-elementwise-to-linalg",
    "--one-shot-bufferize=bufferize-function-boundaries "
    "allow-return-allocs-from-loops",
    "--scf-forall-to-for", "--convert-linalg-to-loops", "--convert-scf-to-cf",
    "--expand-strided-metadata", "--lower-affine", "--arith-expand",
    "--convert-math-to-llvm", "--finalize-memref-to-llvm",
    "--convert-arith-to-llvm", "--convert-index-to-llvm",
    "--convert-func-to-llvm", "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]


def case(name, q, k, v, node, dims=None, extra=None, tiles=(3, 2),
         dtype="f32"):
    """A graph with one attention node o (lse returned) and its tiles."""
    inputs = {"q": {"shape": q, "dtype": dtype},
              "k": {"shape": k, "dtype": dtype},
              "v": {"shape": v, "dtype": dtype}}
    inputs.update(extra or {})
    attention = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                 "return_lse": True}
    attention.update(node)
    graph = {"attnc": 1, "name": name, "inputs": inputs,
             "nodes": [attention], "outputs": ["o", "o.lse"]}
    if dims:
        graph["dims"] = {d: None for d in dims}
    return graph, dims or {}, tiles


HUGE = 2**63 - 1
CASES = [
    case("dot_causal", [2, 4, 7, 5], [2, 2, 9, 5], [2, 2, 9, 3],
         {"mask": [{"kind": "causal"}], "scale": 0.5}),
    case("dot_window", [1, 2, 9, 8], [1, 2, 9, 8], [1, 2, 9, 4],
         {"mask": [{"kind": "window", "left": 3, "right": 1}]}),
    case("dot_huge_window_causal", [1, 1, 6, 8], [1, 1, 11, 8],
         [1, 1, 11, 8],
         {"mask": [{"kind": "window", "left": HUGE, "right": HUGE},
                   {"kind": "causal"}]}),
    case("dot_key_length", [2, 2, 5, 4], [2, 1, 8, 4], [2, 1, 8, 6],
         {"mask": [{"kind": "key_length", "input": "len"}],
          "softcap": 2.0},
         extra={"len": {"shape": [2], "dtype": "i32"}}),
    case("dot_s_gt_t_causal", [1, 2, 8, 4], [1, 2, 3, 4], [1, 2, 3, 4],
         {"mask": [{"kind": "causal"}]}),
    case("general_bshd", [1, 5, 4, 6], [1, 7, 2, 6], [1, 7, 2, 3],
         {"layout": "bshd", "score": {"kind": "general", "w": "w"},
          "mask": [{"kind": "causal"}]},
         extra={"w": {"shape": [6, 6], "dtype": "f32"}}),
    case("additive", [1, 2, 6, 4], [1, 2, 7, 4], [1, 2, 7, 5],
         {"score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"}},
         extra={"wq": {"shape": [3, 4], "dtype": "f32"},
                "wk": {"shape": [3, 4], "dtype": "f32"},
                "va": {"shape": [3], "dtype": "f32"}}),
    case("cosine_softcap", [1, 3, 5, 7], [1, 3, 6, 7], [1, 3, 6, 2],
         {"score": {"kind": "cosine"}, "scale": 10.0, "softcap": 5.0,
          "mask": [{"kind": "window", "left": 1, "right": 2}]}),
    case("bias_alibi_mask", [1, 4, 5, 4], [1, 4, 7, 4], [1, 4, 7, 4],
         {"bias": [{"kind": "tensor", "input": "bias"}, {"kind": "alibi"}],
          "mask": [{"kind": "tensor", "input": "m"}, {"kind": "causal"}]},
         extra={"bias": {"shape": [1, 4, 1, 7], "dtype": "f32"},
                "m": {"shape": [5, 7], "dtype": "bool"}}),
    case("runtime_sizes", ["B", "H", "S", "D"], ["B", "H", "T", "D"],
         ["B", "H", "T", "E"],
         {"mask": [{"kind": "causal"}]},
         dims={"B": 2, "H": 3, "S": 7, "T": 10, "D": 5, "E": 3}),
    case("runtime_gqa_bshd", ["B", "S", "Hq", 8], ["B", "T", "Hkv", 8],
         ["B", "T", "Hkv", 4],
         {"layout": "bshd", "mask": [{"kind": "window", "left": 2,
                                      "right": 0}]},
         dims={"B": 1, "S": 6, "T": 6, "Hq": 4, "Hkv": 2}, tiles=(4, 3)),
    case("gqa_straddle_alibi_masks", [1, 6, 5, 4], [1, 2, 7, 4],
         [1, 2, 7, 3],
         {"bias": [{"kind": "tensor", "input": "bias"}, {"kind": "alibi"}],
          "mask": [{"kind": "tensor", "input": "m"}, {"kind": "causal"},
                   {"kind": "window", "left": 3, "right": HUGE}]},
         extra={"bias": {"shape": [1, 6, 1, 7], "dtype": "f32"},
                "m": {"shape": [1, 6, 5, 7], "dtype": "bool"}},
         tiles=(4, 3)),
    case("gqa_slopes_bshd_key_length", [2, 3, 6, 4], [2, 3, 1, 4],
         [2, 3, 1, 5],
         {"layout": "bshd", "bias": [{"kind": "alibi", "slopes": "sl"}],
          "mask": [{"kind": "key_length", "input": "len"}]},
         extra={"sl": {"shape": [6], "dtype": "f32"},
                "len": {"shape": [2], "dtype": "i32"}},
         tiles=(5, 2)),
    case("decode_one_row", [2, 8, 1, 16], [2, 2, 13, 16], [2, 2, 13, 16],
         {"mask": [{"kind": "causal"}]}, tiles=(8, 4)),
    case("bf16_causal_softcap", [1, 2, 7, 8], [1, 1, 9, 8], [1, 1, 9, 8],
         {"mask": [{"kind": "causal"}], "softcap": 3.0}, dtype="bf16"),
    case("f16_window_runtime", ["B", 2, "S", 8], ["B", 2, "S", 8],
         ["B", 2, "S", 4],
         {"mask": [{"kind": "window", "left": 2, "right": 2}]},
         dims={"B": 2, "S": 7}, dtype="f16"),
]

MLIR_TYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32",
              "bool": "i1"}
# Normwise relative error allowed for outputs of each dtype.
TOLERANCES = {"f32": 1e-4, "f16": 2e-2, "bf16": 2e-2}


def random_inputs(graph, dims, rng):
    values = {}
    for name, decl in graph["inputs"].items():
        shape = [dims[d] if isinstance(d, str) else d for d in decl["shape"]]
        if decl["dtype"] == "i32":
            # Key lengths: batch 0 sees none (fully masked rows), others some.
            lengths = rng.integers(1, 9, size=shape).astype(np.int32)
            lengths.flat[0] = 0
            values[name] = lengths
        elif decl["dtype"] == "bool":
            values[name] = rng.random(shape) < 0.7
        else:
            # Exactly representable in the input's dtype, so the kernel and
            # the oracle read the same numbers.
            values[name] = oracle.round_to_dtype(rng.standard_normal(shape),
                                                 decl["dtype"])
    return values


def literal(array):
    """An MLIR dense literal of `array` (nested lists, floats with a dot)."""
    if array.dtype == np.bool_:
        text = json.dumps(array.tolist())
        return text
    if array.dtype.kind == "i":
        return json.dumps(array.tolist())
    return re.sub(r"-?\d[\d.e+-]*|NaN|-?Infinity",
                  lambda m: "%.17e" % float(m.group(0)),
                  json.dumps(array.astype(np.float64).tolist()))


def main_function(module, graph, dims, values):
    """A @main that calls the graph function on constants and prints each
    result (floats widened to f32, then printMemrefF32; i32 printMemrefI32).
    """
    signature = re.search(r"func\.func @%s\((.*?)\) -> (.*?) \{$"
                          % graph["name"], module, re.M)
    params = re.findall(r"%\w+: ([^ ,{]+(?:<[^>]*>)?)(?: \{([^}]*)\})?",
                        signature.group(1))
    results = re.findall(r"(tensor<[^>]*>)", signature.group(2))
    lines = ["func.func private @printMemrefF32(memref<*xf32>)",
             "func.func private @printMemrefI32(memref<*xi32>)",
             "func.func @main() {"]
    operands, types = [], []
    inputs = iter(graph["inputs"])
    for i, (arg_type, attrs) in enumerate(params):
        types.append(arg_type)
        if arg_type == "index":
            name = re.search(r'attn\.dim = "(\w+)"', attrs).group(1)
            lines.append("  %%a%d = arith.constant %d : index"
                         % (i, dims[name]))
            operands.append("%%a%d" % i)
            continue
        name = next(inputs)
        array = values[name]
        element = MLIR_TYPES[graph["inputs"][name]["dtype"]]
        static = "tensor<%s%s>" % ("".join("%dx" % n for n in array.shape),
                                   element)
        lines.append("  %%c%d = arith.constant dense<%s> : %s"
                     % (i, literal(array), static))
        lines.append("  %%a%d = tensor.cast %%c%d : %s to %s"
                     % (i, i, static, arg_type))
        operands.append("%%a%d" % i)
    lines.append("  %%r:%d = func.call @%s(%s) : (%s) -> (%s)" % (
        len(results), graph["name"], ", ".join(operands), ", ".join(types),
        ", ".join(results)))
    for i, result in enumerate(results):
        value = "%%r#%d" % i
        if re.search(r"xb?f16>$", result):
            wide = re.sub(r"b?f16>$", "f32>", result)
            lines.append("  %%w%d = arith.extf %s : %s to %s"
                         % (i, value, result, wide))
            value, result = "%%w%d" % i, wide
        element = "i32" if result.endswith("i32>") else "f32"
        memref = result.replace("tensor<", "memref<")
        lines.append("  %%m%d = bufferization.to_memref %s : %s"
                     % (i, value, memref))
        lines.append("  %%u%d = memref.cast %%m%d : %s to memref<*x%s>"
                     % (i, i, memref, element))
        lines.append("  func.call @printMemref%s(%%u%d) : (memref<*x%s>) -> ()"
                     % (element.upper(), i, element))
    lines += ["  return", "}"]
    return "\n".join(lines)


def run(command, stdin, what):
    done = subprocess.run(command, input=stdin, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (what, done.returncode,
                                                    done.stderr[-3000:]))
    return done.stdout


def printed_arrays(text):
    arrays = []
    for part in text.split("Unranked Memref")[1:]:
        data = part.split("data =", 1)[1]
        numbers = re.findall(r"-?inf|-?nan|-?\d+(?:\.\d*)?(?:e[-+]?\d+)?",
                             data)
        arrays.append(np.array([float(x) for x in numbers]))
    return arrays


def relative_error(got, want):
    if got.shape != want.shape or np.isnan(got).any():
        return math.inf
    # Infinities (an lse of a row without keys) must match exactly.
    infinite = np.isinf(want)
    if (got[infinite] != want[infinite]).any() or np.isinf(got[~infinite]).any():
        return math.inf
    got, want = got[~infinite], want[~infinite]
    norm = np.linalg.norm(want)
    if norm == 0:
        return 0.0 if not got.any() else math.inf
    return float(np.linalg.norm(got - want) / norm)


def require_tools(script):
    for tool in ("mlir-opt", "mlir-cpu-runner"):
        if not os.path.exists(os.path.join(LLVM_BIN, tool)):
            sys.exit("%s: %s/%s is missing (mlir-19-tools; "
                     "scripts/setup.sh installs it)" % (script, LLVM_BIN, tool))


def run_on_cpu(module):
    """Lowers `module` (tensor code with a @main that prints its results)
    upstream and runs it; returns the printed arrays."""
    lowered = run([os.path.join(LLVM_BIN, "mlir-opt")] + LOWER, module,
                  "mlir-opt")
    printed = run([os.path.join(LLVM_BIN, "mlir-cpu-runner"), "-e", "main",
                   "-entry-point-result=void",
                   "-shared-libs=%s/libmlir_runner_utils.so,"
                   "%s/libmlir_c_runner_utils.so" % (LLVM_LIB, LLVM_LIB)],
                  lowered, "mlir-cpu-runner")
    return printed_arrays(printed)


def run_tiled(args, graph, dims, values, tiles, pack, scratch):
    """`graph` imported fused, tiled (`tiles` = row and key tile, packed
    query heads or not), the tile ops lowered portably, run on `values`;
    returns the printed outputs."""
    path = os.path.join(scratch, graph["name"] + ".json")
    with open(path, "w") as f:
        json.dump(graph, f)
    fused = run([args.attnc, "import", "--fused", path], None, "attnc import")
    tiled = run([args.attn_opt,
                 "--attn-tile-attention=row-tile=%d key-tile=%d "
                 "pack-query-heads=%d" % (tiles + (pack,)),
                 "--attn-lower-tile-ops", "--attn-approximate-math"],
                fused, "attn-opt")
    if re.search(r"\battn\.(tile_|attention)", tiled):
        raise RuntimeError("attn ops left after tiling:\n" + tiled)
    # Affine map aliases come first, then `module { ... }`: @main goes last.
    body = tiled.rstrip()
    end = body.rindex("}")
    module = body[:end] + main_function(tiled, graph, dims, values) + "\n}\n"
    return run_on_cpu(module)


def check(args, graph, dims, tiles, pack, rng, scratch):
    values = random_inputs(graph, dims, rng)
    got = run_tiled(args, graph, dims, values, tiles, pack, scratch)
    want = oracle.evaluate(graph, {n: values[n] for n in graph["inputs"]},
                           {d: dims[d] for d in dims})
    errors = [relative_error(g, np.asarray(want[name], np.float64).ravel())
              for g, name in zip(got, graph["outputs"])]
    if len(got) != len(graph["outputs"]):
        errors = [math.inf]
    return errors


def random_cases(count, seed):
    """The first `count` cases of the codegen matrix (matrix.py: every score
    kind, mask, bias, scale and softcap extreme, layout, head grouping,
    dtype and run-time dim) whose inputs are small enough to be MLIR
    constants, with their input values and random tiles."""
    import matrix  # noqa: E402 - only this mode needs it
    rng = np.random.default_rng(seed)
    chosen = []
    cases, _ = matrix.make_cases(seed, 40 * count, False)
    for c in cases:
        arrays = c.input_arrays()
        if sum(a.size for a in arrays.values()) > 40000:
            continue
        values = {n: oracle.decode_from_file(a, c.inputs[n]["dtype"])
                  for n, a in arrays.items()}
        tiles = (int(rng.choice([1, 3, 8, 16])), int(rng.choice([2, 5, 16])))
        chosen.append((c, values, tiles))
        if len(chosen) == count:
            break
    return chosen


def check_random(args, case, values, tiles, pack, scratch):
    """Runs one matrix case through the tiled IR; returns a failure or None.
    The verdict is the matrix's: the oracle's tolerance plus its f32
    rounding floor, NaN never, -inf of lse exactly."""
    graph = case.graph
    got = run_tiled(args, graph, case.bound, values, tiles, pack, scratch)
    floors = {}
    want = oracle.evaluate_typed(graph, values, case.bound, floors)
    if len(got) != len(graph["outputs"]):
        return "%d results for %d outputs" % (len(got), len(graph["outputs"]))
    for g, name in zip(got, graph["outputs"]):
        reference, dtype = want[name]
        reference = np.asarray(reference, np.float64).ravel()
        error = relative_error(g, reference)
        finite = np.isfinite(reference)
        norm = np.linalg.norm(reference[finite])
        floor = np.linalg.norm(np.asarray(floors.get(name, 0.0)).ravel()[
            finite]) / norm if norm else 0.0
        limit = TOLERANCES["f32" if name.endswith(".lse") else dtype] + floor
        if not error <= limit:
            return "%s: rel_err %.3g (tol %.3g)" % (name, error, limit)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attnc", required=True)
    parser.add_argument("--attn-opt", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--random", type=int, metavar="N",
                        help="instead: the first N small cases of the codegen "
                        "matrix, each unpacked and packed, random tiles")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    require_tools("tiled_ir.py")
    if args.random:
        return main_random(args)
    rng = np.random.default_rng(args.seed)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="attnc_tiled_") as scratch:
        for (graph, dims, tiles), pack in itertools.product(CASES, (0, 1)):
            try:
                errors = check(args, graph, dims, tiles, pack, rng, scratch)
                # The lse is f32 whatever the inputs are.
                limits = [TOLERANCES[graph["inputs"]["v"]["dtype"]],
                          TOLERANCES["f32"]]
                ok = all(e <= limit for e, limit in zip(errors, limits))
                detail = "rel_err out %.2g lse %.2g" % tuple(errors)
            except Exception as error:  # noqa: BLE001 - reported per case
                ok, detail = False, "%s: %s" % (type(error).__name__, error)
            failed += not ok
            if args.verbose or not ok:
                print("%s %s tiles %s%s: %s" % (
                    "ok  " if ok else "FAIL", graph["name"], tiles,
                    " packed" if pack else "", detail))
    total = 2 * len(CASES)
    print("%d of %d tiled cases pass" % (total - failed, total))
    return 1 if failed else 0


def main_random(args):
    failed = total = 0
    with tempfile.TemporaryDirectory(prefix="attnc_tiled_") as scratch:
        for case, values, tiles in random_cases(args.random, args.seed):
            for pack in (0, 1):
                total += 1
                try:
                    problem = check_random(args, case, values, tiles, pack,
                                           scratch)
                except Exception as error:  # noqa: BLE001 - per case
                    problem = "%s: %s" % (type(error).__name__, error)
                failed += problem is not None
                if args.verbose or problem:
                    print("%s #%d tiles %s%s %s%s" % (
                        "FAIL" if problem else "ok  ", case.index, tiles,
                        " packed" if pack else "", case.describe()[:120],
                        ": " + problem if problem else ""))
    print("%d of %d random tiled cases pass" % (total - failed, total))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
