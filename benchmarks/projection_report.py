#!/usr/bin/env python3
"""Projection report: attnc's `linear` (its packed GEMM) against OpenBLAS sgemm and PyTorch.

    build/venv-bench/bin/python benchmarks/projection_report.py [--threads 1,2] [--repeat R]
        [--rounds N] [--shapes IDS]

The projections of a block, y = x Wᵀ + b in f32: GPT-2's 1024 × 768 → 768 and Llama-3-8B's k
projection 1024 × 4096 → 1024. Methods: `attnc run` of a one-node `linear` graph
(benchmarks/graphs/linear_*.json); numpy's `x @ w.T + b` (OpenBLAS sgemm, run in a child process
so that OPENBLAS_NUM_THREADS sets its threads); torch.nn.functional.linear. Each is checked first
against a float64 numpy product at a small size (1e-4 normwise). Each shape and thread count is
measured in --rounds rounds, every method once a round in a rotated order: a method's time is the
median of its round medians (and the fastest run of all), its ratio to attnc the median of the
same-round ratios. The FMA peak comes from build/bin/machine_limits in the same run. Markdown on
stdout, progress on stderr; docs/benchmarks.md has the results.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import speed_report as common

SHAPES = {  # id: (label, graph, M, K, N)
    "gpt2-proj": ("GPT-2 projection 1024 × 768 → 768", "linear_gpt2_proj.json", 1024, 768, 768),
    "llama3-k": ("Llama-3-8B k projection 1024 × 4096 → 1024", "linear_llama3_k.json", 1024,
                 4096, 1024),
}
METHODS = ("attnc", "openblas", "torch")
SMALL_ROWS = 37  # the check's rows: odd, past the packed GEMM's 16-row threshold


def inputs(k, n, m, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((n, k), dtype=np.float32),
            rng.standard_normal(n, dtype=np.float32))


def reference(x, w, b):
    return x.astype(np.float64) @ w.astype(np.float64).T + b


def run_attnc(graph, m, threads, extra):
    command = [str(common.ATTNC), "run", str(common.ROOT / "benchmarks" / "graphs" / graph),
               "--dim", f"M={m}", "--threads", str(threads), "--no-tuning-db"] + extra
    return common.Attnc._run(command)


def check_attnc(graph, k, n):
    x, w, b = inputs(k, n, SMALL_ROWS, seed=7)
    with tempfile.TemporaryDirectory(prefix="projection_report_") as work:
        extra = ["--output-dir", work]
        for name, array in (("x", x), ("w", w), ("b", b)):
            np.save(os.path.join(work, f"in_{name}.npy"), array)
            extra += ["--input", f"{name}={os.path.join(work, f'in_{name}.npy')}"]
        run_attnc(graph, SMALL_ROWS, 1, extra)
        y = np.load(os.path.join(work, "y.npy"))
    return common.relative_error(y, reference(x, w, b))


def time_attnc(graph, m, threads, repeat):
    stdout = run_attnc(graph, m, threads, ["--repeat", str(repeat)])
    found = dict(re.findall(r"^(median|min)_ms: ([0-9.eE+-]+)$", stdout, re.M))
    if len(found) != 2:
        raise RuntimeError(f"no median_ms and min_ms in attnc's output: {stdout.strip()[-200:]}")
    return float(found["median"]), float(found["min"])


def time_in_child(method, k, n, m, threads, repeat):
    """(median, min) ms of `method` in a child process with its BLAS threads set."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, __file__, "--worker", method, str(k), str(n), str(m),
                           str(threads), str(repeat)], capture_output=True, text=True, env=env,
                          timeout=1800)
    if done.returncode != 0:
        lines = (done.stderr.strip() or "no output").splitlines()
        raise common.Unavailable(lines[-1])
    result = json.loads(done.stdout)
    return result["median"], result["min"], result["check"]


