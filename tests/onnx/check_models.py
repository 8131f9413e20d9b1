#!/usr/bin/python3
"""Check the attnc ONNX importer on the models of make_models.py.

    check_models.py --attnc PATH --out DIR [--backend mlir,halide] [--only NAME] [--malformed]
                    [--models SRC]

Runs make_models.py into DIR (with --models SRC: copies the ready-made models of SRC, listed in
SRC/models.json with paths relative to SRC, into DIR instead), then for every model:
  * `attnc explain DIR/NAME.onnx --json` must exit 0 and list exactly `attention_kernels`
    kernels whose "op" is "attention", covering the nodes `attention_covers` names, and none
    whose "op" is in `kernels_absent`;
  * for every backend B, `attnc run DIR/NAME.onnx --backend B --input NAME=FILE.npy ...
    --output-dir DIR/NAME/out-B` must exit 0 and write, for every graph output, the file named
    by the importer's rule (models.json "file") with the expected dtype and shape, no NaN, and a
    normwise relative error ||out - ref|| / ||ref|| (float64) within the model's tolerance.
With --malformed, `attnc check FILE` and `attnc import FILE --attention-only` on every
DIR/malformed case must exit with status 1 (no crash, no hang) and print exactly one non-empty
line on stderr, naming the file; and a valid model of 200,000 chained nodes must pass both.

Prints one line per check (`ok ...` / `FAIL ...`) and a summary; exits 1 if anything failed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 300


class Report:
    def __init__(self):
        self.passed = []
        self.failed = []

    def ok(self, what, detail=""):
        self.passed.append(what)
        print("ok %s%s" % (what, " " + detail if detail else ""), flush=True)

    def fail(self, what, why):
        self.failed.append(what)
        print("FAIL %s: %s" % (what, why), flush=True)

    def summary(self):
        print("%d checks: %d passed, %d failed" % (
            len(self.passed) + len(self.failed), len(self.passed), len(self.failed)))
        for what in self.failed:
            print("  failed: %s" % what)


def execute(cmd, timeout_s=TIMEOUT_S):
    """Run cmd; returns (returncode or None on timeout, stdout, stderr)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout_s
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def describe_exit(rc, stderr):
    """Why a command failed, in one line: its status and the tail of its stderr."""
    if rc is None:
        return stderr
    status = "killed by signal %d" % -rc if rc < 0 else "exit %d" % rc
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return "%s%s" % (status, ": " + tail if tail else "")


# ---------------------------------------------------------------------------------------------
# Per-model checks


def check_explain(attnc, out, entry, report):
    what = "%s explain" % entry["name"]
    rc, stdout, stderr = execute([attnc, "explain", os.path.join(out, entry["file"]), "--json"])
    if rc != 0:
        return report.fail(what, describe_exit(rc, stderr))
    try:
        kernels = json.loads(stdout)
        ops = [k["op"] for k in kernels]
    except (ValueError, TypeError, KeyError) as e:
        return report.fail(what, "output is not a JSON array of kernels (%s)" % e)
    n = ops.count("attention")
    want = entry["attention_kernels"]
    if n != want:
        return report.fail(what, "%d attention kernels, expected %d (kernels: %s)"
                           % (n, want, ", ".join(ops)))
    absent = sorted(set(ops) & set(entry.get("kernels_absent", [])))
    if absent:
        return report.fail(what, "kernels of op %s remain, expected none (kernels: %s)"
                           % (", ".join(absent), ", ".join(ops)))
    covered = set().union(*(k.get("nodes", []) for k in kernels if k["op"] == "attention"))
    missing = [name for name in entry.get("attention_covers", []) if name not in covered]
    if missing:
        return report.fail(what, "the attention kernel does not cover %s (it covers %s)"
                           % (", ".join(missing), ", ".join(sorted(covered))))
    report.ok(what, "%d kernels, %d attention" % (len(kernels), n))


