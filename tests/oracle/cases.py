#!/usr/bin/python3
"""Seeded random generator of attnc test graphs (spec JSON format) and inputs.

    generate(family, count, seed) -> list[Case]
    FAMILIES                        -> family names, in run order

A Case holds the graph dict, the input arrays exactly as they travel in .npy
files (bf16 as uint16 bit patterns), the full dim binding the oracle needs and
the subset of run-time dims to pass as --dim (the rest must be inferred from
the input files).

Every graph respects the spec plus the project decisions where the spec is
silent: value names match [A-Za-z_][A-Za-z0-9_]*; q, k, v of one attention share
one float dtype; binary elementwise ops get equal dtypes; two different named
run-time dims are never assumed equal (a named dim only meets itself or 1);
reshape -1 resolves to a fixed integer or a single named dim; no concat or slice
along a run-time-sized axis; window always has both left and right.  A primitive
softmax slice that is all -inf gives zeros (decision (h)), so exporter chains
with S > T and a causal mask have fully masked rows, as fused kernels do.

The fused attention cases also reach the edges of the format: every size (B,
Hq, Hkv, S, T, Dk, Dv) may be a literal, a fixed named dim or a run-time one
(the dynamic family always has one run-time size, the others now and then);
window bounds are small, near S, T, T - S or S + T, or huge (2^31 - 1 up to
2^63 - 1), left and right drawn apart; scales go down to 1e-6 and 0 and up to
1e4 (also -1e3), softcaps from 1e-6 to 1e6.
"""
import math
import zlib

import numpy as np

import oracle

SEQ = [1, 2, 3, 5, 7, 13, 33, 64, 65]
DSIZES = [1, 3, 8, 16, 17, 40]
HEADS = [1, 2, 3, 4, 5, 6, 8, 12]

# window bounds past int32 and up to the largest int64 (L and R are drawn apart)
HUGE = [2**31 - 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63 - 1]
# scales and softcaps at the extremes, beside the ordinary ones: with std-1
# inputs a scale of 1e4 makes the softmax (nearly) one-hot and 1e-6 (nearly)
# uniform, a softcap of 1e-6 squeezes every score to about +-1e-6
EXTREME_SCALES = [1e-6, 1e3, 1e4, -1e3]
EXTREME_SOFTCAPS = [1e-6, 1e4]
# the sizes of the attention op, each a literal, a fixed named dim or a run-time one
DIM_LETTERS = ["B", "Hq", "Hkv", "S", "T", "Dk", "Dv"]

FAMILIES = ["dot", "general", "additive", "cosine", "masks", "bias", "gqa",
            "layout", "lowp", "dynamic", "exporter", "primitives", "amx"]

DEFAULT_COUNT = {f: 40 for f in FAMILIES}


class Case:
    def __init__(self, family, index, desc, graph, arrays, dims, dim_args, threads=1):
        self.family = family
        self.index = index
        self.desc = desc
        self.graph = graph          # dict, spec JSON
        self.arrays = arrays        # input name -> np.ndarray as written to .npy
        self.dims = dims            # full binding of every named dim (for the oracle)
        self.dim_args = dim_args    # name -> value to pass as --dim
        self.threads = threads      # attnc run --threads

    def oracle_inputs(self):
        return {n: oracle.decode_from_file(a, self.graph["inputs"][n]["dtype"])
                for n, a in self.arrays.items()}


# --------------------------------------------------------------------------
# graph builder
# --------------------------------------------------------------------------

class Builder:
    def __init__(self, rng, name):
        self.rng = rng
        self.name = name
        self.dims_decl = {}     # name -> int or None
        self.bound = {}         # name -> int
        self.inputs = {}
        self.arrays = {}
        self.nodes = []
        self.outputs = []
        self._count = 0
        self.threads = 1        # what `attnc run` runs the case on

    # dims ---------------------------------------------------------------
    def dim(self, name, value, dynamic):
        """Declare a named dim; returns the name to use in shapes."""
        assert name not in self.dims_decl
        self.dims_decl[name] = None if dynamic else int(value)
        self.bound[name] = int(value)
        return name

    def size(self, d):
        return self.bound[d] if isinstance(d, str) else int(d)

    def concrete(self, shape):
        return tuple(self.size(d) for d in shape)

    # inputs -------------------------------------------------------------
    def fresh(self, stem):
        self._count += 1
        return "%s%d" % (stem, self._count)

    def add_input(self, name, shape, dtype, values=None, std=1.0, p_true=0.8,
                  low=0, high=None):
        assert name not in self.inputs and oracle.NAME_RE.match(name)
        cshape = self.concrete(shape)
        if values is None:
            if dtype in oracle.FLOAT_DTYPES:
                values = self.rng.standard_normal(cshape) * std
            elif dtype == "bool":
                values = self.rng.random(cshape) < p_true
            elif dtype == "i32":
                values = self.rng.integers(low, high + 1, size=cshape)
        values = np.asarray(values).reshape(cshape)
        self.inputs[name] = {"shape": list(shape), "dtype": dtype}
        self.arrays[name] = oracle.encode_for_file(values, dtype)
        return name

    def node(self, name, op, **attrs):
        d = {"name": name, "op": op}
        d.update(attrs)
        self.nodes.append(d)
        return name

    def graph(self):
        g = {"attnc": 1, "name": self.name}
        if self.dims_decl:
            g["dims"] = dict(self.dims_decl)
        g["inputs"] = self.inputs
        g["nodes"] = self.nodes
        g["outputs"] = list(self.outputs)
        return g


