#!/usr/bin/env python3
"""Export Hugging-Face attention modules with PyTorch's own ONNX exporters, as attnc test fixtures.

    build/venv-torch/bin/python tests/onnx/torch_export/export.py OUTDIR [--no-ort] [--only BASE]

Builds seven small randomly initialised attention modules of the installed `transformers`
(fixed seed, no weights downloaded):
  * GPT2Attention (causal self-attention; the causal mask made by transformers' own
    masking_utils.create_causal_mask inside the wrapper, as GPT2Model does),
  * BertSelfAttention with a 2-D int64 padding mask turned into the 4-D additive mask by
    transformers' masking_utils.create_bidirectional_mask inside the wrapper, as BertModel does,
  * LlamaAttention (eager) with GQA (4 query heads, 2 kv heads), LlamaRotaryEmbedding computed
    from a `position_ids` input and a 4-D additive causal mask built from the sequence length,
    both inside the wrapper,
  * LlamaAttention (eager) with the mask LlamaModel builds from a 2-D int64 padding mask
    (masking_utils.create_causal_mask: causal And padding),
  * MistralAttention (sdpa, sliding window 4) with masking_utils'
    create_sliding_window_causal_mask of a padding mask (causal And window And padding),
  * GPTNeoXAttention (eager): one fused query_key_value projection viewed to heads and
    chunked into q, k, v, partial rotary embeddings, and the padded causal mask,
  * CohereAttention (eager, GQA): interleaved rotary embeddings (strided slices x[..., ::2]
    and x[..., 1::2]) and the padded causal mask,
and exports each twice (Cohere once, by dynamo): TorchScript exporter at opset 17 (`dynamo=False`, dynamic_axes for
batch and sequence) and the dynamo exporter at opset 18 (falling back to the TorchScript
exporter at opset 18 where dynamo fails; the description in models.json says which).

For every file it writes OUTDIR/NAME.onnx, OUTDIR/NAME/inputs/<onnx input name>.npy,
OUTDIR/NAME/expected/<output file>.npy (the PyTorch module run in float64, cast to float32)
and lists them in OUTDIR/models.json in the format of ../make_models.py (paths relative to
OUTDIR). Each file is checked with onnx.checker (full check) and, unless --no-ort, run with
onnxruntime against the expected outputs (normwise relative error <= 1e-4).
"""
import argparse
import collections
import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import transformers
from torch import nn
from transformers import (BertConfig, CohereConfig, GPT2Config, GPTNeoXConfig, LlamaConfig,
                          MistralConfig)
from transformers.masking_utils import (create_bidirectional_mask, create_causal_mask,
                                        create_sliding_window_causal_mask)
from transformers.models.bert.modeling_bert import BertSelfAttention
from transformers.models.cohere.modeling_cohere import CohereAttention, CohereRotaryEmbedding
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention
from transformers.models.gpt_neox.modeling_gpt_neox import (GPTNeoXAttention,
                                                            GPTNeoXRotaryEmbedding)
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding
from transformers.models.mistral.modeling_mistral import MistralAttention, MistralRotaryEmbedding

# The importer's output-file rule and the checks' helpers, as the synthetic models use them.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from make_models import op_list, output_file_name, rel_err  # noqa: E402

SEED = 1234
TOLERANCE = 1e-4
BATCH = 2
OTHER_SHAPE = (3, 5)    # (batch, sequence) of the second onnxruntime run
MAX_FILE_BYTES = 300 * 1024


# ---------------------------------------------------------------------------------------------
# The modules: each forward takes plain tensors and returns only the attention output.


class GPT2Wrapper(nn.Module):
    """GPT2Attention with the causal mask GPT2Model would pass it (eager: 0 / finfo.min)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attn = GPT2Attention(config, layer_idx=0)

    def forward(self, hidden_states):
        mask = create_causal_mask(config=self.config, inputs_embeds=hidden_states,
                                  attention_mask=None, past_key_values=None,
                                  allow_is_causal_skip=False)
        out, _ = self.attn(hidden_states, attention_mask=mask)
        return out


class BertWrapper(nn.Module):
    """BertSelfAttention with the 2-D padding mask converted as BertModel converts it."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attn = BertSelfAttention(config, layer_idx=0)

    def forward(self, hidden_states, attention_mask):
        ext = create_bidirectional_mask(config=self.config, inputs_embeds=hidden_states,
                                        attention_mask=attention_mask)
        out, _ = self.attn(hidden_states, attention_mask=ext)
        return out


