#!/usr/bin/python3
"""The CUDA kernels against the float64 oracle, on a machine with an NVIDIA GPU.

    cuda_oracle.py prepare --attnc PATH --out DIR [--target cuda-sm90]
                           [--matrix N] [--count N] [--seed S]
    cuda_oracle.py check DIR [--json FILE] [--split-rule WARPS,KEYS] [-v]
                         [--launcher cupy|attnrt] [--attnrt LIBATTNRT]
    cuda_oracle.py all --attnc PATH --out DIR [--target T]   (what ctest runs)

`prepare` runs anywhere (no GPU, no CUDA toolkit needed): it compiles with
`attnc compile --target T` every example graph, the first N cases of the
random test matrix (tests/codegen/matrix.py), N cases of every family of
the oracle's generator (tests/oracle/cases.py) and cases made for the
tensor-core kernel (tensor_core_case), and keeps those the CUDA kernel takes: DIR/<case>/{graph.json, NAME.ptx, NAME.json} plus DIR/cases.json
saying which generator made each case. Inputs are not stored: `check`
regenerates them from the same seeds (and refuses a case whose regenerated
graph differs from the compiled one), so DIR stays small enough to carry to
a GPU machine.

`prepare` also links each case's NAME.o (the descriptor with the PTX inside)
into NAME.so (keeping that, not NAME.o; NAME.so and NAME.ptx gzipped), so that `check --launcher attnrt` can run the kernels through
libattnrt's own launcher (attnrt_invoke on a context created for CUDA device
0, the tensors CuPy's device arrays) instead of launching them itself.

A graph with nodes outside attention has a host entry in NAME.o, which
runs them (and each attention op through libattnrt): only `check --launcher
attnrt` runs such a case; CuPy's launcher counts it as left to that.

`check` needs a CUDA device and CuPy: it loads each NAME.ptx through the
driver (JIT-compiled for the device), launches every kernel of the manifest
as it says (parameters by name, sizes read off the tensors as `sizes` says,
grid and block), with the outputs first filled with NaN bit patterns so an
entry no thread writes cannot pass, and compares each output with the numpy
oracle (tests/oracle/oracle.py, written from the format's text alone) by
check_reference.compare: normwise 1e-4 for f32 and lse, 2e-2 for f16/bf16, NaN
never passes, -inf of lse exactly where the oracle has it. Matrix cases also
get the matrix's own file checks (fully masked rows exactly 0, lse -inf just
there). Exits 0 when every case passes, 1 when one fails, 77 (ctest's skip
code) when there is no CUDA device or no CuPy.
"""
import argparse
import concurrent.futures
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
sys.path.insert(0, os.path.join(ROOT, "tests", "codegen"))

import cases            # noqa: E402  (the oracle's graph generator)
import check_reference  # noqa: E402  (compare: the normwise verdict)
import oracle           # noqa: E402  (the independent float64 evaluator)

SKIP = 77
# Sizes given to the run-time dims of the example graphs: odd, S != T.
EXAMPLE_DIMS = {"B": 2, "S": 37, "T": 77}
OTHER_DIM = 23


# --------------------------------------------------------------------------
# the cases: (graph, input arrays as .npy holds them, dim binding)
# --------------------------------------------------------------------------

def example_case(path):
    """An example graph with seeded random inputs; key lengths (i32 inputs)
    span 0 (rows with every key masked) to T."""
    with open(path) as f:
        graph = json.load(f)
    name = os.path.splitext(os.path.basename(path))[0]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dims = {n: (v if v is not None else EXAMPLE_DIMS.get(n, OTHER_DIM))
            for n, v in graph.get("dims", {}).items()}
    key_count = max([dims.get("T", 0), dims.get("S", 0)] + [1])
    for node in graph["nodes"]:
        if node["op"] == "attention":
            shape = graph["inputs"].get(node["k"], {}).get("shape")
            if shape:
                axis = 1 if node.get("layout") == "bshd" else 2
                key_count = shape[axis] if isinstance(shape[axis], int) else dims[shape[axis]]
    arrays = {}
    for n, decl in graph["inputs"].items():
        shape = [d if isinstance(d, int) else dims[d] for d in decl["shape"]]
        dtype = decl["dtype"]
        if dtype == "i32":
            values = rng.integers(0, key_count + 1, size=shape)
            if values.size > 1:
                values.flat[0] = 0
        elif dtype == "bool":
            values = rng.random(shape) < 0.8
        else:
            values = rng.standard_normal(shape)
        arrays[n] = oracle.encode_for_file(values, dtype)
    return graph, arrays, dims, None