def choice(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def coin(rng, p=0.5):
    return bool(rng.random() < p)


def bcast_pattern(rng, full, keep_axes=None):
    """A shape broadcastable to `full` (list of dim refs): a random trailing
    subset of the axes, each either kept or 1.  keep_axes: axis indices (of
    full) that must be kept at full size."""
    n = len(full)
    keep_axes = set(keep_axes or [])
    lo = min(keep_axes) if keep_axes else n - 1
    rank = int(rng.integers(n - lo, n + 1))
    shape = []
    for ax in range(n - rank, n):
        if ax in keep_axes or coin(rng, 0.6):
            shape.append(full[ax])
        else:
            shape.append(1)
    return shape


# --------------------------------------------------------------------------
# the fused attention op
# --------------------------------------------------------------------------

def sample_attention(rng, **over):
    """Random attention configuration; keyword arguments override."""
    cfg = {}
    cfg["kind"] = over.pop("kind", choice(rng, ["dot", "dot", "general", "additive", "cosine"]))
    hkv = choice(rng, [1, 1, 2, 3, 4, 6])
    group = choice(rng, [1, 2, 3])
    cfg["Hkv"] = hkv
    cfg["Hq"] = hkv * group
    cfg["B"] = choice(rng, [1, 1, 2, 3])
    cfg["S"] = choice(rng, SEQ)
    cfg["T"] = cfg["S"] if coin(rng, 0.4) else choice(rng, SEQ)
    cfg["Dk"] = choice(rng, DSIZES)
    cfg["Dv"] = cfg["Dk"] if coin(rng, 0.6) else choice(rng, DSIZES)
    cfg["A"] = choice(rng, [1, 3, 8, 16])
    cfg["layout"] = "bshd" if coin(rng, 0.2) else "bhsd"
    cfg["dtype"] = "f32"
    cfg["scale"] = choice(rng, [None, None, None, "default", 0.3, 1.0, 2.5, -0.7, 0.0, 20.0]
                          + EXTREME_SCALES)
    cfg["softcap"] = choice(rng, [None, None, None, None, None, 0.5, 1.0, 5.0, 30.0]
                            + EXTREME_SOFTCAPS)
    cfg["biases"] = []
    cfg["masks"] = []
    if coin(rng, 0.3):
        cfg["masks"].append({"kind": "causal"})
    cfg["lse"] = coin(rng, 0.4)
    # letter (DIM_LETTERS) -> "fixed" (a named dim bound to its size) or
    # "runtime" (a named dim bound to null); letters left out are literals
    cfg["dimmode"] = {}
    if coin(rng, 0.25):
        cfg["dimmode"] = random_dimmodes(rng)
    cfg["names"] = {}           # letter -> dim name (default: the letter)
    cfg["share"] = coin(rng)    # equal sizes of one mode share one name
    cfg["bias_dtype"] = "f32"
    cfg["w_dtype"] = None       # default: q's dtype
    cfg.update(over)
    if cfg["kind"] == "additive":
        # keep the [B,Hq,S,T,A] hidden tensor of the oracle small
        while cfg["B"] * cfg["Hq"] * cfg["S"] * cfg["T"] * cfg["A"] > 400000:
            cfg["A"] = max(1, cfg["A"] // 2)
            if cfg["A"] == 1:
                break
    return cfg


def random_dimmodes(rng, p_named=0.5):
    """Each size named with probability p_named, then fixed or run-time."""
    return {L: ("runtime" if coin(rng, 0.6) else "fixed")
            for L in DIM_LETTERS if coin(rng, p_named)}


def window_bound(rng, small):
    """A window bound: a small one, one near S, T, T - S or S + T (resolved
    by build_attention as ("near", base, offset)), or a huge one."""
    kind = choice(rng, ["small", "near", "huge"])
    if kind == "small":
        return choice(rng, small)
    if kind == "near":
        return ("near", choice(rng, ["S", "T", "T-S", "S+T"]), choice(rng, [-1, 0, 1]))
    return choice(rng, HUGE)


def resolve_bound(x, cfg):
    if isinstance(x, tuple):
        _, base, off = x
        S, T = cfg["S"], cfg["T"]
        return max(0, {"S": S, "T": T, "T-S": abs(T - S), "S+T": S + T}[base] + off)
    return int(x)


def random_mask(rng, cfg, kind=None):
    kind = kind or choice(rng, ["causal", "window", "key_length", "tensor"])
    if kind == "causal":
        return {"kind": "causal"}
    if kind == "window":
        return {"kind": "window", "left": window_bound(rng, [0, 1, 2, 3, 7, 100]),
                "right": window_bound(rng, [0, 0, 1, 2, 5, 100])}
    if kind == "key_length":
        return {"kind": "key_length", "lens": choice(rng, ["random", "random", "zero", "full", "one"])}
    if kind == "tensor":
        return {"kind": "tensor", "p_true": choice(rng, [0.9, 0.8, 0.5, 0.2]),
                "dead_rows": coin(rng, 0.4)}
    raise AssertionError(kind)


def build_attention(b, cfg, q=None, k=None, v=None, node_name="o", add_outputs=True):
    """Adds the inputs (unless q/k/v are given) and the attention node of cfg to b."""
    rng = b.rng
    modes = cfg["dimmode"]
    names = {L: cfg["names"].get(L, L) for L in modes}
    if cfg["share"]:
        for x, y in (("S", "T"), ("Hq", "Hkv"), ("Dk", "Dv")):
            if x in modes and y in modes and modes[x] == modes[y] and cfg[x] == cfg[y]:
                names[y] = names[x]

    def ref(letter):
        if letter not in modes:
            return cfg[letter]
        n = names[letter]
        runtime = modes[letter] == "runtime"
        if n not in b.dims_decl:
            b.dim(n, cfg[letter], runtime)
        assert b.bound[n] == cfg[letter] and (b.dims_decl[n] is None) == runtime, (letter, n)
        return n

    B, Hq, Hkv, S, T = ref("B"), ref("Hq"), ref("Hkv"), ref("S"), ref("T")
    Dk, Dv = ref("Dk"), ref("Dv")
    dt = cfg["dtype"]
    wdt = cfg["w_dtype"] or dt
    bshd = cfg["layout"] == "bshd"

    def layout_shape(Bx, H, L, D):
        return [Bx, L, H, D] if bshd else [Bx, H, L, D]

    if q is None:
        q = b.add_input("q", layout_shape(B, Hq, S, Dk), dt)
        k = b.add_input("k", layout_shape(B, Hkv, T, Dk), dt)
        v = b.add_input("v", layout_shape(B, Hkv, T, Dv), dt)
    node = {"q": q, "k": k, "v": v}
    desc = ["%s B%d Hq%d Hkv%d S%d T%d Dk%d Dv%d %s" % (
        cfg["kind"], cfg["B"], cfg["Hq"], cfg["Hkv"], cfg["S"], cfg["T"], cfg["Dk"], cfg["Dv"], dt)]
    if modes:
        desc.append("dims[%s]" % ",".join("%s=%s:%s" % (L, names[L], modes[L][0])
                                          for L in DIM_LETTERS if L in modes))
    if cfg["layout"] != "bhsd" or coin(rng, 0.2):
        node["layout"] = cfg["layout"]
        if bshd:
            desc.append("bshd")
    kind = cfg["kind"]
    if kind == "dot":
        if coin(rng, 0.3):
            node["score"] = {"kind": "dot"}
    elif kind == "general":
        w = b.add_input(b.fresh("w"), [Dk, Dk], wdt, std=1.0 / math.sqrt(cfg["Dk"]))
        node["score"] = {"kind": "general", "w": w}
    elif kind == "additive":
        A = cfg["A"]
        wq = b.add_input(b.fresh("wq"), [A, Dk], wdt, std=1.0 / math.sqrt(cfg["Dk"]))
        wk = b.add_input(b.fresh("wk"), [A, Dk], wdt, std=1.0 / math.sqrt(cfg["Dk"]))
        va = b.add_input(b.fresh("va"), [A], wdt)
        node["score"] = {"kind": "additive", "wq": wq, "wk": wk, "v": va}
        desc.append("A%d" % A)
    elif kind == "cosine":
        node["score"] = {"kind": "cosine"}
    if cfg["scale"] is not None:
        node["scale"] = cfg["scale"]
        desc.append("scale=%s" % cfg["scale"])
    if cfg["softcap"] is not None:
        if cfg["softcap"] >= 1e3 and isinstance(cfg["scale"], float) and abs(cfg["scale"]) >= 1e3:
            # a softcap of 1e4 after a scale of 1e3 or more crowds the scores
            # just under 1e4, where f32 resolves only 1e-3: the softmax of
            # near-tied scores is then off by more than 1e-4 in any f32
            # kernel.  A cap of 1e6 stays in tanh's linear part.
            cfg["softcap"] = 1e6
        node["softcap"] = cfg["softcap"]
        desc.append("softcap=%s" % cfg["softcap"])
    full = [B, Hq, S, T]
    biases = []
    for bias in cfg["biases"]:
        if bias["kind"] == "tensor":
            shape = bias.get("shape") or bcast_pattern(rng, full)
            x = b.add_input(b.fresh("bias"), shape, bias.get("dtype", cfg["bias_dtype"]))
            biases.append({"kind": "tensor", "input": x})
            desc.append("bias%s" % b.concrete(shape).__repr__().replace(" ", ""))
        elif bias["kind"] == "alibi":
            if bias.get("slopes"):
                x = b.add_input(b.fresh("slopes"), [Hq], "f32",
                                values=rng.uniform(0.01, 1.0, size=cfg["Hq"]))
                biases.append({"kind": "alibi", "slopes": x})
                desc.append("alibi(slopes)")
            else:
                biases.append({"kind": "alibi"})
                desc.append("alibi")
    if biases:
        node["bias"] = biases
    masks = []
    for m in cfg["masks"]:
        if m["kind"] == "causal":
            masks.append({"kind": "causal"})
            desc.append("causal")
        elif m["kind"] == "window":
            L, R = resolve_bound(m["left"], cfg), resolve_bound(m["right"], cfg)
            masks.append({"kind": "window", "left": L, "right": R})
            desc.append("window(%d,%d)" % (L, R))
        elif m["kind"] == "key_length":
            Tn = cfg["T"]
            lens = rng.integers(0, Tn + 1, size=cfg["B"])
            if m["lens"] == "zero":
                lens[int(rng.integers(0, cfg["B"]))] = 0
            elif m["lens"] == "full":
                lens[:] = Tn
            elif m["lens"] == "one":
                lens[:] = 1
            x = b.add_input(b.fresh("lens"), [B], "i32", values=lens)
            masks.append({"kind": "key_length", "input": x})
            desc.append("keylen%s" % [int(l) for l in lens])
        elif m["kind"] == "tensor":
            shape = m.get("shape") or bcast_pattern(rng, full)
            cshape = b.concrete(shape)
            vals = rng.random(cshape) < m["p_true"]
            if m["dead_rows"] and len(cshape) >= 1 and vals.size > 0:
                # make some whole rows (all keys) false
                rows = vals.reshape(-1, cshape[-1])
                dead = rng.random(rows.shape[0]) < 0.3
                rows[dead] = False
                vals = rows.reshape(cshape)
            x = b.add_input(b.fresh("mask"), shape, "bool", values=vals)
            masks.append({"kind": "tensor", "input": x})
            desc.append("mask%s" % repr(cshape).replace(" ", ""))
    if masks:
        node["mask"] = masks
    if cfg["lse"]:
        node["return_lse"] = True
        desc.append("lse")
    elif coin(rng, 0.1):
        node["return_lse"] = False
    b.node(node_name, "attention", **node)
    if add_outputs:
        outs = [node_name]
        if cfg["lse"]:
            r = rng.random()
            if r < 0.15:
                outs = [node_name + ".lse"]
            elif r < 0.3:
                outs = [node_name + ".lse", node_name]
            else:
                outs = [node_name, node_name + ".lse"]
        b.outputs.extend(outs)
    return " ".join(desc)


def attention_case(rng, b, **over):
    cfg = sample_attention(rng, **over)
    return build_attention(b, cfg)


# --------------------------------------------------------------------------
# families of fused attention
# --------------------------------------------------------------------------

def fam_dot(rng, b, i):
    return attention_case(rng, b, kind="dot")


def fam_general(rng, b, i):
    return attention_case(rng, b, kind="general")


def fam_additive(rng, b, i):
    return attention_case(rng, b, kind="additive")


def fam_cosine(rng, b, i):
    return attention_case(rng, b, kind="cosine", scale=choice(
        rng, [None, "default", 4.0, 10.0, 1e-6, 1e4, -10.0]))


def fam_masks(rng, b, i):
    cfg = sample_attention(rng, masks=[])
    plan = i % 8
    if plan < 4:
        # each mask kind alone
        cfg["masks"] = [random_mask(rng, cfg, ["causal", "window", "key_length", "tensor"][plan])]
    elif plan == 4:
        # rows fully masked: window with S > T, small right reach
        cfg["S"] = choice(rng, [5, 7, 13, 33, 65])
        cfg["T"] = choice(rng, [s for s in SEQ if s < cfg["S"]])
        cfg["masks"] = [{"kind": "window", "left": choice(rng, [0, 1, 3] + HUGE),
                         "right": choice(rng, [0, 1])}]
        if coin(rng):
            cfg["masks"].append({"kind": "causal"})
    elif plan == 5:
        # window and key lengths that leave some rows empty, key_length 0
        cfg["T"] = choice(rng, [7, 13, 33, 64, 65])
        cfg["B"] = choice(rng, [2, 3])
        cfg["masks"] = [{"kind": "window", "left": window_bound(rng, [0, 1, 2]),
                         "right": window_bound(rng, [0, 1, 2])},
                        {"kind": "key_length", "lens": choice(rng, ["random", "zero"])}]
    else:
        # two to four kinds combined
        kinds = ["causal", "window", "key_length", "tensor"]
        rng.shuffle(kinds)
        n = int(rng.integers(2, 5))
        cfg["masks"] = [random_mask(rng, cfg, kd) for kd in kinds[:n]]
    if coin(rng, 0.5):
        cfg["lse"] = True
    return build_attention(b, cfg)


def fam_bias(rng, b, i):
    cfg = sample_attention(rng)
    plan = i % 6
    if plan == 0:
        # "float, broadcastable": any float dtype, also one that differs from q's
        cfg["biases"] = [{"kind": "tensor", "dtype": choice(rng, ["f32", "f32", "f16", "bf16"])}]
    elif plan == 1:
        cfg["Hq"] = choice(rng, [1, 2, 3, 5, 6, 8, 12, 16])
        cfg["Hkv"] = cfg["Hq"]
        cfg["biases"] = [{"kind": "alibi"}]
    elif plan == 2:
        cfg["Hq"] = choice(rng, [6, 12, 5, 7])
        cfg["Hkv"] = choice(rng, [h for h in (1, 2, 3, 4, 6, 12) if cfg["Hq"] % h == 0])
        cfg["biases"] = [{"kind": "alibi", "slopes": True}]
    elif plan == 3:
        cfg["Hq"] = choice(rng, [6, 12])
        cfg["Hkv"] = cfg["Hq"]
        cfg["biases"] = [{"kind": "alibi"}, {"kind": "tensor"}]
        cfg["masks"] = [{"kind": "causal"}]
    elif plan == 4:
        cfg["biases"] = [{"kind": "tensor"}, {"kind": "tensor"}]
        cfg["softcap"] = choice(rng, [1.0, 5.0, 20.0])
    else:
        cfg["biases"] = [{"kind": "tensor"}, {"kind": "alibi", "slopes": coin(rng)}]
        cfg["softcap"] = choice(rng, [None, 2.0, 50.0])
        cfg["masks"] = [random_mask(rng, cfg)]
        cfg["S"] = choice(rng, SEQ)
        cfg["T"] = choice(rng, SEQ)
    cfg["lse"] = coin(rng, 0.5)
    return build_attention(b, cfg)


def fam_gqa(rng, b, i):
    hkv = choice(rng, [1, 2, 3, 4])
    ratio = choice(rng, ["1", "2", "3", "all"])
    if ratio == "all":
        # MQA: a single kv head for all query heads
        hq = choice(rng, [2, 3, 4, 6, 8, 12])
        hkv = 1
    else:
        hq = hkv * int(ratio)
    extra = {}
    if coin(rng, 0.3):
        extra["biases"] = [{"kind": "alibi", "slopes": coin(rng)}]
    if coin(rng, 0.3):
        extra["biases"] = extra.get("biases", []) + [{"kind": "tensor"}]
    if coin(rng, 0.4):
        extra["masks"] = [random_mask(rng, None)]
    return attention_case(rng, b, Hq=hq, Hkv=hkv, lse=coin(rng, 0.5), **extra)


def fam_layout(rng, b, i):
    if i % 3 == 2:
        return exporter_projection(rng, b, "f32", fused=True)
    extra = {}
    if coin(rng, 0.4):
        extra["masks"] = [random_mask(rng, None)]
    if coin(rng, 0.3):
        extra["biases"] = [choice(rng, [{"kind": "tensor"}, {"kind": "alibi"}])]
    return attention_case(rng, b, layout="bshd", lse=coin(rng, 0.5), **extra)


def fam_lowp(rng, b, i):
    dt = "f16" if i % 2 == 0 else "bf16"
    if i % 5 == 4:
        return exporter_sdpa(rng, b, dt)
    if i % 5 == 3:
        return exporter_projection(rng, b, dt, fused=coin(rng))
    extra = {}
    if coin(rng, 0.4):
        extra["masks"] = [random_mask(rng, None)]
    if coin(rng, 0.4):
        extra["biases"] = [{"kind": "tensor", "dtype": choice(rng, [dt, "f32"])}]
    if coin(rng, 0.2):
        extra["biases"] = extra.get("biases", []) + [{"kind": "alibi"}]
    return attention_case(rng, b, dtype=dt, lse=coin(rng, 0.5), **extra)


def fam_amx(rng, b, i):
    """bf16 dot attention of the sizes whose prefill tiles go on AMX tiles
    (Dk a multiple of 32, Dv of 16, both fixed; tiles of more than a vector
    of query rows), with the score transforms, masks, biases, GQA, both
    layouts and lse: for `attnc run --emulate-amx` and `--target x86-64-amx`."""
    extra = {}
    if coin(rng, 0.5):
        extra["masks"] = [random_mask(rng, None)]
    if coin(rng, 0.3):
        extra["biases"] = [{"kind": "tensor", "dtype": choice(rng, ["bf16", "f32"])}]
    if coin(rng, 0.2):
        extra["biases"] = extra.get("biases", []) + [{"kind": "alibi"}]
    dk = choice(rng, [32, 64, 96, 128])
    dv = dk if coin(rng, 0.6) else choice(rng, [16, 48, 64, 128])
    modes = choice(rng, [{}, {}, {"T": "runtime"}, {"B": "runtime", "S": "runtime", "T": "runtime"}])
    # Rising scores over several key tiles (64 keys each by default).
    rising = coin(rng, 0.3)
    T = choice(rng, [130, 257]) if rising else choice(rng, [1, 13, 33, 65, 130])
    desc = attention_case(rng, b, kind="dot", dtype="bf16", Dk=dk, Dv=dv,
                          S=choice(rng, [17, 33, 65, 100]), T=T,
                          dimmode=dict(modes), lse=coin(rng, 0.5), **extra)
    return desc + rising_scores(rng, b, dk) if rising else desc


def rising_scores(rng, b, dk):
    """Replaces q and k so that every row's scores rise along the keys, by
    3 to 40 in all: the tile path keeps a row's max until it has grown by 8
    (log2 units), so its probabilities reach 2^8 and its output is rescaled
    only in some steps."""
    node = next(n for n in b.nodes if n["op"] == "attention")
    scale = node.get("scale")
    if not isinstance(scale, (int, float)):  # absent or "default"
        scale = 1.0 / math.sqrt(dk)
    if scale == 0:
        return ""
    kshape = b.concrete(b.inputs["k"]["shape"])
    key_axis = 1 if node.get("layout") == "bshd" else 2
    rise = float(rng.uniform(3, 40))
    steps = np.linspace(0.0, rise, kshape[key_axis]) / (dk * scale)
    ramp = steps.reshape([-1 if a == key_axis else 1 for a in range(4)])
    q = 1 + 0.25 * rng.standard_normal(b.concrete(b.inputs["q"]["shape"]))
    k = ramp * (1 + 0.05 * rng.standard_normal(kshape))
    b.arrays["q"] = oracle.encode_for_file(q, "bf16")
    b.arrays["k"] = oracle.encode_for_file(k, "bf16")
    return " rising=%.1f" % rise


# --------------------------------------------------------------------------
# dynamic dims
# --------------------------------------------------------------------------

def fam_dynamic(rng, b, i):
    plan = i % 4
    if plan in (0, 1):
        # fused attention with named dims: every size (B, Hq, Hkv, S, T, Dk,
        # Dv) independently a literal, a fixed named dim or a run-time one, at
        # least one run-time
        cfg = sample_attention(rng)
        if coin(rng, 0.3):
            cfg["T"] = cfg["S"]
        if coin(rng, 0.3):
            cfg["Dv"] = cfg["Dk"]
        cfg["dimmode"] = random_dimmodes(rng, p_named=0.6)
        if "runtime" not in cfg["dimmode"].values():
            cfg["dimmode"][choice(rng, DIM_LETTERS)] = "runtime"
        stems = {"B": ["B", "batch", "nb"], "S": ["S", "seq_q", "Lq"], "T": ["T", "seq_k", "Lk"],
                 "Hq": ["Hq", "heads"], "Hkv": ["Hkv", "kv_heads"], "Dk": ["Dk", "D", "head_dim"],
                 "Dv": ["Dv", "dv"]}
        cfg["names"] = {L: choice(rng, stems[L]) for L in cfg["dimmode"]}
        if coin(rng, 0.5):
            cfg["masks"] = [random_mask(rng, cfg)]
        if coin(rng, 0.3):
            cfg["biases"] = [{"kind": "tensor"}]
        cfg["lse"] = coin(rng)
        return build_attention(b, cfg) + " dyn"
    if plan == 2:
        return exporter_sdpa(rng, b, "f32", dynamic=True)
    return exporter_projection(rng, b, "f32", fused=coin(rng), dynamic=True)


# --------------------------------------------------------------------------
# exporter-style primitive chains
# --------------------------------------------------------------------------

def _dyn_dims(rng, b, dynamic, B, S, T, self_attn=False):
    """Named (run-time when dynamic, else sometimes fixed) dims for B, S, T."""
    refs = {"B": B, "S": S, "T": T}
    if dynamic:
        b.dim("S", S, True)
        refs["S"] = "S"
        if self_attn:
            refs["T"] = "S"
        else:
            b.dim("T", T, True)
            refs["T"] = "T"
        if coin(rng):
            b.dim("B", B, True)
            refs["B"] = "B"
    elif coin(rng, 0.3):
        b.dim("B", B, False)
        refs["B"] = "B"
        b.dim("S", S, False)
        refs["S"] = "S"
    return refs


def exporter_sdpa(rng, b, dt, dynamic=False):
    """matmul / scale / [causal_mask] / [masked_fill] / [add bias] / softmax / matmul."""
    B = choice(rng, [1, 2, 3])
    H = choice(rng, [1, 2, 3, 4, 6])
    S = choice(rng, SEQ)
    T = choice(rng, SEQ)
    D = choice(rng, DSIZES)
    Dv = choice(rng, DSIZES)
    causal = coin(rng, 0.5)
    r = _dyn_dims(rng, b, dynamic, B, S, T, self_attn=(S == T and coin(rng)))
    Br, Sr, Tr = r["B"], r["S"], r["T"]
    desc = ["sdpa B%d H%d S%d T%d D%d Dv%d %s" % (B, H, S, T, D, Dv, dt)]
    q = b.add_input("q", [Br, H, Sr, D], dt)
    kt_form = choice(rng, ["transpose_b"] * 6 + ["kt-input", "transpose-op", "torch-onnx"])
    if kt_form == "torch-onnx":
        # torch.onnx.export of scaled_dot_product_attention: q and kᵀ each times √(1/√D)
        half = D ** -0.25
        k = b.add_input("k", [Br, H, Tr, D], dt)
        kt = b.node("kt", "transpose", x=k, perm=[0, 1, 3, 2])
        s = b.node("s", "matmul", a=b.node("qs", "scale", x=q, value=half),
                   b=b.node("kts", "scale", x=kt, value=half), transpose_b=False)
        desc.append("torch-onnx")
    elif kt_form == "kt-input":
        k = b.add_input("kt", [Br, H, D, Tr], dt)
        s = b.node("s", "matmul", a=q, b=k)
        desc.append("k^T-input")
    elif kt_form == "transpose-op":
        k = b.add_input("k", [Br, H, Tr, D], dt)
        kt = b.node("kt", "transpose", x=k, perm=[0, 1, 3, 2])
        s = b.node("s", "matmul", a=q, b=kt, transpose_b=False)
        desc.append("transpose-op")
    else:
        k = b.add_input("k", [Br, H, Tr, D], dt)
        s = b.node("s", "matmul", a=q, b=k, transpose_b=True)
    v = b.add_input("v", [Br, H, Tr, Dv], dt)
    scale = choice(rng, [1.0 / math.sqrt(D), 0.125, 0.5, 1.0])
    x = b.node("ss", "scale", x=s, value=scale)
    if causal:
        x = b.node("sm", "causal_mask", x=x)
        desc.append("causal_mask")
    if coin(rng, 0.25):
        # a sliding window (Mistral's, as attnc imports it from ONNX)
        left, right = choice(rng, [0, 1, 3, 8, 40]), choice(rng, [0, 0, 2, 5])
        x = b.node("sw", "window_mask", x=x, left=left, right=right)
        desc.append("window_mask(%d,%d)" % (left, right))
    if coin(rng, 0.15):
        # HF style: a [B, S, T] padding mask, unsqueezed to [B, 1, S, T]
        vals = rng.random((B, S, T)) < 0.3
        vals[..., 0] = False
        m3 = b.add_input("pad3", [Br, Sr, Tr], "bool", values=vals)
        m4 = b.node("pad4", "unsqueeze", x=m3, axis=1)
        x = b.node("mf", "masked_fill", x=x, mask=m4, value="-inf")
        desc.append("unsqueezed-mask masked_fill")
    elif coin(rng, 0.35):
        # masked_fill with true = fill; key 0 never filled so that no row is empty
        shape = bcast_pattern(rng, [Br, H, Sr, Tr], keep_axes=[3])
        cshape = b.concrete(shape)
        vals = rng.random(cshape) < 0.3
        vals[..., 0] = False
        mask = b.add_input("pad", shape, "bool", values=vals)
        value = choice(rng, ["-inf", "-inf", -10000.0] + ([-1e9] if dt == "f32" else []))
        if causal and S > T:
            # Rows the causal mask empties would come back as the finite fill plus the
            # bias below, whose differences f32 cannot hold at that magnitude.
            value = "-inf"
        x = b.node("mf", "masked_fill", x=x, mask=mask, value=value)
        desc.append("masked_fill%s=%s" % (repr(cshape).replace(" ", ""), value))
    if coin(rng, 0.3):
        shape = bcast_pattern(rng, [Br, H, Sr, Tr])
        bias = b.add_input("bias", shape, dt)
        x = b.node("sb", "add", a=x, b=bias)
        desc.append("add-bias%s" % repr(b.concrete(shape)).replace(" ", ""))
    p = b.node("p", "softmax", x=x, axis=choice(rng, [-1, 3]))
    o = b.node("o", "matmul", a=p, b=v)
    b.outputs.append(o)
    if coin(rng, 0.15):
        b.outputs.append(p)
        desc.append("p-is-output")
    return " ".join(desc)


def exporter_projection(rng, b, dt, fused=False, dynamic=False):
    """x -> linear q/k/v -> reshape [B,S,H,D] -> transpose -> attention -> back -> linear."""
    B = choice(rng, [1, 2])
    H = choice(rng, [1, 2, 3, 4])
    Hkv = choice(rng, [h for h in (1, 2, 3, 4) if H % h == 0])
    D = choice(rng, [1, 3, 8, 16])
    E = choice(rng, [4, 8, 16, 24])
    S = choice(rng, SEQ)
    cross = coin(rng, 0.4)
    T = choice(rng, SEQ) if cross else S
    causal = coin(rng, 0.5) and (S <= T)
    r = _dyn_dims(rng, b, dynamic, B, S, T, self_attn=not cross)
    Br, Sr, Tr = r["B"], r["S"], r["T"]
    desc = ["proj%s B%d H%d Hkv%d S%d T%d D%d E%d %s" % (
        "-fused" if fused else "", B, H, Hkv, S, T, D, E, dt)]
    x = b.add_input("x", [Br, Sr, E], dt)
    mem = b.add_input("mem", [Br, Tr, E], dt) if cross else x
    std = 1.0 / math.sqrt(E)
    wq = b.add_input("wq", [H * D, E], dt, std=std)
    wk = b.add_input("wk", [Hkv * D, E], dt, std=std)
    wv = b.add_input("wv", [Hkv * D, E], dt, std=std)
    bq = b.add_input("bq", [H * D], dt) if coin(rng) else None
    qp = b.node("qp", "linear", x=x, w=wq, **({"b": bq} if bq else {}))
    # BART and Whisper scale the query projection instead of the scores.
    scaled_query = not fused and coin(rng, 0.3)
    if scaled_query:
        qp = b.node("qs", "scale", x=qp, value=1.0 / math.sqrt(D))
        desc.append("query-scaled")
    kp = b.node("kp", "linear", x=mem, w=wk)
    vp = b.node("vp", "linear", x=mem, w=wv)

    def split(name, src, heads, L):
        # reshape [B, L, heads*D] -> [B, L, heads, D]; -1 sometimes stands for L
        shape = [Br, L, heads, D]
        if coin(rng, 0.3):
            shape = [Br, -1, heads, D]
        return b.node(name, "reshape", x=src, shape=shape)

    q4 = split("q4", qp, H, Sr)
    k4 = split("k4", kp, Hkv, Tr)
    v4 = split("v4", vp, Hkv, Tr)
    if fused and coin(rng):
        # the fused op straight on [B, S, H, D]
        masks = [{"kind": "causal"}] if causal else []
        node = {"q": q4, "k": k4, "v": v4, "layout": "bshd"}
        if masks:
            node["mask"] = masks
        a = b.node("att", "attention", **node)
        merged_src = a
        desc.append("attention-bshd")
    else:
        # Falcon repeats the kv heads in [B, S, H, D], before the transposes.
        repeat_first = not fused and H != Hkv and coin(rng, 0.4)
        if repeat_first:
            k4 = b.node("kr", "repeat", x=k4, axis=2, times=H // Hkv)
            v4 = b.node("vr", "repeat", x=v4, axis=2, times=H // Hkv)
            desc.append("repeat-bshd")
        qh = b.node("qh", "transpose", x=q4, perm=[0, 2, 1, 3])
        kh = b.node("kh", "transpose", x=k4, perm=[0, 2, 1, 3])
        vh = b.node("vh", "transpose", x=v4, perm=[0, 2, 1, 3])
        if fused:
            node = {"q": qh, "k": kh, "v": vh}
            if causal:
                node["mask"] = [{"kind": "causal"}]
            oh = b.node("att", "attention", **node)
            desc.append("attention-bhsd")
        else:
            if H != Hkv and not repeat_first:
                kh = b.node("kr", "repeat", x=kh, axis=1, times=H // Hkv)
                vh = b.node("vr", "repeat", x=vh, axis=1, times=H // Hkv)
                desc.append("repeat")
            s = b.node("s", "matmul", a=qh, b=kh, transpose_b=True)
            if not scaled_query:
                s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
            if causal:
                s = b.node("sm", "causal_mask", x=s)
            p = b.node("p", "softmax", x=s)
            oh = b.node("oh", "matmul", a=p, b=vh)
        merged_src = b.node("ot", "transpose", x=oh, perm=[0, 2, 1, 3])
    if causal:
        desc.append("causal")
    merged = b.node("om", "reshape", x=merged_src, shape=[Br, Sr, H * D] if coin(rng) else [Br, -1, H * D])
    wo = b.add_input("wo", [E, H * D], dt, std=1.0 / math.sqrt(H * D))
    bo = b.add_input("bo", [E], dt)
    y = b.node("y", "linear", x=merged, w=wo, b=bo)
    b.outputs.append(y)
    return " ".join(desc)


def exporter_gqa_repeat(rng, b, dt):
    B = choice(rng, [1, 2])
    Hkv = choice(rng, [1, 2, 3])
    g = choice(rng, [1, 2, 3, 4])
    H = Hkv * g
    S, T, D = choice(rng, SEQ), choice(rng, SEQ), choice(rng, DSIZES)
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, Hkv, T, D], dt)
    v = b.add_input("v", [B, Hkv, T, D], dt)
    mqa_broadcast = Hkv == 1 and coin(rng)
    key_axis = None if mqa_broadcast else choice(rng, [1, -3])
    # The keys scaled before their heads are repeated, not the scores.
    scaled_key = coin(rng, 0.3)
    # Llama's repeat_kv as exporters write it: x[:, :, None].expand(...).reshape(...)
    repeat_kv = not mqa_broadcast and coin(rng, 0.3)
    ks = b.node("ks", "scale", x=k, value=1.0 / math.sqrt(D)) if scaled_key else k
    if mqa_broadcast:
        kr, vr = ks, v     # numpy broadcasting of the batch axes does the expansion
    elif repeat_kv:
        def expand(name, x):
            x = b.node(name + "u", "unsqueeze", x=x, axis=2)
            x = b.node(name + "e", "repeat", x=x, axis=2, times=g)
            return b.node(name + "r", "reshape", x=x, shape=[B, H, T, D])
        kr, vr = expand("kr", ks), expand("vr", v)
    else:
        kr = b.node("kr", "repeat", x=ks, axis=key_axis, times=g)
        vr = b.node("vr", "repeat", x=v, axis=1, times=g)
    s = b.node("s", "matmul", a=q, b=kr, transpose_b=True)
    if not scaled_key:
        s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    p = b.node("p", "softmax", x=s, axis=-1)
    b.outputs.append(b.node("o", "matmul", a=p, b=vr))
    return "gqa-repeat B%d H%d Hkv%d S%d T%d D%d%s%s" % (
        B, H, Hkv, S, T, D, " mqa-broadcast" if mqa_broadcast else "",
        " key-scaled" if scaled_key else "") + (" repeat_kv" if repeat_kv else "")


def exporter_additive(rng, b, dt):
    """Bahdanau: linear q, linear k, unsqueeze, add, tanh, matmul by a vector."""
    B = choice(rng, [1, 2])
    H = choice(rng, [1, 2])
    S, T = choice(rng, [1, 2, 3, 5, 7, 13]), choice(rng, [1, 2, 3, 5, 7, 13, 33])
    D, A = choice(rng, [1, 3, 8, 16]), choice(rng, [1, 3, 8, 16])
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)
    wq = b.add_input("wq", [A, D], dt, std=1.0 / math.sqrt(D))
    wk = b.add_input("wk", [A, D], dt, std=1.0 / math.sqrt(D))
    va = b.add_input("va", [A], dt)
    qa = b.node("qa", "linear", x=q, w=wq)
    ka = b.node("ka", "linear", x=k, w=wk)
    qe = b.node("qe", "unsqueeze", x=qa, axis=choice(rng, [3, -2]))    # [B,H,S,1,A]
    ke = b.node("ke", "unsqueeze", x=ka, axis=choice(rng, [2, -3]))    # [B,H,1,T,A]
    h = b.node("h", "add", a=qe, b=ke)
    t = b.node("t", "tanh", x=h)
    s = b.node("s", "matmul", a=t, b=va)                                # [B,H,S,T]
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=v))
    return "additive-chain B%d H%d S%d T%d D%d A%d" % (B, H, S, T, D, A)


def exporter_general(rng, b, dt):
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2, 3])
    S, T, D = choice(rng, SEQ), choice(rng, SEQ), choice(rng, DSIZES)
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)
    w = b.add_input("w", [D, D], dt, std=1.0 / math.sqrt(D))
    qw = b.node("qw", "matmul", a=q, b=w)
    s = b.node("s", "matmul", a=qw, b=k, transpose_b=True)
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=v))
    return "general-chain B%d H%d S%d T%d D%d" % (B, H, S, T, D)


