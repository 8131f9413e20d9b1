#!/usr/bin/python3
"""Check `attnc reference` (or a compiled backend) against the independent float64 oracle.

    check_reference.py --attnc PATH [--backend mlir] [--family NAME] [--count N] [--seed S]
                       [--keep DIR] [-j N]
    check_reference.py --self-test

For each generated case: write graph.json and one .npy per input, run
`attnc reference graph.json --input n=f.npy ... [--dim N=V ...] --output-dir OUT`
(with `--backend B`: `attnc run graph.json --backend B ... --output-dir OUT`, so the
compiled kernels are checked against the oracle, not against attnc's own reference),
load OUT/<output>.npy for every graph output and compare with oracle.py:
normwise relative error <= 1e-4 for f32 outputs, <= 2e-2 for f16/bf16 outputs
(an all-zero reference needs an exactly zero output), plus, for an attention output,
its f32 rounding floor relative to the reference (oracle._attention: what rounding
every score to f32 alone may change; below 1e-7 at ordinary scales, it matters only
where |scale| * |q| * |k| is in the thousands and the softmax is near one-hot), NaN never passes, non-finite
reference entries (-inf of lse) must match exactly in position; bool and i32
outputs must match exactly; file dtypes and shapes must be the declared ones.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases    # noqa: E402
import oracle   # noqa: E402

TOL = {"f32": 1e-4, "f16": 2e-2, "bf16": 2e-2}


def compare(arr, ref, dtype, floor=None):
    """Returns (ok, error or None, message). `floor`: the output's f32 rounding
    floor from the oracle (an array like `ref`), added to the tolerance."""
    want = np.dtype(oracle.NPY_DTYPE[dtype])
    if arr.dtype != want:
        return False, None, "file dtype %s, expected %s (%s)" % (arr.dtype.str, want.str, dtype)
    if tuple(arr.shape) != tuple(ref.shape):
        return False, None, "shape %s, expected %s" % (tuple(arr.shape), tuple(ref.shape))
    out = oracle.decode_from_file(arr, dtype)
    if dtype in ("bool", "i32"):
        bad = int(np.sum(out != ref))
        return bad == 0, float(bad), ("%d entries differ" % bad if bad else "exact")
    if np.isnan(ref).any():
        return False, None, "oracle produced NaN (generator bug)"
    if np.isnan(out).any():
        return False, None, "NaN in output (%d entries)" % int(np.isnan(out).sum())
    ref_fin = np.isfinite(ref)
    out_fin = np.isfinite(out)
    if not np.array_equal(ref_fin, out_fin) or not np.array_equal(out[~out_fin], ref[~ref_fin]):
        return False, None, "non-finite entries differ: %d in output, %d in reference" % (
            int((~out_fin).sum()), int((~ref_fin).sum()))
    r = ref[ref_fin]
    o = out[ref_fin]
    nref = float(np.linalg.norm(r))
    diff = float(np.linalg.norm(o - r))
    tol = TOL[dtype]
    floor_note = ""
    if floor is not None and nref != 0:
        extra = float(np.linalg.norm(np.asarray(floor)[ref_fin])) / nref
        if extra > 0:
            tol += extra
            floor_note = " = %g + f32 rounding floor %.3g" % (TOL[dtype], extra)
    if nref == 0:
        # an all-zero reference (every row fully masked, ...): the output must be
        # exactly zero too, no tolerance
        return diff == 0, diff, "abs err %.3g (reference all zero: must be exactly 0)" % diff
    err = diff / nref
    return err <= tol, err, "rel err %.3g (tol %.3g%s)" % (err, tol, floor_note)


def write_case(case, d, backend=None, extra=()):
    os.makedirs(d, exist_ok=True)
    gpath = os.path.join(d, "graph.json")
    with open(gpath, "w") as f:
        json.dump(case.graph, f, indent=1)
    args = ["reference", gpath] if backend is None else ["run", gpath, "--backend", backend]
    if backend is not None and case.threads > 1:
        args += ["--threads", str(case.threads)]
    args += list(extra)
    for name, arr in case.arrays.items():
        p = os.path.join(d, "in_%s.npy" % name)
        np.save(p, arr)
        args += ["--input", "%s=%s" % (name, p)]
    for n, v in case.dim_args.items():
        args += ["--dim", "%s=%d" % (n, v)]
    out = os.path.join(d, "out")
    args += ["--output-dir", out]
    return args, out


def kernel_path(attnc, graph_path):
    """'attention' when `attnc explain` makes the graph attention kernels only,
    else 'primitives: OP, ...' (the kernels lowered through linalg)."""
    try:
        p = subprocess.run([attnc, "explain", graph_path, "--json"], capture_output=True,
                           text=True, timeout=60)
        ops = sorted({k["op"] for k in json.loads(p.stdout)} - {"attention"})
    except Exception as e:
        return "unknown (explain failed: %s)" % e
    return "primitives: " + ", ".join(ops) if ops else "attention"


def run_case(case, attnc, workdir, backend=None, extra=()):
    """Returns (ok, summary, detail, path): path is kernel_path() with a backend."""
    ok, summary, cmd = run_case_files(case, attnc, workdir, backend, extra)
    path = None
    if backend is not None:
        path = kernel_path(attnc, os.path.join(workdir, "%s_%d" % (case.family, case.index),
                                               "graph.json"))
    return ok, summary, cmd, path


def run_case_files(case, attnc, workdir, backend=None, extra=()):
    """Returns (ok, summary, detail)."""
    d = os.path.join(workdir, "%s_%d" % (case.family, case.index))
    try:
        floors = {}
        ref = oracle.evaluate_typed(case.graph, case.oracle_inputs(), case.dims, floors)
    except Exception as e:  # an oracle or generator bug, not an attnc one
        return False, "oracle error: %s" % e, ""
    args, outdir = write_case(case, d, backend, extra)
    cmd = [attnc] + args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "attnc timed out", " ".join(shlex.quote(c) for c in cmd)
    except OSError as e:
        return False, "cannot run attnc: %s" % e, " ".join(shlex.quote(c) for c in cmd)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return False, "attnc exit %d: %s" % (p.returncode, msg[0] if msg else ""), " ".join(shlex.quote(c) for c in cmd)
    ok = True
    parts = []
    worst = 0.0
    for oname, (rval, dt) in ref.items():
        path = os.path.join(outdir, oname + ".npy")
        if not os.path.exists(path):
            ok = False
            parts.append("%s: missing %s" % (oname, os.path.basename(path)))
            continue
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as e:
            ok = False
            parts.append("%s: unreadable (%s)" % (oname, e))
            continue
        good, err, msg = compare(arr, rval, dt, floors.get(oname))
        if not good:
            ok = False
            parts.append("%s: %s" % (oname, msg))
        elif err is not None and dt in TOL:
            worst = max(worst, err)
    summary = "max err %.2g" % worst if ok else "; ".join(parts)
    return ok, summary, " ".join(shlex.quote(c) for c in cmd)


def compile_only(all_cases, attnc, workdir, backend, extra, jobs, missing):
    """`attnc compile` of every case, for a CPU that cannot run its kernels:
    0 cases failing to compile gives 77 (skipped), any failure 1."""
    def compile_case(case):
        d = os.path.join(workdir, "%s_%d" % (case.family, case.index))
        os.makedirs(d, exist_ok=True)
        gpath = os.path.join(d, "graph.json")
        with open(gpath, "w") as f:
            json.dump(case.graph, f, indent=1)
        cmd = [attnc, "compile", gpath, "-o", os.path.join(d, "out")] + list(extra)
        if backend:
            cmd += ["--backend", backend]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return p.returncode == 0, msg[-1] if msg else "", " ".join(shlex.quote(c) for c in cmd)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for c, (ok, last, cmd) in zip(all_cases, ex.map(compile_case, all_cases)):
            print("%-4s compile %s #%d  %s%s" % ("ok" if ok else "FAIL", c.family, c.index, c.desc,
                                               "" if ok else "  | %s\n     %s" % (last, cmd)),
                  flush=True)
            failures += not ok
    print("%d compiled, %d failed" % (len(all_cases) - failures, failures))
    if failures:
        return 1
    print("skipped: this CPU lacks %s (/proc/cpuinfo), so the kernels were compiled, not run"
          % ", ".join(missing))
    return 77


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnc", help="path of the attnc binary")
    ap.add_argument("--backend", help="check `attnc run --backend B` (e.g. mlir) instead of "
                    "`attnc reference`")
    ap.add_argument("--attnc-arg", action="append", default=[], metavar="ARG",
                    help="pass ARG to every `attnc run` too (e.g. --attnc-arg=--primitive-grid=7)")
    ap.add_argument("--needs-cpu-flags", metavar="F,G",
                    help="unless /proc/cpuinfo lists every flag (e.g. amx_tile,amx_bf16), only "
                    "compile each case (`attnc compile` with the --attnc-arg flags) and exit 77 "
                    "(ctest: skipped) when all compile")
    ap.add_argument("--family", action="append", choices=cases.FAMILIES,
                    help="family to run (repeatable; default: all)")
    ap.add_argument("--count", type=int, help="cases per family (default: %d)" % cases.DEFAULT_COUNT["dot"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", metavar="DIR", help="keep every case's files under DIR")
    ap.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--self-test", action="store_true", help="check the oracle itself")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print the graph of passing cases")
    a = ap.parse_args()

    if a.self_test:
        import selftest
        return selftest.main()
    if not a.attnc:
        ap.error("--attnc is required (or --self-test)")
    missing = []
    if a.needs_cpu_flags:
        try:
            with open("/proc/cpuinfo") as f:
                have = set(next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), []))
        except OSError:
            have = set()
        missing = [x for x in a.needs_cpu_flags.split(",") if x not in have]
    attnc = os.path.abspath(a.attnc)
    if not os.access(attnc, os.X_OK):
        print("attnc not found or not executable: %s" % attnc)
        return 1
    families = a.family or cases.FAMILIES
    all_cases = []
    for fam in families:
        all_cases += cases.generate(fam, a.count, a.seed)

    if a.keep:
        workdir = os.path.abspath(a.keep)
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = tempfile.mkdtemp(prefix="attnc_oracle_")
    if missing:
        try:
            return compile_only(all_cases, attnc, workdir, a.backend, a.attnc_arg, a.jobs, missing)
        finally:
            if not a.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    failures = []
    passed = 0
    by_path = {}     # with --backend: 'attention' / 'primitives' -> [passed, failed]
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            futs = [ex.submit(run_case, c, attnc, workdir, a.backend, a.attnc_arg)
                    for c in all_cases]
            for c, fut in zip(all_cases, futs):
                ok, summary, cmd, path = fut.result()
                print("%-4s %s #%d  %s  | %s%s" % ("ok" if ok else "FAIL", c.family, c.index, c.desc,
                                                  summary, " [%s]" % path if path else ""),
                      flush=True)
                if path:
                    group = path.split(" ")[0].rstrip(":")   # attention, primitives, unknown
                    by_path.setdefault(group, [0, 0])[0 if ok else 1] += 1
                if ok:
                    passed += 1
                    if a.verbose:
                        print(json.dumps(c.graph))
                else:
                    failures.append((c, summary, cmd, path))
        for c, summary, cmd, path in failures:
            print("\n==== FAILED %s #%d (seed %d): %s" % (c.family, c.index, a.seed, summary))
            if path:
                print("kernels: " + path)
            print("graph: " + json.dumps(c.graph))
            if cmd:
                print("command: " + cmd)
            if not a.keep:
                print("(rerun with --keep DIR --family %s --seed %d%s to keep the files)" % (
                    c.family, a.seed, " --backend " + a.backend if a.backend else ""))
    finally:
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if a.backend:
        # exporter chains and blocks with projections also run primitive kernels
        # (lowered through linalg), a second code path: report the two apart
        for group, what in (("attention", "graphs compiled to attention kernels only"),
                            ("primitives", "graphs that also need primitive kernels"),
                            ("unknown", "graphs `attnc explain` rejects")):
            if group in by_path:
                print("%s: %d passed, %d failed" % (what, by_path[group][0], by_path[group][1]))
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