def tensor_core_case(seed, index):
    """Graphs the tensor-core kernel takes (f16/bf16, Dk and Dv fixed, at
    most 128), at odd sizes: head dims from 8 to 128 (odd ones too), S and T
    from 1 to 300 (S > T as well, so causal rows without keys), GQA, both
    layouts, the masks, softcap, scale, lse, tensor biases (broadcast, f32 or
    the inputs' type), ALiBi and bool masks (rows they drop whole too)."""
    rng = np.random.default_rng([seed, 11, index])
    pick = lambda xs: xs[int(rng.integers(len(xs)))]
    dtype = pick(["f16", "bf16"])
    dk = pick([8, 16, 17, 40, 64, 64, 80, 96, 128, 128])
    dv = dk if rng.random() < 0.6 else pick([8, 24, 33, 64, 72, 128])
    hkv = pick([1, 2, 3])
    hq = hkv * pick([1, 2, 4])
    B = pick([1, 2])
    S, T = pick([1, 7, 16, 31, 33, 64, 100, 129, 300]), pick([1, 5, 16, 33, 64, 65, 200, 300])
    layout = pick(["bhsd", "bshd"])

    def shape(h, length, d):
        return [B, h, length, d] if layout == "bhsd" else [B, length, h, d]
    graph_inputs = {"q": {"shape": shape(hq, "S", dk), "dtype": dtype},
                    "k": {"shape": shape(hkv, "T", dk), "dtype": dtype},
                    "v": {"shape": shape(hkv, "T", dv), "dtype": dtype}}
    node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v", "layout": layout}
    masks = []
    if rng.random() < 0.4:
        masks.append({"kind": "causal"})
    if rng.random() < 0.3:
        masks.append({"kind": "window", "left": int(rng.integers(0, 40)),
                      "right": int(rng.integers(0, 40))})
    if rng.random() < 0.3:
        graph_inputs["n"] = {"shape": [B], "dtype": "i32"}
        masks.append({"kind": "key_length", "input": "n"})
    if masks:
        node["mask"] = masks
    if rng.random() < 0.3:
        node["softcap"] = pick([5.0, 30.0, 1e4])
    if rng.random() < 0.3:
        node["scale"] = pick([0.01, 0.5, 2.0])
    outputs = ["o"]
    if rng.random() < 0.4:
        node["return_lse"] = True
        outputs.append("o.lse")
    # Read per element of the score fragments.
    if rng.random() < 0.25:
        graph_inputs["bias"] = {"shape": pick([[1, hq, "S", "T"], ["S", "T"], [B, 1, 1, "T"]]),
                                "dtype": pick(["f32", dtype])}
        node["bias"] = [{"kind": "tensor", "input": "bias"}]
    if rng.random() < 0.2:
        node["bias"] = node.get("bias", []) + [{"kind": "alibi"}]
    if rng.random() < 0.25:
        graph_inputs["keep"] = {"shape": pick([[B, 1, 1, "T"], [1, 1, "S", "T"]]),
                                "dtype": "bool"}
        node["mask"] = node.get("mask", []) + [{"kind": "tensor", "input": "keep"}]
    name = "tc_%d" % index
    graph = {"attnc": 1, "name": name, "dims": {"S": None, "T": None},
             "inputs": graph_inputs, "nodes": [node], "outputs": outputs}
    dims = {"S": S, "T": T}
    arrays = {}
    for n, decl in graph_inputs.items():
        concrete = [d if isinstance(d, int) else dims[d] for d in decl["shape"]]
        if decl["dtype"] == "i32":
            values = rng.integers(0, T + 1, size=concrete)
            if B > 1:
                values[0] = 0
        elif decl["dtype"] == "bool":
            values = rng.random(concrete) < 0.8
        else:
            values = rng.standard_normal(concrete) * pick([1.0, 1.0, 3.0])
        arrays[n] = oracle.encode_for_file(values, decl["dtype"])
    return graph, arrays, dims, None


