"""bf16 Q·Kᵀ through AVX512-BF16 dot products (vdpbf16ps), against numpy.

    bf16_dot.py --attnc PATH [--backend mlir|halide] [-j N] [--keep DIR]

`--target x86-64-avx512-bf16` (and `host` on AMD cores with avx512bf16) computes
the dot scores of bf16 q and k with vdpbf16ps: depths in pairs, an odd last
depth alone. These cases cover what that path depends on: even and odd Dk
(1, 2, 7, 64, 80, 129), Dk as a run-time size, query tiles of one vector and
of several (S·G below and above 16 rows), GQA, causal and windowed masks, the
scale and a softcap. Tiles of at most one vector of rows (decode steps, S·G
<= 16) put depth in lanes and take 32 depths of a key and a query row per
vdpbf16ps: Dk below, at and past a multiple of 32 (7, 40, 128, 129, run-time).
Each case runs `attnc run --target x86-64-avx512-bf16 --input ... --output-dir`
and is compared with a float64 numpy attention of the same bf16-rounded
inputs (normwise 2e-2, NaN never passes). On a CPU without avx512bf16 the
kernels cannot run: the script says so and exits 77 (ctest: skipped), after
checking that the compiled object holds vdpbf16ps.

With `--backend halide` the same cases go through the Halide backend, which
multiplies bf16 pairs in both products on that target: its rows form (tiles
of more than a vector of queries) and its decode form (fewer queries than a
vector: keys paired in P·V, an odd last key alone). The compile check covers
a prefill and a decode graph.
"""

import argparse
import atexit
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import oracle  # noqa: E402  (bf16 .npy encoding)

TARGET = "x86-64-avx512-bf16"

# (name, B, Hq, Hkv, S, T, Dk, Dv, masks, extra attributes, run-time Dk, k dtype)
CASES = [
    ("d64", 1, 2, 2, 67, 67, 64, 64, [], {}, False, "bf16"),
    ("d1", 1, 1, 1, 33, 40, 1, 8, [], {}, False, "bf16"),
    ("d2", 2, 2, 1, 31, 45, 2, 5, [{"kind": "causal"}], {}, False, "bf16"),
    ("d7", 1, 3, 3, 50, 50, 7, 7, [{"kind": "causal"}], {"scale": 0.3}, False, "bf16"),
    ("d80-gqa", 1, 8, 2, 20, 90, 80, 80, [], {}, False, "bf16"),
    ("d129-dyn", 1, 2, 1, 40, 77, 129, 64, [{"kind": "window", "left": 20, "right": 3}], {}, True, "bf16"),
    ("d64-dyn", 2, 2, 2, 17, 300, 64, 64, [], {"softcap": 30.0}, True, "bf16"),
    ("decode", 1, 8, 2, 1, 200, 128, 128, [{"kind": "causal"}], {}, False, "bf16"),
    ("decode-d7", 1, 4, 1, 1, 150, 7, 7, [], {}, False, "bf16"),
    ("decode-d40", 1, 2, 2, 1, 64, 40, 40, [], {"scale": 0.5}, False, "bf16"),
    ("decode-d129-dyn", 1, 8, 2, 1, 333, 129, 64, [{"kind": "causal"}], {"softcap": 30.0}, True, "bf16"),
    ("short-s", 2, 4, 1, 3, 100, 64, 64, [{"kind": "window", "left": 30, "right": 0}], {}, False, "bf16"),
    ("decode-odd-t", 2, 6, 3, 1, 201, 64, 24, [], {}, False, "bf16"),
    ("decode-s2", 1, 8, 2, 2, 99, 32, 32, [{"kind": "causal"}], {}, False, "bf16"),
]
# What the compile check compiles: a prefill and a decode graph.
PROBES = ("d64", "decode")


def cpu_has_bf16():
    with open("/proc/cpuinfo") as f:
        return " avx512_bf16" in f.read()


def graph_of(case):
    name, B, Hq, Hkv, S, T, Dk, Dv, masks, extra, dynamic, kdtype = case
    dk = "D" if dynamic else Dk
    node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}
    if masks:
        node["mask"] = masks
    node.update(extra)
    return {
        "attnc": 1, "name": "bf16dot", "dims": {"D": None} if dynamic else {},
        "inputs": {"q": {"shape": [B, Hq, S, dk], "dtype": "bf16"},
                   "k": {"shape": [B, Hkv, T, dk], "dtype": kdtype},
                   "v": {"shape": [B, Hkv, T, Dv], "dtype": "bf16"}},
        "nodes": [node], "outputs": ["o"],
    }


