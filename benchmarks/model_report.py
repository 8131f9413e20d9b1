#!/usr/bin/env python3
"""Model report: whole attention blocks exported by PyTorch, compiled by attnc, against ONNX
Runtime on the same ONNX file and PyTorch running the module itself.

    build/venv-bench/bin/python benchmarks/model_report.py [--threads 1,2] [--repeat R]
        [--rounds N] [--models IDS] [--keep DIR]

Each model is a Hugging Face attention module of the installed `transformers` at a real
model's sizes (random weights, N(0, 0.02²) as Hugging Face initialises them; nothing is
downloaded), wrapped as tests/onnx/torch_export/export.py wraps its fixtures (the mask and the
rotary tables its model would pass it, built inside), and exported once by the dynamo exporter
(opset 18, batch and sequence symbolic). Methods, all on the same inputs:
  * attnc: `attnc run FILE.onnx --input ... --repeat R` (the MLIR backend, the target's
    default schedule; what it times is the compiled model through libattnrt, compilation
    excluded),
  * ort: onnxruntime's CPU provider on the same file, every graph optimisation on (its
    attention fusions included), intra-op threads = the thread count,
  * pytorch-eager and pytorch-sdpa: the module itself in inference mode, with the model's
    eager attention and with torch.nn.functional.scaled_dot_product_attention.
Every method is first checked against the module run in float64 (normwise relative error
<= 1e-4). Each model and thread count is measured in --rounds rounds, every method once a round
in a rotated order; a method's time is the median of its round medians (and its fastest run),
its ratio the median of the same-round ratios (the other's time over attnc's, > 1 where attnc is
faster). Markdown on stdout, progress on stderr; docs/benchmarks.md has the results.

Needs transformers and onnxscript in the venv besides the speed report's packages:
benchmarks/setup_peers.sh --models installs the versions tests/onnx/torch_export pins.
"""
import argparse
import collections
import json
import os
import re
import sys
import tempfile
import warnings

import numpy as np

import speed_report as common

METHODS = ("attnc", "ort", "pytorch-eager", "pytorch-sdpa")
WEIGHT_STD = 0.02  # Hugging Face's initializer_range


class Model:
    """A module at its real sizes and the inputs it is timed on (example_inputs: the small
    ones it is exported with; the ONNX file keeps batch and sequence symbolic)."""

    def __init__(self, id, label, build):
        self.id, self.label, self.build = id, label, build


def _gpt2(hf, implementation):
    from transformers import GPT2Config
    cfg = GPT2Config(n_embd=768, n_head=12, n_positions=1024, n_layer=1, attn_pdrop=0.0,
                     resid_pdrop=0.0, embd_pdrop=0.0)
    cfg._attn_implementation = implementation
    return hf.GPT2Wrapper(cfg)


def _bert(hf, implementation):
    from transformers import BertConfig
    cfg = BertConfig(hidden_size=768, num_attention_heads=12, num_hidden_layers=1,
                     intermediate_size=3072, attention_probs_dropout_prob=0.0,
                     hidden_dropout_prob=0.0)
    cfg._attn_implementation = implementation
    return hf.BertWrapper(cfg)


def _llama3(hf, implementation):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaRotaryEmbedding
    cfg = LlamaConfig(hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                      head_dim=128, intermediate_size=128, num_hidden_layers=1,
                      max_position_embeddings=8192, rope_theta=500000.0, attention_dropout=0.0,
                      attention_bias=False)
    cfg._attn_implementation = implementation
    return hf.PaddedDecoderWrapper(cfg, LlamaAttention, LlamaRotaryEmbedding,
                                   hf.create_causal_mask)


def _hidden(torch, gen, batch, seq, width):
    return torch.randn(batch, seq, width, generator=gen)


def gpt2_inputs(torch, gen, batch, seq):
    return collections.OrderedDict(hidden_states=_hidden(torch, gen, batch, seq, 768))


