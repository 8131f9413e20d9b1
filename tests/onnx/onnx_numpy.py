#!/usr/bin/python3
"""A small numpy evaluator of ONNX graphs: the independent oracle of the attnc ONNX importer.

    import onnx, onnx_numpy
    outputs = onnx_numpy.run(onnx.load("m.onnx"), {"hidden_states": x})

Written from the ONNX operator specification (https://onnx.ai/onnx/operators/) and, for the
`com.microsoft` fused attention operators, from onnxruntime's ContribOperators.md; it shares no
code with attnc. Every float tensor is held as float64 whatever its declared type; graph outputs
are cast back to their declared type (float32 / float16) unless `keep_float64=True`. Integer and
bool tensors keep their type (int64 for shapes, int32 for the contrib masks, bool).

Only what the test models need is implemented; anything else (an op, an attribute value, an
input form) raises NotImplementedError rather than guessing.
"""
import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

# ONNX element type -> numpy dtype of the data as stored in .npy files / initializers.
NP_DTYPE = {
    TensorProto.FLOAT: np.float32,
    TensorProto.FLOAT16: np.float16,
    TensorProto.DOUBLE: np.float64,
    TensorProto.INT64: np.int64,
    TensorProto.INT32: np.int32,
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
    TensorProto.BOOL: np.bool_,
}
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE)


class OnnxEvalError(Exception):
    """The graph is invalid for evaluation (undefined value, bad input, shape mismatch)."""


# ---------------------------------------------------------------------------------------------
# Model evaluation


def internal(arr):
    """Array as the evaluator holds it: floats widened to float64, the rest unchanged."""
    arr = np.asarray(arr)
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    return arr


def opset_versions(model):
    """{domain: version}; "ai.onnx" is the default domain ""."""
    out = {}
    for imp in model.opset_import:
        domain = "" if imp.domain in ("", "ai.onnx") else imp.domain
        out[domain] = imp.version
    return out