class LlamaWrapper(nn.Module):
    """LlamaAttention (eager, GQA) with rotary embedding and causal mask made in forward."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.rotary_emb = LlamaRotaryEmbedding(config)
        self.attn = LlamaAttention(config, layer_idx=0)

    def forward(self, hidden_states, position_ids):
        bsz, seq_len = hidden_states.shape[0], hidden_states.shape[1]
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        min_value = torch.finfo(hidden_states.dtype).min
        causal = torch.full((seq_len, seq_len), min_value, dtype=hidden_states.dtype,
                            device=hidden_states.device)
        causal = torch.triu(causal, diagonal=1)
        causal = causal[None, None, :, :].expand(bsz, 1, -1, -1)
        out, _ = self.attn(hidden_states, position_embeddings=(cos, sin), attention_mask=causal)
        return out


class PaddedDecoderWrapper(nn.Module):
    """A decoder's attention with the mask its model builds from a 2-D int64 padding mask
    (masking_utils' causal or sliding-window mask: the causal rule And the padding, and
    for a window And kv_idx > q_idx - window), and rotary embeddings from position_ids."""

    def __init__(self, config, attention, rotary, make_mask):
        super().__init__()
        self.config = config
        self.rotary_emb = rotary(config)
        self.attn = attention(config, layer_idx=0)
        self.make_mask = make_mask

    def forward(self, hidden_states, position_ids, attention_mask):
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        mask = self.make_mask(config=self.config, inputs_embeds=hidden_states,
                              attention_mask=attention_mask, past_key_values=None,
                              position_ids=position_ids, allow_is_causal_skip=False)
        out, _ = self.attn(hidden_states, position_embeddings=(cos, sin), attention_mask=mask)
        return out


def right_padding(batch, seq):
    """Row b >= 1 padded at its last b + 1 keys: no query row loses every key under the
    causal rule or a window of 4 (a row with none is not defined the same way by the
    module's eager path, its SDPA path and attnc)."""
    mask = torch.ones(batch, seq, dtype=torch.int64)
    for b in range(1, batch):
        mask[b, seq - 1 - b:] = 0
    return mask


def init_params(module, gen):
    """Deterministic random weights, larger than HF's 0.02 so the softmax is far from uniform."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            scale = 0.1 if name.endswith("bias") else 0.25
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * scale)


def build_gpt2(gen, batch, seq):
    cfg = GPT2Config(n_embd=64, n_head=4, n_positions=64, n_layer=1, attn_pdrop=0.0,
                     resid_pdrop=0.0, embd_pdrop=0.0)
    cfg._attn_implementation = "eager"
    m = GPT2Wrapper(cfg)
    seq = seq or 7
    inputs = collections.OrderedDict(
        hidden_states=torch.randn(batch, seq, 64, generator=gen))
    desc = ("transformers %s GPT2Attention (E=64, 4 heads of 16, Conv1D c_attn/c_proj with "
            "biases, eager) with the causal mask of masking_utils.create_causal_mask built in the "
            "wrapper from the sequence length; S=7" % transformers.__version__)
    return m, inputs, desc


def build_bert(gen, batch, seq):
    cfg = BertConfig(hidden_size=48, num_attention_heads=4, num_hidden_layers=1,
                     intermediate_size=96, attention_probs_dropout_prob=0.0,
                     hidden_dropout_prob=0.0)
    cfg._attn_implementation = "eager"
    m = BertWrapper(cfg)
    seq = seq or 11
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[1, seq - 3:] = 0    # right padding of row 1 ...
    mask[1, 2] = 0           # ... and a hole; row 1 keeps seq - 4 keys, row 0 all
    inputs = collections.OrderedDict(
        hidden_states=torch.randn(batch, seq, 48, generator=gen),
        attention_mask=mask)
    desc = ("transformers %s BertSelfAttention (E=48, 4 heads of 12, nn.Linear q/k/v with "
            "biases, eager) with the int64 padding mask [B,S] turned into the additive [B,1,S,S] "
            "mask by masking_utils.create_bidirectional_mask in the wrapper, as BertModel does; "
            "S=11, row 1 padded at keys 2 and 8..10" % transformers.__version__)
    return m, inputs, desc


# The decoders' sizes: E=64, 4 query heads and 2 kv heads of 16, one layer.
DECODER_SIZES = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                     intermediate_size=128, num_hidden_layers=1, max_position_embeddings=64,
                     rope_theta=10000.0, attention_dropout=0.0)


def padded_decoder_inputs(gen, batch, seq):
    """hidden_states, position_ids 0..seq-1 in every row, and right_padding's mask."""
    return collections.OrderedDict(
        hidden_states=torch.randn(batch, seq, 64, generator=gen),
        position_ids=torch.stack([torch.arange(seq)] * batch).to(torch.int64),
        attention_mask=right_padding(batch, seq))


def build_llama(gen, batch, seq):
    cfg = LlamaConfig(**DECODER_SIZES, attention_bias=False)
    cfg._attn_implementation = "eager"
    m = LlamaWrapper(cfg)
    seq = seq or 13
    pos = torch.stack([torch.arange(seq) + 5 * b for b in range(batch)]).to(torch.int64)
    inputs = collections.OrderedDict(
        hidden_states=torch.randn(batch, seq, 64, generator=gen),
        position_ids=pos)
    desc = ("transformers %s LlamaAttention (eager; E=64, 4 query heads and 2 kv heads of 16, "
            "no biases) with LlamaRotaryEmbedding (theta 1e4) from the int64 position_ids input "
            "and an additive causal mask full(finfo.min).triu(1) expanded to [B,1,S,S], both "
            "built in the wrapper; S=13, position_ids rows 0..12 and 5..17" % transformers.__version__)
    return m, inputs, desc


def build_llama_padded(gen, batch, seq):
    cfg = LlamaConfig(**DECODER_SIZES, attention_bias=False)
    cfg._attn_implementation = "eager"
    m = PaddedDecoderWrapper(cfg, LlamaAttention, LlamaRotaryEmbedding, create_causal_mask)
    inputs = padded_decoder_inputs(gen, batch, seq or 13)
    desc = ("transformers %s LlamaAttention (eager; E=64, 4 query heads and 2 kv heads of 16) "
            "with the mask LlamaModel builds from an int64 padding mask [B,S] "
            "(masking_utils.create_causal_mask: causal And padding, then Where(mask, 0, "
            "finfo.min)) and rotary embeddings from position_ids; S=13, row 1 padded at keys "
            "11 and 12" % transformers.__version__)
    return m, inputs, desc


def build_mistral_window(gen, batch, seq):
    cfg = MistralConfig(**DECODER_SIZES, sliding_window=4)
    cfg._attn_implementation = "sdpa"
    m = PaddedDecoderWrapper(cfg, MistralAttention, MistralRotaryEmbedding,
                             create_sliding_window_causal_mask)
    inputs = padded_decoder_inputs(gen, batch, seq or 13)
    desc = ("transformers %s MistralAttention (sdpa; E=64, 4 query heads and 2 kv heads of 16, "
            "sliding window 4) with the bool mask MistralModel builds from an int64 padding mask "
            "[B,S] (masking_utils.create_sliding_window_causal_mask: causal And kv > q - 4 And "
            "padding), passed to scaled_dot_product_attention; S=13, row 1 padded at keys "
            "11 and 12" % transformers.__version__)
    return m, inputs, desc


def build_gptneox(gen, batch, seq):
    cfg = GPTNeoXConfig(hidden_size=64, num_attention_heads=4, intermediate_size=128,
                        num_hidden_layers=1, max_position_embeddings=64, attention_bias=True,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                         "partial_rotary_factor": 0.25})
    cfg._attn_implementation = "eager"
    m = PaddedDecoderWrapper(cfg, GPTNeoXAttention, GPTNeoXRotaryEmbedding, create_causal_mask)
    inputs = padded_decoder_inputs(gen, batch, seq or 13)
    desc = ("transformers %s GPTNeoXAttention (eager; E=64, 4 heads of 16, one fused "
            "query_key_value nn.Linear with bias viewed as [B,S,H,3D] and chunked into q, k, v "
            "per head; rotary on the first quarter of each head, partial_rotary_factor 0.25) with "
            "the mask GPTNeoXModel builds from an int64 padding mask [B,S] "
            "(masking_utils.create_causal_mask) and rotary embeddings from position_ids; S=13, "
            "row 1 padded at keys 11 and 12" % transformers.__version__)
    return m, inputs, desc