def worker(method, k, n, m, threads, repeat):
    """The child: checks at SMALL_ROWS, then times `repeat` calls; JSON on stdout."""
    if method == "torch":
        torch = common.import_peer("torch")
        torch.set_num_threads(threads)

        def bind(x, w, b):
            tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))

            def call():
                with torch.inference_mode():
                    return torch.nn.functional.linear(tx, tw, tb).numpy()
            return call
    else:
        def bind(x, w, b):
            return lambda: x @ w.T + b
    small = inputs(k, n, SMALL_ROWS, seed=7)
    error = common.relative_error(bind(*small)(), reference(*small))
    median, low, _, _ = common.time_calls([bind(*inputs(k, n, m, seed=1))], repeat)
    print(json.dumps({"median": median, "min": low, "check": error}))


def blas_description():
    """numpy's BLAS as numpy describes it (numpy >= 1.25), else its version alone."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas['name']} {blas['version']}"
    except Exception:
        return f"numpy {np.__version__}'s BLAS"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        method, *numbers = sys.argv[2:]
        worker(method, *map(int, numbers))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_round_arguments(parser, "shape", SHAPES, repeat=10)
    args, threads_list, shapes = common.parse_round_arguments(parser, "shape", SHAPES)
    if not common.ATTNC.exists():
        sys.exit(f"projection_report.py: {common.ATTNC} not found; run scripts/build.sh")

    try:
        return report(args, threads_list, shapes)
    except RuntimeError as error:  # attnc failed: the message names the command
        sys.exit(f"projection_report.py: {error}")


def report(args, threads_list, shapes):
    machine = common.machine_description()
    limits = common.machine_limits(threads_list)
    rows = []
    for shape_id in shapes:
        label, graph, m, k, n = SHAPES[shape_id]
        flops = 2.0 * m * k * n
        error = check_attnc(graph, k, n)
        if not error <= 1e-4:
            sys.exit(f"projection_report.py: attnc {shape_id}: rel_err {error:.3g} > 1e-4")
        for threads in threads_list:
            times = {method: [] for method in METHODS}  # per round: (median, min)
            failed = {}
            for round_index in range(args.rounds):
                turn = round_index % len(METHODS)
                order = METHODS[turn:] + METHODS[:turn]
                for method in order:
                    if method in failed:
                        continue
                    common.log(f"{shape_id}, {threads} thread(s), round {round_index + 1}: "
                               f"{method}")
                    try:
                        if method == "attnc":
                            times[method].append(time_attnc(graph, m, threads, args.repeat))
                            continue
                        median, low, check = time_in_child(method, k, n, m, threads, args.repeat)
                        if not check <= 1e-4:
                            raise common.Unavailable(f"check: rel_err {check:.3g} > 1e-4")
                        times[method].append((median, low))
                    except common.Unavailable as reason:
                        failed[method] = str(reason)
            rows.append((label, threads, flops, times, failed))

    common.print_rounds_header("projection report", machine, args,
                               f"; OpenBLAS: {blas_description()}")
    print("\n| projection | threads | attnc ms (fastest) | GFLOP/s, share of the FMA peak "
          "| OpenBLAS ms (fastest) | attnc speed ÷ OpenBLAS's | PyTorch ms | attnc ÷ PyTorch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, threads, flops, times, failed in rows:
        def cell(method):
            return common.rounds_cell(times, failed, method)

        def ratio(method):
            return common.rounds_ratio(times, failed, method)
        attnc_ms = float(np.median([t[0] for t in times["attnc"]]))
        rate = flops / (attnc_ms * 1e-3) * 1e-9
        peak = limits.get(threads, (None,))[0]
        share = f", {rate / peak:.0%}" if peak else ""
        print(f"| {label} | {threads} | {cell('attnc')} | {rate:.0f}{share} | {cell('openblas')} "
              f"| {ratio('openblas')} | {cell('torch')} | {ratio('torch')} |")
    for label, threads, _, _, failed in rows:
        for method, reason in failed.items():
            print(f"\n{method} at {label}, {threads} thread(s): {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
