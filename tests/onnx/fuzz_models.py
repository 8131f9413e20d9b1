#!/usr/bin/env python3
"""Hostile ONNX files against the importer: the test models mutated at random (bytes flipped,
cut or inserted; attributes, shapes, dtypes, initializer dims, node inputs and op types
changed; nodes removed). `attnc check` and `attnc explain` must exit 0 or 1, and a failure must
be one line on stderr: never a signal, an internal error or a hang.

    fuzz_models.py --attnc build/bin/attnc --out DIR [--cases N] [--seed S]
"""

import argparse
import glob
import os
import random
import subprocess
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(4)
        if kind == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 2:
            data = data[:rng.randrange(len(data) + 1)]
        else:
            i = rng.randrange(len(data) + 1)
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return bytes(data)


def mutate_model(rng, model):
    g = model.graph
    for _ in range(rng.randint(1, 3)):
        nodes = list(g.node)
        if not nodes:
            break
        n = rng.choice(nodes)
        kind = rng.randrange(8)
        if kind == 0 and n.attribute:
            a = rng.choice(n.attribute)
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice([-5, -1, 0, 1, 2, 3, 7, 2 ** 40])
            elif a.type == onnx.AttributeProto.INTS and len(a.ints):
                a.ints[rng.randrange(len(a.ints))] = rng.choice([-3, 0, 1, 5, 99])
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice([0.0, -1.0, 1e38, float("nan"), float("inf")])
        elif kind == 1 and len(n.input) >= 2:
            i, j = rng.sample(range(len(n.input)), 2)
            n.input[i], n.input[j] = n.input[j], n.input[i]
        elif kind == 2:
            g.node.remove(n)
        elif kind == 3:
            n.op_type = rng.choice(["Add", "MatMul", "Softmax", "Reshape", "Transpose", "Slice",
                                    "Where", "Gather", "Concat", "Split", "Expand", "Range",
                                    "Trilu", "Attention", "Unsqueeze", "Cast"])
        elif kind == 4 and g.input:
            dims = rng.choice(list(g.input)).type.tensor_type.shape.dim
            if len(dims):
                d = rng.choice(list(dims))
                if rng.random() < 0.5:
                    d.dim_value = rng.choice([1, 2, 3, 0, 7])
                else:
                    d.dim_param = rng.choice(["a", "batch_size", "sequence_length", ""])
        elif kind == 5 and g.initializer:
            t = rng.choice(list(g.initializer))
            if len(t.dims):
                t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 3, 5, 2 ** 33])
        elif kind == 6 and len(n.input):
            n.input[rng.randrange(len(n.input))] = rng.choice(
                [x for m in nodes for x in m.output] + [""])
        elif kind == 7 and g.input:
            rng.choice(list(g.input)).type.tensor_type.elem_type = rng.choice(
                [1, 2, 6, 7, 9, 10, 11, 16])
    return model.SerializeToString()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attnc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    models_dir = os.path.join(args.out, "models")
    subprocess.run([sys.executable, os.path.join(HERE, "make_models.py"), models_dir],
                   check=True, stdout=subprocess.DEVNULL)
    sources = sorted(glob.glob(os.path.join(models_dir, "*.onnx")) +
                     glob.glob(os.path.join(HERE, "torch_export", "models", "*.onnx")))
    sources = [s for s in sources if "external" not in s]
    rng = random.Random(args.seed)
    failures = 0
    for case in range(args.cases):
        source = rng.choice(sources)
        raw = open(source, "rb").read()
        data = (mutate_bytes(rng, raw) if rng.random() < 0.4
                else mutate_model(rng, onnx.load_from_string(raw)))
        path = os.path.join(args.out, "case%d.onnx" % case)
        with open(path, "wb") as f:
            f.write(data)
        problem = None
        for command in ("check", "explain"):
            try:
                p = subprocess.run([args.attnc, command, path], capture_output=True,
                                   timeout=120)
            except subprocess.TimeoutExpired:
                problem = "%s: no answer in 120 s" % command
                break
            err = p.stderr.decode("utf-8", "replace")
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if p.returncode not in (0, 1) or "internal error" in err:
                problem = "%s: exit %d: %s" % (command, p.returncode, " | ".join(lines[-3:]))
                break
            if p.returncode == 1 and len(lines) != 1:
                problem = "%s: %d lines on stderr: %s" % (command, len(lines),
                                                          " | ".join(lines[:3]))
                break
        if problem:
            failures += 1
            print("FAIL case %d (from %s, kept as %s): %s"
                  % (case, os.path.basename(source), path, problem))
        else:
            os.remove(path)
    print("%d mutated models: %d failed" % (args.cases, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
