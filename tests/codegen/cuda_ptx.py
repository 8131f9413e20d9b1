"""CUDA targets without a GPU: PTX, ptxas and clear refusals.

    cuda_ptx.py --attnc PATH [--keep DIR]

`attnc compile --target cuda-sm80|cuda-sm90|cuda-sm90a` on every example graph
and on generated graphs covering what the CUDA kernel takes (f32/f16/bf16,
both layouts, causal/window/key_length masks, softcap, lse, GQA, head dims up
to 300, so more than one 256-column chunk; cosine, general and additive
scores, biases, ALiBi, tensor masks) and on f16/bf16 graphs with fixed head
dims that get the tensor-core kernel (staged in shared memory and not;
staged on cuda-sm90a, its products must be wgmma, elsewhere mma.sync).
A graph the kernel takes must give NAME.ptx for the right architecture, one
entry per attention op, and a manifest whose kernels name their parameters;
a graph with nodes outside attention (the examples with projections, one
whose output is its input, one returning lse alone) also the functions
its host entry launches;
where the CUDA toolkit's ptxas is installed, each kernel's report must show
no spills, at most 255 registers and at most 48 KB of static shared memory
(else the manifest must say there is no ptxas). A graph it does not take
must exit 1 with one line naming the file and what is missing, and write
nothing. Then the numpy oracle's random graphs (--family-cases of each family,
the cases tests/gpu/cuda_oracle.py runs on a GPU) for every target: each
compiles, or is refused in one line with nothing written, never a crash, and
where ptxas is installed every kernel and host-entry function is without
spills. Numerics need a GPU (ctest label gpu).
"""

import argparse
import atexit
import glob
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
SIZES = ["B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
# Static shared memory a kernel may declare on every architecture (more
# needs cuFuncSetAttribute at launch).
STATIC_SHARED_LIMIT = 48 * 1024
TARGETS = {"cuda-sm80": "sm_80", "cuda-sm90": "sm_90", "cuda-sm90a": "sm_90a"}
# Graphs with something the CUDA kernel does not take yet: additive scores
# of a run-time width.
REFUSED = {"p_additive_runtime_width"}
# Graphs with nodes outside attention: the host entry launches their kernels.
WITH_ENTRY = {"bert_encoder_attn", "gpt2_block_attn", "llama3_rotary_exporter",
              "g_identity", "g_lse_only", "g_reshape_output"}


def generated():
    """Graphs over the features the kernel takes: every dtype, mask and extra
    together, the layout alternating so that each of them meets both."""
    dtypes, masks, extras = (["f32", "f16", "bf16"], [None, "causal", "window", "key_length"],
                             ["plain", "softcap_lse"])
    for (i, dtype), (j, mask), (k, extra) in itertools.product(
            enumerate(dtypes), enumerate(masks), enumerate(extras)):
        layout = ("bhsd", "bshd")[(i + j + k) % 2]
        hq, hkv, dk, dv = (8, 2, 300, 72) if extra == "plain" else (4, 4, 64, 300)
        def shape(h, length, d):
            return ["B", h, length, d] if layout == "bhsd" else ["B", length, h, d]
        inputs = {"q": {"shape": shape(hq, "S", dk), "dtype": dtype},
                  "k": {"shape": shape(hkv, "T", dk), "dtype": dtype},
                  "v": {"shape": shape(hkv, "T", dv), "dtype": dtype}}
        node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                "layout": layout}
        if mask == "causal":
            node["mask"] = [{"kind": "causal"}]
        elif mask == "window":
            node["mask"] = [{"kind": "window", "left": 16, "right": 0}]
        elif mask == "key_length":
            inputs["n"] = {"shape": ["B"], "dtype": "i32"}
            node["mask"] = [{"kind": "key_length", "input": "n"}]
        outputs = ["o"]
        if extra == "softcap_lse":
            node["softcap"] = 30.0
            node["return_lse"] = True
            outputs.append("o.lse")
        name = "g_%s_%s_%s_%s" % (dtype, layout, mask or "none", extra)
        yield name, {"attnc": 1, "name": name,
                     "dims": {"B": None, "S": None, "T": None},
                     "inputs": inputs, "nodes": [node], "outputs": outputs}


def tensor_core():
    """Graphs with the tensor-core kernel: fixed head dims up to 128, staged
    (multiples of 16) and not, with the masks and GQA."""
    for dtype, (dk, dv), mask in itertools.product(
            ["f16", "bf16"], [(64, 64), (128, 128), (96, 80), (40, 72), (16, 112)],
            [None, "causal_window_key_length"]):
        inputs = {"q": {"shape": ["B", 8, "S", dk], "dtype": dtype},
                  "k": {"shape": ["B", 2, "T", dk], "dtype": dtype},
                  "v": {"shape": ["B", 2, "T", dv], "dtype": dtype}}
        node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                "return_lse": True}
        if mask:
            inputs["n"] = {"shape": ["B"], "dtype": "i32"}
            node["mask"] = [{"kind": "causal"}, {"kind": "window", "left": 100, "right": 0},
                            {"kind": "key_length", "input": "n"}]
        name = "tc_%s_%d_%d_%s" % (dtype, dk, dv, "masked" if mask else "plain")
        yield name, {"attnc": 1, "name": name, "dims": {"B": None, "S": None, "T": None},
                     "inputs": inputs, "nodes": [node], "outputs": ["o", "o.lse"]}