def compare(path, expected_path, tol):
    """(ok, message) for one output file against the expected one."""
    if not os.path.exists(path):
        present = sorted(os.listdir(os.path.dirname(path)))
        return False, "no output file %s (the output directory has: %s)" % (
            os.path.basename(path), ", ".join(present) or "nothing")
    try:
        out = np.load(path)
    except Exception as e:       # a broken .npy is a failure, not a crash of the driver
        return False, "cannot read %s: %s" % (os.path.basename(path), e)
    ref = np.load(expected_path)
    if out.dtype != ref.dtype:
        return False, "dtype %s, expected %s" % (out.dtype, ref.dtype)
    if out.shape != ref.shape:
        return False, "shape %s, expected %s" % (out.shape, ref.shape)
    out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
    if np.isnan(out64).any():
        return False, "NaN in output (%d entries)" % int(np.isnan(out64).sum())
    err = float(np.linalg.norm(out64 - ref64) / np.linalg.norm(ref64))
    if not err <= tol:       # also catches inf
        return False, "err=%.3g > tol %.3g" % (err, tol)
    return True, "err=%.2g" % err


def check_run(attnc, out, entry, backend, report):
    what = "%s %s" % (entry["name"], backend)
    out_dir = os.path.join(out, entry["name"].replace(" ", "-"), "out-" + backend)
    shutil.rmtree(out_dir, ignore_errors=True)      # stale outputs must not pass
    cmd = [attnc, "run", os.path.join(out, entry["file"]), "--backend", backend]
    for name, path in entry["inputs"].items():
        cmd += ["--input", "%s=%s" % (name, os.path.join(out, path))]
    cmd += ["--output-dir", out_dir]
    rc, _, stderr = execute(cmd)
    if rc != 0:
        return report.fail(what, describe_exit(rc, stderr))
    results = []
    for name, o in entry["outputs"].items():
        ok, msg = compare(os.path.join(out_dir, o["file"]), os.path.join(out, o["expected"]),
                          entry["tolerance"])
        if not ok:
            return report.fail(what, "output %s: %s" % (name, msg))
        results.append(msg if len(entry["outputs"]) == 1 else "%s %s" % (name, msg))
    report.ok(what, ", ".join(results))


def check_attention_only(attnc, out, entry, backends, report):
    """A model attnc cannot import whole: `attnc import --attention-only` writes each block;
    the block must leave out exactly the expected nodes, fuse to one attention kernel and
    match the block's output evaluated inside the whole model."""
    spec = entry["attention_only"]
    what = "%s attention-only" % entry["name"]
    blocks_dir = os.path.join(out, entry["name"], "blocks")
    shutil.rmtree(blocks_dir, ignore_errors=True)
    rc, _, stderr = execute([attnc, "import", os.path.join(out, entry["file"]), "-o",
                             blocks_dir, "--attention-only"])
    if rc != 0:
        return report.fail(what, describe_exit(rc, stderr))
    with open(os.path.join(blocks_dir, "blocks.json")) as f:
        found = json.load(f)
    graphs = [b["graph"] for b in found["blocks"] if b.get("graph")]
    if len(graphs) != 1 or sorted(found["left_out"]) != sorted(spec["left_out"]):
        return report.fail(what, "blocks %s, left out %s; expected one block leaving out %s"
                           % ([b["name"] for b in found["blocks"]], found["left_out"],
                              spec["left_out"]))
    report.ok(what, "1 block, left out %s" % ", ".join(found["left_out"]))
    graph = os.path.join(blocks_dir, graphs[0])
    block = {"name": entry["name"] + " block", "file": os.path.relpath(graph, out),
             "attention_kernels": entry["attention_kernels"], "tolerance": entry["tolerance"],
             "attention_covers": entry.get("attention_covers", []),
             "kernels_absent": entry.get("kernels_absent", []),
             "inputs": {}, "outputs": {spec["output"]["name"]: spec["output"]}}
    for name, path in spec["inputs"].items():
        block["inputs"][name] = path
    # The block's weights, as `attnc import` wrote them.
    block_dir = os.path.dirname(graph)
    for file in sorted(os.listdir(block_dir)):
        if file.endswith(".npy"):
            block["inputs"][file[:-4]] = os.path.relpath(os.path.join(block_dir, file), out)
    check_explain(attnc, out, block, report)
    for backend in backends:
        check_run(attnc, out, block, backend, report)


# ---------------------------------------------------------------------------------------------
# Malformed files


