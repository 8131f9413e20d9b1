#!/usr/bin/python3
"""Build the ONNX test models of the attnc ONNX importer, with inputs and expected outputs.

    make_models.py OUTDIR [--malformed]
    make_models.py --self-test

For every model (see MODELS) this writes OUTDIR/NAME.onnx, OUTDIR/NAME/inputs/<input>.npy
(random, fixed seed) and OUTDIR/NAME/expected/<output file>.npy computed by onnx_numpy.py, and
lists them all in OUTDIR/models.json. The graphs are shaped like real exports: node and value
names of PyTorch's TorchScript exporter ("/attn/MatMul", "/attn/MatMul_output_0"), symbolic
batch and sequence dims, and the Shape -> Gather -> Unsqueeze -> Concat -> Reshape subgraphs
the exporter writes for `view(bsz, seq, heads, dim)`.

Every model's expected output is also computed a second way, by plain numpy written per model
from the same weights (`direct_*`), and the two must agree to 1e-10: that guards the evaluator.
--self-test does that plus small per-op checks of onnx_numpy.py, without writing anything.

--malformed also writes OUTDIR/malformed/*.onnx and OUTDIR/malformed/cases.json: files that
`attnc check` must reject with one line on stderr.
"""
import argparse
import json
import math
import os
import sys
import warnings
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import onnx_numpy   # noqa: E402

F32 = TensorProto.FLOAT
I64 = TensorProto.INT64
I32 = TensorProto.INT32
FMIN = float(np.finfo(np.float32).min)    # what transformers uses as "minus infinity"
INT64_MAX = 2 ** 63 - 1                   # the end the exporter writes for `x[a:]`
TOLERANCE = {"f32": 1e-4, "f16": 2e-2}
SELF_CHECK_TOL = 1e-10


def f32(x):
    """A float constant as the model stores it (float32), back as a python float."""
    return float(np.float32(x))


# ---------------------------------------------------------------------------------------------
# Graph building, with exporter-style names