def bert_inputs(torch, gen, batch, seq):
    mask = torch.ones(batch, seq, dtype=torch.int64)
    for b in range(1, batch):  # row b padded at its last b * seq / 8 keys
        mask[b, seq - b * seq // 8:] = 0
    return collections.OrderedDict(hidden_states=_hidden(torch, gen, batch, seq, 768),
                                   attention_mask=mask)


def llama3_inputs(torch, gen, batch, seq):
    return collections.OrderedDict(
        hidden_states=_hidden(torch, gen, batch, seq, 4096),
        position_ids=torch.stack([torch.arange(seq)] * batch).to(torch.int64),
        attention_mask=torch.ones(batch, seq, dtype=torch.int64))


MODELS = {  # id: (label, module builder, inputs builder, (batch, sequence) timed)
    "gpt2": ("GPT-2 small attention (E=768, 12 heads of 64, causal), B=1 S=1024", _gpt2,
             gpt2_inputs, (1, 1024)),
    "bert": ("BERT-base self-attention (E=768, 12 heads of 64, padding mask), B=2 S=384", _bert,
             bert_inputs, (2, 384)),
    "llama3": ("Llama-3-8B attention (E=4096, 32 query / 8 kv heads of 128, rotary, causal and "
               "padding mask), B=1 S=512", _llama3, llama3_inputs, (1, 512)),
}
EXPORT_SIZE = (2, 16)  # (batch, sequence) of the example inputs the exporter traces


def load_hf():
    """tests/onnx/torch_export/export.py: the wrappers and the dynamo export its fixtures use."""
    for name in ("torch", "transformers", "onnxscript"):
        common.import_peer(name)
    sys.path.insert(0, str(common.ROOT / "tests" / "onnx" / "torch_export"))
    import export as hf
    return hf


def build(hf, model_id, directory):
    """The eager and sdpa modules (the same weights), the timed inputs, their float64 output
    and the exported file."""
    torch = common.import_peer("torch")
    _, make_module, make_inputs, (batch, seq) = MODELS[model_id]
    gen = torch.Generator().manual_seed(1234)
    eager = make_module(hf, "eager").eval()
    with torch.no_grad():
        for name, p in eager.named_parameters():
            p.copy_(torch.zeros_like(p) if name.endswith("bias") else
                    torch.randn(p.shape, generator=gen) * WEIGHT_STD)
    sdpa = make_module(hf, "sdpa").eval()
    sdpa.load_state_dict(eager.state_dict())
    inputs = make_inputs(torch, gen, batch, seq)
    path = os.path.join(directory, model_id + ".onnx")
    if not os.path.exists(path):
        common.log(f"{model_id}: exporting with torch.onnx.export(dynamo=True) to {path}")
        example = make_inputs(torch, torch.Generator().manual_seed(1), *EXPORT_SIZE)
        hf.export_dynamo(eager, example, 18, path + ".part")
        os.replace(path + ".part", path)
    common.log(f"{model_id}: the float64 reference")
    with torch.inference_mode():
        reference = eager.double()(*[x.double() if x.is_floating_point() else x
                                     for x in inputs.values()]).numpy()
        eager.float()
    arrays = collections.OrderedDict((name, x.numpy()) for name, x in inputs.items())
    return eager, sdpa, arrays, reference, path


class Attnc:
    def __init__(self, path, arrays, work):
        self.path = path
        self.command = [str(common.ATTNC), "run", path, "--no-tuning-db"]
        for name, array in arrays.items():
            file = os.path.join(work, f"in_{name}.npy")
            np.save(file, array)
            self.command += ["--input", f"{name}={file}"]
        self.work = work

    def check(self, threads):
        out = os.path.join(self.work, "out")
        common.Attnc._run(self.command + ["--threads", str(threads), "--output-dir", out])
        files = os.listdir(out)
        if len(files) != 1:
            raise RuntimeError(f"attnc wrote {files}, not one output")
        return np.load(os.path.join(out, files[0]))

    def time(self, threads, repeat):
        stdout = common.Attnc._run(self.command + ["--threads", str(threads),
                                                   "--repeat", str(repeat)])
        found = dict(re.findall(r"^(median|min)_ms: ([0-9.eE+-]+)$", stdout, re.M))
        if len(found) != 2:
            raise RuntimeError(f"no median_ms and min_ms in attnc's output: {stdout[-200:]}")
        return float(found["median"]), float(found["min"])

    def kernels(self):
        """(kernels, attention kernels) of `attnc explain --json`."""
        command = [str(common.ATTNC), "explain", self.path, "--json"]
        kernels = json.loads(common.Attnc._run(command))
        return len(kernels), sum(k.get("op") == "attention" for k in kernels)


def bind_ort(path, arrays, threads):
    ort = common.import_peer("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = dict(arrays)
    return lambda: session.run(None, feed)[0]


def bind_torch(module, arrays, threads):
    torch = common.import_peer("torch")
    torch.set_num_threads(threads)
    tensors = [torch.from_numpy(a) for a in arrays.values()]

    def call():
        with torch.inference_mode():
            return module(*tensors).numpy()
    return call


def time_in_process(call, repeat):
    median, low, _, _ = common.time_calls([call], repeat)
    return median, low


def measure_model(hf, model_id, args, threads_list, directory):
    eager, sdpa, arrays, reference, path = build(hf, model_id, directory)
    with tempfile.TemporaryDirectory(prefix="model_report_") as work:
        attnc = Attnc(path, arrays, work)
        kernels = attnc.kernels()
        rows = []
        for threads in threads_list:
            binders = {"ort": lambda: bind_ort(path, arrays, threads),
                       "pytorch-eager": lambda: bind_torch(eager, arrays, threads),
                       "pytorch-sdpa": lambda: bind_torch(sdpa, arrays, threads)}
            calls, errors, failed = {}, {}, {}
            for method in METHODS:
                common.log(f"{model_id}, {threads} thread(s): checking {method}")
                try:
                    if method == "attnc":
                        out = attnc.check(threads)
                    else:
                        calls[method] = binders[method]()
                        out = calls[method]()
                    errors[method] = common.relative_error(out, reference)
                    if not errors[method] <= common.TOLERANCE["f32"]:
                        raise common.Unavailable(f"check: rel_err {errors[method]:.3g} > 1e-4")
                except common.Unavailable as reason:
                    failed[method] = str(reason)
            if "attnc" in failed:
                sys.exit(f"model_report.py: attnc {model_id}: {failed['attnc']}")
            times = {method: [] for method in METHODS}
            for round_index in range(args.rounds):
                turn = round_index % len(METHODS)
                for method in METHODS[turn:] + METHODS[:turn]:
                    if method in failed:
                        continue
                    common.log(f"{model_id}, {threads} thread(s), round {round_index + 1}: "
                               f"{method}")
                    times[method].append(attnc.time(threads, args.repeat) if method == "attnc"
                                         else time_in_process(calls[method], args.repeat))
            rows.append((threads, times, errors, failed))
    return kernels, rows


def report(args, threads_list, model_ids, directory):
    hf = load_hf()
    machine = common.machine_description()
    results = [(model_id, *measure_model(hf, model_id, args, threads_list, directory))
               for model_id in model_ids]

    import transformers
    common.print_rounds_header(
        "model report", machine, args, f", transformers {transformers.__version__}",
        cpu_note=f"load average {machine['load_average'][0]:.1f} at the start; ")
    print("\n| model | threads | attnc ms (fastest) | ort ms | ×ort | pytorch-eager ms | ×eager "
          "| pytorch-sdpa ms | ×sdpa | rel_err attnc / ort |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model_id, (count, attention), rows in results:
        label = f"{MODELS[model_id][0]}; attnc: {count} kernels, {attention} attention"
        for threads, times, errors, failed in rows:
            def cell(method):
                return common.rounds_cell(times, failed, method)

            def ratio(method):
                return common.rounds_ratio(times, failed, method)
            ort_error = f"{errors['ort']:.1e}" if "ort" in errors else "—"
            print(f"| {label} | {threads} | {cell('attnc')} | {cell('ort')} | {ratio('ort')} "
                  f"| {cell('pytorch-eager')} | {ratio('pytorch-eager')} "
                  f"| {cell('pytorch-sdpa')} | {ratio('pytorch-sdpa')} "
                  f"| {errors['attnc']:.1e} / {ort_error} |")
    for model_id, _, rows in results:
        for threads, _, _, failed in rows:
            for method, reason in failed.items():
                print(f"\n{method} on {model_id}, {threads} thread(s): {reason}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_round_arguments(parser, "model", MODELS, repeat=5)
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the exported files in DIR and reuse those found there "
                             "(default: a temporary directory)")
    args, threads_list, model_ids = common.parse_round_arguments(parser, "model", MODELS)
    if not common.ATTNC.exists():
        sys.exit(f"model_report.py: {common.ATTNC} not found; run scripts/build.sh")
    warnings.simplefilter("ignore")
    try:
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            return report(args, threads_list, model_ids, args.keep)
        with tempfile.TemporaryDirectory(prefix="model_report_export_") as directory:
            return report(args, threads_list, model_ids, directory)
    except common.Unavailable as reason:
        sys.exit(f"model_report.py: {reason} (benchmarks/setup_peers.sh --models installs it)")
    except RuntimeError as error:  # attnc failed: the message names the command
        sys.exit(f"model_report.py: {error}")


if __name__ == "__main__":
    sys.exit(main())