def check_malformed(attnc, out, case, report):
    what = "malformed %s" % case["file"]
    path = os.path.join(out, "malformed", case["file"])
    rc, _, stderr = execute([attnc, "check", path])
    if rc != 1:
        return report.fail(what, "expected exit 1, got %s (%s)"
                           % ("no exit" if rc is None else rc, describe_exit(rc, stderr)))
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if len(lines) != 1:
        return report.fail(what, "expected one line on stderr, got %d: %r" % (len(lines), stderr))
    if case["file"] not in lines[0]:
        return report.fail(what, "stderr does not name the file: %r" % lines[0])
    # The block finder of --attention-only walks the model on its own: the same verdict.
    blocks = os.path.join(out, "malformed", case["file"] + ".blocks")
    rc, _, stderr = execute([attnc, "import", path, "--attention-only", "-o", blocks])
    blockLines = [ln for ln in stderr.splitlines() if ln.strip()]
    if rc != 1 or len(blockLines) != 1 or case["file"] not in blockLines[0]:
        return report.fail(what, "import --attention-only: expected exit 1 and one line naming "
                           "the file, got %s" % describe_exit(rc, stderr))
    report.ok(what, "(%s)" % lines[0].strip())


def check_deep_chain(attnc, out, report):
    """200,000 Identity nodes before an attention: nothing may recurse once per node."""
    import onnx
    from onnx import helper, TensorProto
    what = "deep chain of 200000 nodes"
    nodes, previous = [], "q"
    for i in range(200000):
        nodes.append(helper.make_node("Identity", [previous], ["x%d" % i]))
        previous = "x%d" % i
    nodes += [helper.make_node("MatMul", [previous, "kt"], ["s"]),
              helper.make_node("Softmax", ["s"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["o"])]
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "deep", [helper.make_tensor_value_info("q", f32, [1, 2, 4, 8]),
                        helper.make_tensor_value_info("kt", f32, [1, 2, 8, 4]),
                        helper.make_tensor_value_info("v", f32, [1, 2, 4, 8])],
        [helper.make_tensor_value_info("o", f32, [1, 2, 4, 8])])
    path = os.path.join(out, "malformed", "deep_chain.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    for cmd in ([attnc, "check", path],
                [attnc, "import", path, "--attention-only", "-o", path + ".blocks"]):
        rc, _, stderr = execute(cmd)
        if rc != 0:
            return report.fail(what, "%s: %s" % (cmd[1], describe_exit(rc, stderr)))
    report.ok(what, "(check and import --attention-only)")


def check_rank_bombs(attnc, out, report):
    """A shape operand that claims 2^62 elements (a Reshape of four int64s to [2^62]) beside a
    sound attention: libonnx's shape inference would give an Expand or ConstantOfShape reading it
    2^62 dimensions, one at a time (a Reshape taking it as its target it already refuses). The
    attention still imports, in seconds."""
    import onnx
    from onnx import helper, TensorProto
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    claim = [helper.make_node("Constant", [], ["four"], value=helper.make_tensor(
                 "four", i64, [4], [1, 1, 1, 1])),
             helper.make_node("Constant", [], ["huge"], value=helper.make_tensor(
                 "huge", i64, [1], [2 ** 62])),
             helper.make_node("Reshape", ["four", "huge"], ["shape"])]
    attention = [helper.make_node("MatMul", ["q", "kt"], ["s"]),
                 helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                 helper.make_node("MatMul", ["p", "v"], ["o"])]

    def import_blocks(name, nodes, inputs, initializer=()):
        """Writes the model; (its path, rc, stderr) of `import --attention-only` on it."""
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info(n, f32, shape) for n, shape in inputs],
            [helper.make_tensor_value_info("o", f32, [1, 2, 4, 8])], initializer=initializer)
        path = os.path.join(out, "malformed", name + ".onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        rc, _, stderr = execute([attnc, "import", path, "--attention-only",
                                 "-o", path + ".blocks"], timeout_s=60)
        return path, rc, stderr

    for op in ["Expand", "ConstantOfShape", "Reshape"]:
        what = "shape operand of 2^62 elements into %s" % op
        bomb = helper.make_node(op, ["shape"] if op == "ConstantOfShape" else ["q", "shape"],
                                ["bomb"])
        _, rc, stderr = import_blocks(
            "rank_bomb_%s" % op, claim + [bomb] + attention,
            [("q", [1, 2, 4, 8]), ("kt", [1, 2, 8, 4]), ("v", [1, 2, 4, 8])])
        if rc != 0:
            report.fail(what, "import --attention-only: %s" % describe_exit(rc, stderr))
            continue
        report.ok(what, "(import --attention-only)")
    # The Q, K and V projections reading y, a value typed by inference: y is the bomb's output
    # (untyped now: exit 1, one line naming the file), or a Relu's after the bomb (inference
    # goes on past the refused node: the block imports).
    weight = helper.make_tensor("w", f32, [8, 8], [0.5] * 64)
    for after in [False, True]:
        what = "shape operand of 2^62 elements into an Expand %s the block's input" % (
            "before" if after else "giving")
        nodes = claim + [helper.make_node("Expand", ["x", "shape"], ["bomb" if after else "y"])]
        if after:
            nodes.append(helper.make_node("Relu", ["x"], ["y"]))
        for name in ["q", "k", "v"]:
            nodes.append(helper.make_node("MatMul", ["y", "w"], [name]))
        nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2])] + attention
        path, rc, stderr = import_blocks(
            "rank_bomb_block_%s" % ("after" if after else "input"), nodes,
            [("x", [1, 2, 4, 8])], [weight])
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        if after and rc != 0:
            report.fail(what, "import --attention-only: %s" % describe_exit(rc, stderr))
        elif not after and (rc != 1 or len(lines) != 1 or path not in lines[0]):
            report.fail(what, "import --attention-only: expected exit 1 and one line naming "
                        "the file, got %s" % describe_exit(rc, stderr))
        else:
            report.ok(what, "(%s)" % (lines[0].strip() if lines else "imported"))


