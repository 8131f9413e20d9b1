#!/usr/bin/python3
"""Independent float64 oracle for the attnc graph format, version 1.

Written straight from the text of the graph format specification (the contract
docs/graph-format.md describes), for clarity rather than speed.  It does not
share code (or reading) with the C++ compiler; its value is that it was derived
from the spec text alone.

Public API
    evaluate(graph, inputs, dims)        -> {output name: np.ndarray}
    evaluate_typed(graph, inputs, dims)  -> {output name: (np.ndarray, dtype)}

`inputs` maps input name -> array holding the *real values* of the input
(float inputs of any dtype as floats, bf16 may also be given as its uint16 bit
patterns, bool as bool, i32 as integers).  `dims` binds dim names to sizes; names
missing from it are taken from the graph (fixed dims) or inferred from input
shapes.  Float results are float64 and are NOT rounded to their dtype; the
dtype each output would have in a file is returned by evaluate_typed.
"""
import math
import re

import numpy as np

FLOAT_DTYPES = ("f32", "f16", "bf16")
ALL_DTYPES = ("f32", "f16", "bf16", "i32", "bool")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# File encodings of each dtype (spec: "The command line").
NPY_DTYPE = {"f32": "<f4", "f16": "<f2", "bf16": "<u2", "i32": "<i4", "bool": "|b1"}


class OracleError(Exception):
    pass


# --------------------------------------------------------------------------
# dtype helpers
# --------------------------------------------------------------------------

def bf16_bits_to_float(u16):
    """uint16 bf16 bit patterns -> float64 real values."""
    u16 = np.asarray(u16, dtype=np.uint16)
    f32 = (u16.astype(np.uint32) << 16).view(np.float32)
    return f32.astype(np.float64)


def float_to_bf16_bits(x):
    """float values -> uint16 bf16 bit patterns, round to nearest even (via f32)."""
    f32 = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u32 = f32.view(np.uint32).astype(np.uint64)
    is_nan = np.isnan(f32)
    lsb = (u32 >> 16) & 1
    rounded = ((u32 + 0x7FFF + lsb) >> 16).astype(np.uint16)
    return np.where(is_nan, np.uint16(0x7FC0), rounded).astype(np.uint16)


