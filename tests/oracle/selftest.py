#!/usr/bin/python3
"""Self-test of the oracle: it is checked against independently written
brute-force formulas, against itself under identities the spec implies, and
against a few hand-computed values, so that it is not trusted blindly.

Run through `check_reference.py --self-test` (or directly).
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases    # noqa: E402
import oracle   # noqa: E402

_results = {"pass": 0, "fail": 0}


def check(cond, what):
    if cond:
        _results["pass"] += 1
    else:
        _results["fail"] += 1
        print("SELF-TEST FAIL: %s" % what)


def close(a, b, tol=1e-12):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return False
    fa, fb = a[np.isfinite(a)], b[np.isfinite(b)]
    if not np.array_equal(a[~np.isfinite(a)], b[~np.isfinite(b)]):
        return False
    n = np.linalg.norm(fb)
    return np.linalg.norm(fa - fb) <= tol * max(n, 1.0)


# --------------------------------------------------------------------------
# 1. brute force, one element at a time, in plain Python floats
# --------------------------------------------------------------------------

def paper_alibi_slopes(n):
    """ALiBi slopes as published with the paper (ofirpress/attention_with_linear_biases)."""
    def pow2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    closest = 2 ** math.floor(math.log2(n))
    return pow2(closest) + paper_alibi_slopes(2 * closest)[0::2][:n - closest]


def bcast_get(arr, idx):
    """arr broadcast against a 4-index idx (numpy rules, right-aligned)."""
    arr = np.asarray(arr)
    idx = idx[len(idx) - arr.ndim:]
    return arr[tuple(0 if n == 1 else i for n, i in zip(arr.shape, idx))]


def brute_attention(node, env):
    """One attention node, straight from the spec text, loop by loop."""
    bshd = node.get("layout", "bhsd") == "bshd"
    q, k, v = env[node["q"]], env[node["k"]], env[node["v"]]

    def at(x, b, h, pos, d):
        return float(x[b, pos, h, d] if bshd else x[b, h, pos, d])

    if bshd:
        B, S, Hq, Dk = q.shape
        _, T, Hkv, _ = k.shape
        Dv = v.shape[3]
    else:
        B, Hq, S, Dk = q.shape
        _, Hkv, T, _ = k.shape
        Dv = v.shape[3]
    score = node.get("score", {"kind": "dot"})
    kind = score["kind"]
    scale = node.get("scale", "default")
    if scale == "default":
        scale = (1 / math.sqrt(Dk)) if kind in ("dot", "general") else 1.0
    out = np.zeros((B, S, Hq, Dv) if bshd else (B, Hq, S, Dv))
    lse = np.zeros((B, Hq, S))
    for b in range(B):
        for h in range(Hq):
            hk = (h * Hkv) // Hq          # same as h // (Hq / Hkv) for integral groups
            for i in range(S):
                ip = i + T - S
                scores, kept = [], []
                for j in range(T):
                    qv = [at(q, b, h, i, d) for d in range(Dk)]
                    kv = [at(k, b, hk, j, d) for d in range(Dk)]
                    if kind == "dot":
                        raw = sum(x * y for x, y in zip(qv, kv))
                    elif kind == "general":
                        W = env[score["w"]]
                        raw = sum(qv[a] * float(W[a, c]) * kv[c] for a in range(Dk) for c in range(Dk))
                    elif kind == "additive":
                        Wq, Wk, va = env[score["wq"]], env[score["wk"]], env[score["v"]]
                        raw = 0.0
                        for a in range(len(va)):
                            pre = sum(float(Wq[a, d]) * qv[d] for d in range(Dk)) + \
                                sum(float(Wk[a, d]) * kv[d] for d in range(Dk))
                            raw += float(va[a]) * math.tanh(pre)
                    elif kind == "cosine":
                        raw = sum(x * y for x, y in zip(qv, kv)) / (
                            math.sqrt(sum(x * x for x in qv)) * math.sqrt(sum(y * y for y in kv)))
                    sc = scale * raw
                    if "softcap" in node:
                        c = node["softcap"]
                        sc = c * math.tanh(sc / c)
                    for bias in node.get("bias", []):
                        if bias["kind"] == "tensor":
                            sc += float(bcast_get(env[bias["input"]], (b, h, i, j)))
                        else:
                            slope = float(env[bias["slopes"]][h]) if "slopes" in bias else paper_alibi_slopes(Hq)[h]
                            sc += -slope * abs(ip - j)
                    keep = True
                    for m in node.get("mask", []):
                        if m["kind"] == "causal":
                            keep = keep and j <= ip
                        elif m["kind"] == "window":
                            keep = keep and (ip - m["left"] <= j <= ip + m["right"])
                        elif m["kind"] == "key_length":
                            keep = keep and j < int(env[m["input"]][b])
                        elif m["kind"] == "tensor":
                            keep = keep and bool(bcast_get(env[m["input"]], (b, h, i, j)))
                    scores.append(sc)
                    kept.append(keep)
                ks = [s for s, kp in zip(scores, kept) if kp]
                if not ks:
                    lse[b, h, i] = -math.inf
                    continue            # output row stays exactly 0
                mx = max(ks)
                den = math.fsum(math.exp(s - mx) for s in ks)
                lse[b, h, i] = mx + math.log(den)
                for d in range(Dv):
                    acc = math.fsum(math.exp(s - mx) / den * at(v, b, hk, j, d)
                                    for j, (s, kp) in enumerate(zip(scores, kept)) if kp)
                    if bshd:
                        out[b, i, h, d] = acc
                    else:
                        out[b, h, i, d] = acc
    return out, lse


def test_brute_force():
    fams = ["dot", "general", "additive", "cosine", "masks", "bias", "gqa", "layout", "lowp", "dynamic"]
    n_checked = 0
    for fam in fams:
        found = 0
        idx = 0
        while found < 10 and idx < 400:
            c = cases.make_case(fam, idx, seed=1234)
            idx += 1
            nodes = c.graph["nodes"]
            if len(nodes) != 1 or nodes[0]["op"] != "attention":
                continue
            inp = c.oracle_inputs()
            q = inp[nodes[0]["q"]]
            k = inp[nodes[0]["k"]]
            work = q.size * k.shape[-2] * (k.shape[-1] + 1)
            sc = nodes[0].get("score", {})
            if sc.get("kind") in ("general", "additive"):
                work *= max(k.shape[-1], len(inp.get(sc.get("v"), [0])))
            if work > 60000:
                continue
            found += 1
            n_checked += 1
            ref = oracle.evaluate_typed(c.graph, inp, c.dims)
            out, lse = brute_attention(nodes[0], inp)
            name = nodes[0]["name"]
            if name in ref:
                check(close(ref[name][0], out, 1e-10), "brute force output %s #%d %s" % (fam, c.index, c.desc))
            if name + ".lse" in ref:
                check(close(ref[name + ".lse"][0], lse, 1e-10), "brute force lse %s #%d %s" % (fam, c.index, c.desc))
    print("  brute-force attention: %d generated cases compared" % n_checked)


# --------------------------------------------------------------------------
# 2. identities between the fused op and other formulations
# --------------------------------------------------------------------------

def att_graph(inputs_decl, node, outputs=("o",), dims=None):
    g = {"attnc": 1, "name": "t", "inputs": inputs_decl,
         "nodes": [dict({"name": "o", "op": "attention"}, **node)], "outputs": list(outputs)}
    if dims:
        g["dims"] = dims
    return g


def decl(**shapes):
    return {n: {"shape": list(s), "dtype": "f32"} for n, s in shapes.items()}


def test_gqa_equals_repeat(rng):
    for B, Hkv, g, S, T, D in [(2, 2, 3, 5, 7, 4), (1, 1, 6, 3, 3, 8), (3, 3, 1, 4, 2, 3), (1, 2, 2, 7, 5, 1)]:
        Hq = Hkv * g
        q = rng.standard_normal((B, Hq, S, D))
        k = rng.standard_normal((B, Hkv, T, D))
        v = rng.standard_normal((B, Hkv, T, D + 1))
        m = rng.random((B, 1, S, T)) < 0.7
        node = {"q": "q", "k": "k", "v": "v", "mask": [{"kind": "tensor", "input": "m"}],
                "bias": [{"kind": "alibi"}], "return_lse": True}
        d = decl(q=q.shape, k=k.shape, v=v.shape)
        d["m"] = {"shape": list(m.shape), "dtype": "bool"}
        a = oracle.evaluate(att_graph(d, node, ("o", "o.lse")), {"q": q, "k": k, "v": v, "m": m})
        kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
        d2 = decl(q=q.shape, k=kr.shape, v=vr.shape)
        d2["m"] = d["m"]
        b = oracle.evaluate(att_graph(d2, node, ("o", "o.lse")), {"q": q, "k": kr, "v": vr, "m": m})
        check(close(a["o"], b["o"]) and close(a["o.lse"], b["o.lse"]), "GQA == repeated heads %s" % ((B, Hkv, g),))
        # and each query head h really reads kv head h // g
        for h in range(Hq):
            d3 = decl(q=(B, 1, S, D), k=(B, 1, T, D), v=(B, 1, T, D + 1))
            d3["m"] = d["m"]
            node1 = dict(node, bias=[{"kind": "alibi", "slopes": "sl"}])
            d3["sl"] = {"shape": [1], "dtype": "f32"}
            one = oracle.evaluate(att_graph(d3, node1), {
                "q": q[:, h:h + 1], "k": k[:, h // g:h // g + 1], "v": v[:, h // g:h // g + 1], "m": m,
                "sl": oracle.alibi_standard_slopes(Hq)[h:h + 1]})
            check(close(a["o"][:, h:h + 1], one["o"]), "GQA head %d of %d reads kv head %d" % (h, Hq, h // g))


def test_bshd_equals_bhsd(rng):
    for kind in ("dot", "general", "additive", "cosine"):
        B, Hq, Hkv, S, T, D, Dv = 2, 4, 2, 5, 6, 3, 2
        q = rng.standard_normal((B, Hq, S, D))
        k = rng.standard_normal((B, Hkv, T, D))
        v = rng.standard_normal((B, Hkv, T, Dv))
        extra = {"W": rng.standard_normal((D, D)), "Wq": rng.standard_normal((4, D)),
                 "Wk": rng.standard_normal((4, D)), "va": rng.standard_normal(4),
                 "bias": rng.standard_normal((1, Hq, S, T)), "lens": np.array([3, 6])}
        score = {"dot": {"kind": "dot"}, "general": {"kind": "general", "w": "W"},
                 "additive": {"kind": "additive", "wq": "Wq", "wk": "Wk", "v": "va"},
                 "cosine": {"kind": "cosine"}}[kind]
        node = {"q": "q", "k": "k", "v": "v", "score": score, "softcap": 3.0,
                "bias": [{"kind": "tensor", "input": "bias"}, {"kind": "alibi"}],
                "mask": [{"kind": "causal"}, {"kind": "key_length", "input": "lens"}], "return_lse": True}
        ex_decl = {n: {"shape": list(x.shape), "dtype": "i32" if n == "lens" else "f32"} for n, x in extra.items()}
        d1 = dict(decl(q=q.shape, k=k.shape, v=v.shape), **ex_decl)
        a = oracle.evaluate(att_graph(d1, node, ("o", "o.lse")), dict(q=q, k=k, v=v, **extra))
        t = lambda x: x.transpose(0, 2, 1, 3)  # noqa: E731
        d2 = dict(decl(q=t(q).shape, k=t(k).shape, v=t(v).shape), **ex_decl)
        b = oracle.evaluate(att_graph(d2, dict(node, layout="bshd"), ("o", "o.lse")),
                            dict(q=t(q), k=t(k), v=t(v), **extra))
        check(close(t(a["o"]), b["o"]) and close(a["o.lse"], b["o.lse"]), "bshd == transposed bhsd (%s)" % kind)


def run_graph(g, inputs):
    return oracle.evaluate(g, inputs)


def chain_graph(inputs, nodes, outputs):
    return {"attnc": 1, "name": "c", "inputs": {n: {"shape": list(x.shape),
            "dtype": "bool" if x.dtype == bool else ("i32" if x.dtype.kind == "i" else "f32")}
            for n, x in inputs.items()}, "nodes": nodes, "outputs": outputs}


def N(name, op, **kw):
    return dict({"name": name, "op": op}, **kw)


def test_chains_equal_fused(rng):
    for (B, H, S, T, D) in [(2, 3, 5, 7, 4), (1, 1, 1, 1, 1), (1, 2, 13, 13, 8), (2, 1, 3, 33, 17)]:
        q = rng.standard_normal((B, H, S, D))
        k = rng.standard_normal((B, H, T, D))
        v = rng.standard_normal((B, H, T, D + 2))
        base = {"q": q, "k": k, "v": v}
        fused_decl = decl(q=q.shape, k=k.shape, v=v.shape)
        # sdpa chain with causal_mask  ==  dot, scale, causal  (S <= T: no empty rows)
        sc = 0.37
        chain = chain_graph(base, [
            N("s", "matmul", a="q", b="k", transpose_b=True), N("ss", "scale", x="s", value=sc),
            N("sm", "causal_mask", x="ss"), N("p", "softmax", x="sm"), N("o", "matmul", a="p", b="v")], ["o"])
        fused = att_graph(fused_decl, {"q": "q", "k": "k", "v": "v", "scale": sc, "mask": [{"kind": "causal"}]})
        check(close(run_graph(chain, base)["o"], run_graph(fused, base)["o"]), "sdpa chain == fused %s" % ((B, H, S, T, D),))
        # default scale is 1/sqrt(Dk)
        chain2 = chain_graph(base, [
            N("s", "matmul", a="q", b="k", transpose_b=True), N("ss", "scale", x="s", value=1 / math.sqrt(D)),
            N("p", "softmax", x="ss"), N("o", "matmul", a="p", b="v")], ["o"])
        fused2 = att_graph(fused_decl, {"q": "q", "k": "k", "v": "v"})
        check(close(run_graph(chain2, base)["o"], run_graph(fused2, base)["o"]), "default scale 1/sqrt(Dk)")
        # masked_fill(-inf) where NOT attend == tensor mask (true = attend)
        attend = rng.random((B, 1, S, T)) < 0.6
        attend[..., 0] = True
        inp = dict(base, fill=~attend, attend=attend)
        chain3 = chain_graph(inp, [
            N("s", "matmul", a="q", b="k", transpose_b=True), N("ss", "scale", x="s", value=sc),
            N("mf", "masked_fill", x="ss", mask="fill", value="-inf"), N("p", "softmax", x="mf"),
            N("o", "matmul", a="p", b="v")], ["o"])
        fused3 = att_graph(dict(fused_decl, attend={"shape": list(attend.shape), "dtype": "bool"}),
                           {"q": "q", "k": "k", "v": "v", "scale": sc, "mask": [{"kind": "tensor", "input": "attend"}]})
        check(close(run_graph(chain3, inp)["o"], run_graph(fused3, inp)["o"]), "masked_fill chain == tensor mask")
        # add bias + softcap chain == fused bias after softcap
        bias = rng.standard_normal((H, 1, T))
        inp = dict(base, bias=bias)
        c = 2.5
        chain4 = chain_graph(inp, [
            N("s", "matmul", a="q", b="k", transpose_b=True), N("ss", "scale", x="s", value=sc),
            N("a", "scale", x="ss", value=1 / c), N("t", "tanh", x="a"), N("u", "scale", x="t", value=c),
            N("sb", "add", a="u", b="bias"), N("p", "softmax", x="sb"), N("o", "matmul", a="p", b="v")], ["o"])
        fused4 = att_graph(dict(fused_decl, bias={"shape": list(bias.shape), "dtype": "f32"}),
                           {"q": "q", "k": "k", "v": "v", "scale": sc, "softcap": c,
                            "bias": [{"kind": "tensor", "input": "bias"}]})
        check(close(run_graph(chain4, inp)["o"], run_graph(fused4, inp)["o"]), "softcap+bias chain == fused")
        # general: (q W) k^T == qᵀWk
        W = rng.standard_normal((D, D))
        inp = dict(base, W=W)
        chain5 = chain_graph(inp, [
            N("qw", "matmul", a="q", b="W"), N("s", "matmul", a="qw", b="k", transpose_b=True),
            N("p", "softmax", x="s"), N("o", "matmul", a="p", b="v")], ["o"])
        fused5 = att_graph(dict(fused_decl, W={"shape": [D, D], "dtype": "f32"}),
                           {"q": "q", "k": "k", "v": "v", "scale": 1.0, "score": {"kind": "general", "w": "W"}})
        check(close(run_graph(chain5, inp)["o"], run_graph(fused5, inp)["o"]), "general chain == fused")
        # additive: linear, unsqueeze, add, tanh, matmul by vector == fused additive
        A = 5
        Wq, Wk, va = rng.standard_normal((A, D)), rng.standard_normal((A, D)), rng.standard_normal(A)
        inp = dict(base, Wq=Wq, Wk=Wk, va=va)
        chain6 = chain_graph(inp, [
            N("qa", "linear", x="q", w="Wq"), N("ka", "linear", x="k", w="Wk"),
            N("qe", "unsqueeze", x="qa", axis=-2), N("ke", "unsqueeze", x="ka", axis=-3),
            N("h", "add", a="qe", b="ke"), N("t", "tanh", x="h"), N("s", "matmul", a="t", b="va"),
            N("p", "softmax", x="s"), N("o", "matmul", a="p", b="v")], ["o"])
        fused6 = att_graph(dict(fused_decl, Wq={"shape": [A, D], "dtype": "f32"}, Wk={"shape": [A, D], "dtype": "f32"},
                                va={"shape": [A], "dtype": "f32"}),
                           {"q": "q", "k": "k", "v": "v", "score": {"kind": "additive", "wq": "Wq", "wk": "Wk", "v": "va"}})
        check(close(run_graph(chain6, inp)["o"], run_graph(fused6, inp)["o"]), "additive chain == fused")
        # manual softmax (exp / reduce_sum keepdims / div) == softmax; lse == log reduce_sum exp
        chain7 = chain_graph(base, [
            N("s", "matmul", a="q", b="k", transpose_b=True), N("ss", "scale", x="s", value=sc),
            N("e", "exp", x="ss"), N("den", "reduce_sum", x="e", axis=-1, keepdims=True),
            N("p", "div", a="e", b="den"), N("o", "matmul", a="p", b="v"),
            N("d2", "reduce_sum", x="e", axis=-1)], ["o", "d2"])
        fused7 = att_graph(fused_decl, {"q": "q", "k": "k", "v": "v", "scale": sc, "return_lse": True}, ("o", "o.lse"))
        r7, f7 = run_graph(chain7, base), run_graph(fused7, base)
        check(close(r7["o"], f7["o"]), "manual softmax chain == fused")
        check(close(np.log(r7["d2"]), f7["o.lse"]), "lse == log sum exp of the scores")
        # kv-cache concat along T == fused on the concatenation
        kp, vp = rng.standard_normal((B, H, 3, D)), rng.standard_normal((B, H, 3, D + 2))
        inp = dict(base, kp=kp, vp=vp)
        chain8 = chain_graph(inp, [
            N("kk", "concat", inputs=["kp", "k"], axis=-2), N("vv", "concat", inputs=["vp", "v"], axis=2),
            N("s", "matmul", a="q", b="kk", transpose_b=True), N("sm", "causal_mask", x="s"),
            N("p", "softmax", x="sm"), N("o", "matmul", a="p", b="vv")], ["o"])
        cat = {"q": q, "k": np.concatenate([kp, k], 2), "v": np.concatenate([vp, v], 2)}
        fused8 = att_graph(decl(q=q.shape, k=cat["k"].shape, v=cat["v"].shape),
                           {"q": "q", "k": "k", "v": "v", "scale": 1, "mask": [{"kind": "causal"}]})
        check(close(run_graph(chain8, inp)["o"], run_graph(fused8, cat)["o"]), "kv-cache concat chain == fused")


def test_masks_and_positions(rng):
    # causal with S > T: the first S-T rows are fully masked: output exactly 0, lse -inf
    B, H, S, T, D = 1, 2, 6, 3, 4
    q, k, v = rng.standard_normal((B, H, S, D)), rng.standard_normal((B, H, T, D)), rng.standard_normal((B, H, T, D))
    g = att_graph(decl(q=q.shape, k=k.shape, v=v.shape),
                  {"q": "q", "k": "k", "v": "v", "mask": [{"kind": "causal"}], "return_lse": True}, ("o", "o.lse"))
    r = oracle.evaluate(g, {"q": q, "k": k, "v": v})
    check(np.all(r["o"][:, :, :S - T] == 0.0) and np.all(np.isneginf(r["o.lse"][:, :, :S - T])),
          "causal S>T: empty rows are 0 / -inf")
    check(np.all(np.isfinite(r["o.lse"][:, :, S - T:])), "causal S>T: other rows finite")
    # the last query row sees all keys, the first non-empty row only key 0 -> output v[0]
    check(close(r["o"][:, :, S - T], v[:, :, 0]), "causal bottom-right: row S-T attends key 0 only")
    # window(0,0) keeps exactly the diagonal j == i'
    g = att_graph(decl(q=(1, 1, 4, 2), k=(1, 1, 6, 2), v=(1, 1, 6, 3)),
                  {"q": "q", "k": "k", "v": "v", "mask": [{"kind": "window", "left": 0, "right": 0}]})
    q1, k1, v1 = rng.standard_normal((1, 1, 4, 2)), rng.standard_normal((1, 1, 6, 2)), rng.standard_normal((1, 1, 6, 3))
    r = oracle.evaluate(g, {"q": q1, "k": k1, "v": v1})
    check(close(r["o"][0, 0], v1[0, 0, 2:6]), "window(0,0) with S=4,T=6 selects keys 2..5")
    # key_length 0 -> all rows of that batch are 0
    g = att_graph(dict(decl(q=(2, 1, 3, 2), k=(2, 1, 4, 2), v=(2, 1, 4, 2)), L={"shape": [2], "dtype": "i32"}),
                  {"q": "q", "k": "k", "v": "v", "mask": [{"kind": "key_length", "input": "L"}], "return_lse": True},
                  ("o", "o.lse"))
    q2, k2, v2 = rng.standard_normal((2, 1, 3, 2)), rng.standard_normal((2, 1, 4, 2)), rng.standard_normal((2, 1, 4, 2))
    r = oracle.evaluate(g, {"q": q2, "k": k2, "v": v2, "L": np.array([0, 1])})
    check(np.all(r["o"][0] == 0) and np.all(np.isneginf(r["o.lse"][0])), "key_length 0: zero rows, lse -inf")
    check(close(r["o"][1, 0], np.repeat(v2[1, 0, :1], 3, axis=0)), "key_length 1: every row is v[0]")
    # S = T = 1: output is v; equal scores average the values
    g = att_graph(decl(q=(1, 1, 1, 3), k=(1, 1, 1, 3), v=(1, 1, 1, 2)), {"q": "q", "k": "k", "v": "v"})
    r = oracle.evaluate(g, {"q": np.ones((1, 1, 1, 3)), "k": np.full((1, 1, 1, 3), 5.0), "v": np.array([[[[2.0, -7.0]]]])})
    check(close(r["o"], [[[[2.0, -7.0]]]]), "single key: output == v")
    g = att_graph(decl(q=(1, 1, 1, 2), k=(1, 1, 2, 2), v=(1, 1, 2, 1)),
                  {"q": "q", "k": "k", "v": "v", "return_lse": True}, ("o", "o.lse"))
    r = oracle.evaluate(g, {"q": np.array([[[[1.0, 0.0]]]]), "k": np.array([[[[3.0, 1.0], [3.0, -1.0]]]]),
                            "v": np.array([[[[1.0], [4.0]]]])})
    check(close(r["o"], [[[[2.5]]]]), "two equal scores: mean of values")
    check(close(r["o.lse"], [[[3 / math.sqrt(2) + math.log(2)]]]), "lse hand value")
    # cosine ignores the norms; additive with hand values
    g = att_graph(decl(q=(1, 1, 1, 2), k=(1, 1, 2, 2), v=(1, 1, 2, 1)),
                  {"q": "q", "k": "k", "v": "v", "score": {"kind": "cosine"}, "return_lse": True}, ("o", "o.lse"))
    r = oracle.evaluate(g, {"q": np.array([[[[10.0, 0.0]]]]), "k": np.array([[[[0.5, 0.0], [0.0, 9.0]]]]),
                            "v": np.array([[[[1.0], [0.0]]]])})
    check(close(r["o.lse"], [[[math.log(math.e + 1)]]]), "cosine scores 1 and 0, default scale 1")
    check(close(r["o"], [[[[math.e / (math.e + 1)]]]]), "cosine output")
    # ALiBi hand value: 1 head -> slope 2^-8; S=T=2 causal-free: row 0 sees dist 0,1
    g = att_graph(decl(q=(1, 1, 2, 1), k=(1, 1, 2, 1), v=(1, 1, 2, 1)),
                  {"q": "q", "k": "k", "v": "v", "bias": [{"kind": "alibi"}], "return_lse": True}, ("o", "o.lse"))
    r = oracle.evaluate(g, {"q": np.zeros((1, 1, 2, 1)), "k": np.zeros((1, 1, 2, 1)), "v": np.array([[[[0.0], [1.0]]]])})
    s = 2.0 ** -8
    check(close(r["o.lse"][0, 0], [math.log(1 + math.exp(-s))] * 2), "alibi single head slope 2^-8")
    check(close(r["o"][0, 0, :, 0], [math.exp(-s) / (1 + math.exp(-s)), 1 / (1 + math.exp(-s))]), "alibi |i'-j|")


def test_alibi_slopes():
    for n in range(1, 33):
        check(close(oracle.alibi_standard_slopes(n), paper_alibi_slopes(n), 1e-14), "alibi slopes n=%d vs paper" % n)
    check(close(oracle.alibi_standard_slopes(8), [2.0 ** -i for i in range(1, 9)]), "alibi 8 heads = 1/2..1/256")
    check(close(oracle.alibi_standard_slopes(6), [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]),
          "alibi 6 heads hand values")
    check(close(oracle.alibi_standard_slopes(12),
                [2 ** (-8 * (h + 1) / 8) for h in range(8)] + [2 ** (-8 * (h + 1) / 16) for h in (0, 2, 4, 6)]),
          "alibi 12 heads hand values")


def test_primitives(rng):
    # causal_mask vs loops
    for S, T in [(3, 5), (5, 3), (1, 1), (4, 4)]:
        x = rng.standard_normal((2, S, T))
        r = run_graph(chain_graph({"x": x}, [N("y", "causal_mask", x="x")], ["y"]), {"x": x})["y"]
        want = x.copy()
        for i in range(S):
            for j in range(T):
                if j > i + T - S:
                    want[:, i, j] = -math.inf
        check(close(r, want), "causal_mask loops S%d T%d" % (S, T))
    # repeat is repeat_interleave
    x = rng.standard_normal((2, 3, 4))
    r = run_graph(chain_graph({"x": x}, [N("y", "repeat", x="x", axis=1, times=3)], ["y"]), {"x": x})["y"]
    check(r.shape == (2, 9, 4) and all(np.array_equal(r[:, i], x[:, i // 3]) for i in range(9)), "repeat interleaves")
    # matmul 1-D semantics
    a, b = rng.standard_normal((2, 3, 5)), rng.standard_normal(5)
    r = run_graph(chain_graph({"a": a, "b": b}, [N("y", "matmul", a="a", b="b")], ["y"]), {"a": a, "b": b})["y"]
    check(r.shape == (2, 3) and close(r, [[sum(a[i, j, t] * b[t] for t in range(5)) for j in range(3)] for i in range(2)]),
          "matmul by vector")
    a, b = rng.standard_normal(5), rng.standard_normal((2, 5, 4))
    r = run_graph(chain_graph({"a": a, "b": b}, [N("y", "matmul", a="a", b="b")], ["y"]), {"a": a, "b": b})["y"]
    check(r.shape == (2, 4) and close(r, [[sum(a[t] * b[i, t, j] for t in range(5)) for j in range(4)] for i in range(2)]),
          "vector by matmul")
    a, b = rng.standard_normal((3, 7, 4)), rng.standard_normal((1, 5, 4))
    r = run_graph(chain_graph({"a": a, "b": b}, [N("y", "matmul", a="a", b="b", transpose_b=True)], ["y"]),
                  {"a": a, "b": b})["y"]
    check(r.shape == (3, 7, 5) and close(r[2, 6, 4], sum(a[2, 6, t] * b[0, 4, t] for t in range(4))), "transpose_b")
    # linear = x wᵀ + b
    x, w, bb = rng.standard_normal((2, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    r = run_graph(chain_graph({"x": x, "w": w, "b": bb}, [N("y", "linear", x="x", w="w", b="b")], ["y"]),
                  {"x": x, "w": w, "b": bb})["y"]
    check(close(r, [[sum(x[i, t] * w[n, t] for t in range(4)) + bb[n] for n in range(3)] for i in range(2)]), "linear")
    # softmax: sums to one along the axis; an all -inf row gives zeros (decision (h))
    x = rng.standard_normal((2, 3, 4))
    r = run_graph(chain_graph({"x": x}, [N("y", "softmax", x="x", axis=1)], ["y"]), {"x": x})["y"]
    check(close(r.sum(axis=1), np.ones((2, 4))) and close(r[1, 2, 3], math.exp(x[1, 2, 3]) / sum(math.exp(x[1, t, 3]) for t in range(3))),
          "softmax axis 1")
    x = np.array([[-math.inf, -math.inf], [0.0, -math.inf]])
    r = run_graph(chain_graph({"x": x}, [N("y", "softmax", x="x")], ["y"]), {"x": x})["y"]
    check(np.all(r[0] == 0.0) and close(r[1], [1.0, 0.0]), "softmax -inf rows")
    # masked_fill true = fill
    x, m = rng.standard_normal((2, 3)), np.array([True, False, True])
    r = run_graph(chain_graph({"x": x, "m": m}, [N("y", "masked_fill", x="x", mask="m", value=-2.0)], ["y"]),
                  {"x": x, "m": m})["y"]
    check(close(r[:, 0], [-2, -2]) and close(r[:, 1], x[:, 1]) and close(r[:, 2], [-2, -2]), "masked_fill")
    # unsqueeze: negative axis counts in the result's rank (torch / numpy)
    x = rng.standard_normal((3, 4))
    for axis, shape in [(0, (1, 3, 4)), (2, (3, 4, 1)), (-1, (3, 4, 1)), (-3, (1, 3, 4)), (-2, (3, 1, 4))]:
        r = run_graph(chain_graph({"x": x}, [N("y", "unsqueeze", x="x", axis=axis)], ["y"]), {"x": x})["y"]
        check(r.shape == shape, "unsqueeze axis %d" % axis)
    # transpose: out.shape[i] = x.shape[perm[i]]; reshape -1; reduce_sum; concat
    x = rng.standard_normal((2, 3, 4))
    r = run_graph(chain_graph({"x": x}, [N("y", "transpose", x="x", perm=[2, 0, 1])], ["y"]), {"x": x})["y"]
    check(r.shape == (4, 2, 3) and r[3, 1, 2] == x[1, 2, 3], "transpose perm")
    r = run_graph(chain_graph({"x": x}, [N("y", "reshape", x="x", shape=[-1, 4])], ["y"]), {"x": x})["y"]
    check(r.shape == (6, 4) and r[5, 1] == x[1, 2, 1], "reshape C order with -1")
    r = run_graph(chain_graph({"x": x}, [N("y", "reduce_sum", x="x", axis=-2, keepdims=True)], ["y"]), {"x": x})["y"]
    check(r.shape == (2, 1, 4) and close(r[1, 0, 2], x[1, 0, 2] + x[1, 1, 2] + x[1, 2, 2]), "reduce_sum keepdims")
    y = rng.standard_normal((2, 1, 4))
    r = run_graph(chain_graph({"x": x, "z": y}, [N("y", "concat", inputs=["x", "z"], axis=1)], ["y"]), {"x": x, "z": y})["y"]
    check(r.shape == (2, 4, 4) and np.array_equal(r[:, 3], y[:, 0]), "concat")
    # cos and sin (attnc extensions) in radians; slice (attnc extension) is
    # x[..., start:end, ...] along a normalised axis
    x = np.array([0.0, math.pi / 3, -math.pi / 2, 2.0])
    r = run_graph(chain_graph({"x": x}, [N("c", "cos", x="x"), N("s", "sin", x="x")], ["c", "s"]), {"x": x})
    check(close(r["c"], [1.0, 0.5, 0.0, math.cos(2.0)]) and close(r["s"], [0.0, math.sqrt(3) / 2, -1.0, math.sin(2.0)]),
          "cos and sin hand values")
    x = rng.standard_normal((2, 3, 5))
    for axis, start, end in [(0, 1, 2), (1, 0, 3), (-1, 2, 5), (-2, 1, 2)]:
        r = run_graph(chain_graph({"x": x}, [N("y", "slice", x="x", axis=axis, start=start, end=end)], ["y"]),
                      {"x": x})["y"]
        want = np.stack([x.take(i, axis=axis) for i in range(start, end)], axis=axis % 3)
        check(r.shape == want.shape and np.array_equal(r, want), "slice axis %d [%d, %d)" % (axis, start, end))
    # rotary embeddings (Llama's rotate_half, by slice, neg and concat): each
    # pair (x_i, x_{i+D/2}) rotated by position * inv_freq_i, so norms are kept
    # and q_rot(m) . k_rot(n) depends on m - n only
    D = 6
    q, k = rng.standard_normal(D), rng.standard_normal(D)
    inv_freq = rng.random(D // 2)

    def rotary(x, position):
        nodes = [N("f", "mul", a="pos", b="inv_freq"), N("emb", "concat", inputs=["f", "f"], axis=0),
                 N("c", "cos", x="emb"), N("s", "sin", x="emb"),
                 N("x1", "slice", x="x", axis=-1, start=0, end=D // 2),
                 N("x2", "slice", x="x", axis=-1, start=D // 2, end=D), N("n2", "neg", x="x2"),
                 N("h", "concat", inputs=["n2", "x1"], axis=-1), N("xc", "mul", a="x", b="c"),
                 N("hs", "mul", a="h", b="s"), N("y", "add", a="xc", b="hs")]
        ins = {"x": x, "pos": np.array([float(position)]), "inv_freq": inv_freq}
        return run_graph(chain_graph(ins, nodes, ["y"]), ins)["y"]
    y = rotary(q, 5)
    angle = 5 * inv_freq
    want = np.concatenate([q[:3] * np.cos(angle) - q[3:] * np.sin(angle), q[3:] * np.cos(angle) + q[:3] * np.sin(angle)])
    check(close(y, want), "rotary: each pair rotated by position * inv_freq")
    check(close(np.linalg.norm(y), np.linalg.norm(q)) and close(rotary(q, 0), q), "rotary keeps norms, position 0 is the identity")
    check(close(rotary(q, 7) @ rotary(k, 3), rotary(q, 4) @ rotary(k, 0)), "rotary scores depend on m - n only")
    # named dims in reshape
    g = {"attnc": 1, "name": "t", "dims": {"S": None}, "inputs": {"x": {"shape": [2, "S", 6], "dtype": "f32"}},
         "nodes": [N("y", "reshape", x="x", shape=[2, "S", 2, 3])], "outputs": ["y"]}
    x = rng.standard_normal((2, 5, 6))
    check(oracle.evaluate(g, {"x": x})["y"].shape == (2, 5, 2, 3), "reshape with a run-time dim from the inputs")


def test_dtypes():
    bits = np.array([0x3F80, 0xC000, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x3E80, 0x4049], dtype=np.uint16)
    vals = oracle.bf16_bits_to_float(bits)
    check(close(vals[:7], [1.0, -2.0, 0.0, -0.0, math.inf, -math.inf, 0.25]) and vals[7] == 3.140625,
          "bf16 bit patterns")
    # round to nearest even: 1 + 2^-8 is a tie between 1 and 1+2^-7 -> 1; 1 + 3*2^-8 -> 1 + 2^-6
    check(list(oracle.float_to_bf16_bits([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -8 + 2 ** -20])) ==
          [0x3F80, 0x3F82, 0x3F81], "bf16 round to nearest even")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000)
    # (half the subnormal spacing is the absolute bound near 0: f16 subnormals start at 2^-14)
    for dt, rel, sub in (("f16", 2 ** -11, 2 ** -25), ("bf16", 2 ** -8, 0.0), ("f32", 2 ** -24, 0.0)):
        enc = oracle.encode_for_file(x, dt)
        dec = oracle.decode_from_file(enc, dt)
        check(enc.dtype == np.dtype(oracle.NPY_DTYPE[dt]), "file dtype %s" % dt)
        check(np.all(np.abs(dec - x) <= np.maximum(rel * np.abs(x) * 1.0001, sub)), "rounding to %s is nearest" % dt)
        check(np.array_equal(oracle.round_to_dtype(x, dt), dec), "round_to_dtype %s" % dt)
    # the oracle takes bf16 inputs either as bit patterns or as values
    g = {"attnc": 1, "name": "t", "inputs": {"x": {"shape": [3], "dtype": "bf16"}},
         "nodes": [N("y", "scale", x="x", value=2.0)], "outputs": ["y"]}
    a = oracle.evaluate_typed(g, {"x": bits[:3]})["y"]
    check(close(a[0], [2.0, -4.0, 0.0]) and a[1] == "bf16", "bf16 input as bits, output dtype bf16")


def test_generator():
    feats = {}
    for fam in cases.FAMILIES:
        cs = cases.generate(fam, None, seed=0)
        again = cases.generate(fam, None, seed=0)
        same = all(a.graph == b.graph and a.arrays.keys() == b.arrays.keys() and
                   all(np.array_equal(a.arrays[n], b.arrays[n]) for n in a.arrays) for a, b in zip(cs, again))
        check(same, "generator deterministic for %s" % fam)
        for c in cs:
            cases.validate_graph(c.graph)
            try:
                out = oracle.evaluate_typed(c.graph, c.oracle_inputs(), c.dims)
            except Exception as e:
                check(False, "oracle runs on %s #%d: %s" % (fam, c.index, e))
                continue
            for n, (val, dt) in out.items():
                if dt in oracle.FLOAT_DTYPES or dt == "f32":
                    check(not np.isnan(val).any(), "no NaN in %s #%d %s" % (fam, c.index, n))
                    if not n.endswith(".lse"):
                        check(np.all(np.isfinite(val)) or fam == "primitives", "finite %s #%d %s" % (fam, c.index, n))
            # inputs match their declared dtypes
            for n, arr in c.arrays.items():
                check(arr.dtype == np.dtype(oracle.NPY_DTYPE[c.graph["inputs"][n]["dtype"]]), "input file dtype %s" % n)
            # coverage bookkeeping
            for node in c.graph["nodes"]:
                feats["op:" + node["op"]] = feats.get("op:" + node["op"], 0) + 1
                if node["op"] == "attention":
                    feats["score:" + node.get("score", {"kind": "dot"})["kind"]] = 1
                    feats["layout:" + node.get("layout", "bhsd")] = 1
                    for m in node.get("mask", []):
                        feats["mask:" + m["kind"]] = 1
                    for bb in node.get("bias", []):
                        feats["bias:" + bb["kind"] + ("+slopes" if "slopes" in bb else "")] = 1
                    if "softcap" in node:
                        feats["softcap"] = 1
                    if node.get("return_lse"):
                        feats["lse"] = 1
                        lse = out.get(node["name"] + ".lse")
                        if lse is not None and np.isneginf(lse[0]).any():
                            feats["fully-masked-row"] = 1
            for n, d in c.graph["inputs"].items():
                feats["dtype:" + d["dtype"]] = 1
            if any(v is None for v in c.graph.get("dims", {}).values()):
                feats["dynamic" + ("+dimflag" if c.dim_args else "+files")] = 1
            for n, arr in c.arrays.items():
                if c.graph["inputs"][n]["dtype"] == "i32" and n.startswith("lens") and (arr == 0).any():
                    feats["key_length 0"] = 1
            for node in c.graph["nodes"]:
                if node["op"] == "attention" and len(node.get("mask", [])) >= 3:
                    feats["3+ masks combined"] = 1
    need = (["op:" + o for o in ("attention",) + oracle.PRIMITIVE_OPS] +
            ["score:dot", "score:general", "score:additive", "score:cosine", "layout:bhsd", "layout:bshd",
             "mask:causal", "mask:window", "mask:key_length", "mask:tensor", "bias:tensor", "bias:alibi",
             "bias:alibi+slopes", "softcap", "lse", "fully-masked-row", "dtype:f32", "dtype:f16", "dtype:bf16",
             "dtype:i32", "dtype:bool", "dynamic+dimflag", "dynamic+files", "key_length 0", "3+ masks combined"])
    for f in need:
        check(f in feats, "generator covers %s" % f)


def test_rounding_floor(rng):
    """The f32 rounding floor (the verdict's allowance beyond 1e-4) is
    negligible at ordinary scales and covers what rounding the scores to f32
    does at extreme ones."""
    B, H, S, T, D = 1, 2, 16, 24, 32
    shapes = decl(q=(B, H, S, D), k=(B, H, T, D), v=(B, H, T, D), w=(D, D), wq=(8, D),
                  wk=(8, D), va=(8,))
    scores = {"dot": {"kind": "dot"}, "general": {"kind": "general", "w": "w"},
              "additive": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"},
              "cosine": {"kind": "cosine"}}
    inputs = {"q": rng.standard_normal((B, H, S, D)), "k": rng.standard_normal((B, H, T, D)),
              "v": rng.standard_normal((B, H, T, D)), "w": rng.standard_normal((D, D)),
              "wq": rng.standard_normal((8, D)), "wk": rng.standard_normal((8, D)),
              "va": rng.standard_normal(8)}
    for kind, score in scores.items():
        floors = {}
        g = att_graph(shapes, {"q": "q", "k": "k", "v": "v", "score": score,
                               "return_lse": True}, ("o", "o.lse"))
        ref = oracle.evaluate_typed(g, inputs, None, floors)
        rel = np.linalg.norm(floors["o"]) / np.linalg.norm(ref["o"][0])
        check(0 < rel < 1e-5, "rounding floor of %s at the default scale: %.2g" % (kind, rel))
    # scale 1000: scores of |s| ~ 1e4, a near-one-hot softmax; the error of
    # scores computed in f32 (then the softmax exactly) stays within the floor.
    f32 = np.float32
    for trial in range(10):
        q, k, v = (rng.standard_normal((B, H, n, D)).astype(f32) for n in (S, T, T))
        floors = {}
        g = att_graph(decl(q=q.shape, k=k.shape, v=v.shape),
                      {"q": "q", "k": "k", "v": "v", "scale": 1000.0})
        ref = oracle.evaluate_typed(g, {"q": q, "k": k, "v": v}, None, floors)["o"][0]
        s32 = np.einsum("bhsd,bhtd->bhst", q, k).astype(f32) * f32(1000)
        s64 = s32.astype(np.float64)
        p = np.exp(s64 - s64.max(-1, keepdims=True))
        out = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
        err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        floor = np.linalg.norm(floors["o"]) / np.linalg.norm(ref)
        check(err <= 1e-4 + floor, "f32 scores at scale 1000 (trial %d): err %.2g, floor %.2g"
              % (trial, err, floor))


def main():
    rng = np.random.default_rng(2024)
    tests = [("alibi slopes", test_alibi_slopes), ("dtypes", test_dtypes),
             ("primitive ops", lambda: test_primitives(rng)),
             ("masks and positions", lambda: test_masks_and_positions(rng)),
             ("GQA == repeated heads", lambda: test_gqa_equals_repeat(rng)),
             ("bshd == transposed bhsd", lambda: test_bshd_equals_bhsd(rng)),
             ("exporter chains == fused op", lambda: test_chains_equal_fused(rng)),
             ("brute force", test_brute_force),
             ("f32 rounding floor", lambda: test_rounding_floor(rng)),
             ("generator", test_generator)]
    for name, fn in tests:
        before = dict(_results)
        fn()
        print("self-test %-28s %d checks, %d failed" % (name, _results["pass"] + _results["fail"] - before["pass"] - before["fail"],
                                                         _results["fail"] - before["fail"]))
    print("%d passed, %d failed" % (_results["pass"], _results["fail"]))
    return 1 if _results["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