def expected(case, q, k, v):
    name, B, Hq, Hkv, S, T, Dk, Dv, masks, extra, dynamic, kdtype = case
    k = np.repeat(k, Hq // Hkv, axis=1)
    v = np.repeat(v, Hq // Hkv, axis=1)
    s = np.einsum("bhsd,bhtd->bhst", q, k) * extra.get("scale", 1 / np.sqrt(Dk))
    if "softcap" in extra:
        s = extra["softcap"] * np.tanh(s / extra["softcap"])
    p_pos = np.arange(S)[:, None] + (T - S)
    j = np.arange(T)[None, :]
    visible = np.ones((S, T), bool)
    for m in masks:
        if m["kind"] == "causal":
            visible &= j <= p_pos
        elif m["kind"] == "window":
            visible &= (j >= p_pos - m["left"]) & (j <= p_pos + m["right"])
    s = np.where(visible, s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    empty = np.isneginf(mx)
    p = np.where(visible, np.exp(s - np.where(empty, 0, mx)), 0)
    l = p.sum(axis=-1, keepdims=True)
    return np.where(empty, 0, np.einsum("bhst,bhtd->bhsd", p, v) / np.where(empty, 1, l))


def run(case, attnc, backend, work, seed):
    rng = np.random.default_rng(seed)
    name, B, Hq, Hkv, S, T, Dk, Dv, masks, extra, dynamic, kdtype = case
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    g = graph_of(case)
    gpath = os.path.join(d, "g.json")
    json.dump(g, open(gpath, "w"))
    shapes = {"q": (B, Hq, S, Dk), "k": (B, Hkv, T, Dk), "v": (B, Hkv, T, Dv)}
    args = [attnc, "run", gpath, "--target", TARGET, "--backend", backend,
            "--threads", "1", "--output-dir", os.path.join(d, "out")]
    if dynamic:
        args += ["--dim", "D=%d" % Dk]
    values = {}
    for n, shape in shapes.items():
        x = rng.standard_normal(shape).astype(np.float32)
        dtype = g["inputs"][n]["dtype"]
        if dtype == "bf16":
            x = oracle.decode_from_file(oracle.encode_for_file(x, "bf16"), "bf16").astype(np.float32)
            np.save(os.path.join(d, n + ".npy"), oracle.encode_for_file(x, "bf16"))
        else:
            np.save(os.path.join(d, n + ".npy"), x)
        values[n] = x.astype(np.float64)
        args.append("--input=%s=%s" % (n, os.path.join(d, n + ".npy")))
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return False, "%s: attnc run exit %d: %s" % (name, r.returncode, (r.stdout + r.stderr).strip()[-300:])
    out = oracle.decode_from_file(np.load(os.path.join(d, "out", "o.npy")), "bf16")
    ref = expected(case, values["q"], values["k"], values["v"])
    if np.isnan(out).any():
        return False, "%s: NaN in the output" % name
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    return err <= 2e-2, "%s: rel err %.2g" % (name, err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--backend", choices=["mlir", "halide"], default="mlir")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--keep")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="bf16dot-")
    if not a.keep:  # --keep DIR keeps the files to look at
        atexit.register(shutil.rmtree, work, True)
    # Compile-only, on any machine: the objects hold vdpbf16ps. The MLIR
    # kernel's LLVM IR names the intrinsic; the Halide library is
    # disassembled (Halide writes no IR through attnc).
    mlir = a.backend == "mlir"
    for case in (c for c in CASES if c[0] in PROBES):
        probe = os.path.join(work, "probe-" + case[0])
        os.makedirs(probe, exist_ok=True)
        json.dump(graph_of(case), open(os.path.join(probe, "g.json"), "w"))
        r = subprocess.run([a.attnc, "compile", os.path.join(probe, "g.json"), "-o", probe,
                            "--target", TARGET, "--backend", a.backend, "--no-tuning-db"]
                           + (["--emit", "llvm"] if mlir else []),
                           capture_output=True, text=True)
        found = False
        if r.returncode == 0 and mlir:
            ll = os.path.join(probe, "bf16dot.ll")
            found = "llvm.x86.avx512bf16.dpbf16ps.512" in open(ll).read()
        elif r.returncode == 0:
            dis = subprocess.run(["objdump", "-d", os.path.join(probe, "bf16dot.a")],
                                 capture_output=True, text=True)
            found = "vdpbf16ps" in dis.stdout
        if not found:
            print("FAIL: --target %s --backend %s: no vdpbf16ps in the %s kernel (%s)"
                  % (TARGET, a.backend, case[0], r.stderr.strip()))
            return 1
        print("ok   compile: the %s %s kernel (%s) computes bf16 products with vdpbf16ps"
              % (TARGET, case[0], a.backend))
    if not cpu_has_bf16():
        print("skipped: this CPU lacks avx512_bf16, so the kernels cannot run here")
        return 77
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        for ok, summary in pool.map(lambda n: run(CASES[n], a.attnc, a.backend, work, n),
                                    range(len(CASES))):
            print("%-4s %s" % ("ok" if ok else "FAIL", summary))
            failures += not ok
    print("%d passed, %d failed" % (len(CASES) - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