def matrix_cases(seed, count):
    import matrix
    made, _ = matrix.make_cases(seed, count, False)
    return made


def regenerate(entry, root):
    """(graph, arrays, dims, matrix case or None) of a cases.json entry."""
    kind = entry["kind"]
    if kind == "example":
        return example_case(os.path.join(root, "examples", "graphs", entry["file"]))
    if kind == "tensor_core":
        return tensor_core_case(entry["seed"], entry["index"])
    if kind == "matrix":
        case = matrix_cases(entry["seed"], entry["index"] + 1)[entry["index"]]
        return case.graph, case.input_arrays(), case.bound, case
    case = cases.make_case(entry["family"], entry["index"], entry["seed"])
    return case.graph, case.arrays, case.dims, None


# --------------------------------------------------------------------------
# prepare
# --------------------------------------------------------------------------

def prepare(a):
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    entries = []
    for f in sorted(os.listdir(os.path.join(ROOT, "examples", "graphs"))):
        if f.endswith(".json"):
            entries.append({"kind": "example", "file": f, "id": "example_" + f[:-5]})
    for case in matrix_cases(a.seed, a.matrix) if a.matrix else []:
        entries.append({"kind": "matrix", "seed": a.seed, "index": case.index,
                        "id": "matrix_%d" % case.index, "desc": case.describe()})
    for i in range(a.tensor_core):
        entries.append({"kind": "tensor_core", "seed": a.seed, "index": i,
                        "id": "tensor_core_%d" % i})
    for family in cases.FAMILIES:
        for i in range(a.count):
            entries.append({"kind": "family", "family": family, "index": i, "seed": a.seed,
                            "id": "%s_%d" % (family, i)})
    if a.recompile:
        with open(os.path.join(out, "cases.json")) as f:
            entries = json.load(f)["cases"]

    def compile_one(entry):
        graph, _, _, _ = regenerate(entry, ROOT)
        d = os.path.join(out, entry["id"])
        os.makedirs(d, exist_ok=True)
        gpath = os.path.join(d, "graph.json")
        with open(gpath, "w") as f:
            json.dump(graph, f, indent=1)
        p = subprocess.run([a.attnc, "compile", gpath, "--target", a.target, "-o", d],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            # NAME.so for --launcher attnrt: the descriptor, nothing to link.
            # (NAME.o and NAME.h are then left out: the folder is carried to
            # a GPU machine.)
            obj = os.path.join(d, graph["name"] + ".o")
            subprocess.run(["cc", "-shared", "-o", obj[:-2] + ".so", obj], check=True)
            os.unlink(obj)
            os.unlink(obj[:-2] + ".h")
            # PTX is text: gzip makes it a tenth (check reads either).
            for path in (obj[:-2] + ".ptx", obj[:-2] + ".so"):
                with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                    g.write(f.read())
                os.unlink(path)
            entry["name"] = graph["name"]
            return None
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
        reason = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return reason[0] if reason else "exit %d" % p.returncode

    kept, refused = [], {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for entry, reason in zip(entries, pool.map(compile_one, entries)):
            if reason is None:
                kept.append(entry)
                continue
            # "graph.json: node o: attention with 'general' scores has no CUDA kernel yet (...)"
            key = re.sub(r"^.*?: (node \S+: )?", "", reason).split(" (")[0]
            refused.setdefault(key, []).append(entry["id"])
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"target": a.target, "cases": kept}, f, indent=1)
    print("%d cases compiled for %s into %s" % (len(kept), a.target, out))
    for reason, ids in sorted(refused.items(), key=lambda kv: -len(kv[1])):
        print("  refused %4d: %s (e.g. %s)" % (len(ids), reason, ids[0]))
    return 0