def exporter_cosine(rng, b, dt):
    """cosine scores through the sqrt extension: q/|q| · (k/|k|)ᵀ, scaled."""
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2, 3])
    S, T, D = choice(rng, SEQ), choice(rng, SEQ), choice(rng, DSIZES)
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)

    def normalized(x, name):
        sq = b.node(name + "_sq", "mul", a=x, b=x)
        n2 = b.node(name + "_n2", "reduce_sum", x=sq, axis=-1, keepdims=True)
        return b.node(name + "_hat", "div", a=x, b=b.node(name + "_n", "sqrt", x=n2))

    s = b.node("s", "matmul", a=normalized(q, "q"), b=normalized(k, "k"),
               transpose_b=True)
    s = b.node("ss", "scale", x=s, value=choice(rng, [1.0, 10.0]))
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=v))
    return "cosine-chain B%d H%d S%d T%d D%d" % (B, H, S, T, D)


def exporter_manual_softmax(rng, b, dt):
    """exp / reduce_sum(keepdims) / div, with sub, neg and mul around it."""
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2, 3])
    S, T, D = choice(rng, SEQ), choice(rng, SEQ), choice(rng, [3, 8, 16])
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)
    shift = b.add_input("shift", [B, H, S, 1], dt)
    gate = b.add_input("gate", [1, H, 1, 1], dt)
    s = b.node("s", "matmul", a=q, b=k, transpose_b=True)
    s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    s = b.node("sh", "sub", a=s, b=shift)
    n = b.node("n", "neg", x=s)
    e = b.node("e", "exp", x=b.node("nn", "neg", x=n))
    den = b.node("den", "reduce_sum", x=e, axis=-1, keepdims=True)
    p = b.node("p", "div", a=e, b=den)
    o = b.node("o", "matmul", a=p, b=v)
    og = b.node("og", "mul", a=o, b=gate)
    b.outputs.append(og)
    if coin(rng, 0.3):
        b.outputs.append(b.node("rs", "reduce_sum", x=og, axis=1))
    return "manual-softmax B%d H%d S%d T%d D%d" % (B, H, S, T, D)