# ---------------------------------------------------------------------------------------------


def make_models(out, malformed):
    cmd = [sys.executable, os.path.join(HERE, "make_models.py"), out]
    if malformed:
        cmd.append("--malformed")
    rc, stdout, stderr = execute(cmd)
    if rc != 0:
        sys.stdout.write(stdout)
        sys.stderr.write(stderr)
        print("FAIL make_models.py: %s" % describe_exit(rc, stderr))
        return None
    with open(os.path.join(out, "models.json")) as f:
        return json.load(f)


def copy_models(src, out, malformed):
    """The ready-made models of src (its models.json, paths relative to src), copied to out."""
    with open(os.path.join(src, "models.json")) as f:
        doc = json.load(f)
    if malformed and "malformed" not in doc:
        print("FAIL --malformed: %s/models.json lists no malformed cases" % src)
        return None
    if os.path.realpath(src) != os.path.realpath(out):
        shutil.copytree(src, out, dirs_exist_ok=True)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attnc", required=True, help="path of the attnc binary")
    ap.add_argument("--out", required=True, help="directory for the models and outputs")
    ap.add_argument("--backend", default="mlir,halide",
                    help="comma-separated backends of `attnc run` (default mlir,halide)")
    ap.add_argument("--only", help="check only the model of this name")
    ap.add_argument("--malformed", action="store_true", help="also check the malformed files")
    ap.add_argument("--models", help="check the models listed in MODELS/models.json (copied to "
                    "--out) instead of running make_models.py")
    args = ap.parse_args()

    attnc = os.path.abspath(args.attnc)
    if not os.access(attnc, os.X_OK):
        print("FAIL attnc: %s is not an executable" % attnc)
        return 1
    if args.models:
        doc = copy_models(args.models, args.out, args.malformed)
    else:
        doc = make_models(args.out, args.malformed)
    if doc is None:
        return 1
    entries = doc["models"]
    if args.only:
        entries = [e for e in entries if e["name"] == args.only]
        if not entries:
            print("FAIL --only %s: no such model (have: %s)"
                  % (args.only, ", ".join(e["name"] for e in doc["models"])))
            return 1
    backends = [b for b in args.backend.split(",") if b]

    report = Report()
    for entry in entries:
        if "attention_only" in entry:
            check_attention_only(attnc, args.out, entry, backends, report)
            continue
        check_explain(attnc, args.out, entry, report)
        for backend in backends:
            check_run(attnc, args.out, entry, backend, report)
    if args.malformed:
        with open(os.path.join(args.out, "malformed", "cases.json")) as f:
            for case in json.load(f)["cases"]:
                check_malformed(attnc, args.out, case, report)
        check_deep_chain(attnc, args.out, report)
        check_rank_bombs(attnc, args.out, report)
    report.summary()
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