def build_cohere(gen, batch, seq):
    cfg = CohereConfig(**DECODER_SIZES)
    cfg._attn_implementation = "eager"
    m = PaddedDecoderWrapper(cfg, CohereAttention, CohereRotaryEmbedding, create_causal_mask)
    inputs = padded_decoder_inputs(gen, batch, seq or 13)
    desc = ("transformers %s CohereAttention (eager; E=64, 4 query heads and 2 kv heads of 16) "
            "with interleaved rotary embeddings: rotate_half pairs features 2i and 2i+1 "
            "(x[..., ::2], x[..., 1::2], stacked and flattened) and the tables repeat_interleave "
            "each frequency twice; the mask CohereModel builds from an int64 padding mask [B,S] "
            "(masking_utils.create_causal_mask); S=13, row 1 padded at keys 11 and 12"
            % transformers.__version__)
    return m, inputs, desc


MODELS = [("hf_gpt2", build_gpt2), ("hf_bert", build_bert), ("hf_llama", build_llama),
          ("hf_llama_padded", build_llama_padded), ("hf_mistral_window", build_mistral_window),
          ("hf_gptneox_padded", build_gptneox), ("hf_cohere_padded", build_cohere)]

# Kernels `attnc explain` must not list, per module (default: none of op repeat; repeat_kv
# is GQA, read as kv heads, never repeated in memory). Cohere's rotary tables repeat each
# frequency (repeat_interleave), a kernel over [S, D] that is not its GQA.
KERNELS_ABSENT = {"hf_cohere_padded": []}

