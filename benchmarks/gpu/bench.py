#!/usr/bin/python3
"""attnc's CUDA kernels against PyTorch SDPA, on a machine with an NVIDIA GPU.

    bench.py prepare --attnc PATH --out DIR [--target T ...] [--quick]
    bench.py run DIR [--json FILE] [--repeat N] [--no-flex]

`prepare` (any machine) writes one graph per shape and compiles it with
`attnc compile --target T` for each target (default cuda-sm90, then
cuda-sm90a, whose staged kernel multiplies by wgmma, into DIR/cuda-sm90a):
bf16 and f16, B·H = 32 (B = 2, H = 16),
S = T in {1024, 4096, 16384}, D in {64, 128}, causal and not, plus
Llama-3-8B GQA decode (Hq = 32, Hkv = 8, D = 128, S = 1, bf16) at
T in {4096, 32768}. `--quick` keeps S = T = 4096, D = 128 and decode.
It also compiles the GPT-2 block (examples/graphs/gpt2_block_attn.json:
q, k, v and output projections around causal attention, f32), whose host
entry libattnrt runs, for the first target.

`run` (needs a CUDA device, PyTorch and CuPy) times, in one process on one
device: the attnc kernel (loaded from its PTX, launched as its manifest says,
on PyTorch's tensors), and PyTorch's scaled_dot_product_attention with each
backend forced (flash, efficient, cuDNN) and FlexAttention (torch.compile'd);
the other targets' kernels beside the first's (attnc_cuda-sm90a_ms, its ratio
and its error against PyTorch), where the GPU runs them (sm90a: sm_90 only)
where it runs; with --attnrt, the GPT-2 block at B = 8, S = 1024 through
libattnrt against the same block in PyTorch (F.linear, SDPA, F.linear).
Each time is the median of --repeat launches, each timed by
CUDA events, after warm-up launches. TFLOP/s count 4·S·T·D per head, causal
counted dense (as FlashAttention's benchmarks do); decode reports the K/V
bytes read per second. Ratios are the fastest PyTorch time over attnc's, from
the same run. attnc's output is compared with PyTorch's (normwise, float32):
a sanity check only; the numerics verdict is tests/gpu/cuda_oracle.py's.
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))


def shapes(quick):
    for dtype in ("bf16", "f16"):
        for n in (1024, 4096, 16384):
            for d in (64, 128):
                for causal in (False, True):
                    if quick and (n != 4096 or d != 128 or dtype != "bf16"):
                        continue
                    yield {"name": "%s_s%d_d%d%s" % (dtype, n, d, "_causal" if causal else ""),
                           "dtype": dtype, "B": 2, "Hq": 16, "Hkv": 16, "S": n, "T": n,
                           "D": d, "causal": causal}
    for t in (4096, 32768):
        yield {"name": "llama3_decode_t%d" % t, "dtype": "bf16", "B": 1, "Hq": 32, "Hkv": 8,
               "S": 1, "T": t, "D": 128, "causal": False}


def graph_of(shape):
    dt = shape["dtype"]
    node = {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}
    if shape["causal"]:
        node["mask"] = [{"kind": "causal"}]
    return {"attnc": 1, "name": shape["name"],
            "inputs": {"q": {"shape": [shape["B"], shape["Hq"], shape["S"], shape["D"]], "dtype": dt},
                       "k": {"shape": [shape["B"], shape["Hkv"], shape["T"], shape["D"]], "dtype": dt},
                       "v": {"shape": [shape["B"], shape["Hkv"], shape["T"], shape["D"]], "dtype": dt}},
            "nodes": [node], "outputs": ["o"]}


def prepare(a):
    os.makedirs(a.out, exist_ok=True)
    targets = a.target or ["cuda-sm90", "cuda-sm90a"]
    plan = []
    for shape in shapes(a.quick):
        gpath = os.path.join(a.out, shape["name"] + ".graph.json")
        with open(gpath, "w") as f:
            json.dump(graph_of(shape), f, indent=1)
        # The first target's kernels in DIR (NAME.so, the descriptor
        # libattnrt launches from with run --attnrt), the others' PTX and
        # manifests in DIR/TARGET.
        for target in targets:
            out = a.out if target == targets[0] else os.path.join(a.out, target)
            subprocess.run([a.attnc, "compile", gpath, "--target", target, "-o", out],
                           check=True, capture_output=True, text=True)
            obj = os.path.join(out, shape["name"] + ".o")
            if target == targets[0]:
                subprocess.run(["cc", "-shared", "-o", obj[:-2] + ".so", obj], check=True)
            os.unlink(obj)
            os.unlink(obj[:-2] + ".h")
        plan.append(shape)
    # Whole blocks: their host entry runs through libattnrt only.
    blocks = []
    for name, dims in (("gpt2_block_attn", {"B": 8, "S": 1024}),):
        subprocess.run([a.attnc, "compile", os.path.join(ROOT, "examples", "graphs",
                                                         name + ".json"),
                        "--target", targets[0], "-o", a.out],
                       check=True, capture_output=True, text=True)
        obj = os.path.join(a.out, name + ".o")
        subprocess.run(["cc", "-shared", "-o", obj[:-2] + ".so", obj], check=True)
        os.unlink(obj)
        os.unlink(obj[:-2] + ".h")
        blocks.append({"name": name, "dims": dims})
    with open(os.path.join(a.out, "plan.json"), "w") as f:
        json.dump({"target": targets[0], "also": targets[1:], "shapes": plan,
                   "blocks": blocks}, f, indent=1)
    print("%d shapes compiled for %s into %s" % (len(plan), ", ".join(targets), a.out))
    return 0


def launching(launches):
    """A call that makes plan_launches' launches in turn."""
    def launch():
        for function, grid, block, args in launches:
            function(grid, block, args)
    return launch