def exporter_softcap(rng, b, dt):
    """gemma-style softcap: scale 1/c, tanh, scale c, causal_mask, softmax."""
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2, 4])
    T = choice(rng, SEQ)
    S = choice(rng, [s for s in SEQ if s <= T])
    D = choice(rng, DSIZES)
    c = choice(rng, [1.0, 5.0, 50.0])
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)
    s = b.node("s", "matmul", a=q, b=k, transpose_b=True)
    s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    s = b.node("sc", "scale", x=s, value=1.0 / c)
    s = b.node("st", "tanh", x=s)
    s = b.node("su", "scale", x=s, value=c)
    s = b.node("sm", "causal_mask", x=s)
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=v))
    return "softcap-chain B%d H%d S%d T%d D%d c=%s" % (B, H, S, T, D, c)


def exporter_kv_cache(rng, b, dt):
    """concat past and new keys along the sequence axis, bottom-right causal."""
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2, 3])
    Tp, S, D = choice(rng, [1, 2, 5, 13, 33]), choice(rng, [1, 2, 3, 7]), choice(rng, DSIZES)
    q = b.add_input("q", [B, H, S, D], dt)
    kp = b.add_input("k_past", [B, H, Tp, D], dt)
    vp = b.add_input("v_past", [B, H, Tp, D], dt)
    kn = b.add_input("k_new", [B, H, S, D], dt)
    vn = b.add_input("v_new", [B, H, S, D], dt)
    k = b.node("k", "concat", inputs=[kp, kn], axis=choice(rng, [2, -2]))
    v = b.node("v", "concat", inputs=[vp, vn], axis=2)
    s = b.node("s", "matmul", a=q, b=k, transpose_b=True)
    s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    s = b.node("sm", "causal_mask", x=s)
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=v))
    if coin(rng, 0.3):
        b.outputs.append(k)
    return "kv-cache-concat B%d H%d Tpast%d S%d D%d" % (B, H, Tp, S, D)