def biased_masked():
    """Cosine scores, tensor biases, ALiBi and masks: broadcast shapes of
    every rank, bias dtypes beside the inputs' own, standard and given ALiBi
    slopes, and a mask of the other polarity (an exporter's masked_fill: true
    = drop). The f16/bf16 dot-score graphs with head dims up to 64 (bm_bf16,
    bm_f16_d64) also get the tensor-core kernel, which reads them per
    score."""
    cases = [("f32", [1, 4, "S", "T"], ["B", 1, "S", "T"]),
             ("f16", ["S", "T"], ["T"]),
             ("bf16", ["B", 4, 1, "T"], [1, 1, "S", "T"])]
    for dtype, bias_shape, mask_shape in cases:
        inputs = {"q": {"shape": ["B", 4, "S", 64], "dtype": dtype},
                  "k": {"shape": ["B", 2, "T", 64], "dtype": dtype},
                  "v": {"shape": ["B", 2, "T", 64], "dtype": dtype},
                  "bias": {"shape": bias_shape, "dtype": "f32" if dtype != "f32" else "f16"},
                  "keep": {"shape": mask_shape, "dtype": "bool"}}
        node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                "bias": [{"kind": "tensor", "input": "bias"}],
                "mask": [{"kind": "causal"}, {"kind": "tensor", "input": "keep"}],
                "return_lse": True}
        if dtype == "f16":
            node["bias"].append({"kind": "alibi"})
            node["score"] = {"kind": "cosine"}
        elif dtype == "bf16":
            inputs["slopes"] = {"shape": [4], "dtype": "f32"}
            node["bias"].append({"kind": "alibi", "slopes": "slopes"})
        name = "bm_%s" % dtype
        yield name, {"attnc": 1, "name": name, "dims": {"B": None, "S": None, "T": None},
                     "inputs": inputs, "nodes": [node], "outputs": ["o", "o.lse"]}
    # A T5-style bias per head, the standard ALiBi slopes, a padding mask:
    # on the tensor-core kernel at head dims of 64, the SIMT kernel at 128.
    for d in (64, 128):
        name = "bm_f16_d%d" % d
        yield name, {
            "attnc": 1, "name": name, "dims": {"B": None, "S": None, "T": None},
            "inputs": {"q": {"shape": ["B", 8, "S", d], "dtype": "f16"},
                       "k": {"shape": ["B", 8, "T", d], "dtype": "f16"},
                       "v": {"shape": ["B", 8, "T", d], "dtype": "f16"},
                       "bias": {"shape": [1, 8, "S", "T"], "dtype": "f16"},
                       "keep": {"shape": ["B", 1, 1, "T"], "dtype": "bool"}},
            "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                       "bias": [{"kind": "tensor", "input": "bias"}, {"kind": "alibi"}],
                       "mask": [{"kind": "tensor", "input": "keep"}]}],
            "outputs": ["o"]}
    # q·kᵀ, masked_fill(drop, -inf), softmax, ·v: one attention op whose
    # mask drops where it is true.
    name = "bm_masked_fill"
    yield name, {
        "attnc": 1, "name": name, "dims": {"B": None, "S": None, "T": None},
        "inputs": {"q": {"shape": ["B", 4, "S", 32], "dtype": "f32"},
                   "k": {"shape": ["B", 4, "T", 32], "dtype": "f32"},
                   "v": {"shape": ["B", 4, "T", 32], "dtype": "f32"},
                   "drop": {"shape": ["B", 1, 1, "T"], "dtype": "bool"}},
        "nodes": [{"name": "s", "op": "matmul", "a": "q", "b": "k", "transpose_b": True},
                  {"name": "f", "op": "masked_fill", "x": "s", "mask": "drop",
                   "value": "-inf"},
                  {"name": "p", "op": "softmax", "x": "f"},
                  {"name": "o", "op": "matmul", "a": "p", "b": "v"}],
        "outputs": ["o"]}