def _declared(value_info):
    """(elem_type, dims) of a graph input/output; a dim is an int, a str (dim_param) or None;
    dims is None when no shape is declared at all."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return t.elem_type, None
    dims = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return t.elem_type, dims


def _check_shape(name, arr, dims, bound):
    """Check `arr` against declared dims; bind symbolic dims in `bound` (shared by the graph)."""
    if dims is None:
        return
    if len(dims) != arr.ndim:
        raise OnnxEvalError("%s: rank %d, declared %d" % (name, arr.ndim, len(dims)))
    for axis, (want, got) in enumerate(zip(dims, arr.shape)):
        if isinstance(want, int) and want != got:
            raise OnnxEvalError("%s: dim %d is %d, declared %d" % (name, axis, got, want))
        if isinstance(want, str):
            if bound.setdefault(want, got) != got:
                raise OnnxEvalError("%s: dim %d (%s) is %d, but %s = %d elsewhere"
                                    % (name, axis, want, got, want, bound[want]))


def run(model, feeds, keep_float64=False):
    """Evaluate `model` (a ModelProto) on `feeds` ({input name: array}); returns {output name:
    array}. Nodes run in file order, which ONNX requires to be topological."""
    opsets = opset_versions(model)
    graph = model.graph
    env = {}
    for init in graph.initializer:
        env[init.name] = internal(numpy_helper.to_array(init))
    bound = {}
    for vi in graph.input:
        if vi.name in env:          # IR < 4 lists initializers among the inputs
            continue
        if vi.name not in feeds:
            raise OnnxEvalError("no value given for graph input %r" % vi.name)
        arr = np.asarray(feeds[vi.name])
        elem, dims = _declared(vi)
        if elem in NP_DTYPE and arr.dtype != NP_DTYPE[elem]:
            raise OnnxEvalError("input %s: dtype %s, declared %s"
                                % (vi.name, arr.dtype, np.dtype(NP_DTYPE[elem])))
        _check_shape(vi.name, arr, dims, bound)
        env[vi.name] = internal(arr)
    for node in graph.node:
        _run_node(node, env, opsets)
    outputs = {}
    for vo in graph.output:
        if vo.name not in env:
            raise OnnxEvalError("graph output %r is never computed" % vo.name)
        arr = env[vo.name]
        elem, dims = _declared(vo)
        _check_shape(vo.name, arr, dims, bound)
        if not keep_float64 and elem in NP_DTYPE:
            arr = arr.astype(NP_DTYPE[elem])
        outputs[vo.name] = arr
    return outputs


class NodeContext:
    """What an op needs beyond its inputs and attributes: the opset version of its domain
    (Softmax, Reduce* and Split changed between versions) and its number of outputs."""

    def __init__(self, opset, n_outputs):
        self.opset = opset
        self.n_outputs = n_outputs


def _run_node(node, env, opsets):
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    fn = OPS.get((domain, node.op_type))
    if fn is None:
        raise NotImplementedError("op %s (domain %r) of node %s"
                                  % (node.op_type, domain, node.name))
    if domain not in opsets:
        raise OnnxEvalError("node %s: domain %r is not imported" % (node.name, domain))
    ins = []
    for name in node.input:
        if name == "":
            ins.append(None)                  # an omitted optional input
        elif name in env:
            ins.append(env[name])
        else:
            raise OnnxEvalError("node %s reads %r, which nothing defines before it"
                                % (node.name, name))
    attrs = {a.name: _attr_value(a) for a in node.attribute}
    outs = fn(ins, attrs, NodeContext(opsets[domain], len(node.output)))
    if len(outs) < len(node.output):
        raise NotImplementedError("node %s: output %d is not computed"
                                  % (node.name, len(outs)))
    for name, val in zip(node.output, outs):
        if name:
            env[name] = np.asarray(val)


def _attr_value(attr):
    val = helper.get_attribute_value(attr)
    if isinstance(val, TensorProto):
        return numpy_helper.to_array(val)
    if isinstance(val, bytes):
        return val.decode()
    return val


def _pad(ins, n):
    """Inputs padded with None to n entries (trailing optional inputs may be left out)."""
    return list(ins) + [None] * (n - len(ins))


def _axis(axis, rank):
    """Normalize a possibly negative axis."""
    if not -rank <= axis < rank:
        raise OnnxEvalError("axis %d out of range for rank %d" % (axis, rank))
    return axis + rank if axis < 0 else axis


def _ints(arr):
    return [int(v) for v in np.asarray(arr).reshape(-1)]


# ---------------------------------------------------------------------------------------------
# Elementwise and matrix ops


def _unary(f):
    return lambda ins, attrs, ctx: [f(ins[0])]


def _binary(f):
    return lambda ins, attrs, ctx: [f(ins[0], ins[1])]


def op_div(ins, attrs, ctx):
    a, b = ins
    if a.dtype.kind in "iu":
        # integer division truncates toward zero (C semantics, as the runtimes do)
        q = np.abs(a) // np.abs(b)
        return [(q * np.sign(a) * np.sign(b)).astype(a.dtype)]
    return [a / b]


def op_pow(ins, attrs, ctx):
    base, exponent = ins
    return [np.power(base, exponent).astype(base.dtype)]   # the result has the base's type


def op_matmul(ins, attrs, ctx):
    return [np.matmul(ins[0], ins[1])]


def op_gemm(ins, attrs, ctx):
    a, b, c = _pad(ins, 3)
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    y = attrs.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + attrs.get("beta", 1.0) * c
    return [y]


def op_softmax(ins, attrs, ctx):
    x = ins[0]
    if ctx.opset >= 13:
        axis = _axis(attrs.get("axis", -1), x.ndim)
        return [_softmax(x, axis)]
    # before opset 13: the input is coerced to 2-D at `axis` (default 1)
    axis = _axis(attrs.get("axis", 1), x.ndim)
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
    return [_softmax(flat, 1).reshape(x.shape)]


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def op_where(ins, attrs, ctx):
    cond, x, y = ins
    return [np.where(cond.astype(bool), x, y)]


def op_cast(ins, attrs, ctx):
    to = attrs["to"]
    x = ins[0]
    if to in FLOAT_TYPES:
        return [x.astype(np.float64)]
    if to == TensorProto.BOOL:
        return [x != 0]
    if to not in NP_DTYPE:
        raise NotImplementedError("Cast to element type %d" % to)
    if x.dtype.kind == "f":
        x = np.trunc(x)                 # float -> integer rounds toward zero
    return [x.astype(NP_DTYPE[to])]


def op_trilu(ins, attrs, ctx):
    x, k = _pad(ins, 2)
    k = 0 if k is None else int(k)
    # numpy's triu/tril act on the last two axes, as Trilu does
    return [np.triu(x, k) if attrs.get("upper", 1) else np.tril(x, k)]


# ---------------------------------------------------------------------------------------------
# Shape manipulation


def op_transpose(ins, attrs, ctx):
    x = ins[0]
    perm = attrs.get("perm", list(range(x.ndim))[::-1])
    return [np.transpose(x, perm)]


def op_reshape(ins, attrs, ctx):
    x, shape = ins
    shape = _ints(shape)
    allowzero = attrs.get("allowzero", 0)
    out = []
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            out.append(x.shape[i])      # 0 copies the input's dim
        else:
            out.append(s)
    if out.count(-1) > 1:
        raise OnnxEvalError("Reshape: more than one -1 in %s" % shape)
    if -1 in out:
        known = int(np.prod([s for s in out if s != -1]))
        if known == 0 or x.size % known:
            raise OnnxEvalError("Reshape: cannot infer -1 of %s from %s" % (shape, x.shape))
        out[out.index(-1)] = x.size // known
    if int(np.prod(out)) != x.size:
        raise OnnxEvalError("Reshape: %s has %d elements, shape %s" % (x.shape, x.size, out))
    return [x.reshape(out)]


def _axes_from(ins, attrs, index):
    """Axes given as input `index` (opset 13+ forms) or as the `axes` attribute (older)."""
    if len(ins) > index and ins[index] is not None:
        return _ints(ins[index])
    if "axes" in attrs:
        return list(attrs["axes"])
    return None


def op_unsqueeze(ins, attrs, ctx):
    x = ins[0]
    axes = _axes_from(ins, attrs, 1)
    rank = x.ndim + len(axes)
    axes = sorted(_axis(a, rank) for a in axes)   # negative axes count in the output's rank
    if len(set(axes)) != len(axes):
        raise OnnxEvalError("Unsqueeze: repeated axis in %s" % axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return [x.reshape(shape)]


def op_squeeze(ins, attrs, ctx):
    x = ins[0]
    axes = _axes_from(ins, attrs, 1)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = [_axis(a, x.ndim) for a in axes]
    for a in axes:
        if x.shape[a] != 1:
            raise OnnxEvalError("Squeeze: dim %d is %d, not 1" % (a, x.shape[a]))
    return [np.squeeze(x, axis=tuple(axes))]


def op_concat(ins, attrs, ctx):
    axis = _axis(attrs["axis"], ins[0].ndim)
    return [np.concatenate(ins, axis=axis)]


def op_split(ins, attrs, ctx):
    """Sizes from the `split` input (opset 13+), the `split` attribute (older), or equal parts:
    one per output, or `num_outputs` parts (opset 18) with a smaller last part."""
    x, split = _pad(ins, 2)
    axis = _axis(attrs.get("axis", 0), x.ndim)
    dim = x.shape[axis]
    if split is not None:
        sizes = _ints(split)
    elif "split" in attrs:
        sizes = list(attrs["split"])
    else:
        n = attrs.get("num_outputs", ctx.n_outputs)
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    if len(sizes) != ctx.n_outputs:
        raise OnnxEvalError("Split: %d sizes for %d outputs" % (len(sizes), ctx.n_outputs))
    return _split(x, axis, sizes)


def _split(x, axis, sizes):
    bounds = np.cumsum([0] + sizes)
    if bounds[-1] != x.shape[axis]:
        raise OnnxEvalError("Split: sizes %s do not add up to %d" % (sizes, x.shape[axis]))
    return [np.take(x, np.arange(bounds[i], bounds[i + 1]), axis=axis) for i in range(len(sizes))]


def op_slice(ins, attrs, ctx):
    x, starts, ends, axes, steps = _pad(ins, 5)
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else _ints(axes)
    steps = [1] * len(starts) if steps is None else _ints(steps)
    out = x
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, x.ndim)
        out = np.take(out, _slice_indices(start, end, step, x.shape[axis]), axis=axis)
    return [out]


def _slice_indices(start, end, step, dim):
    """The indices Slice keeps along one axis (spec: negative values count from the end, then
    clamp to [0, dim] for a positive step and to [-1, dim - 1] for a negative one)."""
    if step == 0:
        raise OnnxEvalError("Slice: step 0")
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, -1), dim - 1)
        end = min(max(end, -1), dim - 1)
    return np.arange(start, end, step, dtype=np.int64)


def op_gather(ins, attrs, ctx):
    data, idx = ins
    axis = _axis(attrs.get("axis", 0), data.ndim)
    dim = data.shape[axis]
    idx = np.asarray(idx).astype(np.int64)
    if np.any((idx < -dim) | (idx >= dim)):
        raise OnnxEvalError("Gather: index out of range for dim %d" % dim)
    idx = np.where(idx < 0, idx + dim, idx)
    return [np.take(data, idx, axis=axis)]


def op_gathernd(ins, attrs, ctx):
    data, idx = ins
    if attrs.get("batch_dims", 0) != 0:
        raise OnnxEvalError("GatherND: batch_dims other than 0")
    idx = np.asarray(idx).astype(np.int64)
    m = idx.shape[-1]
    if m > data.ndim:
        raise OnnxEvalError("GatherND: %d-tuples into a %d-d tensor" % (m, data.ndim))
    dims = np.array(data.shape[:m], dtype=np.int64)
    if np.any((idx < -dims) | (idx >= dims)):
        raise OnnxEvalError("GatherND: index out of range for %s" % list(data.shape[:m]))
    idx = np.where(idx < 0, idx + dims, idx)
    return [data[tuple(idx[..., i] for i in range(m))]]


def op_expand(ins, attrs, ctx):
    x, shape = ins
    out_shape = np.broadcast_shapes(x.shape, tuple(_ints(shape)))   # bidirectional broadcast
    return [np.broadcast_to(x, out_shape).copy()]


def op_shape(ins, attrs, ctx):
    shape = list(ins[0].shape)
    start = attrs.get("start", 0)
    end = attrs.get("end", len(shape))
    return [np.array(shape[start:end], dtype=np.int64)]   # python slicing clamps like the spec


def op_constant(ins, attrs, ctx):
    if "value" in attrs:
        return [internal(attrs["value"])]
    if "value_float" in attrs:
        return [np.array(attrs["value_float"], dtype=np.float64)]
    if "value_floats" in attrs:
        return [np.array(attrs["value_floats"], dtype=np.float64)]
    if "value_int" in attrs:
        return [np.array(attrs["value_int"], dtype=np.int64)]
    if "value_ints" in attrs:
        return [np.array(attrs["value_ints"], dtype=np.int64)]
    raise NotImplementedError("Constant with attributes %s" % sorted(attrs))


def op_constant_of_shape(ins, attrs, ctx):
    value = attrs.get("value", np.zeros(1, dtype=np.float32))
    value = internal(np.asarray(value).reshape(-1))
    return [np.full(_ints(ins[0]), value[0], dtype=value.dtype)]


def op_range(ins, attrs, ctx):
    start, limit, delta = (np.asarray(v).reshape(()) for v in ins)
    n = max(int(math.ceil((float(limit) - float(start)) / float(delta))), 0)
    return [(start + delta * np.arange(n)).astype(start.dtype)]


def _reduce(fn, axes_input_since):
    def op(ins, attrs, ctx):
        x = ins[0]
        if ctx.opset >= axes_input_since:
            axes = _ints(ins[1]) if len(ins) > 1 and ins[1] is not None else []
        else:
            axes = list(attrs.get("axes", []))
        keepdims = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(x.ndim))
        axes = tuple(_axis(a, x.ndim) for a in axes)
        return [fn(x, axis=axes, keepdims=keepdims)]
    return op


# ---------------------------------------------------------------------------------------------
# Fused attention operators


def _heads(x, n_heads):
    """[B, S, N*D] -> [B, N, S, D]."""
    b, s, hidden = x.shape
    if hidden % n_heads:
        raise OnnxEvalError("hidden size %d is not a multiple of %d heads" % (hidden, n_heads))
    return x.reshape(b, s, n_heads, hidden // n_heads).transpose(0, 2, 1, 3)


def _merge_heads(x):
    """[B, N, S, D] -> [B, S, N*D]."""
    b, n, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)


def _attend(q, k, v, scale, additive=None, softcap=0.0):
    """softmax(softcap(scale * q kᵀ) + additive) v over [B, H, S, D] tensors. k and v may have
    fewer heads (GQA): query head h reads kv head h // (Hq / Hkv)."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq % hkv:
        raise OnnxEvalError("query heads %d are not a multiple of kv heads %d" % (hq, hkv))
    k = np.repeat(k, hq // hkv, axis=1)
    v = np.repeat(v, hq // hkv, axis=1)
    scores = scale * np.matmul(q, np.swapaxes(k, -1, -2))
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    if additive is not None:
        scores = scores + additive
    return np.matmul(_softmax(scores, -1), v)


def _ms_key_mask(mask, batch, s, t, filter_value):
    """com.microsoft mask_index / key_padding_mask -> additive [B, 1, S, T] (0 keep,
    mask_filter_value drop), as onnxruntime's PrepareMask builds it."""
    mask = np.asarray(mask)
    if mask.ndim == 2 and mask.shape == (batch, t):          # raw mask, 1 = keep
        keep = (mask > 0)[:, None, None, :]
    elif mask.ndim == 3 and mask.shape == (batch, s, t):     # raw mask per query
        keep = (mask > 0)[:, None, :, :]
    elif mask.ndim == 1 and mask.shape[0] == batch:          # right padding: key lengths
        keep = (np.arange(t)[None, :] < mask[:, None])[:, None, None, :]
    elif mask.ndim == 1 and mask.shape[0] == 2 * batch:      # exclusive ends, then starts
        j = np.arange(t)[None, :]
        keep = ((j < mask[:batch, None]) & (j >= mask[batch:, None]))[:, None, None, :]
    else:
        raise NotImplementedError("mask of shape %s" % (mask.shape,))
    return np.where(keep, 0.0, filter_value)


def _ms_causal(s, t, filter_value):
    """onnxruntime's unidirectional mask without past: key j > query i gets filter_value."""
    if s != t:
        raise NotImplementedError("unidirectional attention with S != T (past state)")
    return np.where(np.triu(np.ones((s, t), dtype=bool), 1), filter_value, 0.0)


def _ms_attend(q, k, v, mask, attention_bias, attrs):
    """The com.microsoft attention operators' common part over [B, H, S, D] heads: the key
    padding mask, unidirectional (causal) and an attention bias added to the scaled scores
    (masked entries get mask_filter_value), softmax, times v, heads merged."""
    b, s, t = q.shape[0], q.shape[2], k.shape[2]
    filter_value = attrs.get("mask_filter_value", -10000.0)
    additive = np.zeros((b, 1, s, t))
    if mask is not None:
        additive = additive + _ms_key_mask(mask, b, s, t, filter_value)
    if attrs.get("unidirectional", 0):
        additive = additive + _ms_causal(s, t, filter_value)
    if attention_bias is not None:
        additive = additive + attention_bias
    scale = attrs.get("scale", 1.0 / math.sqrt(q.shape[3]))
    return _merge_heads(_attend(q, k, v, scale, additive))


def op_ms_attention(ins, attrs, ctx):
    """com.microsoft Attention: packed QKV projection, then multi-head attention.
    Inputs: input [B,S,E], weights [E, Hq+Hk+Hv], bias, mask_index, past, attention_bias,
    past_sequence_length. Past state and rotary are not supported."""
    x, w, bias, mask, past, attention_bias, past_len = _pad(ins, 7)
    if past is not None or past_len is not None or attrs.get("do_rotary", 0):
        raise NotImplementedError("Attention with past state or rotary")
    n = attrs["num_heads"]
    sizes = attrs.get("qkv_hidden_sizes", [w.shape[1] // 3] * 3)
    proj = x @ w
    if bias is not None:
        proj = proj + bias
    q, k, v = _split(proj, 2, list(sizes))
    q, k, v = _heads(q, n), _heads(k, n), _heads(v, n)
    return [_ms_attend(q, k, v, mask, attention_bias, attrs)]


def op_ms_multi_head_attention(ins, attrs, ctx):
    """com.microsoft MultiHeadAttention with separate 3-D query/key/value. Inputs: query, key,
    value, bias, key_padding_mask, attention_bias, past_key, past_value, past_sequence_length,
    cache_indirection. Packed QKV/KV and past state are not supported."""
    query, key, value, bias, mask, attention_bias = _pad(ins, 10)[:6]
    if any(v is not None for v in _pad(ins, 10)[6:]):
        raise NotImplementedError("MultiHeadAttention with past state")
    if key is None or value is None or query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
        raise NotImplementedError("MultiHeadAttention without separate 3-D query/key/value")
    n = attrs["num_heads"]
    if bias is not None:
        dq, dk = query.shape[2], key.shape[2]
        query, key, value = query + bias[:dq], key + bias[dq:dq + dk], value + bias[dq + dk:]
    q, k, v = _heads(query, n), _heads(key, n), _heads(value, n)
    out = _ms_attend(q, k, v, mask, attention_bias, attrs)
    return [out, k, v]          # output, present_key, present_value (no past: just k and v)


def op_ms_group_query_attention(ins, attrs, ctx):
    """com.microsoft GroupQueryAttention, prefill without past only. Inputs used: query
    [B,S,Hq*D], key/value [B,S,Hkv*D], past_key/past_value omitted or with 0 positions,
    seqlens_k int32 [B] (= total length - 1 per batch), total_sequence_length int32 scalar.
    Every batch must be full length (seqlens_k[b] = S - 1): right-padded prompts, rotary,
    packed QKV, local windows and attention_bias/head_sink are not supported."""
    args = _pad(ins, 16)
    query, key, value, past_key, past_value, seqlens_k, total_len = args[:7]
    if any(v is not None for v in args[7:]):
        raise NotImplementedError("GroupQueryAttention with rotary caches, position_ids, "
                                  "attention_bias, head_sink or quantized cache")
    if key is None or value is None:
        raise NotImplementedError("GroupQueryAttention with packed QKV")
    for past in (past_key, past_value):
        if past is not None and past.shape[2] != 0:
            raise NotImplementedError("GroupQueryAttention with past state (decoding)")
    if attrs.get("do_rotary", 0) or attrs.get("local_window_size", -1) != -1 \
            or attrs.get("smooth_softmax", 0) or attrs.get("qk_output", 0):
        raise NotImplementedError("GroupQueryAttention attributes %s" % sorted(attrs))
    s = query.shape[1]
    if int(np.asarray(total_len).reshape(())) != s or np.any(np.asarray(seqlens_k) != s - 1):
        raise NotImplementedError("GroupQueryAttention prefill with padded sequences "
                                  "(seqlens_k must be S - 1, total_sequence_length S)")
    q = _heads(query, attrs["num_heads"])
    k = _heads(key, attrs["kv_num_heads"])
    v = _heads(value, attrs["kv_num_heads"])
    additive = None
    if attrs.get("causal", 1):                 # no past: key j > query i is dropped
        additive = np.where(np.triu(np.ones((s, s), dtype=bool), 1), -np.inf, 0.0)
    scale = attrs.get("scale", 1.0 / math.sqrt(q.shape[3]))
    out = _attend(q, k, v, scale, additive, softcap=attrs.get("softcap", 0.0))
    return [_merge_heads(out), k, v]           # output, present_key, present_value (BNSH)


def op_attention(ins, attrs, ctx):
    """ONNX Attention (opset 23). Inputs Q, K, V (4-D [B,H,S,D], or 3-D with q_num_heads /
    kv_num_heads), attn_mask (bool: true = attend; float: added), past_key, past_value.
    Order: scale, softcap, then mask; is_causal drops key j > i + past_length (the spec's
    alignment: with no past and S == T it is the plain lower triangle)."""
    q, k, v, mask, past_key, past_value = _pad(ins, 6)
    if attrs.get("qk_matmul_output_mode", 0):
        raise NotImplementedError("Attention qk_matmul_output_mode")
    three_d = q.ndim == 3
    if three_d:
        q = _heads(q, attrs["q_num_heads"])
        k = _heads(k, attrs["kv_num_heads"])
        v = _heads(v, attrs["kv_num_heads"])
    past_len = 0
    if past_key is not None:
        past_len = past_key.shape[2]
        k = np.concatenate([past_key, k], axis=2)
        v = np.concatenate([past_value, v], axis=2)
    s, t = q.shape[2], k.shape[2]
    additive = np.zeros((s, t))
    if mask is not None:
        if mask.shape[-1] != t:
            raise NotImplementedError("attn_mask shorter than the keys")
        mask = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else mask
        additive = additive + mask
    if attrs.get("is_causal", 0):
        i = np.arange(s)[:, None]
        j = np.arange(t)[None, :]
        additive = additive + np.where(j > i + past_len, -np.inf, 0.0)
    scale = attrs.get("scale", 1.0 / math.sqrt(q.shape[3]))
    y = _attend(q, k, v, scale, additive, softcap=attrs.get("softcap", 0.0))
    if three_d:
        y = _merge_heads(y)
    return [y, k, v]           # Y, present_key, present_value


def op_layer_normalization(ins, attrs, ctx):
    """LayerNormalization (opset 17): normalise over the axes from `axis` on, then scale and
    shift; only Y is computed."""
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 and ins[2] is not None else 0.0
    axis = _axis(attrs.get("axis", -1), x.ndim)
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return [(x - mean) / np.sqrt(var + attrs.get("epsilon", 1e-5)) * scale + bias]


# ---------------------------------------------------------------------------------------------
# The op table


OPS = {
    ("", "Identity"): _unary(lambda x: x),
    ("", "Neg"): _unary(np.negative),
    ("", "Sqrt"): _unary(np.sqrt),
    ("", "Reciprocal"): _unary(np.reciprocal),
    ("", "Exp"): _unary(np.exp),
    ("", "Tanh"): _unary(np.tanh),
    ("", "Cos"): _unary(np.cos),
    ("", "Sin"): _unary(np.sin),
    ("", "Not"): _unary(np.logical_not),
    ("", "Add"): _binary(np.add),
    ("", "Sub"): _binary(np.subtract),
    ("", "Mul"): _binary(np.multiply),
    ("", "Equal"): _binary(np.equal),
    ("", "Less"): _binary(np.less),
    ("", "Greater"): _binary(np.greater),
    ("", "And"): _binary(np.logical_and),
    ("", "Div"): op_div,
    ("", "Pow"): op_pow,
    ("", "MatMul"): op_matmul,
    ("", "Gemm"): op_gemm,
    ("", "Softmax"): op_softmax,
    ("", "Where"): op_where,
    ("", "IsNaN"): _unary(np.isnan),
    ("", "Cast"): op_cast,
    ("", "Trilu"): op_trilu,
    ("", "Transpose"): op_transpose,
    ("", "Reshape"): op_reshape,
    ("", "Unsqueeze"): op_unsqueeze,
    ("", "Squeeze"): op_squeeze,
    ("", "Concat"): op_concat,
    ("", "Split"): op_split,
    ("", "Slice"): op_slice,
    ("", "Gather"): op_gather,
    ("", "GatherND"): op_gathernd,
    ("", "Expand"): op_expand,
    ("", "Shape"): op_shape,
    ("", "Constant"): op_constant,
    ("", "ConstantOfShape"): op_constant_of_shape,
    ("", "Range"): op_range,
    ("", "ReduceSum"): _reduce(np.sum, 13),
    ("", "ReduceMean"): _reduce(np.mean, 18),
    ("", "LayerNormalization"): op_layer_normalization,
    ("", "Attention"): op_attention,
    ("com.microsoft", "Attention"): op_ms_attention,
    ("com.microsoft", "MultiHeadAttention"): op_ms_multi_head_attention,
    ("com.microsoft", "GroupQueryAttention"): op_ms_group_query_attention,
}
