#!/usr/bin/env python3
"""Speed report: attnc against PyTorch and ONNX Runtime on this CPU, judged by the machine's limits.

    benchmarks/setup_peers.sh                  # once: build/venv-bench with the peers
    build/venv-bench/bin/python benchmarks/speed_report.py [--threads 1,2] [--repeat R]
        [--rounds N] [--jsonl FILE] [--plot FILE.png] [--quick] [--shapes IDS]
        [--only-methods NAMES]

Measures, at each thread count, the machine's limits (build/bin/machine_limits: f32 FMA peak,
streaming read) and every method at every shape, each checked first against a float64 numpy
reference at a small size of the same shape; prints a markdown report to stdout and progress to
stderr. Each shape and thread count is measured in --rounds rounds, every method once a round and
in a rotated order, so that a busy host's slow minutes fall on every method alike: a method's time
is the median of its round medians, and its ratio to attnc the median of the ratios of the same
round. A peer that is missing or fails is reported and skipped; the exit status is 1 only when
attnc (either backend) fails. docs/benchmarks.md explains the columns and the peers' settings.
"""
import argparse
import datetime
import fnmatch
import functools
import gc
import importlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ATTNC = ROOT / "build" / "bin" / "attnc"
MACHINE_LIMITS = ROOT / "build" / "bin" / "machine_limits"

DECODE_INPUT_SETS = 4  # decode rotates K/V sets so that they stream from memory
TOLERANCE = {"f32": 1e-4, "bf16": 2e-2}
ATTNC_METHODS = ("attnc", "attnc-halide")
ORT_METHODS = ("ort-attention23", "ort-mha", "ort-gqa")
METHODS = ATTNC_METHODS + ("pytorch-sdpa",) + ORT_METHODS


@dataclass(frozen=True)
class Shape:
    """One benchmark shape (B = 1): Q [1,hq,s,d], K and V [1,hkv,t,d]."""

    id: str
    label: str
    kind: str  # "prefill" (judged by the FMA peak) or "decode" (by the streaming read)
    graph: str  # attnc graph, relative to the repository root
    dtype: str  # "f32" or "bf16"
    hq: int
    hkv: int
    s: int
    t: int
    d: int
    causal: bool
    spread: float = 1.0  # standard deviation of Q's and K's entries

    @property
    def input_names(self):
        return ("q", "k", "v") if self.kind == "prefill" else ("q", "k_cache", "v_cache")

    @property
    def dims(self):
        """The graph's run-time sizes."""
        return {"H": self.hq, "L": self.s} if self.kind == "prefill" else {"B": 1, "T": self.t}

    @property
    def input_sets(self):
        return DECODE_INPUT_SETS if self.kind == "decode" else 1

    @property
    def peer_causal(self):
        """is_causal for PyTorch and ONNX: both align top-left, so decode (S=1) passes False."""
        return self.causal and self.kind == "prefill"

    def small(self):
        """The same shape at a size for the correctness check."""
        return replace(self, s=67, t=67) if self.kind == "prefill" else replace(self, t=77)

    def work(self):
        """Prefill: flops 4·S·T·D·H (causal counted dense). Decode: bytes of K and V."""
        if self.kind == "prefill":
            return 4.0 * self.s * self.t * self.d * self.hq
        return 2.0 * self.hkv * self.t * self.d * (2 if self.dtype == "bf16" else 4)


def _prefill(id, graph, d, length, causal, dtype="f32", spread=1.0):
    mask = "causal" if causal else "non-causal"
    label = f"prefill {dtype} {mask} H=8 S=T={length} D={d}"
    if spread != 1.0:
        label += f", scores spread (Q, K std {spread:g})"
    return Shape(id, label, "prefill", f"benchmarks/graphs/{graph}", dtype, 8, 8, length, length,
                 d, causal, spread)


def _decode(dtype, t):
    graph = ("examples/graphs/llama3_gqa_decode.json" if dtype == "bf16"
             else "benchmarks/graphs/llama3_decode_f32.json")
    return Shape(f"decode-{dtype}-t{t}", f"decode {dtype} Llama-3-8B GQA 32/8 heads D=128 T={t}",
                 "decode", graph, dtype, 32, 8, 1, t, 128, True)


def _mqa_decode(t):
    """One kv head for 8 query heads: one task per decode step, so attnc splits
    the keys over the threads (FlashDecoding)."""
    return Shape(f"decode-f32-mqa-t{t}", f"decode f32 MQA 8/1 heads D=128 T={t}", "decode",
                 "benchmarks/graphs/mqa_decode_f32.json", "f32", 8, 1, 1, t, 128, True)