def projected():
    """General and additive scores (the SIMT kernel): the projected query
    kept in shared memory (a fixed length) or recomputed per key (a run-time
    Dk, or more than 48 KB for 4 warps), weights in another dtype than q,
    and additive scores of a run-time width A, which are refused."""
    cases = [("general", "f32", 64, None), ("general", "bf16", "D", None),
             ("general", "f16", 3100, None), ("additive", "f16", 64, 128),
             ("additive", "f32", "D", 16), ("additive", "bf16", 40, 3073),
             ("additive", "f32", 64, "A")]
    for kind, dtype, dk, width in cases:
        inputs = {"q": {"shape": ["B", 4, "S", dk], "dtype": dtype},
                  "k": {"shape": ["B", 2, "T", dk], "dtype": dtype},
                  "v": {"shape": ["B", 2, "T", 48], "dtype": dtype},
                  "n": {"shape": ["B"], "dtype": "i32"}}
        wdtype = "f32" if dtype != "f32" else "bf16"
        if kind == "general":
            inputs["w"] = {"shape": [dk, dk], "dtype": wdtype}
            score = {"kind": "general", "w": "w"}
        else:
            inputs["wq"] = {"shape": [width, dk], "dtype": wdtype}
            inputs["wk"] = {"shape": [width, dk], "dtype": dtype}
            inputs["va"] = {"shape": [width], "dtype": wdtype}
            score = {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"}
        node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                "score": score, "softcap": 20.0, "return_lse": True,
                "mask": [{"kind": "causal"}, {"kind": "key_length", "input": "n"}]}
        dims = {"B": None, "S": None, "T": None}
        for letter in ("D", "A"):
            if letter in (dk, width):
                dims[letter] = None
        name = "p_%s_%s_%s" % (kind, dtype, dk if width is None else width)
        if width == "A":
            name = "p_additive_runtime_width"
        yield name, {"attnc": 1, "name": name, "dims": dims, "inputs": inputs,
                     "nodes": [node], "outputs": ["o", "o.lse"]}


def identity():
    """A graph whose output no attention computes (scale by 1 folds away, so
    the entry copies the input)."""
    return {"attnc": 1, "name": "g_identity", "dims": {},
            "inputs": {"x": {"shape": [2], "dtype": "f32"}},
            "nodes": [{"name": "y", "op": "scale", "x": "x", "value": 1.0}],
            "outputs": ["y"]}


def reshape_output():
    """A reshape whose result is an output: a copy kernel whose thread count
    comes from the result's static sizes (once a crash)."""
    return {"attnc": 1, "name": "g_reshape_output", "dims": {},
            "inputs": {"x": {"shape": [2, 3, 4, 6], "dtype": "f32"}},
            "nodes": [{"name": "y", "op": "reshape", "x": "x", "shape": [2, 3, 24]}],
            "outputs": ["y"]}


def lse_only():
    """Attention whose output is no graph output (lse is): the entry
    allocates the output."""
    inputs = {n: {"shape": [2, 4, "S", 32], "dtype": "f16"} for n in "qkv"}
    return {"attnc": 1, "name": "g_lse_only", "dims": {"S": None}, "inputs": inputs,
            "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
                       "return_lse": True}],
            "outputs": ["o.lse"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--keep")
    ap.add_argument("--family-cases", type=int, default=3,
                    help="graphs of each oracle family per target (default 3)")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="cuda-ptx-")
    if not a.keep:  # --keep DIR keeps the files to look at
        atexit.register(shutil.rmtree, work, True)
    graphs = [(os.path.splitext(os.path.basename(p))[0], p)
              for p in sorted(glob.glob(os.path.join(ROOT, "examples/graphs/*.json")))]
    for name, graph in (list(generated()) + list(tensor_core()) + list(biased_masked())
                        + list(projected()) + [("g_identity", identity()),
                                               ("g_lse_only", lse_only()),
                                               ("g_reshape_output", reshape_output())]):
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(graph, f)
        graphs.append((name, path))
    failures = checked = 0
    for (name, path), (target, chip) in itertools.product(graphs, TARGETS.items()):
        out = os.path.join(work, "out", target, name)
        r = subprocess.run([a.attnc, "compile", path, "--target", target, "-o", out],
                           capture_output=True, text=True, timeout=300)
        problem = None
        graph_name = json.load(open(path))["name"]
        if name in REFUSED:
            problem = refusal_problem(r, path, out)
            if not problem and "CUDA" not in r.stderr:
                problem = "the refusal does not say what CUDA lacks: %r" % r.stderr
        elif r.returncode != 0:
            problem = "exit %d: %s" % (r.returncode, r.stderr.strip())
        else:
            ptx = open(os.path.join(out, graph_name + ".ptx")).read()
            manifest = json.load(open(os.path.join(out, graph_name + ".json")))
            kernels = manifest.get("kernels", [])
            if ".target %s" % chip not in ptx:
                problem = "PTX is not for %s" % chip
            elif not kernels and name not in ("g_identity", "g_reshape_output"):
                problem = "no kernel in the manifest"
            elif (name in WITH_ENTRY) != ("entry" in manifest):
                problem = "a host entry where none is due, or none where one is"
            for kernel in kernels:
                if "merge" not in kernel or "key_split" not in kernel \
                        or "workspace_bytes" not in kernel:
                    problem = "kernel %s without merge, key_split or workspace" % kernel["name"]
                elif set(kernel.get("sizes", {})) != set(SIZES[:-1]):
                    problem = "sizes %s" % kernel.get("sizes")
                elif name.startswith("tc_") and "tensor_core" not in kernel:
                    problem = "no tensor-core kernel"
                elif name.startswith(("bm_", "p_")) and ("tensor_core" in kernel) != (
                        name in ("bm_bf16", "bm_f16_d64")):
                    problem = "a tensor-core kernel exactly for f16/bf16 dot scores"
                elif name.startswith("tc_"):
                    # cuda-sm90a's staged kernel (head dims multiples of
                    # 16) multiplies by wgmma where both are past 64, every
                    # other by mma.sync.
                    dk, dv = (int(x) for x in name.split("_")[2:4])
                    wgmma = chip == "sm_90a" and dk % 16 == 0 and dv % 16 == 0 \
                        and dk > 64 and dv > 64
                    body = ptx.split(".entry %s(" % kernel["tensor_core"]["name"], 1)[-1]
                    body = body.split(".entry ", 1)[0]
                    if ("wgmma.mma_async" in body) != wgmma \
                            or ("mma.sync" in body) == wgmma:
                        problem = "the tensor-core kernel should use %s" % (
                            "wgmma" if wgmma else "mma.sync")
            for kernel in launched(manifest):
                if problem:
                    break
                if ".entry %s(" % kernel["name"] not in ptx:
                    problem = "no entry %s in the PTX" % kernel["name"]
                elif "words" not in kernel and kernel["params"][-8:] != SIZES:
                    problem = "parameters %s" % kernel["params"]
                else:
                    problem = ptxas_problem(kernel["ptxas"])
        checked += 1
        if problem:
            failures += 1
            print("FAIL %s %s: %s" % (target, name, problem))
    family_failures, family_checked = family_sweep(a.attnc, work, a.family_cases)
    failures += family_failures
    checked += family_checked
    print("%d compiles checked, %d failed" % (checked, failures))
    sys.exit(1 if failures else 0)