def median_ms(torch, fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def run(a):
    import numpy as np
    import torch
    import cupy as cp
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    from cuda_oracle import Attnrt, load_module, plan_launches, unfit_device

    with open(os.path.join(a.dir, "plan.json")) as f:
        plan = json.load(f)
    dev = torch.cuda.get_device_name(0)
    print("device: %s, torch %s, target %s" % (dev, torch.__version__, plan["target"]), flush=True)
    flex = None
    if not a.no_flex:
        try:
            from torch.nn.attention.flex_attention import flex_attention, create_block_mask
            import torch._dynamo
            # one compile per shape and dtype: past dynamo's default limit of
            # 8 it falls back to eager flex_attention, 20-50x slower (seen at
            # the f16 shapes of a full run)
            torch._dynamo.config.recompile_limit = 256
            flex = torch.compile(flex_attention)
        except Exception as e:
            print("no FlexAttention: %s" % e)
    attnrt = Attnrt(a.attnrt) if a.attnrt else None
    rows = []
    torch.manual_seed(0)
    # the shapes the targets name first, so a cut-short run has them
    def first(shape):
        return not (shape["S"] == 1 or (shape["S"] == 4096 and shape["D"] == 128
                                        and shape["dtype"] == "bf16"))
    shapes = [s for s in plan["shapes"]
              if not a.shapes or any(fnmatch.fnmatch(s["name"], p) for p in a.shapes.split(","))]
    for shape in sorted(shapes, key=first):
        tdt = {"bf16": torch.bfloat16, "f16": torch.float16}[shape["dtype"]]
        B, Hq, Hkv, S, T, D = (shape[k] for k in ("B", "Hq", "Hkv", "S", "T", "D"))
        q = torch.randn(B, Hq, S, D, device="cuda", dtype=tdt)
        k = torch.randn(B, Hkv, T, D, device="cuda", dtype=tdt)
        v = torch.randn(B, Hkv, T, D, device="cuda", dtype=tdt)
        o = torch.empty(B, Hq, S, D, device="cuda", dtype=tdt)
        with open(os.path.join(a.dir, shape["name"] + ".json")) as f:
            manifest = json.load(f)
        module = load_module(cp, os.path.join(a.dir, manifest["ptx"]))
        tensors = {n: cp.asarray(t.view(torch.int16))
                   for n, t in {"q": q, "k": k, "v": v, "o": o}.items()}
        launches, splits = plan_launches(cp, module, manifest["kernels"][0], tensors)

        attnc = launching(launches)
        gqa = Hq != Hkv
        causal = shape["causal"]
        # "mma" or "simt", then "/splits" when keys are split
        row = {"shape": shape["name"], "kernel": splits}
        flops = 4.0 * S * T * D * B * Hq
        kv_bytes = 2.0 * B * Hkv * T * D * q.element_size()
        first = median_ms(torch, attnc, 1, warmup=1)
        repeat = max(3, min(a.repeat, int(3000 / max(first, 1e-3))))
        row["attnc_ms"] = median_ms(torch, attnc, repeat)
        if attnrt:
            # The same kernels launched by libattnrt from the NAME.o
            # descriptor on torch's stream: the difference is the launcher's.
            call = attnrt.bind(os.path.join(a.dir, shape["name"] + ".so"), shape["name"],
                               manifest, tensors)
            stream = torch.cuda.current_stream().cuda_stream
            row["attnrt_ms"] = median_ms(torch, lambda: call(stream), repeat)
        peers = {}
        for label, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                               ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                               ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    def peer():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                              enable_gqa=gqa)
                    ref = peer()
                    peers[label] = median_ms(torch, peer, a.repeat)
                    row.setdefault("ref", ref)
            except Exception as e:
                row[label + "_error"] = str(e).splitlines()[0][:160]
        if flex is not None:
            try:
                mask = None
                if causal:
                    mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, S, T)

                def peer():
                    return flex(q, k, v, block_mask=mask, enable_gqa=gqa)
                peer()
                peers["flex"] = median_ms(torch, peer, a.repeat)
            except Exception as e:
                row["flex_error"] = str(e).splitlines()[0][:160]
        if S == 1 and a.split_sweep:
            # the key_split rule's two numbers, swept: data for its defaults
            sweep = {}
            for warps in (512, 1024, 2048, 4096, 8192, 16384):
                for keys in (16, 32, 64, 128, 256):
                    rule = {"target_warps": warps, "min_keys_per_split": keys}
                    ls, n = plan_launches(cp, module, manifest["kernels"][0], tensors, rule)
                    sweep["%d,%d" % (warps, keys)] = [n, median_ms(torch, launching(ls),
                                                                   a.repeat)]
            best = min(sweep, key=lambda r: sweep[r][1])
            row["split_sweep_best"] = [best] + sweep[best]
            row["split_sweep"] = sweep
            attnc()   # o from the default rule again, for the check below
        ref = row.pop("ref", None)
        if ref is not None:
            diff = (o.float() - ref.float()).norm() / ref.float().norm()
            row["rel_err_vs_torch"] = float(diff)
        row.update({k + "_ms": t for k, t in peers.items()})
        best = min(peers, key=peers.get) if peers else None
        for target in plan.get("also", []):
            why = unfit_device(target)
            if why:
                row[target + "_error"] = why
                continue
            with open(os.path.join(a.dir, target, shape["name"] + ".json")) as f:
                other = json.load(f)
            o.fill_(float("nan"))
            ls, _ = plan_launches(cp, load_module(cp, os.path.join(a.dir, target,
                                                                   other["ptx"])),
                                  other["kernels"][0], tensors)
            row["attnc_%s_ms" % target] = median_ms(torch, launching(ls), repeat)
            if ref is not None:
                row[target + "_rel_err_vs_torch"] = float(
                    (o.float() - ref.float()).norm() / ref.float().norm())
            if best:
                row[target + "_ratio"] = peers[best] / row["attnc_%s_ms" % target]
        if peers:
            row["fastest_peer"] = best
            row["ratio"] = peers[best] / row["attnc_ms"]
        if S == 1:
            row["attnc_GBps"] = kv_bytes / row["attnc_ms"] / 1e6
            if peers:
                row["peer_GBps"] = kv_bytes / peers[best] / 1e6
        else:
            row["attnc_TFLOPs"] = flops / row["attnc_ms"] / 1e9
            if peers:
                row["peer_TFLOPs"] = flops / peers[best] / 1e9
        rows.append(row)
        print(json.dumps(row), flush=True)
        del q, k, v, o
        torch.cuda.empty_cache()
    if attnrt:
        rows += run_blocks(a, plan.get("blocks", []), attnrt, torch, cp, F)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