SHAPES = [
    _prefill("prefill-d64", "attention_d64.json", 64, 2048, False),
    _prefill("prefill-d64-causal", "attention_d64_causal.json", 64, 2048, True),
    _prefill("prefill-d128", "attention_d128.json", 128, 1024, False),
    # Scores with a standard deviation of 16 (q·k/8 of entries of std 4), as a trained model's
    # peaked heads have: most of a row's exp() underflow, which costs a microcode assist per
    # instruction on Intel cores unless the kernel keeps those lanes out.
    _prefill("prefill-d64-spread", "attention_d64.json", 64, 2048, False, spread=4.0),
    # bf16 (judged by the f32 FMA peak too: on AVX512-BF16 attnc exceeds it).
    _prefill("prefill-bf16-d64", "attention_d64_bf16.json", 64, 2048, False, "bf16"),
    _prefill("prefill-bf16-d128", "attention_d128_bf16.json", 128, 1024, False, "bf16"),
    _decode("bf16", 4096),
    _decode("bf16", 32768),
    _decode("f32", 4096),
    _decode("f32", 32768),
    _mqa_decode(32768),
]
QUICK_SHAPES = ("prefill-d64", "decode-bf16-t4096", "decode-f32-t4096")


class Unavailable(Exception):
    """A peer that cannot run a shape here (not installed, no kernel); the message says why."""


class CheckFailed(Exception):
    """A method's output is too far from the float64 reference."""


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Inputs and the reference


def bf16_bits(x):
    """float32 -> bf16 bit patterns (uint16), rounding to nearest even."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def make_inputs(shape, seed):
    """Q, K, V as float32 normals, Q and K of standard deviation shape.spread, V standard (bf16
    shapes: values that bf16 holds exactly)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(dims, dtype=np.float32) for dims in
              ((1, shape.hq, shape.s, shape.d), (1, shape.hkv, shape.t, shape.d),
               (1, shape.hkv, shape.t, shape.d))]
    arrays[0] *= np.float32(shape.spread)
    arrays[1] *= np.float32(shape.spread)
    if shape.dtype == "bf16":
        arrays = [bf16_to_f32(bf16_bits(a)) for a in arrays]
    return arrays