def exporter_shared_scores(rng, b, dt):
    """scores with a second consumer (must stay unfused, still correct)."""
    B, H = choice(rng, [1, 2]), choice(rng, [1, 2])
    S, T, D = choice(rng, SEQ), choice(rng, SEQ), choice(rng, DSIZES)
    q = b.add_input("q", [B, H, S, D], dt)
    k = b.add_input("k", [B, H, T, D], dt)
    v = b.add_input("v", [B, H, T, D], dt)
    s = b.node("s", "matmul", a=q, b=k, transpose_b=True)
    ss = b.node("ss", "scale", x=s, value=0.25)
    p = b.node("p", "softmax", x=ss)
    o = b.node("o", "matmul", a=p, b=v)
    r = b.node("rsum", "reduce_sum", x=ss, axis=-1, keepdims=coin(rng))
    b.outputs.extend([o, r] if coin(rng) else [r, o])
    return "shared-scores B%d H%d S%d T%d D%d" % (B, H, S, T, D)


def exporter_head_concat(rng, b, dt):
    """two attentions (fused op and chain) concatenated along the head axis."""
    B, S, T, D = choice(rng, [1, 2]), choice(rng, SEQ), choice(rng, SEQ), choice(rng, [3, 8, 16])
    H1, H2 = choice(rng, [1, 2]), choice(rng, [1, 3])
    q1 = b.add_input("q1", [B, H1, S, D], dt)
    k1 = b.add_input("k1", [B, H1, T, D], dt)
    v1 = b.add_input("v1", [B, H1, T, D], dt)
    q2 = b.add_input("q2", [B, H2, S, D], dt)
    k2 = b.add_input("k2", [B, H2, T, D], dt)
    v2 = b.add_input("v2", [B, H2, T, D], dt)
    o1 = b.node("o1", "attention", q=q1, k=k1, v=v1)
    s = b.node("s", "matmul", a=q2, b=k2, transpose_b=True)
    s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    p = b.node("p", "softmax", x=s)
    o2 = b.node("o2", "matmul", a=p, b=v2)
    o = b.node("o", "concat", inputs=[o1, o2], axis=1)
    b.outputs.append(o)
    if coin(rng, 0.3):
        b.outputs.append(q1)     # an input listed as an output
    return "head-concat B%d H%d+%d S%d T%d D%d" % (B, H1, H2, S, T, D)