class GraphBuilder:
    """Nodes and initializers named the way PyTorch's TorchScript exporter names them: node
    "/attn/MatMul_1" writes "/attn/MatMul_1_output_0"."""

    def __init__(self, scope):
        self.scope = scope
        self.nodes = []
        self.initializers = []
        self.weights = {}           # initializer name -> float32/int/bool array
        self.counts = {}

    def op(self, op_type, inputs, scope=None, outputs=None, n_out=1, domain=None, **attrs):
        base = "%s/%s" % (self.scope if scope is None else scope, op_type)
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        name = base if k == 0 else "%s_%d" % (base, k)
        if outputs is None:
            outputs = ["%s_output_%d" % (name, i) for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, domain=domain,
                                           **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def const(self, value, dtype=np.int64, scope=None):
        """A Constant node (the exporter writes most small constants that way)."""
        arr = np.asarray(value, dtype=dtype)
        return self.op("Constant", [], scope=scope, value=numpy_helper.from_array(arr))

    def init(self, name, arr):
        self.initializers.append(numpy_helper.from_array(arr, name))
        self.weights[name] = arr
        return name

    # -- the subgraphs the exporter writes for sizes and views --

    def size(self, x, i, scope=None):
        """`x.size(i)`: Shape -> Gather(Constant i), a 0-d int64."""
        shape = self.op("Shape", [x], scope=scope)
        return self.op("Gather", [shape, self.const(i, scope=scope)], scope=scope, axis=0)

    def unsqueeze0(self, scalar, scope=None):
        return self.op("Unsqueeze", [scalar, self.const([0], scope=scope)], scope=scope)

    def shape_of(self, parts, scope=None):
        """A 1-D shape from parts: an int is a Constant [n], a str a 0-d size to unsqueeze."""
        pieces = [self.const([p], scope=scope) if isinstance(p, int)
                  else self.unsqueeze0(p, scope=scope) for p in parts]
        return self.op("Concat", pieces, scope=scope, axis=0)

    def view(self, x, parts, scope=None):
        return self.op("Reshape", [x, self.shape_of(parts, scope=scope)], scope=scope)

    def torch_expand(self, x, size, scope=None):
        """`x.expand(*size)` as the TorchScript exporter writes it: a -1 in the sizes means
        "keep", which ONNX Expand spells 1, so sizes equal to -1 become 1 through
        ConstantOfShape / Mul / Equal / Where before the Expand."""
        ones = self.op("ConstantOfShape", [self.op("Shape", [size], scope=scope)], scope=scope,
                       value=numpy_helper.from_array(np.array([1], dtype=np.int64)))
        neg_ones = self.op("Mul", [ones, self.const(-1, scope=scope)], scope=scope)
        is_neg = self.op("Equal", [size, neg_ones], scope=scope)
        size = self.op("Where", [is_neg, ones, size], scope=scope)
        return self.op("Expand", [x, size], scope=scope)


def make_model(b, name, inputs, outputs, opsets=(("", 17),), ir_version=8):
    """inputs/outputs: [(name, elem type, dims)]; a str dim is a dim_param."""
    graph = helper.make_graph(
        b.nodes, name,
        [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs],
        initializer=b.initializers)
    model = helper.make_model(graph, producer_name="pytorch", producer_version="2.1.0",
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = ir_version
    return model


class Case:
    """One test model: the proto, its inputs, its weights and what the self-check needs."""

    def __init__(self, name, description, model, inputs, weights, direct, checkable=True):
        self.name = name
        self.description = description
        self.model = model
        self.inputs = inputs            # onnx input name -> array (in the input's dtype)
        self.weights = weights          # initializer name -> array
        self.direct = direct            # (inputs, weights) -> {output name: float64 array}
        self.checkable = checkable      # onnx 1.12's checker knows every op it uses
        self.attention_kernels = 1
        self.attention_covers = []      # nodes (by output) the attention kernel must cover
        self.kernels_absent = []        # ops no kernel of `attnc explain` may have
        self.dtype = "f32"
        self.external = False           # weights saved as ONNX external data
        self.attention_only = None      # {inputs, output, left_out}: checked block by block


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def randn(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def weight(rng, n_in, n_out):
    """A [n_in, n_out] weight that keeps activations near unit size."""
    return randn(rng, n_in, n_out, scale=1.0 / math.sqrt(n_in))


# ---------------------------------------------------------------------------------------------
# Plain numpy attention for the self-check (deliberately not shared with onnx_numpy.py)


def f64(a):
    return np.asarray(a, dtype=np.float64)


def sdpa(q, k, v, scale, bias=None, keep=None, softcap=0.0):
    """softmax over keys of (softcap(scale q kᵀ) + bias, dropped where keep is false) · v."""
    s = scale * np.einsum("bhsd,bhtd->bhst", q, k)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("bhst,bhtd->bhsd", p, v)


def split_heads(x, h):
    b, s, e = x.shape
    return x.reshape(b, s, h, e // h).transpose(0, 2, 1, 3)


def join_heads(x):
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def causal_keep(s):
    return np.tril(np.ones((s, s), dtype=bool))


# ---------------------------------------------------------------------------------------------
# The models


def gpt2_causal():
    """GPT2Attention (transformers 4.3x) through the legacy exporter, opset 17."""
    name, E, H, D, S, B, MAX = "gpt2_causal", 48, 2, 24, 13, 2, 32
    rng = rng_for(name)
    b = GraphBuilder("/attn")
    w_attn = b.init("transformer.h.0.attn.c_attn.weight", weight(rng, E, 3 * E))  # Conv1D
    b_attn = b.init("transformer.h.0.attn.c_attn.bias", randn(rng, 3 * E, scale=0.1))
    w_proj = b.init("transformer.h.0.attn.c_proj.weight", weight(rng, E, E))
    b_proj = b.init("transformer.h.0.attn.c_proj.bias", randn(rng, E, scale=0.1))
    causal = b.init("transformer.h.0.attn.bias",
                    np.tril(np.ones((MAX, MAX), dtype=bool)).reshape(1, 1, MAX, MAX))

    # c_attn (Conv1D: x @ W + b), then split(split_size, dim=2)
    x = b.op("MatMul", ["hidden_states", w_attn], scope="/attn/c_attn")
    qkv = b.op("Add", [b_attn, x], scope="/attn/c_attn")
    q, k, v = b.op("Split", [qkv, b.const([E, E, E])], n_out=3, axis=2)

    def split_heads_graph(t):       # _split_heads: view(size()[:-1] + (H, D)).permute(0,2,1,3)
        t4 = b.view(t, [b.size(t, 0), b.size(t, 1), H, D])
        return b.op("Transpose", [t4], perm=[0, 2, 1, 3])

    qh, kh, vh = split_heads_graph(q), split_heads_graph(k), split_heads_graph(v)
    kt = b.op("Transpose", [kh], perm=[0, 1, 3, 2])
    scores = b.op("MatMul", [qh, kt])
    scores = b.op("Div", [scores, b.const(math.sqrt(D), np.float32)])   # / full([], D ** 0.5)

    # causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
    q_len, k_len = b.size(qh, 2), b.size(kh, 2)
    start = b.unsqueeze0(b.op("Sub", [k_len, q_len]))
    rows = b.op("Slice", [causal, start, b.unsqueeze0(k_len), b.const([2]), b.const([1])])
    mask = b.op("Slice", [rows, b.const([0]), b.unsqueeze0(k_len), b.const([3]), b.const([1])])
    scores = b.op("Where", [mask, scores, b.const(FMIN, np.float32)])
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("MatMul", [probs, vh])

    # _merge_heads: permute(0,2,1,3).view(size()[:-2] + (H * D,))
    ctx = b.op("Transpose", [ctx], perm=[0, 2, 1, 3])
    merged = b.view(ctx, [b.size(ctx, 0), b.size(ctx, 1), E])
    y = b.op("MatMul", [merged, w_proj], scope="/attn/c_proj")
    b.op("Add", [b_proj, y], scope="/attn/c_proj", outputs=["attn_output"])

    model = make_model(b, "main_graph",
                       [("hidden_states", F32, ["batch_size", "sequence_length", E])],
                       [("attn_output", F32, ["batch_size", "sequence_length", E])])
    inputs = {"hidden_states": randn(rng, B, S, E)}

    def direct(inp, w):
        qkv = f64(inp["hidden_states"]) @ f64(w[w_attn]) + f64(w[b_attn])
        q, k, v = (split_heads(t, H) for t in np.split(qkv, 3, axis=-1))
        o = sdpa(q, k, v, 1.0 / f32(math.sqrt(D)), keep=causal_keep(S))
        return {"attn_output": join_heads(o) @ f64(w[w_proj]) + f64(w[b_proj])}

    return Case(name, "GPT-2 causal self-attention as the legacy TorchScript exporter writes it "
                "(Conv1D MatMul+Add, Split, causal buffer Slice + Where(finfo.min), opset 17)",
                model, inputs, b.weights, direct)


def bert_padding():
    """BertSelfAttention with the extended padding mask computed in the graph, opset 17."""
    name, E, H, D, S, B = "bert_padding", 48, 3, 16, 11, 3
    rng = rng_for(name)
    b = GraphBuilder("/attention/self")
    prefix = "encoder.layer.0.attention.self."
    # nn.Linear exports as MatMul with the transposed weight, folded into an initializer
    lin = {}
    for i, part in enumerate(["query", "key", "value"]):
        lin[part] = (b.init("onnx::MatMul_%d" % (301 + i), weight(rng, E, E)),
                     b.init(prefix + part + ".bias", randn(rng, E, scale=0.1)))

    def linear(part):
        scope = "/attention/self/" + part
        y = b.op("MatMul", ["hidden_states", lin[part][0]], scope=scope)
        return b.op("Add", [lin[part][1], y], scope=scope)

    def transpose_for_scores(t, perm):
        t4 = b.view(t, [b.size(t, 0), b.size(t, 1), H, D])
        return b.op("Transpose", [t4], perm=perm)

    q = transpose_for_scores(linear("query"), [0, 2, 1, 3])
    # key.permute(0,2,1,3).transpose(-1,-2): the exporter fuses the two into one Transpose
    kt = transpose_for_scores(linear("key"), [0, 2, 3, 1])
    v = transpose_for_scores(linear("value"), [0, 2, 1, 3])
    scores = b.op("MatMul", [q, kt])
    scores = b.op("Div", [scores, b.const(math.sqrt(D), np.float32)])

    # get_extended_attention_mask: (1.0 - mask[:, None, None, :].to(float)) * finfo.min
    m = b.op("Unsqueeze", ["attention_mask", b.const([1])], scope="")
    m = b.op("Unsqueeze", [m, b.const([2], scope="")], scope="")
    m = b.op("Cast", [m], scope="", to=F32)
    m = b.op("Sub", [b.const(1.0, np.float32, scope=""), m], scope="")
    m = b.op("Mul", [m, b.const(FMIN, np.float32, scope="")], scope="")
    scores = b.op("Add", [scores, m])
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("MatMul", [probs, v])
    ctx = b.op("Transpose", [ctx], perm=[0, 2, 1, 3])
    b.op("Reshape", [ctx, b.shape_of([b.size(ctx, 0), b.size(ctx, 1), E])],
         outputs=["context_layer"])

    model = make_model(b, "main_graph",
                       [("hidden_states", F32, ["batch_size", "sequence_length", E]),
                        ("attention_mask", I64, ["batch_size", "sequence_length"])],
                       [("context_layer", F32, ["batch_size", "sequence_length", E])])
    mask = np.ones((B, S), dtype=np.int64)
    mask[1, -4:] = 0            # right padding
    mask[2, :3] = 0             # left padding and a hole; every row keeps keys
    mask[2, 6] = 0
    inputs = {"hidden_states": randn(rng, B, S, E), "attention_mask": mask}

    def direct(inp, w):
        x = f64(inp["hidden_states"])
        q, k, v = (split_heads(x @ f64(w[lin[p][0]]) + f64(w[lin[p][1]]), H)
                   for p in ("query", "key", "value"))
        keep = (inp["attention_mask"] != 0)[:, None, None, :]
        return {"context_layer": join_heads(sdpa(q, k, v, 1.0 / math.sqrt(D), keep=keep))}

    return Case(name, "BERT self-attention with an int64 attention_mask turned into an additive "
                "(1 - mask) * finfo.min bias in the graph; transposed-weight MatMul+Add, opset 17",
                model, inputs, b.weights, direct)


def llama3_gqa_rotary():
    """LlamaAttention (eager) with LlamaRotaryEmbedding, GQA repeat_kv and the causal mask of
    _update_causal_mask, exported without constant folding of the weight transposes."""
    name, E, HQ, HKV, D, S, B = "llama3_gqa_rotary", 64, 4, 2, 16, 13, 2
    rng = rng_for(name)
    b = GraphBuilder("/self_attn")
    prefix = "model.layers.0.self_attn."
    w = {}
    for part, n_out in (("q_proj", HQ * D), ("k_proj", HKV * D), ("v_proj", HKV * D),
                        ("o_proj", E)):
        n_in = E if part != "o_proj" else HQ * D
        w[part] = b.init(prefix + part + ".weight", weight(rng, n_in, n_out).T.copy())  # [out, in]
    theta = 500000.0
    inv_freq = b.init("model.rotary_emb.inv_freq",
                      (1.0 / theta ** (np.arange(0, D, 2) / D)).astype(np.float32))

    def linear(x, part):                    # nn.Linear without bias, weight [out, in]
        scope = "/self_attn/" + part
        wt = b.op("Transpose", [w[part]], scope=scope, perm=[1, 0])
        return b.op("MatMul", [x, wt], scope=scope)

    def heads(t, n):                        # view(bsz, q_len, n, D).transpose(1, 2)
        hs = "hidden_states"
        t4 = b.view(t, [b.size(hs, 0), b.size(hs, 1), n, D])
        return b.op("Transpose", [t4], perm=[0, 2, 1, 3])

    q = heads(linear("hidden_states", "q_proj"), HQ)
    k = heads(linear("hidden_states", "k_proj"), HKV)
    v = heads(linear("hidden_states", "v_proj"), HKV)

    # rotary_emb: inv_freq[None, :, None].expand(bsz, -1, 1) @ position_ids[:, None, :].float()
    rs = "/rotary_emb"
    f = b.op("Unsqueeze", [inv_freq, b.const([0], scope=rs)], scope=rs)
    f = b.op("Unsqueeze", [f, b.const([2], scope=rs)], scope=rs)
    f = b.torch_expand(f, b.shape_of([b.size("position_ids", 0, scope=rs), -1, 1], scope=rs),
                       scope=rs)
    pos = b.op("Unsqueeze", ["position_ids", b.const([1], scope=rs)], scope=rs)
    pos = b.op("Cast", [pos], scope=rs, to=F32)
    freqs = b.op("MatMul", [f, pos], scope=rs)
    freqs = b.op("Transpose", [freqs], scope=rs, perm=[0, 2, 1])
    emb = b.op("Concat", [freqs, freqs], scope=rs, axis=-1)
    cos = b.op("Unsqueeze", [b.op("Cos", [emb], scope=rs), b.const([1])])    # unsqueeze_dim=1
    sin = b.op("Unsqueeze", [b.op("Sin", [emb], scope=rs), b.const([1])])

    def rotate(t):                          # t * cos + rotate_half(t) * sin
        x1 = b.op("Slice", [t, b.const([0]), b.const([D // 2]), b.const([3]), b.const([1])])
        x2 = b.op("Slice", [t, b.const([D // 2]), b.const([INT64_MAX]), b.const([3]),
                            b.const([1])])
        half = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
        return b.op("Add", [b.op("Mul", [t, cos]), b.op("Mul", [half, sin])])

    q, k = rotate(q), rotate(k)

    def repeat_kv(t):                       # [:, :, None].expand(B, Hkv, n_rep, S, D).reshape
        bsz, nkv, slen, hd = (b.size(t, i) for i in range(4))
        t5 = b.op("Unsqueeze", [t, b.const([2])])
        t5 = b.torch_expand(t5, b.shape_of([bsz, nkv, HQ // HKV, slen, hd]))
        n_heads = b.op("Mul", [nkv, b.const(HQ // HKV)])
        return b.op("Reshape", [t5, b.shape_of([bsz, n_heads, slen, hd])])

    k, v = repeat_kv(k), repeat_kv(v)

    # _update_causal_mask: full((S, S), min).triu(1) * (arange(S) > cache_position[:, None]),
    # then [None, None].expand(bsz, 1, -1, -1)
    ms = ""
    seq = b.size("hidden_states", 1, scope=ms)
    full = b.op("ConstantOfShape", [b.shape_of([seq, seq], scope=ms)], scope=ms,
                value=numpy_helper.from_array(np.array([FMIN], dtype=np.float32)))
    tri = b.op("Trilu", [full, b.const(1, scope=ms)], scope=ms, upper=1)
    arange = b.op("Range", [b.const(0, scope=ms), seq, b.const(1, scope=ms)], scope=ms)
    cache_pos = b.op("Range", [b.const(0, scope=ms), seq, b.const(1, scope=ms)], scope=ms)
    cache_pos = b.op("Reshape", [cache_pos, b.const([-1, 1], scope=ms)], scope=ms)
    later = b.op("Cast", [b.op("Greater", [arange, cache_pos], scope=ms)], scope=ms, to=F32)
    mask = b.op("Mul", [tri, later], scope=ms)
    mask = b.op("Unsqueeze", [mask, b.const([0, 1], scope=ms)], scope=ms)
    mask = b.torch_expand(mask, b.shape_of([b.size("hidden_states", 0, scope=ms), 1, -1, -1],
                                           scope=ms), scope=ms)

    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    scores = b.op("Mul", [b.op("MatMul", [q, kt]), b.const(D ** -0.5, np.float32)])
    scores = b.op("Add", [scores, mask])
    probs = b.op("Softmax", [scores], axis=-1)
    probs = b.op("Cast", [probs], to=F32)     # softmax(..., dtype=float32).to(q.dtype)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.view(ctx, [b.size("hidden_states", 0), b.size("hidden_states", 1), -1])
    wt = b.op("Transpose", [w["o_proj"]], scope="/self_attn/o_proj", perm=[1, 0])
    b.op("MatMul", [ctx, wt], scope="/self_attn/o_proj", outputs=["attn_output"])

    model = make_model(b, "main_graph",
                       [("hidden_states", F32, ["batch_size", "sequence_length", E]),
                        ("position_ids", I64, ["batch_size", "sequence_length"])],
                       [("attn_output", F32, ["batch_size", "sequence_length", E])])
    # batch 1 as transformers writes left padding (cumsum(mask) - 1, pads at 1): positions that
    # are not a uniform shift, so they change the scores (RoPE is blind to a uniform shift)
    left_padded = np.concatenate([[1, 1, 1], np.arange(S - 3)])
    positions = np.stack([np.arange(S), left_padded]).astype(np.int64)
    inputs = {"hidden_states": randn(rng, B, S, E), "position_ids": positions}

    def direct(inp, wt_):
        x = f64(inp["hidden_states"])
        q = split_heads(x @ f64(wt_[w["q_proj"]]).T, HQ)
        k = split_heads(x @ f64(wt_[w["k_proj"]]).T, HKV)
        v = split_heads(x @ f64(wt_[w["v_proj"]]).T, HKV)
        freqs = f64(inp["position_ids"])[:, :, None] * f64(wt_[inv_freq])[None, None, :]
        emb = np.concatenate([freqs, freqs], axis=-1)[:, None]          # [B, 1, S, D]

        def rope(t):
            half = np.concatenate([-t[..., D // 2:], t[..., :D // 2]], axis=-1)
            return t * np.cos(emb) + half * np.sin(emb)

        q, k = rope(q), rope(k)
        k, v = np.repeat(k, HQ // HKV, axis=1), np.repeat(v, HQ // HKV, axis=1)
        o = sdpa(q, k, v, D ** -0.5, keep=causal_keep(S))
        return {"attn_output": join_heads(o) @ f64(wt_[w["o_proj"]]).T}

    case = Case(name, "Llama-3 attention: GQA (4 query / 2 kv heads) via repeat_kv, rotary "
                "embeddings and the causal mask (ConstantOfShape/Trilu/Range/Greater) in the graph",
                model, inputs, b.weights, direct)
    case.kernels_absent = ["repeat"]    # repeat_kv is GQA: K and V read as their kv heads
    return case


def t5_relbias():
    """T5Attention (encoder self-attention): unscaled scores plus a position_bias input."""
    name, DM, H, D, S, B = "t5_relbias", 40, 2, 24, 7, 2
    rng = rng_for(name)
    b = GraphBuilder("/SelfAttention")
    w = {p: b.init("onnx::MatMul_%d" % (511 + i), weight(rng, DM, H * D))
         for i, p in enumerate(["q", "k", "v"])}
    w["o"] = b.init("onnx::MatMul_514", weight(rng, H * D, DM))
    x = "input.1"               # what the exporter calls an unnamed input

    def shape(part):            # view(batch_size, -1, n_heads, d_kv).transpose(1, 2)
        t = b.op("MatMul", [x, w[part]], scope="/SelfAttention/" + part)
        t4 = b.view(t, [b.size(x, 0), -1, H, D])
        return b.op("Transpose", [t4], perm=[0, 2, 1, 3])

    q, k, v = shape("q"), shape("k"), shape("v")
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])           # key_states.transpose(3, 2)
    scores = b.op("MatMul", [q, kt])
    scores = b.op("Add", [scores, "position_bias"])          # scores += position_bias
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.view(ctx, [b.size(x, 0), -1, H * D])             # unshape
    b.op("MatMul", [ctx, w["o"]], scope="/SelfAttention/o", outputs=["421"])

    model = make_model(b, "main_graph",
                       [(x, F32, ["batch_size", "sequence_length", DM]),
                        ("position_bias", F32, [1, H, "sequence_length", "sequence_length"])],
                       [("421", F32, ["batch_size", "sequence_length", DM])])
    inputs = {x: randn(rng, B, S, DM), "position_bias": randn(rng, 1, H, S, S)}

    def direct(inp, wt):
        xs = f64(inp[x])
        q, k, v = (split_heads(xs @ f64(wt[w[p]]), H) for p in ("q", "k", "v"))
        o = sdpa(q, k, v, 1.0, bias=f64(inp["position_bias"]))
        return {"421": join_heads(o) @ f64(wt[w["o"]])}

    return Case(name, "T5 self-attention: no 1/sqrt(d) scaling, a float position_bias input "
                "[1, H, S, S] added to the scores, bias-free projections; output named '421'",
                model, inputs, b.weights, direct)


def whisper_cross():
    """WhisperAttention as decoder cross-attention: q scaled before the product, k/v from the
    encoder states (k_proj has no bias). The 4-D form (matmul over [B, H, S, D]); the older
    bmm form over [B*H, S, D] is not used."""
    name, E, H, D, TGT, SRC, B = "whisper_cross", 48, 2, 24, 7, 11, 2
    rng = rng_for(name)
    b = GraphBuilder("/encoder_attn")
    prefix = "model.decoder.layers.0.encoder_attn."
    w = {}
    for i, part in enumerate(["q_proj", "k_proj", "v_proj", "out_proj"]):
        w[part] = b.init("onnx::MatMul_%d" % (731 + i), weight(rng, E, E))
        if part != "k_proj":
            w[part + ".bias"] = b.init(prefix + part + ".bias", randn(rng, E, scale=0.1))
    hs, enc = "hidden_states", "encoder_hidden_states"

    def linear(x, part):
        scope = "/encoder_attn/" + part
        y = b.op("MatMul", [x, w[part]], scope=scope)
        if part + ".bias" in w:
            y = b.op("Add", [w[part + ".bias"], y], scope=scope)
        return y

    def shape(t, seq_len):      # view(bsz, seq_len, H, D).transpose(1, 2)
        t4 = b.view(t, [b.size(hs, 0), seq_len, H, D])
        return b.op("Transpose", [t4], perm=[0, 2, 1, 3])

    q = b.op("Mul", [linear(hs, "q_proj"), b.const(D ** -0.5, np.float32)])   # * self.scaling
    q = shape(q, b.size(hs, 1))
    k = shape(linear(enc, "k_proj"), -1)
    v = shape(linear(enc, "v_proj"), -1)
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    probs = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = b.view(ctx, [b.size(hs, 0), b.size(hs, 1), E])
    y = b.op("MatMul", [ctx, w["out_proj"]], scope="/encoder_attn/out_proj")
    b.op("Add", [w["out_proj.bias"], y], scope="/encoder_attn/out_proj", outputs=["attn_output"])

    model = make_model(b, "main_graph",
                       [(hs, F32, ["batch_size", "decoder_sequence_length", E]),
                        (enc, F32, ["batch_size", "encoder_sequence_length", E])],
                       [("attn_output", F32, ["batch_size", "decoder_sequence_length", E])])
    inputs = {hs: randn(rng, B, TGT, E), enc: randn(rng, B, SRC, E)}

    def direct(inp, wt):
        x, e = f64(inp[hs]), f64(inp[enc])
        q = (x @ f64(wt[w["q_proj"]]) + f64(wt[w["q_proj.bias"]])) * f32(D ** -0.5)
        k = e @ f64(wt[w["k_proj"]])
        v = e @ f64(wt[w["v_proj"]]) + f64(wt[w["v_proj.bias"]])
        o = sdpa(split_heads(q, H), split_heads(k, H), split_heads(v, H), 1.0)
        return {"attn_output": join_heads(o) @ f64(wt[w["out_proj"]]) + f64(wt[w["out_proj.bias"]])}

    case = Case(name, "Whisper decoder cross-attention: 7 queries over 11 encoder states, q "
                "scaled by D**-0.5 before the product, k_proj without bias, no mask",
                model, inputs, b.weights, direct)
    case.attention_covers = ["_encoder_attn_Mul_output_0"]   # the query's scale
    return case


def whisper_external():
    """whisper_cross with its weights in an external-data side file, as exporters save models
    over 2 GB."""
    case = whisper_cross()
    case.name = "whisper_external"
    case.description = "whisper_cross with every initializer in the side file " \
                       "whisper_external.weights (ONNX external data)"
    case.external = True
    return case


def sdpa_bool_mask():
    """Scores masked by a bool model input: Where(mask, scores, -inf), the decomposition of
    torch's scaled_dot_product_attention with a bool attn_mask (true = attend)."""
    name, B, H, S, T, D = "sdpa_bool_mask", 2, 3, 5, 9, 16
    rng = rng_for(name)
    b = GraphBuilder("/sdpa")
    scores = b.op("MatMul", ["query", b.op("Transpose", ["key"], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(D ** -0.5, np.float32)])
    masked = b.op("Where", ["attn_mask", scores, b.const(-np.inf, np.float32)])
    probs = b.op("Softmax", [masked], axis=-1)
    b.op("MatMul", [probs, "value"], outputs=["attn_output"])
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch", H, "q_len", D]),
                        ("key", F32, ["batch", H, "kv_len", D]),
                        ("value", F32, ["batch", H, "kv_len", D]),
                        ("attn_mask", onnx.TensorProto.BOOL, ["batch", 1, 1, "kv_len"])],
                       [("attn_output", F32, ["batch", H, "q_len", D])])
    keep = rng.random((B, 1, 1, T)) < 0.7
    keep[:, :, :, 0] = True    # every row keeps a key
    inputs = {"query": randn(rng, B, H, S, D), "key": randn(rng, B, H, T, D),
              "value": randn(rng, B, H, T, D), "attn_mask": keep}

    def direct(inp, wt):
        o = sdpa(f64(inp["query"]), f64(inp["key"]), f64(inp["value"]), f32(D ** -0.5),
                 keep=np.broadcast_to(inp["attn_mask"], (B, H, S, T)))
        return {"attn_output": o}

    return Case(name, "SDPA decomposed with a bool attn_mask input [B,1,1,T]: "
                "Where(mask, scores, -inf)", model, inputs, {}, direct)


def torch_sdpa_export(name, bool_mask):
    """torch.nn.functional.scaled_dot_product_attention as torch.onnx.export (TorchScript,
    opsets 14 to 17) writes it: the default scale 1/√D computed from Shape, Slice, Cast, Sqrt
    and Div; q and kᵀ each multiplied by √scale before the product; the mask added (a bool one
    as Where(mask, 0, -inf)); Softmax; with a bool mask Where(IsNaN(p), 0, p), so that a row
    whose every key is masked gives 0 instead of NaN; the product with v."""
    B, H, S, T, D = 2, 3, 5, 9, 16
    rng = rng_for(name)
    b = GraphBuilder("")
    shape = b.op("Shape", ["query"])
    last = b.op("Slice", [shape, b.const([-1]), b.const([np.iinfo(np.int64).max])])
    size = b.op("Cast", [last], to=onnx.TensorProto.FLOAT)
    scale = b.op("Div", [b.const([1.0], np.float32), b.op("Sqrt", [size])])
    scale = b.op("Cast", [scale], to=onnx.TensorProto.FLOAT)
    key_t = b.op("Transpose", ["key"], perm=[0, 1, 3, 2])
    query_scaled = b.op("Mul", ["query", b.op("Sqrt", [scale])])
    key_scaled = b.op("Mul", [key_t, b.op("Sqrt", [scale])])
    scores = b.op("MatMul", [query_scaled, key_scaled])
    mask = "attn_mask"
    if bool_mask:
        mask = b.op("Where", ["attn_mask", b.const(0.0, np.float32),
                              b.const(-np.inf, np.float32)])
    probs = b.op("Softmax", [b.op("Add", [scores, mask])], axis=-1)
    if bool_mask:
        probs = b.op("Where", [b.op("IsNaN", [probs]), b.const(0.0, np.float32), probs])
    b.op("MatMul", [probs, "value"], outputs=["attn_output"])
    mask_type = onnx.TensorProto.BOOL if bool_mask else F32
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch", H, "q_len", D]),
                        ("key", F32, ["batch", H, "kv_len", D]),
                        ("value", F32, ["batch", H, "kv_len", D]),
                        ("attn_mask", mask_type, ["batch", 1, "q_len", "kv_len"])],
                       [("attn_output", F32, ["batch", H, "q_len", D])])
    inputs = {"query": randn(rng, B, H, S, D), "key": randn(rng, B, H, T, D),
              "value": randn(rng, B, H, T, D)}
    if bool_mask:
        keep = rng.random((B, 1, S, T)) < 0.6
        keep[:, :, :, 0] = True
        keep[1, 0, 2, :] = False     # a row with no key: 0 through the guard
        inputs["attn_mask"] = keep
    else:
        inputs["attn_mask"] = randn(rng, B, 1, S, T)

    def direct(inp, wt):
        q, k, v = f64(inp["query"]), f64(inp["key"]), f64(inp["value"])
        if not bool_mask:
            return {"attn_output": sdpa(q, k, v, D ** -0.5, bias=f64(inp["attn_mask"]))}
        with np.errstate(invalid="ignore"):
            o = sdpa(q, k, v, D ** -0.5, keep=np.broadcast_to(inp["attn_mask"], (B, H, S, T)))
        return {"attn_output": np.nan_to_num(o, nan=0.0)}

    what = ("a bool attn_mask (one row with no key) as Where(mask, 0, -inf), and the guard "
            "Where(IsNaN(p), 0, p) after the softmax") if bool_mask else "a float attn_mask"
    case = Case(name, "SDPA as torch.onnx.export writes it, with " + what + ": q and kᵀ each "
                "scaled by the square root of a scale computed from the query's shape",
                model, inputs, {}, direct)
    case.attention_covers = ["_Mul_output_0", "_Mul_1_output_0"]   # q's and kᵀ's scales
    return case


def sdpa_export():
    return torch_sdpa_export("sdpa_export", bool_mask=False)


def sdpa_dynamo_gqa():
    """scaled_dot_product_attention(q, k, v, enable_gqa=True) as the dynamo exporter
    (torch.onnx.export(..., dynamo=True), opset 18) writes it: k and v repeated as repeat_kv
    does (Unsqueeze, Expand by [B, Hkv, g, T, D] from Shape slices, Reshape to [B, Hq, T, D]);
    kᵀ made in 3-D, the batch and heads merged (Reshape to [-1, T, D], Transpose [0, 2, 1],
    Reshape back to [B, Hq, D, T] from Shape slices); q and kᵀ each times √(1/√D); MatMul,
    Softmax, MatMul."""
    name, B, H, HKV, S, T, D = "sdpa_dynamo_gqa", 2, 4, 2, 5, 9, 16
    g = H // HKV
    rng = rng_for(name)
    b = GraphBuilder("")
    batch = b.op("Shape", ["query"], start=0, end=1)
    kv_len = b.op("Shape", ["key"], start=2, end=3)
    expanded = b.op("Concat", [batch, b.const([HKV]), b.const([g]), kv_len, b.const([D])],
                    axis=0)
    merged = b.op("Concat", [batch, b.const([H]), kv_len, b.const([D])], axis=0)

    def repeat_kv(x):
        x = b.op("Expand", [b.op("Unsqueeze", [x, b.const(2)]), expanded])
        return b.op("Reshape", [x, merged])

    key, value = repeat_kv("key"), repeat_kv("value")
    shape = b.op("Shape", [key])
    last = b.op("Slice", [shape, b.const([-1]), b.const([np.iinfo(np.int64).max])])
    rows = b.op("Slice", [shape, b.const([-2]), b.const([-1])])
    lead = b.op("Slice", [shape, b.const([np.iinfo(np.int64).min]), b.const([-2])])
    key_3d = b.op("Reshape", [key, b.op("Concat", [b.const([-1]), rows, last], axis=0)])
    swapped = b.op("Transpose", [key_3d], perm=[0, 2, 1])
    key_t = b.op("Reshape", [swapped, b.op("Concat", [lead, last, rows], axis=0)])
    half = b.init("val_half", np.array([D ** -0.25], np.float32))
    scores = b.op("MatMul", [b.op("Mul", ["query", half]), b.op("Mul", [key_t, half])])
    probs = b.op("Softmax", [scores], axis=-1)
    b.op("MatMul", [probs, value], outputs=["attn_output"])
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch", H, "q_len", D]),
                        ("key", F32, ["batch", HKV, "kv_len", D]),
                        ("value", F32, ["batch", HKV, "kv_len", D])],
                       [("attn_output", F32, ["batch", H, "q_len", D])],
                       opsets=(("", 18),))
    inputs = {"query": randn(rng, B, H, S, D), "key": randn(rng, B, HKV, T, D),
              "value": randn(rng, B, HKV, T, D)}

    def direct(inp, wt):
        k = np.repeat(f64(inp["key"]), g, axis=1)
        v = np.repeat(f64(inp["value"]), g, axis=1)
        return {"attn_output": sdpa(f64(inp["query"]), k, v, D ** -0.5)}

    case = Case(name, "SDPA with enable_gqa as the dynamo exporter writes it: repeat_kv by "
                "Unsqueeze/Expand/Reshape, kᵀ transposed in 3-D with the batch and heads "
                "merged, q and kᵀ each scaled by √(1/√D)", model, inputs, b.weights, direct,
                checkable=False)
    # The repeats and the kᵀ reshapes join the attention kernel: K and V are read as
    # kv heads, never repeated.
    case.attention_covers = [key, value, swapped]
    return case


def sdpa_export_bool_mask():
    return torch_sdpa_export("sdpa_export_bool_mask", bool_mask=True)


def qk_norm_sdpa():
    """Qwen 3's per-head RMS norms of q and k before the product, as torch.export writes
    them (here at opset 17, which Debian's onnx checks): Pow(x, 2), ReduceMean over the head dim, Add of eps, Sqrt, Reciprocal (its
    rsqrt), Mul by x and by the weight; then the product, the scale, Softmax and V."""
    name, B, H, S, D = "qk_norm_sdpa", 2, 3, 7, 16
    rng = rng_for(name)
    b = GraphBuilder("")
    wq = b.init("q_norm.weight", (1.0 + randn(rng, D, scale=0.2)).astype(np.float32))
    wk = b.init("k_norm.weight", (1.0 + randn(rng, D, scale=0.2)).astype(np.float32))

    def rms_norm(x, w):
        mean = b.op("ReduceMean", [b.op("Pow", [x, b.const(2.0, np.float32)])], axes=[-1],
                    keepdims=1)
        inverse = b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [mean, b.const(
            1e-6, np.float32)])])])
        return b.op("Mul", [b.op("Mul", [x, inverse]), w])
    q, k = rms_norm("query", wq), rms_norm("key", wk)
    scores = b.op("Mul", [b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                          b.const(D ** -0.5, np.float32)])
    probs = b.op("Softmax", [scores], axis=-1)
    b.op("MatMul", [probs, "value"], outputs=["attn_output"])
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch", H, "seq", D]),
                        ("key", F32, ["batch", H, "seq", D]),
                        ("value", F32, ["batch", H, "seq", D])],
                       [("attn_output", F32, ["batch", H, "seq", D])])
    inputs = {"query": randn(rng, B, H, S, D, scale=2.0), "key": randn(rng, B, H, S, D),
              "value": randn(rng, B, H, S, D)}

    def direct(inp, w):
        def norm(x, weight):
            x = f64(x)
            return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * f64(weight)
        return {"attn_output": sdpa(norm(inp["query"], w["q_norm.weight"]),
                                    norm(inp["key"], w["k_norm.weight"]), f64(inp["value"]),
                                    D ** -0.5)}

    return Case(name, "Qwen 3's RMS norms of q and k per head (Reciprocal of Sqrt, as "
                "torch.export writes rsqrt), then attention", model, inputs, b.weights, direct)


def gpt2_block_ln():
    """A GPT-2 block's first half: LayerNormalization (which attnc does not import), the
    attention of gpt2_causal, the residual Add. Checked through `attnc import
    --attention-only`: the attention block alone, from the LayerNorm's output to c_proj."""
    base = gpt2_causal()
    name, E, B, S = "gpt2_block_ln", 48, 2, 13
    rng = rng_for(name)
    model = onnx.ModelProto()
    model.CopyFrom(base.model)
    graph = model.graph
    gamma = (1.0 + randn(rng, E, scale=0.1)).astype(np.float32)
    beta = randn(rng, E, scale=0.1)
    graph.initializer.extend([numpy_helper.from_array(gamma, "transformer.h.0.ln_1.weight"),
                              numpy_helper.from_array(beta, "transformer.h.0.ln_1.bias")])
    # The attention now reads ln_output instead of hidden_states.
    for n in graph.node:
        for i, x in enumerate(n.input):
            if x == "hidden_states":
                n.input[i] = "ln_output"
    ln = helper.make_node("LayerNormalization", ["hidden_states", "transformer.h.0.ln_1.weight",
                                                 "transformer.h.0.ln_1.bias"], ["ln_output"],
                          name="/ln_1/LayerNormalization", axis=-1, epsilon=1e-5)
    residual = helper.make_node("Add", ["attn_output", "hidden_states"], ["block_output"],
                                name="/Add")
    nodes = [ln] + list(graph.node) + [residual]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.output[:]
    graph.output.extend([helper.make_tensor_value_info(
        "block_output", F32, ["batch_size", "sequence_length", E])])
    weights = dict(base.weights)
    weights["transformer.h.0.ln_1.weight"] = gamma
    weights["transformer.h.0.ln_1.bias"] = beta
    inputs = {"hidden_states": randn(rng, B, S, E)}

    def direct(inp, w):
        x = f64(inp["hidden_states"])
        mean = x.mean(-1, keepdims=True)
        ln = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
        ln = ln * f64(gamma) + f64(beta)
        attn = base.direct({"hidden_states": ln}, w)["attn_output"]
        return {"block_output": attn + x}

    case = Case(name, "LayerNorm, GPT-2 causal attention, residual: attnc imports the "
                "attention block alone (--attention-only)", model, inputs, weights, direct)
    case.attention_only = {"inputs": ["ln_output"], "output": "attn_output",
                           "left_out": ["/ln_1/LayerNormalization", "/Add"]}
    return case


def sdpa_bool_mask_ln():
    """sdpa_export_bool_mask followed by a LayerNormalization of its output (a post-norm):
    checked through `attnc import --attention-only`, whose block finder must see the
    attention's end through PyTorch's Where(IsNaN(p), 0, p) guard between the Softmax and
    the product with V."""
    base = sdpa_export_bool_mask()
    name = "sdpa_bool_mask_ln"
    rng = rng_for(name)
    model = onnx.ModelProto()
    model.CopyFrom(base.model)
    graph = model.graph
    D = base.inputs["query"].shape[-1]
    gamma = (1.0 + randn(rng, D, scale=0.1)).astype(np.float32)
    beta = randn(rng, D, scale=0.1)
    graph.initializer.extend([numpy_helper.from_array(gamma, "out_norm.weight"),
                              numpy_helper.from_array(beta, "out_norm.bias")])
    graph.node.extend([helper.make_node(
        "LayerNormalization", ["attn_output", "out_norm.weight", "out_norm.bias"],
        ["normed_output"], name="/out_norm/LayerNormalization", axis=-1, epsilon=1e-5)])
    shape = graph.output[0].type.tensor_type.shape
    del graph.output[:]
    out = helper.make_tensor_value_info("normed_output", F32, None)
    out.type.tensor_type.shape.CopyFrom(shape)
    graph.output.extend([out])

    def direct(inp, w):
        x = base.direct(inp, w)["attn_output"]
        mean = x.mean(-1, keepdims=True)
        normed = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
        return {"normed_output": normed * f64(gamma) + f64(beta)}

    case = Case(name, "SDPA with a bool mask as torch.onnx.export writes it (the IsNaN guard "
                "after the softmax), then a LayerNorm: attnc imports the attention block alone "
                "(--attention-only)", model, dict(base.inputs), {}, direct)
    case.attention_only = {"inputs": ["query", "key", "value", "attn_mask"],
                           "output": "attn_output",
                           "left_out": ["/out_norm/LayerNormalization"]}
    return case


def gptneox_block_ln():
    """GPT-NeoX's attention as torch.export writes it, after a LayerNormalization: one fused
    query_key_value projection viewed to [B, S, H, 3D], transposed to heads and Split along
    each head's features into q, k, v (attnc: one slice per part); after the product with V
    the Reshape to [B, H, S, D] that torch.export's SDPA ends in, then the head merge and the
    dense projection, then the residual Add. Checked through `attnc import --attention-only`:
    the block runs from the LayerNorm's output to the dense projection's bias."""
    name, E, H, D, S, B = "gptneox_block_ln", 48, 4, 12, 11, 2
    rng = rng_for(name)
    b = GraphBuilder("/layers.0/attention")
    gamma = b.init("layers.0.input_layernorm.weight",
                   (1.0 + randn(rng, E, scale=0.1)).astype(np.float32))
    beta = b.init("layers.0.input_layernorm.bias", randn(rng, E, scale=0.1))
    w_qkv = b.init("val_50", weight(rng, E, 3 * E))
    b_qkv = b.init("layers.0.attention.query_key_value.bias", randn(rng, 3 * E, scale=0.1))
    w_dense = b.init("val_181", weight(rng, E, E))
    b_dense = b.init("layers.0.attention.dense.bias", randn(rng, E, scale=0.1))

    ln = b.op("LayerNormalization", ["hidden_states", gamma, beta], scope="/input_layernorm",
              outputs=["ln_output"], axis=-1, epsilon=1e-5)
    qkv = b.op("Add", [b.op("MatMul", [ln, w_qkv]), b_qkv])
    batch, seq = b.size("hidden_states", 0), b.size("hidden_states", 1)
    heads = b.op("Transpose", [b.view(qkv, [batch, seq, -1, 3 * D])], perm=[0, 2, 1, 3])
    q, k, v = b.op("Split", [heads, b.const([D, D, D])], n_out=3, axis=-1)
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(D ** -0.5, np.float32)])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    ctx = b.view(ctx, [batch, H, seq, D])
    merged = b.view(b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), [batch, seq, -1])
    attn = b.op("Add", [b.op("MatMul", [merged, w_dense]), b_dense], outputs=["attn_output"])
    b.op("Add", [attn, "hidden_states"], scope="", outputs=["block_output"])

    model = make_model(b, "main_graph", [("hidden_states", F32, ["batch", "sequence", E])],
                       [("block_output", F32, ["batch", "sequence", E])])
    inputs = {"hidden_states": randn(rng, B, S, E)}

    def direct(inp, w):
        x = f64(inp["hidden_states"])
        mean = x.mean(-1, keepdims=True)
        ln = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
        ln = ln * f64(w[gamma]) + f64(w[beta])
        qkv = (ln @ f64(w[w_qkv]) + f64(w[b_qkv])).reshape(B, S, H, 3 * D).transpose(0, 2, 1, 3)
        q, k, v = np.split(qkv, 3, axis=-1)
        o = sdpa(q, k, v, f32(D ** -0.5))
        return {"block_output": join_heads(o) @ f64(w[w_dense]) + f64(w[b_dense]) + x}

    case = Case(name, "GPT-NeoX attention (fused qkv viewed to heads, then Split) between a "
                "LayerNorm and the residual Add: attnc imports the attention block alone "
                "(--attention-only)", model, inputs, b.weights, direct)
    case.attention_only = {"inputs": ["ln_output"], "output": "attn_output",
                           "left_out": ["/input_layernorm/LayerNormalization", "/Add"]}
    return case


def falcon_fused_qkv():
    """Falcon's attention (new_decoder_architecture) as torch.export writes it: one fused
    query_key_value projection viewed as [B, S, KV, G + 2, D] (G query heads, then a key and a
    value per kv head); the queries a Slice of the first G, the key and value `qkv[:, :, :,
    [-2]]` and `[[-1]]`: the axis moved to the front, GatherND at a constant row, moved back;
    broadcast over the G heads, flattened to [B, S, H, D], transposed to heads. Causal."""
    name, E, KV, G, D, S, B = "falcon_fused_qkv", 48, 2, 2, 12, 9, 2
    H = KV * G
    rng = rng_for(name)
    b = GraphBuilder("/h.0/self_attention")
    w_qkv = b.init("permute", weight(rng, E, KV * (G + 2) * D))
    w_dense = b.init("permute_2", weight(rng, H * D, E))
    batch, seq = b.size("hidden_states", 0), b.size("hidden_states", 1)
    qkv = b.view(b.op("MatMul", ["hidden_states", w_qkv]), [batch, seq, KV, G + 2, D])
    query = b.op("Slice", [qkv, b.const([0]), b.const([G]), b.const([3]), b.const([1])])
    front = b.op("Transpose", [qkv], perm=[3, 0, 1, 2, 4])

    def row(index):      # qkv[:, :, :, [index]]
        picked = b.op("GatherND", [front, b.const([[index]])])
        return b.op("Transpose", [picked], perm=[1, 2, 3, 0, 4])

    def heads(t):         # broadcast_to(query.shape), flatten(2, 3), transpose(1, 2)
        t = b.op("Expand", [t, b.shape_of([batch, seq, KV, G, D])])
        return b.op("Transpose", [b.view(t, [batch, seq, H, D])], perm=[0, 2, 1, 3])

    q, k, v = heads(query), heads(row(-2)), heads(row(-1))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(D ** -0.5, np.float32)])
    keep = b.op("Trilu", [b.op("ConstantOfShape", [b.shape_of([seq, seq])],
                                value=numpy_helper.from_array(np.array([1], np.bool_)))],
                upper=0)
    scores = b.op("Where", [keep, scores, b.const(-np.inf, np.float32)])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    merged = b.view(b.op("Transpose", [ctx], perm=[0, 2, 1, 3]), [batch, seq, H * D])
    b.op("MatMul", [merged, w_dense], outputs=["attn_output"])

    model = make_model(b, "main_graph", [("hidden_states", F32, ["batch", "sequence", E])],
                       [("attn_output", F32, ["batch", "sequence", E])])
    inputs = {"hidden_states": randn(rng, B, S, E)}

    def direct(inp, w):
        qkv = (f64(inp["hidden_states"]) @ f64(w[w_qkv])).reshape(B, S, KV, G + 2, D)
        def to_heads(t):
            t = np.broadcast_to(t, (B, S, KV, G, D)).reshape(B, S, H, D)
            return t.transpose(0, 2, 1, 3)
        q, k, v = (to_heads(qkv[:, :, :, :G]), to_heads(qkv[:, :, :, [G]]),
                   to_heads(qkv[:, :, :, [G + 1]]))
        o = sdpa(q, k, v, f32(D ** -0.5), keep=causal_keep(S))
        return {"attn_output": join_heads(o) @ f64(w[w_dense])}

    case = Case(name, "Falcon's fused qkv as torch.export writes it (view to kv groups, Slice "
                "of the queries, GatherND at a constant row for the key and the value, Expand "
                "over the group), causal", model, inputs, b.weights, direct)
    case.kernels_absent = ["repeat"]    # the Expand over each group is GQA
    return case


MS_OPSETS = (("", 17), ("com.microsoft", 1))


def ms_attention():
    """com.microsoft Attention (BERT fused by onnxruntime's transformer optimizer)."""
    name, E, H, D, S, B = "ms_attention", 48, 3, 16, 11, 2
    rng = rng_for(name)
    b = GraphBuilder("")
    wq = b.init("Attention_0_qkv_weight", weight(rng, E, 3 * E))
    bq = b.init("Attention_0_qkv_bias", randn(rng, 3 * E, scale=0.1))
    b.nodes.append(helper.make_node("Attention", ["input", wq, bq, "mask_index"], ["output"],
                                    name="Attention_0", domain="com.microsoft", num_heads=H))
    model = make_model(b, "main_graph",
                       [("input", F32, ["batch_size", "sequence_length", E]),
                        ("mask_index", I32, ["batch_size", "sequence_length"])],
                       [("output", F32, ["batch_size", "sequence_length", E])], opsets=MS_OPSETS)
    mask = np.ones((B, S), dtype=np.int32)
    mask[1, -3:] = 0
    inputs = {"input": randn(rng, B, S, E), "mask_index": mask}

    def direct(inp, w):
        qkv = f64(inp["input"]) @ f64(w[wq]) + f64(w[bq])
        q, k, v = (split_heads(t, H) for t in np.split(qkv, 3, axis=-1))
        keep = (inp["mask_index"] != 0)[:, None, None, :]
        return {"output": join_heads(sdpa(q, k, v, 1.0 / math.sqrt(D), keep=keep))}

    return Case(name, "com.microsoft Attention: packed QKV weight [48, 144] + bias, 3 heads, "
                "2-D int32 mask_index (1 = keep) with padding", model, inputs, b.weights, direct,
                checkable=False)


def ms_mha():
    """com.microsoft MultiHeadAttention over already projected q/k/v, cross-attention shaped."""
    name, E, H, S, T, B, SCALE = "ms_mha", 64, 4, 7, 11, 2, 0.2
    rng = rng_for(name)
    b = GraphBuilder("")
    b.nodes.append(helper.make_node(
        "MultiHeadAttention", ["query", "key", "value", "", "key_padding_mask"], ["output"],
        name="MultiHeadAttention_0", domain="com.microsoft", num_heads=H, scale=SCALE))
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch_size", "sequence_length", E]),
                        ("key", F32, ["batch_size", "kv_sequence_length", E]),
                        ("value", F32, ["batch_size", "kv_sequence_length", E]),
                        ("key_padding_mask", I32, ["batch_size", "kv_sequence_length"])],
                       [("output", F32, ["batch_size", "sequence_length", E])], opsets=MS_OPSETS)
    mask = np.ones((B, T), dtype=np.int32)
    mask[0, -2:] = 0
    mask[1, [0, 5]] = 0
    inputs = {"query": randn(rng, B, S, E), "key": randn(rng, B, T, E),
              "value": randn(rng, B, T, E), "key_padding_mask": mask}

    def direct(inp, w):
        q, k, v = (split_heads(f64(inp[n]), H) for n in ("query", "key", "value"))
        keep = (inp["key_padding_mask"] != 0)[:, None, None, :]
        return {"output": join_heads(sdpa(q, k, v, f32(SCALE), keep=keep))}

    return Case(name, "com.microsoft MultiHeadAttention: separate projected q [B,7,64] and k/v "
                "[B,11,64], 4 heads, scale=0.2, int32 key_padding_mask [B, 11]",
                model, inputs, {}, direct, checkable=False)