def run_blocks(a, blocks, attnrt, torch, cp, F):
    """The GPT-2 block through libattnrt (its host entry: projections,
    attention, output projection) and the same block in PyTorch, f32."""
    rows = []
    for block in blocks:
        if block["name"] != "gpt2_block_attn":
            continue
        B, S = block["dims"]["B"], block["dims"]["S"]
        with open(os.path.join(a.dir, block["name"] + ".json")) as f:
            manifest = json.load(f)
        t = {"x": torch.randn(B, S, 768, device="cuda")}
        for p in "qkvo":
            t["w" + p] = torch.randn(768, 768, device="cuda") / 768 ** 0.5
            t["b" + p] = torch.randn(768, device="cuda") / 10
        t["y"] = torch.empty(B, S, 768, device="cuda")
        call = attnrt.bind(os.path.join(a.dir, block["name"] + ".so"), block["name"],
                           manifest, {n: cp.asarray(v) for n, v in t.items()})
        stream = torch.cuda.current_stream().cuda_stream

        def torch_block():
            def heads(p):
                return F.linear(t["x"], t["w" + p], t["b" + p]).view(B, S, 12, 64) \
                    .transpose(1, 2)
            o = F.scaled_dot_product_attention(heads("q"), heads("k"), heads("v"),
                                               is_causal=True)
            return F.linear(o.transpose(1, 2).reshape(B, S, 768), t["wo"], t["bo"])
        row = {"shape": "%s_b%d_s%d" % (block["name"], B, S), "kernel": "host entry"}
        row["attnc_ms"] = median_ms(torch, lambda: call(stream), a.repeat)
        ref = torch_block()
        row["torch_ms"] = median_ms(torch, torch_block, a.repeat)
        row["rel_err_vs_torch"] = float((t["y"] - ref).norm() / ref.norm())
        row["fastest_peer"], row["ratio"] = "torch", row["torch_ms"] / row["attnc_ms"]
        # 4 projections of 2·768·768 flops a row, attention 4·S·T·D per head
        # (causal counted dense)
        flops = 4 * 2.0 * B * S * 768 * 768 + 4.0 * B * 12 * S * S * 64
        row["attnc_TFLOPs"] = flops / row["attnc_ms"] / 1e9
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--attnc", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--target", action="append",
                   help="repeatable; default cuda-sm90, then cuda-sm90a")
    p.add_argument("--quick", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--json")
    r.add_argument("--repeat", type=int, default=10)
    r.add_argument("--no-flex", action="store_true")
    r.add_argument("--shapes", metavar="PATTERNS",
                   help="only the shapes whose names match one of these comma-separated "
                        "patterns (fnmatch: 'bf16_s4096_*,llama3_*')")
    r.add_argument("--attnrt", metavar="LIBATTNRT",
                   help="also time the kernels launched by this libattnrt (attnrt_ms)")
    r.add_argument("--split-sweep", action="store_true",
                   help="decode shapes: also time other key_split rules")
    a = ap.parse_args()
    return prepare(a) if a.verb == "prepare" else run(a)


if __name__ == "__main__":
    sys.exit(main())