# Exporters per module (default: both). The TorchScript exporter traces Cohere's
# repeat_interleave at the example's sequence length: its file fails in onnxruntime at another.
EXPORTERS = {"hf_cohere_padded": (("dynamo", 18),)}


# ---------------------------------------------------------------------------------------------
# Export


def dyn_axes(inputs):
    axes = {name: {0: "batch", 1: "sequence"} for name in inputs}
    return axes


def export_torchscript(module, inputs, opset, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs.values()), path, dynamo=False,
                          opset_version=opset, input_names=list(inputs),
                          dynamic_axes=dyn_axes(inputs), do_constant_folding=True)


def export_dynamo(module, inputs, opset, path):
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("sequence", min=1, max=64)
    shapes = {name: {0: batch, 1: seq} for name in inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(module, tuple(inputs.values()), dynamo=True, verbose=False,
                                 opset_version=opset, dynamic_shapes=shapes,
                                 external_data=False)
    prog.save(path, external_data=False)


# ---------------------------------------------------------------------------------------------
# Writing and checking


def op_counts(model):
    c = collections.Counter()
    for n in model.graph.node:
        c[n.op_type if n.domain in ("", "ai.onnx") else "%s.%s" % (n.domain, n.op_type)] += 1
    return dict(sorted(c.items()))


NP_OF_ONNX = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
              onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_,
              onnx.TensorProto.DOUBLE: np.float64}


def reference(module, inputs):
    """The module run in float64 (float inputs as float64, integer inputs unchanged)."""
    m64 = module.double().eval()
    args = [t.double() if t.is_floating_point() else t for t in inputs.values()]
    with torch.no_grad():
        out = m64(*args)
    module.float()
    return out.float().numpy()