# --------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------

def evaluate(expr, sizes):
    """A manifest size expression ("Hq", "ceil(S * splits / 4)", ...)."""
    if isinstance(expr, int):
        return expr
    if not re.fullmatch(r"[A-Za-z0-9_ ()*/+-]+", expr):
        raise ValueError("size expression %r is not one this launcher knows" % expr)
    return int(eval(expr, {"__builtins__": {}}, dict(sizes, ceil=math.ceil)))


def choose_splits(sizes, rule):
    """The manifest's key_split rule (compiler/Codegen/GpuKernels.h)."""
    rows = sizes["B"] * sizes["Hq"] * sizes["S"]
    if rows >= rule["target_warps"]:
        return 1
    return max(1, min(-(-rule["target_warps"] // max(rows, 1)),
                      -(-sizes["T"] // rule["min_keys_per_split"])))


def unpacked(path):
    """`path`, or where its gzipped copy (prepare's) is unpacked to."""
    if os.path.exists(path) or not os.path.exists(path + ".gz"):
        return path
    global UNPACKED
    if UNPACKED is None:
        UNPACKED = tempfile.mkdtemp(prefix="attnc_cuda_unpacked_")
    target = os.path.join(UNPACKED, "%d_%s" % (zlib.crc32(path.encode()),
                                               os.path.basename(path)))
    if not os.path.exists(target):
        with gzip.open(path + ".gz", "rb") as g, open(target, "wb") as f:
            f.write(g.read())
    return target


UNPACKED = None


def load_module(cp, path):
    """The PTX at `path` (or its .gz), JIT-compiled by the driver."""
    path = unpacked(path)
    try:
        return cp.RawModule(path=path)
    except Exception:
        module = cp.cuda.function.Module()
        with open(path, "rb") as f:
            module.load(f.read() + b"\0")      # cuModuleLoadData
        return module


def plan_launches(cp, module, kernel, device, rule=None, tensor_core=True):
    """[(function, grid, block, args)] that run one attention op's kernel on
    `device` (name -> cupy array), its merge after it when it splits keys,
    or its tensor-core kernel instead when there is one and it does not
    (unless not `tensor_core`); `rule` replaces the manifest's key_split
    rule."""
    sizes = {s: int(device[t].shape[axis]) for s, (t, axis) in kernel["sizes"].items()}
    alignment = kernel.get("tensor_alignment_bytes", 1)
    for name, array in device.items():
        if array.data.ptr % alignment:
            raise ValueError("tensor %s is not %d-byte aligned" % (name, alignment))
    sizes["splits"] = choose_splits(sizes, rule or kernel["key_split"])
    workspace = evaluate(kernel["workspace_bytes"], sizes) if sizes["splits"] > 1 else 4
    device = dict(device, workspace=cp.empty(max(workspace, 4) // 4, dtype=np.float32))
    launches = []
    first = kernel
    if "tensor_core" in kernel and tensor_core and (
            sizes["splits"] == 1 or kernel["tensor_core"].get("use_when") == "always"):
        first = kernel["tensor_core"]
    entries = [first] + ([kernel["merge"]] if sizes["splits"] > 1 else [])
    for entry in entries:
        args = tuple(np.int64(sizes[p]) if p in sizes else device[p] for p in entry["params"])
        grid = tuple(evaluate(g, sizes) for g in entry["grid"])
        if min(grid) > 0:
            launches.append((module.get_function(entry["name"]), grid, tuple(entry["block"]),
                             args))
    return launches, ("mma" if first is not kernel else "simt") + (
        "" if sizes["splits"] == 1 else "/%d" % sizes["splits"])


def launch_all(cp, d, manifest, device, rule=None, tensor_core=True):
    """Runs every kernel of the manifest on `device` (name -> cupy array);
    returns each attention op's kernel and key splits ("mma", "simt/64",
    ...)."""
    module = load_module(cp, os.path.join(d, manifest["ptx"]))
    splits = []
    for kernel in manifest["kernels"]:
        launches, n = plan_launches(cp, module, kernel, device, rule, tensor_core)
        for function, grid, block, args in launches:
            function(grid, block, args)
        splits.append(n)
    cp.cuda.Device().synchronize()
    return splits


ATTNRT_DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "i32": 3, "bool": 4}


class Attnrt:
    """libattnrt through ctypes: a context for CUDA device 0, and
    attnrt_invoke of a kernel descriptor in a case's NAME.so."""

    def __init__(self, path):
        import ctypes
        self.ct = ctypes

        class Tensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                        ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64))]
        self.Tensor = Tensor
        # Global: a case's NAME.so with a host entry calls into it.
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib.attnrt_context_last_error.restype = ctypes.c_char_p
        self.lib.attnrt_status_name.restype = ctypes.c_char_p
        options = ctypes.create_string_buffer(256)     # attnrt_context_options
        self.lib.attnrt_context_options_initialize(options)
        self.context = ctypes.c_void_p()
        status = self.lib.attnrt_context_create_on_device(options, 1, 0,
                                                         ctypes.byref(self.context))
        if status:
            raise RuntimeError("attnrt_context_create_on_device: status %d" % status)

    def bind(self, so_path, name, manifest, device, results=None):
        """A call(stream=None) that runs NAME_kernel of `so_path` on `device`
        (name -> cupy array; the outputs from `results` when given, so that
        an output named as an input has its own memory, as libattnrt
        requires) through attnrt_invoke, or queued on `stream`
        (a CUstream handle) through attnrt_invoke_on_stream; its arguments
        are built once, so a call costs what the C call costs."""
        ct = self.ct
        library = ct.CDLL(unpacked(so_path))
        keep = [library]
        kernel = ct.c_void_p(ct.addressof(ct.c_char.in_dll(library, name + "_kernel")))

        def tensors(args, arrays):
            array = (self.Tensor * max(len(args), 1))()
            for i, arg in enumerate(args):
                a = arrays[arg["name"]]
                shape = (ct.c_int64 * a.ndim)(*a.shape)
                keep.append(shape)
                array[i] = self.Tensor(a.data.ptr, ATTNRT_DTYPES[arg["dtype"]], a.ndim,
                                       shape, None)
            return array
        inputs = tensors(manifest["inputs"], device)
        outputs = tensors(manifest["outputs"], device if results is None else results)
        counts = (ct.c_size_t(len(manifest["inputs"])), ct.c_size_t(len(manifest["outputs"])))

        def call(stream=None):
            keep  # the shapes live as long as the call
            if stream is None:
                status = self.lib.attnrt_invoke(self.context, kernel, inputs, counts[0],
                                                outputs, counts[1])
            else:
                status = self.lib.attnrt_invoke_on_stream(self.context, kernel, inputs,
                                                          counts[0], outputs, counts[1],
                                                          ct.c_void_p(stream))
            if status:
                raise RuntimeError("attnrt_invoke: %s: %s" % (
                    self.lib.attnrt_status_name(status).decode(),
                    self.lib.attnrt_context_last_error(self.context).decode()))
        return call

    def invoke(self, so_path, name, manifest, device, results):
        """Runs NAME_kernel of `so_path` on `device` (name -> cupy array),
        its outputs into `results`."""
        self.bind(so_path, name, manifest, device, results)()


def check_case(cp, root, d, entry, rule=None, tensor_core=True, attnrt=None):
    """(ok, summary); ok is None for a case this launcher cannot run."""
    graph, arrays, dims, mcase = regenerate(entry, root)
    with open(os.path.join(d, "graph.json")) as f:
        if json.load(f) != graph:
            return False, "the regenerated graph differs from the compiled one"
    with open(os.path.join(d, entry["name"] + ".json")) as f:
        manifest = json.load(f)
    if "entry" in manifest and not attnrt:
        # Its nodes outside attention run from host code in NAME.o.
        return None, "a host entry: --launcher attnrt runs it"
    floors = {}
    inputs = {n: oracle.decode_from_file(arr, graph["inputs"][n]["dtype"])
              for n, arr in arrays.items()}
    ref = oracle.evaluate_typed(graph, inputs, dims, floors)
    device = {n: cp.asarray(np.ascontiguousarray(arr)) for n, arr in arrays.items()}
    # The outputs apart from the inputs: a graph may return an input, which
    # the host entry copies.
    results = {}
    for oname, (rval, dt) in ref.items():
        buf = cp.empty(rval.shape, dtype=np.dtype(oracle.NPY_DTYPE[dt]))
        buf.view(cp.uint8).fill(0xFF)       # NaN in every float dtype
        results[oname] = buf
    try:
        if attnrt:
            attnrt.invoke(os.path.join(d, entry["name"] + ".so"), entry["name"], manifest,
                          device, results)
            cp.cuda.Device().synchronize()
            splits = ["attnrt"]
        else:
            # Without a host entry every output is an attention node's.
            splits = launch_all(cp, d, manifest, {**device, **results}, rule, tensor_core)
    except Exception as e:      # a launch or JIT error: this case fails, the run goes on
        return False, "launch failed: %s" % str(e).splitlines()[0]
    problems, worst = [], 0.0
    outdir = tempfile.mkdtemp(prefix="attnc_cuda_")
    for oname, (rval, dt) in ref.items():
        got = cp.asnumpy(results[oname])
        np.save(os.path.join(outdir, oname + ".npy"), got)
        good, err, msg = check_reference.compare(got, rval, dt, floors.get(oname))
        if not good:
            problems.append("%s: %s" % (oname, msg))
        elif err is not None and dt in check_reference.TOL:
            worst = max(worst, err)
    if mcase is not None:
        import matrix
        problems += matrix.check_files(mcase, outdir)
    for f in os.listdir(outdir):
        os.unlink(os.path.join(outdir, f))
    os.rmdir(outdir)
    split_note = " (key splits %s)" % ",".join(map(str, splits))
    return (not problems), ("max err %.2g" % worst if not problems else
                            "; ".join(problems)) + split_note


def no_device():
    """Why there is no CUDA device to check on, or None."""
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() == 0:
            return "no CUDA device"
    except Exception as e:
        return "no CUDA device through CuPy (%s)" % str(e).splitlines()[0]
    return None


def unfit_device(target):
    """Why device 0 cannot run `target`'s kernels, or None: cuda-sm90a's
    (wgmma) run on sm_90 only."""
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    if target == "cuda-sm90a" and (props["major"], props["minor"]) != (9, 0):
        return "cuda-sm90a kernels run on sm_90 only, this GPU is sm_%d%d" % (
            props["major"], props["minor"])
    return None


def check(a):
    why = no_device()
    if why:
        print("skipped: " + why)
        return SKIP
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    device_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    with open(os.path.join(a.dir, "cases.json")) as f:
        plan = json.load(f)
    shard = ""
    if a.shard:
        index, count = map(int, a.shard.split("/"))
        if not 0 <= index < count:
            print("--shard %s: want I/N with 0 <= I < N" % a.shard)
            return 2
        plan["cases"] = plan["cases"][index::count]
        shard = " (shard %d of %d)" % (index, count)
    why = unfit_device(plan["target"])
    if why:
        print("skipped: " + why)
        return SKIP
    print("%d cases for %s on %s (sm_%d%d)%s" % (len(plan["cases"]), plan["target"], device_name,
                                                 props["major"], props["minor"], shard),
          flush=True)
    rule = None
    if a.split_rule:
        warps, keys = a.split_rule.split(",")
        rule = {"target_warps": int(warps), "min_keys_per_split": int(keys)}
        print("key splits by target_warps=%s min_keys_per_split=%s" % (warps, keys))
    attnrt = None
    if a.launcher == "attnrt":
        if rule or a.no_tensor_core:
            print("--launcher attnrt launches as the descriptors say: no --split-rule, "
                  "no --no-tensor-core")
            return 2
        attnrt = Attnrt(a.attnrt)
        print("launched by libattnrt (%s)" % a.attnrt)
    results, failed, skipped = [], 0, 0
    by_kind = {}
    for entry in plan["cases"]:
        try:
            ok, summary = check_case(cp, ROOT, os.path.join(a.dir, entry["id"]), entry, rule,
                                     not a.no_tensor_core, attnrt)
        except Exception as e:
            ok, summary = False, "error: %s" % e
        if ok is None:
            skipped += 1
            continue
        failed += not ok
        kind = entry["kind"]
        by_kind.setdefault(kind, [0, 0])[0 if ok else 1] += 1
        results.append({"id": entry["id"], "ok": ok, "summary": summary})
        if a.verbose or not ok:
            print("%-4s %-16s %s" % ("ok" if ok else "FAIL", entry["id"], summary), flush=True)
    for kind, (p, f) in sorted(by_kind.items()):
        print("%s: %d passed, %d failed" % (kind, p, f))
    if skipped:
        print("%d cases with a host entry left to --launcher attnrt" % skipped)
    print("%d passed, %d failed on %s" % (len(results) - failed, failed, device_name))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": device_name, "target": plan["target"], "results": results}, f,
                      indent=1)
    return 1 if failed else 0


def prepare_and_check(a):
    """What ctest runs (label gpu): skip at once without a device, else
    prepare, then check with the manifests' key splits and with one key per
    split (every merge path on small cases)."""
    why = no_device() or unfit_device(a.target)
    if why:
        print("skipped: " + why)
        return SKIP
    a.matrix, a.count, a.tensor_core, a.seed = 200, 40, 60, 0
    a.recompile, a.jobs = False, os.cpu_count() or 1
    if prepare(a):
        return 1
    failed = 0
    # the manifests' rule; one key per split (every merge); no split (every
    # tensor-core kernel); no split on the SIMT kernel
    for rule, simt in ((None, False), ("1000000,1", False), ("0,1", False), ("0,1", True)):
        failed |= check(argparse.Namespace(dir=a.out, json=None, split_rule=rule,
                                           no_tensor_core=simt, verbose=False,
                                           launcher="cupy", attnrt=None)) != 0
    if a.attnrt:
        failed |= check(argparse.Namespace(dir=a.out, json=None, split_rule=None,
                                           no_tensor_core=False, verbose=False,
                                           launcher="attnrt", attnrt=a.attnrt)) != 0
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--attnc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--target", default="cuda-sm90")
    p.add_argument("--matrix", type=int, default=200, help="matrix cases to try")
    p.add_argument("--count", type=int, default=40, help="cases per oracle family to try")
    p.add_argument("--tensor-core", type=int, default=60,
                   help="cases made for the tensor-core kernel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--recompile", action="store_true",
                   help="recompile the cases DIR/cases.json names, no others")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--json", help="write every case's verdict here")
    c.add_argument("--split-rule", metavar="WARPS,KEYS",
                   help="replace the manifests' key_split rule (e.g. 1000000,1: "
                   "one key per split), to check the merge on small cases")
    c.add_argument("--no-tensor-core", action="store_true",
                   help="run the SIMT kernel where a tensor-core one would run")
    c.add_argument("-v", "--verbose", action="store_true")
    c.add_argument("--shard", metavar="I/N",
                   help="check every N-th case from the I-th (0-based) only: N at once "
                        "use more of the machine's cores")
    c.add_argument("--launcher", choices=["cupy", "attnrt"], default="cupy",
                   help="who launches the kernels: this script through CuPy, as the "
                   "manifest says, or libattnrt from the NAME.o descriptor")
    c.add_argument("--attnrt", default="libattnrt.so.2",
                   help="libattnrt for --launcher attnrt")
    r = sub.add_parser("all", help="prepare into --out, then check twice (ctest)")
    r.add_argument("--attnc", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--target", default="cuda-sm90")
    r.add_argument("--attnrt", help="also check through this libattnrt's launcher")
    a = ap.parse_args()
    return {"prepare": prepare, "check": check, "all": prepare_and_check}[a.verb](a)


if __name__ == "__main__":
    sys.exit(main())