def round_to_dtype(x, dtype):
    """Real float64 values exactly representable in `dtype`."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return bf16_bits_to_float(float_to_bf16_bits(x))
    raise OracleError("not a float dtype: %r" % dtype)


def encode_for_file(values, dtype):
    """Real values -> the array that travels in a .npy file for `dtype`."""
    values = np.asarray(values)
    if dtype == "f32":
        return values.astype("<f4")
    if dtype == "f16":
        return values.astype("<f2")
    if dtype == "bf16":
        return float_to_bf16_bits(values).astype("<u2")
    if dtype == "i32":
        return values.astype("<i4")
    if dtype == "bool":
        return values.astype("|b1")
    raise OracleError("unknown dtype %r" % dtype)


def decode_from_file(arr, dtype):
    """A .npy array of `dtype` -> real values (float64 / bool / int64)."""
    arr = np.asarray(arr)
    if dtype == "bf16":
        if arr.dtype == np.uint16:
            return bf16_bits_to_float(arr)
        return arr.astype(np.float64)
    if dtype in ("f32", "f16"):
        return arr.astype(np.float64)
    if dtype == "i32":
        return arr.astype(np.int64)
    if dtype == "bool":
        return arr.astype(bool)
    raise OracleError("unknown dtype %r" % dtype)


# --------------------------------------------------------------------------
# ALiBi slopes, straight from the spec sentence:
#   with n the largest power of two <= Hq, slopes(n) = 2^(-8(h+1)/n) for h < n;
#   if Hq > n, append slopes(2n)[0::2][:Hq-n].
# --------------------------------------------------------------------------

def _slopes_pow2(n):
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_standard_slopes(hq):
    n = 1
    while n * 2 <= hq:
        n *= 2
    slopes = _slopes_pow2(n)
    if hq > n:
        slopes = slopes + _slopes_pow2(2 * n)[0::2][: hq - n]
    return np.array(slopes, dtype=np.float64)


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------

def _resolve_dim(d, dims):
    if isinstance(d, bool):
        raise OracleError("bad dim %r" % (d,))
    if isinstance(d, int):
        return d
    if isinstance(d, str):
        if d not in dims or dims[d] is None:
            raise OracleError("dim %r not bound" % d)
        return int(dims[d])
    raise OracleError("bad dim %r" % (d,))


def _bind_dims(graph, inputs, dims):
    """Complete the dim binding: given dims, then fixed graph dims, then input shapes."""
    bound = {}
    for name, val in (graph.get("dims") or {}).items():
        if val is not None:
            bound[name] = int(val)
    for name, val in (dims or {}).items():
        if name in bound and bound[name] != int(val):
            raise OracleError("dim %s fixed to %d, given %d" % (name, bound[name], val))
        bound[name] = int(val)
    for iname, decl in graph["inputs"].items():
        if iname not in inputs:
            continue
        shape = np.asarray(inputs[iname]).shape
        if len(shape) != len(decl["shape"]):
            raise OracleError("input %s has rank %d, declared %d" % (iname, len(shape), len(decl["shape"])))
        for d, actual in zip(decl["shape"], shape):
            if isinstance(d, str):
                if d in bound and bound[d] != actual:
                    raise OracleError("input %s: dim %s is %d, bound to %d" % (iname, d, actual, bound[d]))
                bound[d] = actual
    return bound


def _value_of_input(arr, dtype):
    arr = np.asarray(arr)
    if dtype in FLOAT_DTYPES:
        if dtype == "bf16" and arr.dtype == np.uint16:
            return bf16_bits_to_float(arr)
        return arr.astype(np.float64)
    if dtype == "i32":
        return arr.astype(np.int64)
    if dtype == "bool":
        if arr.dtype != np.bool_:
            raise OracleError("bool input given as %s" % arr.dtype)
        return arr.astype(bool)
    raise OracleError("unknown dtype %r" % dtype)


def evaluate(graph, inputs, dims=None):
    return {name: val for name, (val, _dt) in evaluate_typed(graph, inputs, dims).items()}


def evaluate_typed(graph, inputs, dims=None, floors=None):
    """Evaluates every node in float64; returns {output: (value, dtype)}.

    With a dict `floors`, each attention node also records there, under its
    output names, the f32 rounding floor of that output (see _rounding_floor).
    """
    if graph.get("attnc") != 1:
        raise OracleError("not an attnc version 1 graph")
    bound = _bind_dims(graph, inputs, dims)
    env = {}      # value name -> float64/bool/int64 array
    dtypes = {}   # value name -> dtype string
    for iname, decl in graph["inputs"].items():
        if iname not in inputs:
            raise OracleError("missing input %s" % iname)
        shape = tuple(_resolve_dim(d, bound) for d in decl["shape"])
        val = _value_of_input(inputs[iname], decl["dtype"])
        if val.shape != shape:
            raise OracleError("input %s has shape %s, declared %s" % (iname, val.shape, shape))
        env[iname] = val
        dtypes[iname] = decl["dtype"]
    for node in graph["nodes"]:
        op = node["op"]
        fn = _OPS.get(op)
        if fn is None:
            raise OracleError("unknown op %r" % op)
        if op == "attention":
            results = fn(node, env, dtypes, bound, floors)
        else:
            results = fn(node, env, dtypes, bound)
        for rname, (rval, rdtype) in results.items():
            if rname in env:
                raise OracleError("value %s defined twice" % rname)
            env[rname] = rval
            dtypes[rname] = rdtype
    out = {}
    for oname in graph["outputs"]:
        if oname not in env:
            raise OracleError("unknown output %s" % oname)
        out[oname] = (env[oname], dtypes[oname])
    return out


# --------------------------------------------------------------------------
# the fused attention op
# --------------------------------------------------------------------------

def _ref(env, name):
    if name not in env:
        raise OracleError("unknown value %r" % name)
    return env[name]


# The unit roundoff of f32.
F32_UNIT_ROUNDOFF = 2.0 ** -24


def _attention(node, env, dtypes, dims, floors=None):
    name = node["name"]
    q = _ref(env, node["q"])
    k = _ref(env, node["k"])
    v = _ref(env, node["v"])
    layout = node.get("layout", "bhsd")
    if layout == "bshd":
        # q, k, v and the output are [B, S, H, D]: bring them to [B, H, S, D].
        q = q.transpose(0, 2, 1, 3)
        k = k.transpose(0, 2, 1, 3)
        v = v.transpose(0, 2, 1, 3)
    elif layout != "bhsd":
        raise OracleError("bad layout %r" % layout)
    B, Hq, S, Dk = q.shape
    Bk, Hkv, T, Dk2 = k.shape
    Bv, Hkv2, T2, Dv = v.shape
    if not (B == Bk == Bv and Hkv == Hkv2 and T == T2 and Dk == Dk2 and Hq % Hkv == 0):
        raise OracleError("attention %s: shape mismatch q%s k%s v%s" % (name, q.shape, k.shape, v.shape))

    # GQA / MQA: query head h reads kv head h // (Hq / Hkv).
    group = Hq // Hkv
    kv_head = [h // group for h in range(Hq)]
    K = k[:, kv_head]   # [B, Hq, T, Dk]
    V = v[:, kv_head]   # [B, Hq, T, Dv]

    # score_fn(q_i, k_j)
    score = node.get("score", {"kind": "dot"})
    kind = score["kind"]
    # size[b,h,s,t]: the sum of the absolute values of the terms the raw score
    # adds up (what its f32 rounding error is proportional to).
    if kind == "dot":
        raw = np.einsum("bhsd,bhtd->bhst", q, K)
        size = np.einsum("bhsd,bhtd->bhst", np.abs(q), np.abs(K))
    elif kind == "general":
        W = _ref(env, score["w"])                          # [Dk, Dk]
        # q^T W k, contracted in two steps: one three-operand einsum loops over
        # every (s, t, a, c) and takes minutes at Dk = 256
        qW = np.einsum("bhsa,ac->bhsc", q, W)
        raw = np.einsum("bhsc,bhtc->bhst", qW, K)
        size = np.einsum("bhsc,bhtc->bhst", np.einsum("bhsa,ac->bhsc", np.abs(q), np.abs(W)),
                         np.abs(K))
    elif kind == "additive":
        Wq = _ref(env, score["wq"])                        # [A, Dk]
        Wk = _ref(env, score["wk"])                        # [A, Dk]
        va = _ref(env, score["v"])                         # [A]
        qa = np.einsum("ad,bhsd->bhsa", Wq, q)             # Wq q
        ka = np.einsum("ad,bhtd->bhta", Wk, K)             # Wk k
        hidden = np.tanh(qa[:, :, :, None, :] + ka[:, :, None, :, :])   # [B,Hq,S,T,A]
        raw = np.einsum("a,bhsta->bhst", va, hidden)       # va^T tanh(...)
        # an error in tanh's argument passes on times tanh' = 1 - tanh^2
        qa_size = np.einsum("ad,bhsd->bhsa", np.abs(Wq), np.abs(q))
        ka_size = np.einsum("ad,bhtd->bhta", np.abs(Wk), np.abs(K))
        size = np.einsum("a,bhsta->bhst", np.abs(va),
                         (1.0 - hidden * hidden) * (qa_size[:, :, :, None, :] +
                                                    ka_size[:, :, None, :, :]) + np.abs(hidden))
    elif kind == "cosine":
        dot = np.einsum("bhsd,bhtd->bhst", q, K)
        qn = np.sqrt(np.sum(q * q, axis=-1))               # [B,Hq,S]
        kn = np.sqrt(np.sum(K * K, axis=-1))               # [B,Hq,T]
        # docs/graph-format.md decision (i): norms clamped at 1e-12.
        qn = np.maximum(qn, 1e-12)
        kn = np.maximum(kn, 1e-12)
        raw = dot / (qn[:, :, :, None] * kn[:, :, None, :])
        size = np.einsum("bhsd,bhtd->bhst", np.abs(q), np.abs(K)) / (
            qn[:, :, :, None] * kn[:, :, None, :]) + 1.0
    else:
        raise OracleError("bad score kind %r" % kind)

    # scale
    scale = node.get("scale", "default")
    if scale == "default":
        scale = 1.0 / math.sqrt(Dk) if kind in ("dot", "general") else 1.0
    s = float(scale) * raw
    size = abs(float(scale)) * size

    # softcap, after scale
    if "softcap" in node:
        c = float(node["softcap"])
        capped = np.tanh(s / c)
        size = size * (1.0 - capped * capped)   # d/ds c tanh(s/c)
        s = c * capped
        size = size + np.abs(s)

    # query i is aligned to key position i' = i + T - S
    ipos = np.arange(S) + T - S          # [S]
    jpos = np.arange(T)                  # [T]

    # every bias
    for bias in node.get("bias", []):
        if bias["kind"] == "tensor":
            X = _ref(env, bias["input"])
            s = s + np.broadcast_to(X, (B, Hq, S, T))
            size = size + np.abs(np.broadcast_to(X, (B, Hq, S, T)))
        elif bias["kind"] == "alibi":
            if "slopes" in bias:
                slopes = _ref(env, bias["slopes"]).reshape(Hq)
            else:
                slopes = alibi_standard_slopes(Hq)
            dist = np.abs(ipos[:, None] - jpos[None, :])                 # [S, T]
            s = s - slopes[None, :, None, None] * dist[None, None, :, :]
            size = size + np.abs(slopes[None, :, None, None] * dist[None, None, :, :])
        else:
            raise OracleError("bad bias kind %r" % bias["kind"])

    # masks, combined by AND (a key is dropped when any mask excludes it)
    keep = np.ones((B, Hq, S, T), dtype=bool)
    for mask in node.get("mask", []):
        mk = mask["kind"]
        if mk == "causal":
            keep &= (jpos[None, :] <= ipos[:, None])[None, None]
        elif mk == "window":
            # i' - L <= j <= i' + R, written as differences: L and R may be as
            # large as 2^63 - 1, where i' - L and i' + R overflow int64.  A bound
            # past S + T keeps every key on its side, so clamp it there.
            L = min(int(mask["left"]), S + T)
            R = min(int(mask["right"]), S + T)
            d = ipos[:, None] - jpos[None, :]        # i' - j, |d| < S + T
            w = (d <= L) & (-d <= R)
            keep &= w[None, None]
        elif mk == "key_length":
            lens = _ref(env, mask["input"]).reshape(B)
            keep &= (jpos[None, :] < lens[:, None])[:, None, None, :]
        elif mk == "tensor":
            M = _ref(env, mask["input"]).astype(bool)
            keep &= np.broadcast_to(M, (B, Hq, S, T))
        else:
            raise OracleError("bad mask kind %r" % mk)

    # softmax over the kept keys; fully masked rows give output 0 and lse -inf
    out = np.zeros((B, Hq, S, Dv))
    lse = np.full((B, Hq, S), -np.inf)
    out_floor = np.zeros((B, Hq, S, Dv))
    lse_floor = np.zeros((B, Hq, S))
    for b in range(B):
        for h in range(Hq):
            for i in range(S):
                kept = keep[b, h, i]
                if not kept.any():
                    continue
                row = s[b, h, i, kept]
                m = row.max()
                e = np.exp(row - m)
                den = e.sum()
                p = e / den
                out[b, h, i] = p @ V[b, h, kept]
                lse[b, h, i] = m + math.log(den)
                # First order, every score off by its rounding bound with the
                # worst sign: d out = sum_j p_j (v_j - out) ds_j, d lse =
                # sum_j p_j ds_j.
                ds = p * (F32_UNIT_ROUNDOFF * size[b, h, i, kept])
                out_floor[b, h, i] = ds @ np.abs(V[b, h, kept] - out[b, h, i])
                lse_floor[b, h, i] = ds.sum()

    if layout == "bshd":
        out = out.transpose(0, 2, 1, 3)
        out_floor = out_floor.transpose(0, 2, 1, 3)
    results = {name: (out, dtypes[node["v"]])}
    if node.get("return_lse", False):
        results[name + ".lse"] = (lse, "f32")
    if floors is not None:
        floors[name] = out_floor
        floors[name + ".lse"] = lse_floor
    return results


# --------------------------------------------------------------------------
# primitive ops
# --------------------------------------------------------------------------

def _matmul(node, env, dtypes, dims):
    a = _ref(env, node["a"])
    b = _ref(env, node["b"])
    if node.get("transpose_b", False) and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    return {node["name"]: (np.matmul(a, b), dtypes[node["a"]])}


def _linear(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    w = _ref(env, node["w"])
    y = np.matmul(x, w.T)
    if "b" in node:
        y = y + _ref(env, node["b"])
    return {node["name"]: (y, dtypes[node["x"]])}


def _binary(fn):
    def op(node, env, dtypes, dims):
        a = _ref(env, node["a"])
        b = _ref(env, node["b"])
        return {node["name"]: (fn(a, b), dtypes[node["a"]])}
    return op


def _unary(fn):
    def op(node, env, dtypes, dims):
        return {node["name"]: (fn(_ref(env, node["x"])), dtypes[node["x"]])}
    return op


def _scale(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    return {node["name"]: (x * float(node["value"]), dtypes[node["x"]])}


def _softmax(node, env, dtypes, dims):
    # exp(x - max) / sum.  docs/graph-format.md decision (h): a slice that is
    # all -inf (everything masked) gives zeros, like a fully masked attention row.
    x = _ref(env, node["x"])
    axis = node.get("axis", -1)
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        empty = np.isneginf(m)
        e = np.exp(x - np.where(empty, 0.0, m))
        y = e / np.where(empty, 1.0, np.sum(e, axis=axis, keepdims=True))
        y = np.where(empty, 0.0, y)
    return {node["name"]: (y, dtypes[node["x"]])}


def _masked_fill(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    mask = _ref(env, node["mask"]).astype(bool)
    value = node["value"]
    value = -np.inf if value == "-inf" else float(value)
    y = np.where(mask, value, x)
    return {node["name"]: (y, dtypes[node["x"]])}


def _causal_mask(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    S, T = x.shape[-2], x.shape[-1]
    i = np.arange(S)[:, None]
    j = np.arange(T)[None, :]
    drop = j > i + T - S
    y = np.where(drop, -np.inf, x)
    return {node["name"]: (y, dtypes[node["x"]])}


def _window_mask(node, env, dtypes, dims):
    # i' - L <= j <= i' + R with i' = i + T - S, as differences (see the
    # attention's window above: L and R may be near 2^63).
    x = _ref(env, node["x"])
    S, T = x.shape[-2], x.shape[-1]
    L = min(int(node["left"]), S + T)
    R = min(int(node["right"]), S + T)
    d = (np.arange(S)[:, None] + T - S) - np.arange(T)[None, :]
    y = np.where((d <= L) & (-d <= R), x, -np.inf)
    return {node["name"]: (y, dtypes[node["x"]])}


def _reshape(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    shape = []
    for d in node["shape"]:
        if isinstance(d, int) and not isinstance(d, bool) and d == -1:
            shape.append(-1)
        else:
            shape.append(_resolve_dim(d, dims))
    return {node["name"]: (x.reshape(shape), dtypes[node["x"]])}


def _transpose(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    return {node["name"]: (np.transpose(x, node["perm"]), dtypes[node["x"]])}


def _unsqueeze(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    return {node["name"]: (np.expand_dims(x, node["axis"]), dtypes[node["x"]])}


def _repeat(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    return {node["name"]: (np.repeat(x, int(node["times"]), axis=node["axis"]), dtypes[node["x"]])}


def _slice(node, env, dtypes, dims):
    # x[..., start:end, ...] along axis (attnc extension, docs/graph-format.md):
    # 0 <= start < end <= the axis's size, no negative bounds, no step
    x = _ref(env, node["x"])
    axis = node["axis"] % x.ndim
    start, end = int(node["start"]), int(node["end"])
    if not 0 <= start < end <= x.shape[axis]:
        raise OracleError("slice %s: bounds [%d, %d) outside the axis of size %d" % (
            node["name"], start, end, x.shape[axis]))
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, end)
    return {node["name"]: (x[tuple(index)], dtypes[node["x"]])}


def _reduce_sum(node, env, dtypes, dims):
    x = _ref(env, node["x"])
    y = np.sum(x, axis=node["axis"], keepdims=bool(node.get("keepdims", False)))
    return {node["name"]: (np.asarray(y), dtypes[node["x"]])}


def _concat(node, env, dtypes, dims):
    xs = [_ref(env, n) for n in node["inputs"]]
    return {node["name"]: (np.concatenate(xs, axis=node["axis"]), dtypes[node["inputs"][0]])}


_OPS = {
    "attention": _attention,
    "matmul": _matmul,
    "linear": _linear,
    "add": _binary(lambda a, b: a + b),
    "sub": _binary(lambda a, b: a - b),
    "mul": _binary(lambda a, b: a * b),
    "div": _binary(lambda a, b: a / b),
    "scale": _scale,
    "tanh": _unary(np.tanh),
    "exp": _unary(np.exp),
    "neg": _unary(lambda x: -x),
    "sqrt": _unary(np.sqrt),   # attnc extension (docs/graph-format.md)
    "cos": _unary(np.cos),     # attnc extension
    "sin": _unary(np.sin),     # attnc extension
    "softmax": _softmax,
    "masked_fill": _masked_fill,
    "causal_mask": _causal_mask,
    "window_mask": _window_mask,
    "reshape": _reshape,
    "transpose": _transpose,
    "unsqueeze": _unsqueeze,
    "repeat": _repeat,
    "slice": _slice,           # attnc extension
    "reduce_sum": _reduce_sum,
    "concat": _concat,
}

PRIMITIVE_OPS = tuple(op for op in _OPS if op != "attention")