def rotary_tables(rng, b, S, D):
    """Llama's cos/sin tables [S, D] in the graph: positions [S] (f32 whole
    numbers from an offset, as exporters pass position_ids) times inv_freq [D/2]
    (base^(-2i/D)), written as reshape + mul, unsqueeze + mul or a [S, 1] x
    [1, D/2] matmul, the two halves joined by concat, then cos and sin.
    Angles stay below a few hundred radians: f32 rounds an angle a to within
    |a| 2^-24, which is what both backends and PyTorch compute with."""
    offset = choice(rng, [0, 0, 3, 100])
    base = choice(rng, [10000.0, 500000.0])
    pos = b.add_input(b.fresh("positions"), [S], "f32",
                      values=np.arange(b.size(S), dtype=np.float64) + offset)
    inv = b.add_input(b.fresh("inv_freq"), [D // 2], "f32",
                      values=base ** (-np.arange(0, D, 2) / D))
    form = choice(rng, ["reshape", "unsqueeze", "matmul"])
    if form == "reshape":
        col = b.node(b.fresh("pos"), "reshape", x=pos, shape=[S, 1])
        freqs = b.node(b.fresh("freqs"), "mul", a=col, b=inv)
    elif form == "unsqueeze":
        col = b.node(b.fresh("pos"), "unsqueeze", x=pos, axis=-1)
        freqs = b.node(b.fresh("freqs"), "mul", a=inv, b=col)
    else:
        col = b.node(b.fresh("pos"), "unsqueeze", x=pos, axis=1)
        row = b.node(b.fresh("inv"), "unsqueeze", x=inv, axis=0)
        freqs = b.node(b.fresh("freqs"), "matmul", a=col, b=row)
    emb = b.node(b.fresh("emb"), "concat", inputs=[freqs, freqs], axis=choice(rng, [-1, 1]))
    cos = b.node(b.fresh("cos"), "cos", x=emb)
    sin = b.node(b.fresh("sin"), "sin", x=emb)
    return cos, sin, "tables by %s, positions from %d" % (form, offset)


def rotate(rng, b, x, cos, sin, D, stem):
    """x·cos + rotate_half(x)·sin, rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])."""
    axis = choice(rng, [-1, 3])
    x1 = b.node(stem + "1", "slice", x=x, axis=axis, start=0, end=D // 2)
    x2 = b.node(stem + "2", "slice", x=x, axis=axis, start=D // 2, end=D)
    half = b.node(stem + "_half", "concat", inputs=[b.node(stem + "2n", "neg", x=x2), x1], axis=-1)
    xc = b.node(stem + "_cos", "mul", a=x, b=cos)
    hs = b.node(stem + "_sin", "mul", a=half, b=sin)
    return b.node(stem + "_rot", "add", a=xc, b=hs)


def exporter_rotary(rng, b, dt):
    """Llama: rotary embeddings on q and k (tables computed in the graph), then
    GQA by repeat, scale, causal_mask, softmax: one attention kernel after the
    rotary primitives."""
    B, Hkv, g = choice(rng, [1, 2]), choice(rng, [1, 2]), choice(rng, [1, 2, 3])
    H = Hkv * g
    S = choice(rng, SEQ)
    D = choice(rng, [2, 6, 8, 10, 16])     # even: D/2 odd for 6 and 10
    r = _dyn_dims(rng, b, coin(rng), B, S, S, self_attn=True)
    Br, Sr = r["B"], r["S"]
    q = b.add_input("q", [Br, H, Sr, D], dt)
    k = b.add_input("k", [Br, Hkv, Sr, D], dt)
    v = b.add_input("v", [Br, Hkv, Sr, D], dt)
    cos, sin, tables = rotary_tables(rng, b, Sr, D)
    qr = rotate(rng, b, q, cos, sin, D, "q")
    kr = rotate(rng, b, k, cos, sin, D, "k")
    vr = v
    if g > 1:
        kr = b.node("kr", "repeat", x=kr, axis=1, times=g)
        vr = b.node("vr", "repeat", x=v, axis=1, times=g)
    s = b.node("s", "matmul", a=qr, b=kr, transpose_b=True)
    s = b.node("ss", "scale", x=s, value=1.0 / math.sqrt(D))
    s = b.node("sm", "causal_mask", x=s)
    p = b.node("p", "softmax", x=s)
    b.outputs.append(b.node("o", "matmul", a=p, b=vr))
    return "rotary B%d H%d Hkv%d S%d D%d, %s" % (B, H, Hkv, S, D, tables)


EXPORTERS = [
    ("sdpa", lambda rng, b, dt: exporter_sdpa(rng, b, dt)),
    ("proj", lambda rng, b, dt: exporter_projection(rng, b, dt)),
    ("gqa", exporter_gqa_repeat),
    ("additive", exporter_additive),
    ("general", exporter_general),
    ("cosine", exporter_cosine),
    ("manual", exporter_manual_softmax),
    ("softcap", exporter_softcap),
    ("kvcache", exporter_kv_cache),
    ("shared", exporter_shared_scores),
    ("concat", exporter_head_concat),
    ("rotary", exporter_rotary),
]


def fam_exporter(rng, b, i):
    _, fn = EXPORTERS[i % len(EXPORTERS)]
    return fn(rng, b, "f32")


# --------------------------------------------------------------------------
# primitive ops on their own
# --------------------------------------------------------------------------

PRIMITIVE_PLANS = 19


def fam_primitives(rng, b, i):
    plan = i % PRIMITIVE_PLANS
    dt = "f32"
    if plan == 0:
        # binary elementwise with numpy broadcasting
        op = choice(rng, ["add", "sub", "mul", "div"])
        shape_a, shape_b = choice(rng, [([3, 1, 5], [4, 1]), ([2, 3, 4], [4]), ([1], [6, 2]),
                                        ([5, 1], [1, 7]), ([2, 1, 3, 1], [1, 4, 1, 2])])
        if coin(rng):
            shape_a, shape_b = shape_b, shape_a
        a = b.add_input("a", shape_a, dt)
        if op == "div":
            bb = b.add_input("b0", shape_b, dt)
            bb = b.node("b", "exp", x=bb)
        else:
            bb = b.add_input("b", shape_b, dt)
        b.outputs.append(b.node("y", op, a=a, b=bb))
        return "%s %s %s" % (op, shape_a, shape_b)
    if plan == 1:
        # matmul with numpy 1-D semantics and batch broadcasting
        form = choice(rng, ["vec-right", "vec-left", "batch-bcast", "transpose_b"])
        if form == "vec-right":
            a = b.add_input("a", [2, 3, 5], dt)
            bb = b.add_input("b", [5], dt)
            y = b.node("y", "matmul", a=a, b=bb)
        elif form == "vec-left":
            a = b.add_input("a", [5], dt)
            bb = b.add_input("b", [2, 5, 4], dt)
            y = b.node("y", "matmul", a=a, b=bb)
        elif form == "batch-bcast":
            a = b.add_input("a", [2, 1, 3, 4], dt)
            bb = b.add_input("b", [5, 4, 6], dt)
            y = b.node("y", "matmul", a=a, b=bb)
        else:
            a = b.add_input("a", [3, 7, 4], dt)
            bb = b.add_input("b", [1, 5, 4], dt)
            y = b.node("y", "matmul", a=a, b=bb, transpose_b=True)
        b.outputs.append(y)
        return "matmul " + form
    if plan == 2:
        # Rows below and above the packed GEMM's 16 (its 6- and 3-row tiles
        # and single rows) and its 192-row blocks (3 x 70; on 2 or 3 threads
        # in tasks of 96), columns around its 16-column panels, depths
        # around its 8-depth transposes and 256-depth blocks.
        rows = choice(rng, [5, 16, 23, 61, 70])
        depth = choice(rng, [8, 13, 257, 300])
        cols = choice(rng, [6, 16, 33])
        x = b.add_input("x", [3, rows, depth], dt)
        w = b.add_input("w", [cols, depth], dt)
        args = {"b": b.add_input("bias", [cols], dt)} if coin(rng) else {}
        b.outputs.append(b.node("y", "linear", x=x, w=w, **args))
        b.threads = choice(rng, [1, 2, 3])
        return ("linear %dx%dx%d" % (3 * rows, depth, cols) + (" +b" if args else "")
                + " threads=%d" % b.threads)
    if plan == 3:
        x = b.add_input("x", [2, 3, 4, 5], dt, std=2.0)
        axis = choice(rng, [-1, 0, 1, 2, 3, -3])
        b.outputs.append(b.node("y", "softmax", x=x, axis=axis))
        return "softmax axis=%d" % axis
    if plan == 4:
        x = b.add_input("x", [2, 3, 4, 6], dt)
        shape = choice(rng, [[6, 4, 6], [3, 6], [2, -1, 6], [-1], [2, 3, 24], [4, 2, 3, 6]])
        if shape == [3, 6]:
            shape = [-1, 6]
        b.outputs.append(b.node("y", "reshape", x=x, shape=shape))
        return "reshape %s" % shape
    if plan == 5:
        x = b.add_input("x", [2, 3, 4, 5], dt)
        perm = [int(p) for p in rng.permutation(4)]
        b.outputs.append(b.node("y", "transpose", x=x, perm=perm))
        return "transpose %s" % perm
    if plan == 6:
        x = b.add_input("x", [3, 4], dt)
        axis = choice(rng, [0, 1, 2, -1, -2, -3])
        y = b.node("y", "unsqueeze", x=x, axis=axis)
        b.outputs.append(b.node("z", "tanh", x=y))
        return "unsqueeze axis=%d, tanh" % axis
    if plan == 7:
        x = b.add_input("x", [2, 3, 4], dt)
        axis = choice(rng, [0, 1, 2, -1])
        times = choice(rng, [1, 2, 3])
        b.outputs.append(b.node("y", "repeat", x=x, axis=axis, times=times))
        return "repeat axis=%d times=%d" % (axis, times)
    if plan == 8:
        x = b.add_input("x", [2, 3, 4, 5], dt)
        axis = choice(rng, [0, 1, 2, 3, -1, -2])
        keep = coin(rng)
        args = {"keepdims": keep} if (keep or coin(rng)) else {}
        b.outputs.append(b.node("y", "reduce_sum", x=x, axis=axis, **args))
        return "reduce_sum axis=%d keepdims=%s" % (axis, keep)
    if plan == 9:
        axis = choice(rng, [0, 1, 2, -1])
        shapes = []
        for n in range(choice(rng, [1, 2, 3])):
            sh = [2, 3, 4]
            sh[axis] = choice(rng, [1, 2, 5])
            shapes.append(sh)
        xs = [b.add_input("x%d" % n, sh, dt) for n, sh in enumerate(shapes)]
        b.outputs.append(b.node("y", "concat", inputs=xs, axis=axis))
        return "concat axis=%d %s" % (axis, shapes)
    if plan == 10:
        x = b.add_input("x", [2, 3, 5], dt)
        shape = choice(rng, [[2, 3, 5], [3, 5], [5], [2, 1, 5], [3, 1], [1]])
        m = b.add_input("m", shape, "bool", p_true=0.4)
        value = choice(rng, ["-inf", 0.0, -3.5, 7.0])
        y = b.node("y", "masked_fill", x=x, mask=m, value=value)
        if value == "-inf":
            y = b.node("z", "exp", x=y)
        b.outputs.append(y)
        return "masked_fill mask%s value=%s" % (shape, value)
    if plan == 11:
        S, T = choice(rng, SEQ[:6]), choice(rng, SEQ[:6])
        x = b.add_input("x", choice(rng, [[S, T], [2, S, T], [2, 3, S, T]]), dt)
        if coin(rng):
            y = b.node("y", "causal_mask", x=x)
            b.outputs.append(b.node("z", "exp", x=y))
            return "causal_mask S%d T%d, exp" % (S, T)
        # window_mask (attnc extension); bounds past S + T keep every key
        left = choice(rng, [0, 1, 2, 7, 2 ** 62, 2 ** 63 - 1])
        right = choice(rng, [0, 1, 3, 2 ** 63 - 1])
        y = b.node("y", "window_mask", x=x, left=left, right=right)
        b.outputs.append(b.node("z", "exp", x=y))
        return "window_mask(%d,%d) S%d T%d, exp" % (left, right, S, T)
    if plan == 12:
        x = b.add_input("x", [4, 6], dt)
        y = b.node("y", "scale", x=x, value=choice(rng, [-0.5, 0.0, 3.0, 1e-3]))
        y = b.node("z", "neg", x=y)
        b.outputs.append(b.node("w", "exp", x=b.node("t", "tanh", x=y)))
        return "scale neg tanh exp"
    if plan == 13:
        # bool and i32 values through shape ops, as outputs
        m = b.add_input("m", [2, 3], "bool")
        n = b.add_input("n", [3, 2], "i32", low=-5, high=5)
        b.outputs.append(b.node("mt", "transpose", x=m, perm=[1, 0]))
        b.outputs.append(b.node("nr", "repeat", x=n, axis=0, times=2))
        b.outputs.append(b.node("mu", "unsqueeze", x=m, axis=0))
        return "bool/i32 shape ops"
    if plan == 15:
        # cos and sin (attnc extensions) of f32 and of f16 or bf16 (computed in
        # f32, rounded once), odd sizes, sometimes a run-time dim; and of
        # angles as large as a long context's rotary tables take (positions
        # up to 131072 times inv_freq 1: whole numbers, exact in f32), where
        # a reduction by an f32 π/2 was 5e-9·|x| off
        N = b.dim("N", choice(rng, [1, 3, 5, 13]), coin(rng)) if coin(rng) else choice(rng, [1, 3, 7])
        std = choice(rng, [1.0, 3.0, 10.0])
        lowp = choice(rng, ["f16", "bf16"])
        x = b.add_input("x", choice(rng, [[N, 5, 7], [3, N], [N]]), dt, std=std)
        h = b.add_input("h", [3, N], lowp, std=std)
        far = b.add_input("far", [37], "f32",
                          values=rng.integers(0, 131072, 37).astype(np.float64))
        b.outputs.append(b.node("c", "cos", x=x))
        b.outputs.append(b.node("s", "sin", x=x))
        b.outputs.append(b.node("fc", "cos", x=far))
        b.outputs.append(b.node("fs", "sin", x=far))
        b.outputs.append(b.node("hc", "cos", x=h))
        b.outputs.append(b.node("hs", "sin", x=h))
        if coin(rng):
            b.outputs.append(b.node("cs", "mul", a="c", b=b.node("sc", "sin", x="c")))
        return "cos sin %s std=%g, f32 and %s" % (b.concrete(b.inputs["x"]["shape"]), std, lowp)
    if plan == 16:
        # slice along any axis (negative ones too) of odd fixed size, the other
        # dims sometimes run-time; a slice of a slice into another kernel; an
        # i32 or bool slice beside it
        fdt = choice(rng, ["f32", "f32", "f16", "bf16"])
        idt = choice(rng, ["i32", "bool"])
        sizes = [choice(rng, [1, 2, 3]), choice(rng, [3, 5, 7]), choice(rng, [1, 5, 13]),
                 choice(rng, [3, 7, 9])]
        axis, iaxis = int(rng.integers(-4, 4)), int(rng.integers(-4, 4))
        shape = list(sizes)
        free = [a for a in range(4) if a not in (axis % 4, iaxis % 4)]
        if free and coin(rng):
            d = choice(rng, free)
            shape[d] = b.dim("R", sizes[d], True)
        x = b.add_input("x", shape, fdt)
        m = b.add_input("m", shape, idt, low=-9, high=9)

        def bounds(n):
            start = int(rng.integers(0, n))
            return start, int(rng.integers(start + 1, n + 1))
        start, end = bounds(sizes[axis])
        y = b.node("y", "slice", x=x, axis=axis, start=start, end=end)
        b.outputs.append(y)
        desc = "slice %s axis=%d [%d, %d) %s" % (sizes, axis, start, end, fdt)
        if end - start > 1 and coin(rng):
            z = b.node("z", "slice", x=y, axis=axis % 4, start=1, end=end - start)
            b.outputs.append(b.node("e", "exp", x=z))
            desc += " sliced again"
        istart, iend = bounds(sizes[iaxis])
        b.outputs.append(b.node("ms", "slice", x=m, axis=iaxis, start=istart, end=iend))
        return desc + ", axis=%d [%d, %d) %s" % (iaxis, istart, iend, idt)
    if plan == 17:
        # a rotary embedding alone: in-graph tables, rotate_half by slice, neg
        # and concat (D/2 odd now and then), x·cos + rotate_half(x)·sin
        B, H = choice(rng, [1, 2]), choice(rng, [1, 3])
        S = choice(rng, [3, 5, 13])
        D = choice(rng, [6, 10, 16, 2])
        Sr = b.dim("S", S, True) if coin(rng) else S
        x = b.add_input("x", [B, H, Sr, D], dt)
        cos, sin, tables = rotary_tables(rng, b, Sr, D)
        b.outputs.append(rotate(rng, b, x, cos, sin, D, "x"))
        if coin(rng, 0.3):
            b.outputs.append(sin)
        return "rotary B%d H%d S%d D%d, %s" % (B, H, S, D, tables)
    if plan == 18:
        # matmul at the packed GEMM's sizes (as plan 2's linear): rows below
        # 16, past 96-row tasks and past its 192-row blocks (on 1, 2 or 3
        # threads: tasks of 192 or 96 rows), depths around its 8-depth transposes
        # and 256-depth blocks, columns around its 16- and 32-column panels;
        # b's batch broadcast, laid out [K, N] or (transpose_b) [N, K].
        rows = choice(rng, [5, 23, 61, 97, 130, 200])
        depth = choice(rng, [7, 13, 257, 300])
        cols = choice(rng, [6, 33, 40, 70])
        transpose = coin(rng)
        a = b.add_input("a", [2, rows, depth], dt)
        bb = b.add_input("b", [1, cols, depth] if transpose else [depth, cols], dt)
        b.outputs.append(b.node("y", "matmul", a=a, b=bb, transpose_b=transpose))
        b.threads = choice(rng, [1, 2, 3])
        return "matmul %dx%dx%d%s threads=%d" % (rows, depth, cols,
                                                 " transpose_b" if transpose else "", b.threads)
    # plan 14: fixed named dims in shapes and in a reshape
    b.dim("B", 2, False)
    b.dim("S", choice(rng, [3, 5]), False)
    x = b.add_input("x", ["B", "S", 12], dt)
    y = b.node("y", "reshape", x=x, shape=["B", "S", 3, 4])
    y = b.node("z", "transpose", x=y, perm=[0, 2, 1, 3])
    b.outputs.append(b.node("r", "reduce_sum", x=y, axis=-1))
    return "named fixed dims, reshape"


FAMILY_FN = {
    "dot": fam_dot, "general": fam_general, "additive": fam_additive, "cosine": fam_cosine,
    "masks": fam_masks, "bias": fam_bias, "gqa": fam_gqa, "layout": fam_layout,
    "lowp": fam_lowp, "dynamic": fam_dynamic, "exporter": fam_exporter,
    "primitives": fam_primitives, "amx": fam_amx,
}


def make_case(family, index, seed=0):
    # one independent stream per (seed, family, index): cases do not shift when counts change
    key = zlib.crc32(("%d/%s/%d" % (seed, family, index)).encode())
    rng = np.random.default_rng(key)
    b = Builder(rng, "%s_%d" % (family, index))
    desc = FAMILY_FN[family](rng, b, index)
    graph = b.graph()
    # which run-time dims go on the command line: all, none or some
    dyn = [n for n, v in b.dims_decl.items() if v is None]
    mode = choice(rng, ["all", "none", "some"])
    if mode == "all":
        give = dyn
    elif mode == "none":
        give = []
    else:
        give = [n for n in dyn if coin(rng)]
    dim_args = {n: b.bound[n] for n in give}
    if dyn:
        desc += " --dim:%s" % ",".join("%s=%d" % kv for kv in dim_args.items()) if dim_args else " (dims from files)"
    validate_graph(graph)
    return Case(family, index, desc, graph, b.arrays, dict(b.bound), dim_args, b.threads)


def generate(family, count=None, seed=0):
    if count is None:
        count = DEFAULT_COUNT[family]
    return [make_case(family, i, seed) for i in range(count)]


# --------------------------------------------------------------------------
# structural validation of generated graphs (keys, names, references)
# --------------------------------------------------------------------------

_NODE_KEYS = {
    "attention": ({"q", "k", "v"}, {"layout", "score", "scale", "softcap", "bias", "mask", "return_lse"}),
    "matmul": ({"a", "b"}, {"transpose_b"}),
    "linear": ({"x", "w"}, {"b"}),
    "add": ({"a", "b"}, set()), "sub": ({"a", "b"}, set()),
    "mul": ({"a", "b"}, set()), "div": ({"a", "b"}, set()),
    "scale": ({"x", "value"}, set()),
    "tanh": ({"x"}, set()), "exp": ({"x"}, set()), "neg": ({"x"}, set()),
    "sqrt": ({"x"}, set()),  # attnc extensions: sqrt, cos, sin, slice
    "cos": ({"x"}, set()), "sin": ({"x"}, set()),
    "softmax": ({"x"}, {"axis"}),
    "masked_fill": ({"x", "mask", "value"}, set()),
    "causal_mask": ({"x"}, set()),
    "window_mask": ({"x", "left", "right"}, set()),  # attnc extension
    "reshape": ({"x", "shape"}, set()),
    "transpose": ({"x", "perm"}, set()),
    "unsqueeze": ({"x", "axis"}, set()),
    "repeat": ({"x", "axis", "times"}, set()),
    "slice": ({"x", "axis", "start", "end"}, set()),
    "reduce_sum": ({"x", "axis"}, {"keepdims"}),
    "concat": ({"inputs", "axis"}, set()),
}


def validate_graph(g):
    assert set(g) <= {"attnc", "name", "dims", "inputs", "nodes", "outputs"}, g.keys()
    assert g["attnc"] == 1 and oracle.NAME_RE.match(g["name"])
    dims = g.get("dims", {})
    for n, v in dims.items():
        assert oracle.NAME_RE.match(n) and (v is None or (isinstance(v, int) and v > 0))
    defined = set()
    for n, decl in g["inputs"].items():
        assert oracle.NAME_RE.match(n) and set(decl) == {"shape", "dtype"}
        assert decl["dtype"] in oracle.ALL_DTYPES
        for d in decl["shape"]:
            assert (isinstance(d, int) and d > 0) or d in dims, (n, d)
        defined.add(n)
    for node in g["nodes"]:
        op = node["op"]
        req, opt = _NODE_KEYS[op]
        keys = set(node) - {"name", "op"}
        assert req <= keys and keys <= req | opt, (op, keys)
        assert oracle.NAME_RE.match(node["name"]) and node["name"] not in defined
        refs = []
        if op == "attention":
            refs += [node["q"], node["k"], node["v"]]
            sc = node.get("score", {"kind": "dot"})
            refs += [sc[x] for x in ("w", "wq", "wk", "v") if x in sc]
            refs += [x["input"] for x in node.get("bias", []) + node.get("mask", []) if "input" in x]
            refs += [x["slopes"] for x in node.get("bias", []) if "slopes" in x]
            for m in node.get("mask", []):
                if m["kind"] == "window":
                    assert set(m) == {"kind", "left", "right"}
        elif op == "concat":
            refs += node["inputs"]
        else:
            refs += [node[x] for x in ("a", "b", "x", "w", "mask") if x in node]
        for r in refs:
            assert r in defined, (node["name"], r)
        defined.add(node["name"])
        if op == "attention" and node.get("return_lse"):
            defined.add(node["name"] + ".lse")
    assert g["outputs"] and all(o in defined for o in g["outputs"])
    assert len(set(g["outputs"])) == len(g["outputs"])