def export(base, module, inputs, exporter, opset, outdir):
    """Export; returns (name, path, how). The dynamo exporter falls back to TorchScript."""
    if exporter == "dynamo":
        name = "%s_dynamo%d" % (base, opset)
        path = os.path.join(outdir, name + ".onnx")
        try:
            export_dynamo(module, inputs, opset, path)
            return name, path, "dynamo exporter (torch.onnx.export dynamo=True), opset %d" % opset
        except Exception as e:          # fall back as documented
            print("  %s: dynamo export failed (%s: %s); TorchScript exporter instead"
                  % (name, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            if os.path.exists(path):
                os.remove(path)
            name = "%s_ts%d" % (base, opset)
            path = os.path.join(outdir, name + ".onnx")
            export_torchscript(module, inputs, opset, path)
            return name, path, ("TorchScript exporter (torch.onnx.export dynamo=False, "
                                "dynamic_axes batch and sequence) at opset %d, the dynamo "
                                "exporter having failed" % opset)
    name = "%s_ts%d" % (base, opset)
    path = os.path.join(outdir, name + ".onnx")
    export_torchscript(module, inputs, opset, path)
    return name, path, ("TorchScript exporter (torch.onnx.export dynamo=False, dynamic_axes "
                        "batch and sequence), opset %d" % opset)


def write_one(base, module, inputs, other_inputs, desc, exporter, opset, outdir, use_ort):
    name, path, how = export(base, module, inputs, exporter, opset, outdir)
    model = onnx.load(path)
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise AssertionError("%s is %d bytes, over %d" % (path, size, MAX_FILE_BYTES))
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        raise AssertionError("%s has external data" % path)
    onnx.checker.check_model(model, full_check=True)

    graph_inputs = [i for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    if [i.name for i in graph_inputs] != list(inputs):
        raise AssertionError("%s: graph inputs %s, module inputs %s"
                             % (name, [i.name for i in graph_inputs], list(inputs)))
    feeds = {}
    for gi, (iname, t) in zip(graph_inputs, inputs.items()):
        want = NP_OF_ONNX[gi.type.tensor_type.elem_type]
        arr = t.numpy()
        if arr.dtype != want:
            raise AssertionError("%s: input %s is %s in the graph, %s in torch"
                                 % (name, iname, want, arr.dtype))
        feeds[iname] = arr

    expected = reference(module, inputs)
    if len(model.graph.output) != 1:
        raise AssertionError("%s: %d graph outputs" % (name, len(model.graph.output)))
    out_name = model.graph.output[0].name
    if not np.all(np.isfinite(expected)):
        raise AssertionError("%s: non-finite reference" % name)

    ort_note = "onnxruntime not run"
    if use_ort:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run([out_name], feeds)[0]
        if got.shape != expected.shape or got.dtype != expected.dtype:
            raise AssertionError("%s: onnxruntime gives %s %s, expected %s %s"
                                 % (name, got.dtype, got.shape, expected.dtype, expected.shape))
        err = rel_err(got, expected)
        if not err <= TOLERANCE:
            raise AssertionError("%s: onnxruntime vs torch float64 rel err %.3g" % (name, err))
        ort_note = "onnxruntime %s vs torch float64: rel err %.2g, max abs %.2g" % (
            ort.__version__, err, float(np.max(np.abs(got.astype(np.float64) - expected))))
        # the graph must really be dynamic in batch and sequence: another shape, same check
        got2 = sess.run([out_name], {k: v.numpy() for k, v in other_inputs.items()})[0]
        want2 = reference(module, other_inputs)
        err2 = rel_err(got2, want2)
        if got2.shape != want2.shape or not err2 <= TOLERANCE:
            raise AssertionError("%s: at input shapes %s onnxruntime gives %s (rel err %.3g), "
                                 "torch %s" % (name, [list(v.shape) for v in
                                                      other_inputs.values()],
                                               got2.shape, err2, want2.shape))
        ort_note += "; at %s: rel err %.2g" % (
            "x".join(str(d) for d in list(other_inputs.values())[0].shape), err2)

    rel = lambda *p: "/".join(p)    # noqa: E731  (paths in models.json, relative to OUTDIR)
    os.makedirs(os.path.join(outdir, name, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(outdir, name, "expected"), exist_ok=True)
    in_paths = {}
    for iname, arr in feeds.items():
        p = rel(name, "inputs", iname + ".npy")
        np.save(os.path.join(outdir, p), arr)
        in_paths[iname] = p
    file = output_file_name(out_name)
    p = rel(name, "expected", file)
    np.save(os.path.join(outdir, p), expected)
    entry = {
        "name": name,
        "file": name + ".onnx",
        "description": "%s; exported by PyTorch %s, %s; expected output from the PyTorch "
                       "module in float64" % (desc, torch.__version__, how),
        "attention_kernels": 1,
        "kernels_absent": KERNELS_ABSENT.get(base, ["repeat"]),
        "dtype": "float32",
        "tolerance": TOLERANCE,
        "opsets": {(i.domain or ""): i.version for i in model.opset_import},
        "ops": op_list(model),
        "inputs": in_paths,
        "outputs": {out_name: {"expected": p, "file": file, "dtype": str(expected.dtype),
                               "shape": list(expected.shape)}},
    }
    info = {
        "name": name, "how": how, "bytes": size, "ort": ort_note,
        "ir_version": model.ir_version,
        "opsets": entry["opsets"],
        "inputs": [(gi.name, onnx.TensorProto.DataType.Name(gi.type.tensor_type.elem_type),
                    [d.dim_param or d.dim_value for d in gi.type.tensor_type.shape.dim],
                    list(feeds[gi.name].shape)) for gi in graph_inputs],
        "outputs": [(o.name, onnx.TensorProto.DataType.Name(o.type.tensor_type.elem_type),
                     [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim],
                     list(expected.shape), file) for o in model.graph.output],
        "op_counts": op_counts(model),
        "nodes": len(model.graph.node),
        "initializers": [(t.name, list(t.dims)) for t in model.graph.initializer],
    }
    return entry, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="directory to write the models into")
    ap.add_argument("--no-ort", action="store_true", help="do not check with onnxruntime")
    ap.add_argument("--info", help="also write per-file details (ops, shapes) as JSON here")
    ap.add_argument("--only", action="append", metavar="BASE",
                    help="export only this module (e.g. hf_gptneox_padded; repeatable) and "
                         "replace its entries in an existing OUTDIR/models.json, keeping the rest")
    args = ap.parse_args()
    known = [base for base, _ in MODELS]
    for base in args.only or []:
        if base not in known:
            ap.error("--only %s: no such module (%s)" % (base, ", ".join(known)))
    os.makedirs(args.outdir, exist_ok=True)
    torch.manual_seed(SEED)
    entries, infos = [], []
    for base, build in MODELS:
        if args.only and base not in args.only:
            continue
        gen = torch.Generator().manual_seed(SEED)
        module, inputs, desc = build(gen, BATCH, None)
        init_params(module, gen)
        module.eval()
        _, other_inputs, _ = build(gen, OTHER_SHAPE[0], OTHER_SHAPE[1])   # module unused
        for exporter, opset in EXPORTERS.get(base, (("torchscript", 17), ("dynamo", 18))):
            entry, info = write_one(base, module, inputs, other_inputs, desc, exporter, opset,
                                    args.outdir, not args.no_ort)
            name = info["name"]
            entries.append(entry)
            infos.append(info)
            print("wrote %s.onnx (%d bytes; %s; %s)" % (name, info["bytes"], info["how"],
                                                          info["ort"]))
    listing = os.path.join(args.outdir, "models.json")
    if args.only and os.path.exists(listing):
        with open(listing) as f:
            kept = [e for e in json.load(f)["models"]
                    if not any(e["name"].startswith(base + "_") for base in args.only)]
        entries = kept + entries
    doc = {"version": 1, "models": entries}
    with open(os.path.join(args.outdir, "models.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("wrote %s" % os.path.join(args.outdir, "models.json"))
    if args.info:
        with open(args.info, "w") as f:
            json.dump({"versions": {"torch": torch.__version__,
                                    "transformers": transformers.__version__,
                                    "onnx": onnx.__version__}, "files": infos}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