def reference(shape, q, k, v):
    """float64 attention; the causal mask aligns bottom-right (query i sees keys <= i + T - S)."""
    group = shape.hq // shape.hkv
    k64 = np.repeat(k.astype(np.float64), group, axis=1)
    v64 = np.repeat(v.astype(np.float64), group, axis=1)
    scores = q.astype(np.float64) @ k64.transpose(0, 1, 3, 2) / np.sqrt(shape.d)
    if shape.causal:
        visible = np.arange(shape.t)[None, :] <= np.arange(shape.s)[:, None] + shape.t - shape.s
        scores = np.where(visible, scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v64


def relative_error(out, ref):
    """Normwise relative error; NaN when the output has NaN or the wrong shape."""
    out = np.asarray(out, dtype=np.float64)
    if out.shape != ref.shape:
        return float("nan")
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


# ---------------------------------------------------------------------------------------------
# Methods. Each has check(shape, threads, q, k, v) -> output and time(shape, threads, repeat,
# get_inputs) -> (median, min, max, times) in ms, get_inputs() giving the shape's input sets;
# peers raise Unavailable.


class Attnc:
    """`attnc run` on a graph, one process per call (the MLIR or the Halide backend)."""

    def __init__(self, backend):
        self.backend = backend

    def _command(self, shape, threads, extra):
        command = [str(ATTNC), "run", str(ROOT / shape.graph), "--threads", str(threads),
                   "--no-tuning-db"]
        for name, value in shape.dims.items():
            command += ["--dim", f"{name}={value}"]
        if self.backend != "mlir":
            command += ["--backend", self.backend]
        return command + extra

    @staticmethod
    def _run(command):
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if done.returncode < 0:
            why = f"died of {signal.Signals(-done.returncode).name}"
        elif done.returncode > 0:
            lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
            why = f"exited {done.returncode}: {lines[-1] if lines else 'no output'}"
        else:
            return done.stdout
        raise RuntimeError(f"attnc {why} (command: {shlex.join(command)})")

    def check(self, shape, threads, q, k, v):
        with tempfile.TemporaryDirectory(prefix="speed_report_") as work:
            extra = ["--output-dir", work]
            for name, array in zip(shape.input_names, (q, k, v)):
                path = os.path.join(work, f"in_{name}.npy")
                np.save(path, bf16_bits(array) if shape.dtype == "bf16" else array)
                extra += ["--input", f"{name}={path}"]
            self._run(self._command(shape, threads, extra))
            out = np.load(os.path.join(work, "o.npy"))
        return bf16_to_f32(out) if shape.dtype == "bf16" else out

    def time(self, shape, threads, repeat, get_inputs):
        stdout = self._run(self._command(
            shape, threads, ["--repeat", str(repeat), "--input-sets", str(shape.input_sets)]))
        found = dict(re.findall(r"^(median|min|max)_ms: ([0-9.eE+-]+)$", stdout, re.M))
        if "median" not in found:
            raise RuntimeError(f"no median_ms in attnc's output: {stdout.strip()[-200:]}")
        value = {key: float(found[key]) if key in found else None
                 for key in ("median", "min", "max")}
        return value["median"], value["min"], value["max"], None


def time_calls(calls, repeat):
    """ms of `repeat` calls taking `calls` in turn, after one warm-up call of each."""
    for call in calls:
        call()
    times = []
    for i in range(repeat):
        call = calls[i % len(calls)]
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    ordered = sorted(times)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return median, ordered[0], ordered[-1], times


class InProcess:
    """A peer run in this process: bind(shape, threads, q, k, v) returns a call -> output."""

    def check(self, shape, threads, q, k, v):
        return self.bind(shape, threads, q, k, v)()

    def time(self, shape, threads, repeat, get_inputs):
        calls = [self.bind(shape, threads, *inputs) for inputs in get_inputs()]
        try:
            return time_calls(calls, repeat)
        finally:
            del calls
            gc.collect()


def import_peer(name):
    try:
        return importlib.import_module(name)
    except Exception as error:  # ImportError, or a broken install's own error
        raise Unavailable(f"{name} not installed ({type(error).__name__}: {error})") from None


class TorchSdpa(InProcess):
    """torch.nn.functional.scaled_dot_product_attention, inference mode, q/k/v [B,H,S,D]."""

    def bind(self, shape, threads, q, k, v):
        torch = import_peer("torch")
        torch.set_num_threads(threads)
        dtype = torch.bfloat16 if shape.dtype == "bf16" else torch.float32
        tq, tk, tv = (torch.from_numpy(x).to(dtype) for x in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def call():
            with torch.inference_mode():
                out = sdpa(tq, tk, tv, is_causal=shape.peer_causal,
                           enable_gqa=shape.hq != shape.hkv)
            return out.float().numpy()

        return call


class OnnxRuntime(InProcess):
    """One ONNX Runtime attention operator in a one-node model built in memory."""

    def __init__(self, method):
        self.method = method
        self.sessions = {}  # (shape id, threads) -> session, shared by the check and timing

    def _model(self, shape):
        onnx = import_peer("onnx")
        helper, tp = onnx.helper, onnx.TensorProto
        elem = tp.BFLOAT16 if shape.dtype == "bf16" else tp.FLOAT
        if self.method == "ort-attention23":
            inputs, outputs = ["Q", "K", "V"], ["Y"]
            node = helper.make_node("Attention", inputs, outputs, is_causal=int(shape.peer_causal))
        elif self.method == "ort-mha":
            inputs, outputs = ["query", "key", "value"], ["output"]
            node = helper.make_node("MultiHeadAttention", inputs, outputs, domain="com.microsoft",
                                    num_heads=shape.hq, unidirectional=int(shape.peer_causal))
        else:
            inputs = ["query", "key", "value", "past_key", "past_value"]
            outputs = ["output", "present_key", "present_value"]
            node = helper.make_node("GroupQueryAttention",
                                    inputs + ["seqlens_k", "total_sequence_length"], outputs,
                                    domain="com.microsoft", num_heads=shape.hq,
                                    kv_num_heads=shape.hkv)
        values = [helper.make_tensor_value_info(name, elem, None) for name in inputs]
        if self.method == "ort-gqa":
            values += [helper.make_tensor_value_info("seqlens_k", tp.INT32, [None]),
                       helper.make_tensor_value_info("total_sequence_length", tp.INT32, [])]
        graph = helper.make_graph([node], self.method, values,
                                  [helper.make_tensor_value_info(n, elem, None) for n in outputs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                        helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 10
        return model.SerializeToString()

    def _session(self, shape, threads):
        key = (shape.id, threads)
        if key not in self.sessions:
            ort = import_peer("onnxruntime")
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            try:
                session = ort.InferenceSession(self._model(shape), options,
                                               providers=["CPUExecutionProvider"])
            except Exception as error:
                first = str(error).strip().splitlines()[0]
                if shape.dtype == "bf16":
                    raise Unavailable(f"no bf16 kernel ({first})") from None
                raise Unavailable(f"ORT cannot build the model ({first})") from None
            if shape.dtype == "bf16":
                raise Unavailable("ORT built a bf16 session, but this script feeds f32 only")
            self.sessions = {key: session}  # one live session at a time
        return self.sessions[key]

    def bind(self, shape, threads, q, k, v):
        session = self._session(shape, threads)
        hq, s, d = shape.hq, shape.s, shape.d
        if self.method == "ort-attention23":
            feeds = {"Q": q, "K": k, "V": v}
            return lambda: session.run(None, feeds)[0]
        if self.method == "ort-mha":
            bsh = lambda x: np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(1, x.shape[2], -1))
            feeds = {"query": bsh(q), "key": bsh(k), "value": bsh(v)}
            return lambda: session.run(None, feeds)[0].reshape(1, s, hq, d).transpose(0, 2, 1, 3)
        return self._bind_gqa(session, shape, q, k, v)

    @staticmethod
    def _bind_gqa(session, shape, q, k, v):
        """Decode step on a shared K/V cache: past = present = K and V (T rows), seqlens_k =
        T-1, the new key and value = row T-1 (written back over itself)."""
        ort = import_peer("onnxruntime")
        t = shape.t
        arrays = {"query": q.reshape(1, 1, -1),
                  "key": np.ascontiguousarray(k[:, :, t - 1]).reshape(1, 1, -1),
                  "value": np.ascontiguousarray(v[:, :, t - 1]).reshape(1, 1, -1),
                  "past_key": k, "past_value": v,
                  "seqlens_k": np.array([t - 1], np.int32),
                  "total_sequence_length": np.array(t, np.int32)}
        values = {name: ort.OrtValue.ortvalue_from_numpy(a) for name, a in arrays.items()}
        binding = session.io_binding()
        for name, value in values.items():
            binding.bind_ortvalue_input(name, value)
        binding.bind_output("output")
        binding.bind_ortvalue_output("present_key", values["past_key"])
        binding.bind_ortvalue_output("present_value", values["past_value"])

        def call(values=values):  # the binding does not keep the OrtValues' arrays alive
            session.run_with_iobinding(binding)
            return binding.get_outputs()[0].numpy().reshape(1, shape.hq, 1, shape.d)

        return call


def make_method(name):
    if name in ATTNC_METHODS:
        return Attnc("mlir" if name == "attnc" else "halide")
    return TorchSdpa() if name == "pytorch-sdpa" else OnnxRuntime(name)


def applies(method, shape):
    """MHA has no GQA (prefill only); GQA is a decode-with-cache operator (decode only)."""
    return {"ort-mha": shape.kind == "prefill", "ort-gqa": shape.kind == "decode"}.get(method, True)


# ---------------------------------------------------------------------------------------------
# The machine


def machine_limits(threads_list):
    """{threads: (FMA GFLOP/s, read GB/s)} from build/bin/machine_limits; {} when it fails."""
    limits = {}
    for n in [n for n in threads_list if n > 1] or [1]:
        log(f"machine_limits --threads {n} --repeat 5 ...")
        try:
            done = subprocess.run([str(MACHINE_LIMITS), "--json", "--threads", str(n),
                                   "--repeat", "5"], capture_output=True, text=True,
                                  timeout=600, check=True)
            data = json.loads(done.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            log(f"warning: machine_limits failed ({error}); no fractions of the limits")
            return {}
        limits.setdefault(1, (data["fma_gflops_1"], data["read_gbs_1"], data["isa"]))
        limits[n] = (data["fma_gflops_n"], data["read_gbs_n"], data["isa"])
    return limits


def machine_description():
    """CPU model (/proc/cpuinfo and lscpu) and which of avx2/avx512f/amx_bf16 it has."""
    cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    lscpu_model = "lscpu unavailable"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        found = re.search(r"^Model name:\s*(.*)$", lscpu, re.M)
        lscpu_model = found.group(1).strip() if found else "?"
        found = re.search(r"^Flags:\s*(.*)$", lscpu, re.M)
        flags = found or flags
    except (OSError, subprocess.SubprocessError):
        pass
    present = set(flags.group(1).split()) if flags else set()
    return {"cpu": model.group(1).strip() if model else "?", "lscpu_model": lscpu_model,
            "flags": {f: f in present for f in ("avx2", "avx512f", "amx_bf16")},
            "cpus": os.cpu_count(), "load_average": os.getloadavg()}


def versions():
    found = {}
    for name in ("numpy", "torch", "onnxruntime", "onnx"):
        try:
            found[name] = importlib.import_module(name).__version__
        except Exception:
            found[name] = "not installed"
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, check=True).stdout.strip()
        found["attnc"] = head + (" with local changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        found["attnc"] = "?"
    return found


# ---------------------------------------------------------------------------------------------
# Measuring


def rate_and_fraction(shape, ms, limits, threads):
    """(GFLOP/s or GB/s, fraction of that thread count's limit or None)."""
    rate = shape.work() / (ms * 1e-3) * 1e-9
    if threads not in limits:
        return rate, None
    fma, read, _ = limits[threads]
    return rate, rate / (fma if shape.kind == "prefill" else read)


def measure(method_name, method, shape, threads, repeat, get_inputs, checked):
    """One round's record: the check (once per graph, method and threads), then the timing;
    main() adds the rate once the rounds are merged."""
    record = {"kind": "result", "shape": shape.id, "label": shape.label, "threads": threads,
              "method": method_name, "dtype": shape.dtype, "status": "ok"}
    try:
        key = (shape.graph, method_name, threads)
        small = shape.small()
        if key not in checked:
            q, k, v = make_inputs(small, seed=100)
            checked[key] = relative_error(method.check(small, threads, q, k, v),
                                          reference(small, q, k, v))
        error = checked[key]
        record["check_rel_err"] = error if np.isfinite(error) else None
        if not error <= TOLERANCE[shape.dtype]:  # False for NaN
            raise CheckFailed(f"check at S={small.s} T={small.t}: rel_err {error:.3g} > "
                              f"{TOLERANCE[shape.dtype]:.0e}")
        median, low, high, times = method.time(shape, threads, repeat, get_inputs)
    except Unavailable as reason:
        record.update(status="unavailable", reason=str(reason))
        return record
    except Exception as error:  # a check failure or any error of the method itself
        record.update(status="failed", reason=f"{type(error).__name__}: {error}")
        return record
    record.update(median_ms=median, min_ms=low, max_ms=high, times_ms=times,
                  rate_unit="GFLOP/s" if shape.kind == "prefill" else "GB/s")
    return record


def merge_rounds(rounds):
    """One record from a method's records of every round: the median of the round medians, the
    fastest and slowest run of all; the first failure if a round failed."""
    for r in rounds:
        if r["status"] != "ok":
            return r
    merged = dict(rounds[0])
    medians = [r["median_ms"] for r in rounds]
    merged["round_medians_ms"] = medians
    merged["median_ms"] = float(np.median(medians))
    lows = [r["min_ms"] for r in rounds if r["min_ms"] is not None]
    highs = [r["max_ms"] for r in rounds if r["max_ms"] is not None]
    merged["min_ms"] = min(lows) if lows else None
    merged["max_ms"] = max(highs) if highs else None
    times = [t for r in rounds for t in (r["times_ms"] or [])]
    merged["times_ms"] = times or None
    return merged


def best_ort(records):
    """ort-best: the fastest ORT operator that ran, else why none did."""
    ran = [r for r in records if r["status"] == "ok"]
    if ran:
        best = min(ran, key=lambda r: r["median_ms"])
        return dict(best, method="ort-best", best_of=best["method"])
    base = {key: records[0][key] for key in ("kind", "shape", "label", "threads", "dtype")}
    reasons = sorted({f"{r['method']}: {r['reason']}" for r in records})
    status = "failed" if any(r["status"] == "failed" for r in records) else "unavailable"
    return dict(base, method="ort-best", status=status, reason="; ".join(reasons))


def add_ratios(records):
    """vs_attnc = method time / attnc time for each record of the same shape and threads: the
    median of the ratios round by round (the two timed minutes apart at most)."""
    attnc = {(r["shape"], r["threads"]): r["round_medians_ms"] for r in records
             if r["method"] == "attnc" and r["status"] == "ok"}
    for r in records:
        base = attnc.get((r["shape"], r["threads"]))
        if r["status"] == "ok" and base and r["method"] != "attnc":
            ratios = [m / a for m, a in zip(r["round_medians_ms"], base)]
            r["vs_attnc"] = float(np.median(ratios))


# ---------------------------------------------------------------------------------------------
# The report


def fmt_ms(ms):
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}" if ms >= 1 \
        else f"{ms:.3f}"


# The rounds of the projection and model reports: per method and thread count a list of
# (median, fastest) ms, one a round, the methods in a rotated order.


def add_round_arguments(parser, kind, choices, repeat):
    """--threads, --repeat, --rounds and --KINDs (ids from `choices`, default all)."""
    parser.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    parser.add_argument("--repeat", type=int, default=repeat, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=3, help=f"rounds per {kind} and threads")
    parser.add_argument(f"--{kind}s", default=",".join(choices), help="from " + ", ".join(choices))


def parse_round_arguments(parser, kind, choices):
    """(args, thread counts, ids) of add_round_arguments(); a bad value is parser.error."""
    args = parser.parse_args()
    try:
        threads_list = [int(t) for t in args.threads.split(",")]
        ids = getattr(args, kind + "s").split(",")
        unknown = [i for i in ids if i not in choices]
        if unknown or min(threads_list) < 1 or args.repeat < 1 or args.rounds < 1:
            raise ValueError(f"unknown {kind} {unknown[0]}" if unknown else "values must be >= 1")
    except ValueError as error:
        parser.error(str(error))
    return args, threads_list, ids


def print_rounds_header(title, machine, args, versions_note, cpu_note=""):
    """The title, CPU and versions lines of a rounds report (`cpu_note` after the CPU count,
    `versions_note` after the versions)."""
    flags = ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in machine["flags"].items())
    print(f"# attnc {title}: {machine['cpu']}\n")
    print(f"- CPU: `lscpu` \"{machine['lscpu_model']}\"; {flags}; {machine['cpus']} CPUs; "
          f"{cpu_note}{datetime.date.today()}; {args.rounds} rounds of {args.repeat} runs, "
          f"methods in a rotated order")
    print("- versions: " + ", ".join(f"{key} {value}" for key, value in versions().items())
          + versions_note)


def rounds_cell(times, failed, method):
    """"median of the round medians (fastest run)", or why the method has none."""
    if method in failed:
        return "unavailable"
    medians = [t[0] for t in times[method]]
    return f"{fmt_ms(float(np.median(medians)))} ({fmt_ms(min(t[1] for t in times[method]))})"


def rounds_ratio(times, failed, method):
    """The median of the same-round ratios of `method`'s time to attnc's ("" without one)."""
    if method in failed or not times["attnc"]:
        return ""
    return f"{np.median([p[0] / a[0] for p, a in zip(times[method], times['attnc'])]):.2f}×"


def short_status(record):
    if record is None:
        return "—"
    if record["status"] == "failed":
        return "failed"
    return "no bf16 kernel" if "no bf16 kernel" in record.get("reason", "") else "unavailable"


def ms_and_ratio(record, label=None):
    """Two cells: the median ms (with the operator for ort-best) and time / attnc time."""
    if record is None or record["status"] != "ok":
        return [short_status(record), ""]
    ms = fmt_ms(record["median_ms"]) + (f" ({label})" if label else "")
    ratio = record.get("vs_attnc")
    return [ms, f"{ratio:.2f}×" if ratio else ""]


def rate_cell(record):
    if record is None or record["status"] != "ok":
        return short_status(record)
    fraction = record["fraction_of_limit"]
    share = f" = {fraction:.0%}" if fraction is not None else ""
    return f"{record['rate']:.1f} {record['rate_unit']}{share}"


def report(records, machine, limits, args, shapes, versions_found):
    """The markdown report on stdout."""
    flags = ", ".join(f"{f} {'yes' if v else 'no'}" for f, v in machine["flags"].items())
    print(f"# attnc speed report: {machine['cpu']}\n")
    print(f"- CPU: `/proc/cpuinfo` \"{machine['cpu']}\"; `lscpu` \"{machine['lscpu_model']}\"; "
          f"{flags}; {machine['cpus']} CPUs; load average at start "
          f"{' '.join(f'{x:.2f}' for x in machine['load_average'])}")
    print(f"- date: {args.date}; threads: {', '.join(map(str, args.threads))}; "
          f"{args.rounds} rounds, every method once a round in a rotated order, each the median "
          f"of {args.repeat} runs after a warm-up; decode rotates {DECODE_INPUT_SETS} input sets")
    print("- versions: " + ", ".join(f"{k} {v}" for k, v in versions_found.items()))
    if limits:
        print(f"\nLimits (`build/bin/machine_limits`, median of 5, ISA "
              f"{next(iter(limits.values()))[2]}):\n")
        print("| threads | f32 FMA peak GFLOP/s | streaming read GB/s |\n|---:|---:|---:|")
        for n in sorted(limits):
            if n in args.threads:
                print(f"| {n} | {limits[n][0]:.1f} | {limits[n][1]:.1f} |")
    else:
        print("\nLimits: machine_limits did not run; no fractions.")

    by_key = {(r["shape"], r["threads"], r["method"]): r for r in records}
    print("\nTimes are medians of the round medians in ms; rate = GFLOP/s (prefill, 4·S·T·D·H, "
          "causal counted dense) or GB/s of K and V read (decode), with its share of the limit at "
          "that thread count; ×: that method's time / attnc's time in the same round, the median "
          "over the rounds (> 1: attnc faster).\n")
    print("| shape | threads | attnc ms | attnc rate | attnc-halide ms | ×halide | "
          "pytorch-sdpa ms | ×pytorch | ort-best ms | ×ort |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape in shapes:
        for n in args.threads:
            get = lambda m: by_key.get((shape.id, n, m))
            attnc = get("attnc")
            ort = get("ort-best")
            ort_label = ort["best_of"].removeprefix("ort-") if ort and "best_of" in ort else None
            cells = ([shape.label, str(n),
                      fmt_ms(attnc["median_ms"]) if attnc and attnc["status"] == "ok"
                      else short_status(attnc), rate_cell(attnc)]
                     + ms_and_ratio(get("attnc-halide")) + ms_and_ratio(get("pytorch-sdpa"))
                     + ms_and_ratio(ort, ort_label))
            print("| " + " | ".join(cells) + " |")

    ran = [r for r in records if r["status"] == "ok" and r["method"] != "ort-best"]
    if ran:
        print("\nEvery method (min and max over the runs of every round):\n")
        print("| shape | threads | method | median ms | min ms | max ms | rate | × attnc |")
        print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in ran:
        span = [fmt_ms(r[k]) if r[k] is not None else "" for k in ("min_ms", "max_ms")]
        ratio = f"{r['vs_attnc']:.2f}×" if "vs_attnc" in r else ""
        print(f"| {r['shape']} | {r['threads']} | {r['method']} | {fmt_ms(r['median_ms'])} | "
              f"{' | '.join(span)} | {rate_cell(r)} | {ratio} |")

    notes = {}
    for r in records:
        if r["status"] != "ok" and r["method"] != "ort-best":
            notes.setdefault((r["method"], r["status"], r["reason"]), []).append(
                f"{r['shape']}/{r['threads']}t")
    if notes:
        print("\nNot timed:\n")
        for (method, status, reason), where in notes.items():
            print(f"- {method} ({', '.join(where)}): {status}: {reason}")


def plot(records, shapes, threads, path):
    """Bar plot: each method's fraction of the limit, per shape and thread count."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as error:
        log(f"warning: no plot ({type(error).__name__}: {error}); benchmarks/setup_peers.sh "
            "installs matplotlib")
        return
    groups = [(s, n) for s in shapes for n in threads]
    methods = [m for m in METHODS if any(r["method"] == m and r["status"] == "ok"
                                         for r in records)]
    by_key = {(r["shape"], r["threads"], r["method"]): r for r in records}
    width = 0.8 / max(len(methods), 1)
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(groups)), 5))
    for i, method in enumerate(methods):
        values = []
        for shape, n in groups:
            r = by_key.get((shape.id, n, method))
            ok = r and r["status"] == "ok" and r["fraction_of_limit"] is not None
            values.append(r["fraction_of_limit"] if ok else 0.0)
        ax.bar([g + (i - (len(methods) - 1) / 2) * width for g in range(len(groups))], values,
               width, label=method)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{s.id}\n{n} thread{'s' if n > 1 else ''}" for s, n in groups],
                       fontsize=8)
    ax.set_ylabel("fraction of the machine's limit")
    ax.set_title("prefill: of the f32 FMA peak; decode: of the streaming read (higher is better)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    log(f"wrote {path}")


# ---------------------------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2 (default)")
    parser.add_argument("--repeat", type=int, help="timed runs per measurement (default 10)")
    parser.add_argument("--rounds", type=int, help="rounds per shape and thread count, every "
                        "method once a round (default 3; 1 with --quick)")
    parser.add_argument("--jsonl", help="write every measurement as JSON lines to this file")
    parser.add_argument("--plot", help="write a bar plot (PNG) to this file")
    parser.add_argument("--quick", action="store_true",
                        help=f"only {', '.join(QUICK_SHAPES)}, --repeat 3 (for testing)")
    parser.add_argument("--shapes", help="comma-separated shape ids or patterns, e.g. 'decode-*' "
                        "(ids: " + ", ".join(s.id for s in SHAPES) + ")")
    parser.add_argument("--only-methods", help="comma-separated, from " + ", ".join(METHODS))
    args = parser.parse_args()
    try:
        args.threads = [int(n) for n in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads {args.threads}: expected numbers like 1,2")
    if any(n < 1 for n in args.threads):
        parser.error("--threads: every count must be >= 1")
    args.repeat = args.repeat or (3 if args.quick else 10)
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds: at least 1")
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.methods = args.only_methods.split(",") if args.only_methods else list(METHODS)
    unknown = set(args.methods) - set(METHODS)
    if unknown:
        parser.error(f"--only-methods: unknown {', '.join(sorted(unknown))}")
    shapes = [s for s in SHAPES if not args.quick or s.id in QUICK_SHAPES]
    if args.shapes:
        patterns = args.shapes.split(",")
        shapes = [s for s in shapes if any(fnmatch.fnmatch(s.id, p) for p in patterns)]
    if not shapes:
        parser.error("no shape left after --quick/--shapes")
    args.date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return args, shapes


def main():
    args, shapes = parse_args()
    machine = machine_description()
    found_versions = versions()
    limits = machine_limits(args.threads)
    methods = {name: make_method(name) for name in args.methods}
    records, checked = [], {}
    planned = (sum(applies(m, s) for s in shapes for m in args.methods) * len(args.threads)
               * args.rounds)
    done = 0
    for shape in shapes:
        get_inputs = functools.cache(
            lambda: [make_inputs(shape, seed) for seed in range(shape.input_sets)])
        for n in args.threads:
            names = [name for name in args.methods if applies(name, shape)]
            rounds = {name: [] for name in names}
            for round_index in range(args.rounds):
                # Each round starts with another method, so none is always timed first.
                shift = round_index % len(names)
                for name in names[shift:] + names[:shift]:
                    done += 1
                    if rounds[name] and rounds[name][-1]["status"] != "ok":
                        continue  # failed or unavailable: said once
                    log(f"[{done}/{planned}] {shape.id} threads={n} {name} "
                        f"(round {round_index + 1}/{args.rounds}) ...")
                    record = measure(name, methods[name], shape, n, args.repeat, get_inputs,
                                     checked)
                    outcome = (f"{fmt_ms(record['median_ms'])} ms" if record["status"] == "ok"
                               else f"{record['status']}: {record['reason']}")
                    log(f"    {outcome}")
                    rounds[name].append(record)
            merged = [merge_rounds(rounds[name]) for name in names]
            for record in merged:
                if record["status"] == "ok":
                    record["rate"], record["fraction_of_limit"] = rate_and_fraction(
                        shape, record["median_ms"], limits, n)
            records.extend(merged)
            ort_records = [r for r in merged if r["method"] in ORT_METHODS]
            if ort_records:
                records.append(best_ort(ort_records))
        del get_inputs  # frees the input sets
        gc.collect()
    add_ratios(records)

    report(records, machine, limits, args, shapes, found_versions)
    if args.jsonl:
        with open(args.jsonl, "w") as out:
            out.write(json.dumps({"kind": "machine", "date": args.date, **machine,
                                  "versions": found_versions, "repeat": args.repeat,
                                  "rounds": args.rounds,
                                  "threads": args.threads}) + "\n")
            for n, (fma, read, isa) in sorted(limits.items()):
                out.write(json.dumps({"kind": "limits", "threads": n, "fma_gflops": fma,
                                      "read_gbs": read, "isa": isa}) + "\n")
            for r in records:
                out.write(json.dumps(r) + "\n")
        log(f"wrote {args.jsonl}")
    if args.plot:
        plot(records, shapes, args.threads, args.plot)
    failed = [r for r in records if r["method"] in ATTNC_METHODS and r["status"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