def refusal_problem(r, path, out):
    """What is wrong with a compile that should be refused, or None: exit 1,
    one line naming the graph's file, nothing written."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    if r.returncode != 1 or len(lines) != 1 or path not in lines[0]:
        return "expected exit 1 and one line naming the file: exit %d, %r" % (
            r.returncode, r.stderr)
    if os.path.exists(out) and os.listdir(out):
        return "wrote files although it failed: %s" % os.listdir(out)
    return None


def launched(manifest):
    """Every function a manifest launches: each attention kernel, the merge
    of its key splits and its tensor-core kernel, and a host entry's
    functions."""
    kernels = manifest.get("kernels", [])
    return kernels + [k[x] for k in kernels for x in ("merge", "tensor_core") if x in k] \
        + manifest.get("entry", {}).get("functions", [])


def ptxas_problem(report):
    """What is wrong with a kernel's ptxas report, or None: spills, more than
    255 registers or 48 KB of static shared memory; without ptxas, the
    manifest must say so."""
    if not (shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")):
        return None if "no ptxas" in str(report) else \
            "the manifest does not say ptxas is missing"
    if not isinstance(report, dict):
        return "no ptxas report although ptxas is installed: %r" % report
    if report["spill_store_bytes"] or report["spill_load_bytes"] or report["registers"] > 255 \
            or report["shared_bytes"] > STATIC_SHARED_LIMIT:
        return "ptxas: %s" % report
    return None


def family_sweep(attnc, work, count):
    """(failures, checked) over the oracle's families for every target."""
    import cases
    failures = checked = 0
    for family, index, target in itertools.product(cases.FAMILIES, range(count), TARGETS):
        graph = cases.make_case(family, index, 0).graph
        name = "f_%s_%d" % (family, index)
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(graph, f)
        out = os.path.join(work, "out", target, name)
        r = subprocess.run([attnc, "compile", path, "--target", target, "-o", out],
                           capture_output=True, text=True, timeout=300)
        problem = None
        if r.returncode == 1:
            problem = refusal_problem(r, path, out)
        elif r.returncode != 0:
            problem = "exit %d: %s" % (r.returncode, r.stderr.strip()[:500])
        else:
            manifest = json.load(open(os.path.join(out, graph["name"] + ".json")))
            for kernel in launched(manifest):
                problem = problem or ptxas_problem(kernel["ptxas"])
        checked += 1
        if problem:
            failures += 1
            print("FAIL %s %s: %s" % (target, name, problem))
    return failures, checked


if __name__ == "__main__":
    main()