def ms_gqa():
    """com.microsoft GroupQueryAttention, prompt (prefill) without past state."""
    name, HQ, HKV, D, S, B = "ms_gqa", 4, 2, 24, 13, 2
    rng = rng_for(name)
    b = GraphBuilder("")
    b.nodes.append(helper.make_node(
        "GroupQueryAttention",
        ["query", "key", "value", "", "", "seqlens_k", "total_sequence_length"],
        ["output", "present_key", "present_value"],
        name="GroupQueryAttention_0", domain="com.microsoft", num_heads=HQ, kv_num_heads=HKV))
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch_size", "sequence_length", HQ * D]),
                        ("key", F32, ["batch_size", "sequence_length", HKV * D]),
                        ("value", F32, ["batch_size", "sequence_length", HKV * D]),
                        ("seqlens_k", I32, ["batch_size"]),
                        ("total_sequence_length", I32, [])],
                       [("output", F32, ["batch_size", "sequence_length", HQ * D])],
                       opsets=MS_OPSETS)
    inputs = {"query": randn(rng, B, S, HQ * D), "key": randn(rng, B, S, HKV * D),
              "value": randn(rng, B, S, HKV * D),
              "seqlens_k": np.full(B, S - 1, dtype=np.int32),
              "total_sequence_length": np.array(S, dtype=np.int32)}

    def direct(inp, w):
        q = split_heads(f64(inp["query"]), HQ)
        k = np.repeat(split_heads(f64(inp["key"]), HKV), HQ // HKV, axis=1)
        v = np.repeat(split_heads(f64(inp["value"]), HKV), HQ // HKV, axis=1)
        return {"output": join_heads(sdpa(q, k, v, 1.0 / math.sqrt(D), keep=causal_keep(S)))}

    return Case(name, "com.microsoft GroupQueryAttention prefill: 4 query / 2 kv heads of 24, "
                "causal, no past (past_key/past_value omitted), seqlens_k = S-1, "
                "total_sequence_length = S; present_key/present_value computed but not outputs",
                model, inputs, {}, direct, checkable=False)


def onnx_attention23():
    """ONNX opset-23 Attention with 4-D inputs, GQA by head count, causal and softcapped."""
    name, HQ, HKV, D, S, B, CAP = "onnx_attention23", 6, 2, 16, 13, 2, 4.0
    rng = rng_for(name)
    b = GraphBuilder("")
    b.nodes.append(helper.make_node("Attention", ["Q", "K", "V"], ["Y"], name="/attn/Attention",
                                    is_causal=1, softcap=CAP))
    model = make_model(b, "main_graph",
                       [("Q", F32, ["batch_size", HQ, "sequence_length", D]),
                        ("K", F32, ["batch_size", HKV, "sequence_length", D]),
                        ("V", F32, ["batch_size", HKV, "sequence_length", D])],
                       [("Y", F32, ["batch_size", HQ, "sequence_length", D])],
                       opsets=(("", 23),), ir_version=11)
    # scores of a few units, so that the softcap of 4 bends them noticeably
    inputs = {"Q": randn(rng, B, HQ, S, D, scale=1.5), "K": randn(rng, B, HKV, S, D, scale=1.5),
              "V": randn(rng, B, HKV, S, D)}

    def direct(inp, w):
        q = f64(inp["Q"])
        k = np.repeat(f64(inp["K"]), HQ // HKV, axis=1)
        v = np.repeat(f64(inp["V"]), HQ // HKV, axis=1)
        return {"Y": sdpa(q, k, v, 1.0 / math.sqrt(D), keep=causal_keep(S), softcap=CAP)}

    return Case(name, "ONNX opset-23 Attention: 4-D Q [B,6,S,16], K/V [B,2,S,16] (GQA), "
                "is_causal=1, softcap=4, default scale", model, inputs, {}, direct,
                checkable=False)


def strided_slices():
    """Slices with steps of a computed tensor's fixed last axis: q's features interleaved as
    rotate_every_two takes them (x[..., 1::2], x[..., ::2]: the axis a multiple of the step)
    times a constant reversed by a step of -1, and k's by steps of 5 and 7 that do not divide
    its 12 features (a step's last entry near the end, and a span within it)."""
    name, B, H, S, T, D = "strided_slices", 2, 2, 5, 7, 12
    rng = rng_for(name)
    b = GraphBuilder("/strided")

    def every(x, start, end, step):
        return b.op("Slice", [x, b.const([start]), b.const([end]), b.const([3]),
                              b.const([step])])

    ramp = b.init("ramp", (np.arange(D, dtype=np.float32) + 1) / D)
    reversed_ramp = b.op("Slice", [ramp, b.const([-1]), b.const([-INT64_MAX - 1]),
                                   b.const([0]), b.const([-1])])       # ramp[::-1]
    q = b.op("Concat", [every("query", 1, INT64_MAX, 2), every("query", 0, INT64_MAX, 2)],
             axis=-1)
    q = b.op("Mul", [q, reversed_ramp])
    k = b.op("Concat", [every("key", 1, INT64_MAX, 5), every("key", 0, 10, 5),
                        every("key", 2, -2, 7), every("key", 3, 8, 1)], axis=-1)
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(D ** -0.5, np.float32)])
    probs = b.op("Softmax", [scores], axis=-1)
    b.op("MatMul", [probs, "value"], outputs=["attn_output"])
    model = make_model(b, "main_graph",
                       [("query", F32, ["batch", H, "q_len", D]),
                        ("key", F32, ["batch", H, "kv_len", D]),
                        ("value", F32, ["batch", H, "kv_len", D])],
                       [("attn_output", F32, ["batch", H, "q_len", D])])
    inputs = {"query": randn(rng, B, H, S, D), "key": randn(rng, B, H, T, D),
              "value": randn(rng, B, H, T, D)}

    def direct(inp, wt):
        q, k = f64(inp["query"]), f64(inp["key"])
        ramp_ = f64(wt[ramp])
        q = np.concatenate([q[..., 1::2], q[..., ::2]], axis=-1) * ramp_[::-1]
        k = np.concatenate([k[..., 1::5], k[..., 0:10:5], k[..., 2:-2:7], k[..., 3:8]], axis=-1)
        return {"attn_output": sdpa(q, k, f64(inp["value"]), f32(D ** -0.5))}

    return Case(name, "Slices with steps: q's features interleaved (steps of 2), times a "
                "constant reversed by a step of -1; k's by steps of 5 and 7 of 12 features",
                model, inputs, b.weights, direct)


MODELS = [gpt2_causal, bert_padding, llama3_gqa_rotary, t5_relbias, whisper_cross,
          ms_attention, ms_mha, ms_gqa, onnx_attention23, whisper_external, sdpa_bool_mask,
          sdpa_export, sdpa_export_bool_mask, sdpa_dynamo_gqa, gpt2_block_ln,
          sdpa_bool_mask_ln, qk_norm_sdpa, gptneox_block_ln, falcon_fused_qkv,
          strided_slices]


# ---------------------------------------------------------------------------------------------
# Checking and writing


def graph_name(onnx_name):
    """The importer's rule: characters outside [A-Za-z0-9_] become '_', and 'v_' is prefixed
    when the result is empty or starts with a digit."""
    ident = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in onnx_name)
    if not ident or ident[0].isdigit():
        ident = "v_" + ident
    return ident


def output_file_name(onnx_name):
    return graph_name(onnx_name) + ".npy"


def rel_err(out, ref):
    ref = f64(ref)
    n = np.linalg.norm(ref)
    return float(np.linalg.norm(f64(out) - ref) / (n if n else 1.0))


def verify(case):
    """Checker (where onnx 1.12 can), evaluator vs the direct computation, sane numbers."""
    if case.checkable:
        onnx.checker.check_model(case.model, full_check=True)
    got = onnx_numpy.run(case.model, case.inputs, keep_float64=True)
    want = case.direct(case.inputs, case.weights)
    if sorted(got) != sorted(want):
        raise AssertionError("%s: outputs %s vs direct %s" % (case.name, sorted(got), sorted(want)))
    errors = {}
    for name, ref in want.items():
        if got[name].shape != ref.shape:
            raise AssertionError("%s/%s: shape %s vs direct %s"
                                 % (case.name, name, got[name].shape, ref.shape))
        if not np.all(np.isfinite(got[name])):
            raise AssertionError("%s/%s: non-finite values" % (case.name, name))
        errors[name] = rel_err(got[name], ref)
        if errors[name] > SELF_CHECK_TOL:
            raise AssertionError("%s/%s: evaluator and direct numpy differ, rel err %.3g"
                                 % (case.name, name, errors[name]))
    names = [output_file_name(o.name) for o in case.model.graph.output]
    if len(set(names)) != len(names):
        raise AssertionError("%s: output file names collide: %s" % (case.name, names))
    return errors


def op_list(model):
    ops = set()
    for n in model.graph.node:
        ops.add(n.op_type if n.domain in ("", "ai.onnx") else "%s.%s" % (n.domain, n.op_type))
    return sorted(ops)


def write_case(case, outdir):
    rel = lambda *p: "/".join(p)    # noqa: E731  (paths in models.json, relative to OUTDIR)
    if case.external:
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        onnx.save(model, os.path.join(outdir, case.name + ".onnx"), save_as_external_data=True,
                  all_tensors_to_one_file=True, location=case.name + ".weights",
                  size_threshold=0)
    else:
        onnx.save(case.model, os.path.join(outdir, case.name + ".onnx"))
    os.makedirs(os.path.join(outdir, case.name, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(outdir, case.name, "expected"), exist_ok=True)
    inputs = {}
    for name, arr in case.inputs.items():
        path = rel(case.name, "inputs", name + ".npy")
        np.save(os.path.join(outdir, path), arr)
        inputs[name] = path
    outputs = {}
    for name, arr in onnx_numpy.run(case.model, case.inputs).items():
        file = output_file_name(name)
        path = rel(case.name, "expected", file)
        np.save(os.path.join(outdir, path), arr)
        outputs[name] = {"expected": path, "file": file, "dtype": str(arr.dtype),
                         "shape": list(arr.shape)}
    entry_extra = {}
    if case.attention_only:
        # The block's inputs and output, evaluated inside the whole model.
        spec = case.attention_only
        probe = onnx.ModelProto()
        probe.CopyFrom(case.model)
        probe.graph.output.extend([helper.make_tensor_value_info(n, F32, None)
                                   for n in spec["inputs"] + [spec["output"]]])
        values = onnx_numpy.run(probe, case.inputs)
        block = {"inputs": {}, "output": None, "left_out": spec["left_out"]}
        for n in spec["inputs"]:
            path = rel(case.name, "inputs", "block_" + output_file_name(n))
            value = values[n] if n in values else case.inputs[n]
            np.save(os.path.join(outdir, path),
                    value if value.dtype == np.bool_ else value.astype(np.float32))
            block["inputs"][n] = path
        path = rel(case.name, "expected", "block_" + output_file_name(spec["output"]))
        np.save(os.path.join(outdir, path), values[spec["output"]].astype(np.float32))
        block["output"] = {"name": spec["output"], "expected": path,
                           "file": output_file_name(spec["output"])}
        entry_extra["attention_only"] = block
    return dict({
        "name": case.name,
        "file": case.name + ".onnx",
        "description": case.description,
        "attention_kernels": case.attention_kernels,
        "attention_covers": [graph_name(n) for n in case.attention_covers],
        "kernels_absent": case.kernels_absent,
        "dtype": case.dtype,
        "tolerance": TOLERANCE[case.dtype],
        "opsets": {(i.domain or ""): i.version for i in case.model.opset_import},
        "ops": op_list(case.model),
        "inputs": inputs,
        "outputs": outputs,
    }, **entry_extra)


# ---------------------------------------------------------------------------------------------
# Malformed files


def _parses(data):
    """Whether protobuf reads `data` as a whole ModelProto. Some protobuf builds only warn
    ("Not all data was converted") where the C++ parser fails: a warning counts as failure."""
    m = onnx.ModelProto()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            m.ParseFromString(data)
        except Exception:   # DecodeError, or the warning raised as an error
            return False
    return True


def _tiny(nodes, inputs, outputs, initializers=(), opsets=(("", 17),)):
    graph = helper.make_graph(nodes, "main_graph", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, producer_name="pytorch",
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 8
    return model


def malformed_cases():
    """[(file name, bytes, reason)]."""
    x = helper.make_tensor_value_info("x", F32, ["batch_size", 8])
    y = helper.make_tensor_value_info("y", F32, ["batch_size", 8])
    cases = []

    full = gpt2_causal().model.SerializeToString()
    cut = len(full) // 2
    while _parses(full[:cut]):      # make sure the cut lands inside a field
        cut -= 1
    cases.append(("truncated.onnx", full[:cut],
                  "the first %d of %d bytes of gpt2_causal.onnx: protobuf parse fails"
                  % (cut, len(full))))

    m = _tiny([helper.make_node("MatMul", ["x", "encoder.layer.0.weight"], ["y"],
                                name="/MatMul")], [x], [y])
    cases.append(("missing_initializer.onnx", m.SerializeToString(),
                  "node /MatMul reads 'encoder.layer.0.weight', which no input, initializer "
                  "or node defines"))

    m = _tiny([helper.make_node("Add", ["x", "/Add_1_output_0"], ["/Add_output_0"], name="/Add"),
               helper.make_node("Add", ["/Add_output_0", "x"], ["/Add_1_output_0"],
                                name="/Add_1"),
               helper.make_node("Identity", ["/Add_output_0"], ["y"], name="/Identity")],
              [x], [y])
    cases.append(("cycle.onnx", m.SerializeToString(),
                  "nodes /Add and /Add_1 read each other's outputs (a cycle)"))

    # Found by the libFuzzer target: a Cast that reads its own output after a Softmax sent
    # `import --attention-only`, which follows Casts from the probabilities to P·V, round the
    # loop forever.
    m = _tiny([helper.make_node("Softmax", ["x"], ["/Softmax_output_0"], name="/Softmax", axis=-1),
               helper.make_node("Cast", ["/Softmax_output_0"], ["/Cast_output_0"], name="/Cast",
                                to=F32),
               helper.make_node("Cast", ["/Cast_output_0"], ["/Cast_output_0"], name="/Cast_1",
                                to=F32),
               helper.make_node("MatMul", ["/Cast_output_0", "x"], ["y"], name="/MatMul")],
              [x], [y])
    cases.append(("cast_cycle.onnx", m.SerializeToString(),
                  "node /Cast_1 reads its own output between a Softmax and a MatMul"))

    m = _tiny([helper.make_node("FancyAttention", ["x"], ["y"], name="/FancyAttention",
                                domain="com.example.custom", num_heads=2)],
              [x], [y], opsets=(("", 17), ("com.example.custom", 1)))
    cases.append(("unknown_domain.onnx", m.SerializeToString(),
                  "node /FancyAttention is in domain 'com.example.custom', which attnc does not "
                  "know"))

    # Split sizes that do not fit the axis: folding the constant must not read past it.
    table = numpy_helper.from_array(np.arange(8, dtype=np.float32), "table")
    for name, sizes, outputs, reason in (
            ("split_overrun.onnx", [8, 8], 2, "Split sizes 8 + 8 of a constant's axis of 8"),
            ("split_count.onnx", [4, 4], 3, "two Split sizes for three outputs")):
        split = numpy_helper.from_array(np.array(sizes, dtype=np.int64), "split")
        m = _tiny([helper.make_node("Split", ["table", "split"],
                                    ["part%d" % i for i in range(outputs)], name="/Split",
                                    axis=0),
                   helper.make_node("Add", ["x", "part0"], ["y"], name="/Add")],
                  [x], [y], [table, split])
        cases.append((name, m.SerializeToString(), reason))

    cases.append(("empty.onnx", b"", "zero bytes: no model at all"))
    text = b"This is not an ONNX model, just a line of text.\n"
    assert not _parses(text)
    cases.append(("not_onnx.onnx", text, "plain text: protobuf parse fails"))

    # the two built ones must really be invalid
    for name, data, _ in cases:
        if name in ("missing_initializer.onnx", "cycle.onnx", "cast_cycle.onnx"):
            try:
                onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
            except Exception:
                continue
            raise AssertionError("%s passes onnx.checker" % name)
    return cases


def write_malformed(outdir):
    mdir = os.path.join(outdir, "malformed")
    os.makedirs(mdir, exist_ok=True)
    listing = []
    for name, data, reason in malformed_cases():
        with open(os.path.join(mdir, name), "wb") as f:
            f.write(data)
        listing.append({"file": name, "reason": reason})
    with open(os.path.join(mdir, "cases.json"), "w") as f:
        json.dump({"cases": listing}, f, indent=2)
        f.write("\n")
    return listing


# ---------------------------------------------------------------------------------------------
# Per-op self-test of the evaluator: small graphs with hand-computed answers


def _single(op, inputs, attrs=None, n_out=1, opset=17, domain=""):
    """Run one node on constant inputs (given as arrays) and return its outputs."""
    names = ["in%d" % i if a is not None else "" for i, a in enumerate(inputs)]
    inits = [numpy_helper.from_array(np.asarray(a), n)
             for n, a in zip(names, inputs) if a is not None]
    outs = ["out%d" % i for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=domain or None, **(attrs or {}))
    graph = helper.make_graph([node], "g", [],
                              [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                               for o in outs], initializer=inits)
    opsets = [helper.make_opsetid("", opset if not domain else 17)]
    if domain:
        opsets.append(helper.make_opsetid(domain, opset))
    model = helper.make_model(graph, opset_imports=opsets)
    res = onnx_numpy.run(model, {}, keep_float64=True)
    return [res[o] for o in outs]


def _eq(got, want):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)


def op_self_test():
    a = np.arange(10, dtype=np.float32)
    i64 = lambda v: np.array(v, dtype=np.int64)     # noqa: E731
    # Slice: negative start, end past the end, negative step, clamping
    _eq(_single("Slice", [a, i64([-3]), i64([INT64_MAX]), i64([0]), i64([1])])[0], [7, 8, 9])
    _eq(_single("Slice", [a, i64([8]), i64([-INT64_MAX]), i64([0]), i64([-3])])[0], [8, 5, 2])
    _eq(_single("Slice", [a, i64([20]), i64([2]), i64([-1]), i64([-4])])[0], [9, 5])
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    _eq(_single("Slice", [m, i64([1]), i64([3])])[0], m[1:3])        # axes/steps omitted
    # Reshape 0 / -1 and allowzero
    x = np.zeros((2, 3, 4), dtype=np.float32)
    assert _single("Reshape", [x, i64([0, -1])])[0].shape == (2, 12)
    assert _single("Reshape", [x, i64([-1, 0, 2])])[0].shape == (4, 3, 2)
    # Unsqueeze negative axes are in the output's rank; Squeeze with and without axes
    assert _single("Unsqueeze", [x, i64([-1, 0])])[0].shape == (1, 2, 3, 4, 1)
    assert _single("Unsqueeze", [x], {"axes": [1]}, opset=11)[0].shape == (2, 1, 3, 4)
    y = np.zeros((1, 3, 1), dtype=np.float32)
    assert _single("Squeeze", [y])[0].shape == (3,)
    assert _single("Squeeze", [y, i64([-1])])[0].shape == (1, 3)
    # Split: input sizes, equal parts, opset 18 num_outputs with a short last part
    parts = _single("Split", [a, i64([2, 8])], n_out=2)
    _eq(parts[1], a[2:])
    assert [p.shape[0] for p in _single("Split", [a[:9]], n_out=3)] == [3, 3, 3]
    assert [p.shape[0] for p in _single("Split", [a], {"num_outputs": 3}, n_out=3,
                                        opset=18)] == [4, 4, 2]
    # Gather with a negative index and a 0-d index
    _eq(_single("Gather", [m, i64([-1, 0])], {"axis": 1})[0], m[:, [3, 0]])
    _eq(_single("Gather", [i64([5, 6, 7]), i64(1)])[0], 6)
    # GatherND: rows of the first axis (a negative index), and pairs of positions
    _eq(_single("GatherND", [m, i64([[-1], [0]])])[0], m[[2, 0]])
    _eq(_single("GatherND", [m, i64([[1, 3], [0, 0]])])[0], m[[1, 0], [3, 0]])
    # Expand broadcasts both ways
    assert _single("Expand", [np.zeros((3, 1), np.float32), i64([2, 1, 4])])[0].shape == (2, 3, 4)
    # Trilu with k, upper and lower
    ones = np.ones((3, 3), np.float32)
    _eq(_single("Trilu", [ones, i64(1)])[0], np.triu(ones, 1))
    _eq(_single("Trilu", [ones], {"upper": 0})[0], np.tril(ones))
    # Range (ceil of the count), float and int
    _eq(_single("Range", [i64(1), i64(8), i64(3)])[0], [1, 4, 7])
    _eq(_single("Range", [np.float32(0), np.float32(1), np.float32(0.25)])[0], [0, .25, .5, .75])
    # integer Div truncates toward zero
    _eq(_single("Div", [i64([7, -7]), i64([2, 2])])[0], [3, -3])
    # Softmax: opset 13 along one axis, opset 11 over the flattened trailing dims
    s = np.array([[[1, 2], [3, 4]]], dtype=np.float32)
    e = np.exp(f64(s))
    _eq(_single("Softmax", [s], {"axis": 1})[0], e / e.sum(1, keepdims=True))
    flat = e.reshape(1, 4)
    _eq(_single("Softmax", [s], {"axis": 1}, opset=11)[0],
        (flat / flat.sum()).reshape(s.shape))
    # Gemm with transposes, alpha and beta
    ga, gb, gc = np.ones((3, 2), np.float32), np.ones((4, 3), np.float32), np.ones(4, np.float32)
    _eq(_single("Gemm", [ga, gb, gc], {"transA": 1, "transB": 1, "alpha": 2.0, "beta": 0.5})[0],
        np.full((2, 4), 6.5))
    # ReduceSum axes as input (13+), ReduceMean axes as attribute (< 18)
    _eq(_single("ReduceSum", [m, i64([1])], {"keepdims": 0})[0], m.sum(1))
    _eq(_single("ReduceMean", [m], {"axes": [0]})[0], m.mean(0, keepdims=True))
    # Shape with start/end, Cast to int truncates
    _eq(_single("Shape", [x], {"start": -2})[0], [3, 4])
    _eq(_single("Cast", [np.array([-1.7, 2.9], np.float32)], {"to": I64})[0], [-1, 2])
    _fused_self_test()


def _fused_self_test():
    """Spec corners of the fused ops that the models leave out: unidirectional com.microsoft
    Attention, 1-D key lengths, opset-23 Attention with a bool mask and 3-D inputs."""
    rng = np.random.default_rng(7)
    B, S, E, H = 2, 5, 8, 2
    x = randn(rng, B, S, E)
    w = randn(rng, E, 3 * E)
    qkv = f64(x) @ f64(w)
    q, k, v = (split_heads(t, H) for t in np.split(qkv, 3, axis=-1))
    # unidirectional: -10000 added above the diagonal; exp(-10000) vanishes in float64
    got = _single("Attention", [x, w], {"num_heads": H, "unidirectional": 1},
                  domain="com.microsoft", opset=1)[0]
    _close(got, join_heads(sdpa(q, k, v, 1 / math.sqrt(E // H), keep=causal_keep(S))))
    lengths = np.array([5, 3], dtype=np.int32)
    got = _single("Attention", [x, w, None, lengths], {"num_heads": H},
                  domain="com.microsoft", opset=1)[0]
    keep = (np.arange(S)[None, :] < lengths[:, None])[:, None, None, :]
    _close(got, join_heads(sdpa(q, k, v, 1 / math.sqrt(E // H), keep=keep)))
    # opset 23: bool mask (true = attend) and causal together; 3-D inputs with head counts
    mask = rng.random((B, 1, S, S)) > 0.3
    mask[..., 0] = True
    q, k, v = (t.astype(np.float32) for t in (q, k, v))     # what the initializers hold
    got = _single("Attention", [q, k, v, mask], {"is_causal": 1, "scale": 0.5}, opset=23)[0]
    q, k, v = f64(q), f64(k), f64(v)
    _close(got, sdpa(q, k, v, 0.5, keep=mask & causal_keep(S)))
    q3, k3, v3 = (join_heads(t).astype(np.float32) for t in (q, k, v))
    got = _single("Attention", [q3, k3[:, :, :E // H], v3[:, :, :E // H]],
                  {"q_num_heads": H, "kv_num_heads": 1}, opset=23)[0]
    kk, vv = np.repeat(k[:, :1], H, axis=1), np.repeat(v[:, :1], H, axis=1)
    _close(got, join_heads(sdpa(q, kk, vv, 1 / math.sqrt(E // H))))


def _close(got, want):
    err = rel_err(got, want)
    assert err <= SELF_CHECK_TOL, "rel err %.3g" % err


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="directory to write the models into")
    ap.add_argument("--malformed", action="store_true", help="also write OUTDIR/malformed/")
    ap.add_argument("--self-test", action="store_true",
                    help="check the evaluator against direct numpy; write nothing")
    args = ap.parse_args()
    if args.self_test:
        op_self_test()
        print("ok per-op evaluator checks")
        for make in MODELS:
            case = make()
            errs = verify(case)
            print("ok %s: evaluator vs direct numpy rel err %s" % (
                case.name, ", ".join("%s=%.1e" % kv for kv in errs.items())))
        malformed_cases()
        print("ok malformed cases build")
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required (or --self-test)")
    os.makedirs(args.outdir, exist_ok=True)
    entries = []
    for make in MODELS:
        case = make()
        verify(case)            # cheap; never write a model whose oracle disagrees
        entries.append(write_case(case, args.outdir))
        print("wrote %s.onnx (%s)" % (case.name, ", ".join(entries[-1]["ops"])))
    doc = {"version": 1, "models": entries}
    if args.malformed:
        doc["malformed"] = "malformed/cases.json"
        for c in write_malformed(args.outdir):
            print("wrote malformed/%s" % c["file"])
    with open(os.path.join(args.outdir, "models.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("wrote %s" % os.path.join(args.outdir, "models.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
