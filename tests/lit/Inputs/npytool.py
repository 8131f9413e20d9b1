# Helper of the lit tests: makes, inspects and compares .npy files.
#
#   npytool.py info F.npy...            one line per file: descr, shape, finite
#   npytool.py same A.npy B.npy         exit 0 iff bit-identical (descr, shape, bytes)
#   npytool.py differ A.npy B.npy       exit 0 iff same descr and shape, other bytes
#   npytool.py close A.npy B.npy TOL    exit 0 iff same descr and shape and
#                                       ||a - b|| / ||b|| <= TOL
#   npytool.py make F.npy DESCR SHAPE [SEED]
#                                       a random array: floats standard normal,
#                                       <u2 = bf16 bit patterns, <i4 in [0, 4],
#                                       |b1 mostly true; SHAPE like 1,2,3
#   npytool.py fill F.npy DESCR SHAPE VALUES
#                                       an array filled from a comma list
#   npytool.py invfreq F.npy N BASE     rotary embeddings' inverse frequencies,
#                                       <f4 [N]: BASE^(-i/N), i = 0 .. N-1
#   npytool.py attention O.npy Q.npy K.npy V.npy [causal] [keylen=L.npy]
#                        [rotary=POS.npy,INV.npy] [tol=X]
#                                       compares O with float64 attention
#                                       (bhsd, GQA, 1/sqrt(D), bottom-right causal);
#                                       with rotary, q and k first get Llama's
#                                       rotary embeddings: each pair (x_i,
#                                       x_{i+D/2}) rotated by POS[s]·INV[i]
#   npytool.py stats F.npy              min, max, mean of the values
#
# Several calls of one command can share one process (numpy is slow to
# import): separate their arguments with "+", as in
#   npytool.py same A.npy B.npy + C.npy D.npy
import sys

import numpy as np


def load(path):
    a = np.load(path, allow_pickle=False)
    return a


def as_float(a):
    """float64 values of an array; <u2 is read as bf16 bit patterns."""
    if a.dtype == np.dtype("<u2"):
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def to_bf16_bits(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def shape_of(text):
    return tuple(int(x) for x in text.split(",") if x)


def make(path, descr, shape, seed=0):
    rng = np.random.default_rng(int(seed))
    shape = shape_of(shape)
    if descr == "<u2":
        a = to_bf16_bits(rng.standard_normal(shape))
    elif descr == "<i4":
        a = rng.integers(0, 5, shape).astype("<i4")
    elif descr == "|b1":
        a = rng.random(shape) < 0.8
    else:
        a = rng.standard_normal(shape).astype(descr)
    np.save(path, a)


def fill(path, descr, shape, values):
    a = np.array([float(x) for x in values.split(",")]).astype(descr)
    np.save(path, a.reshape(shape_of(shape)))


def info(paths):
    for path in paths:
        a = load(path)
        values = as_float(a) if a.dtype.kind in "fu" else a
        finite = bool(np.all(np.isfinite(values))) if a.dtype.kind in "fu" else True
        print("%s: %s %s finite=%s" % (path.rsplit("/", 1)[-1], a.dtype.str,
                                       list(a.shape), "yes" if finite else "no"))


def rotate_pairs(x, positions, inv_freq):
    """x [B, H, S, D] with each pair (x_i, x_{i+D/2}) at position s turned by
    the angle positions[s]·inv_freq[i], as a complex product."""
    half = x.shape[-1] // 2
    turn = np.exp(1j * np.outer(positions, inv_freq))        # [S, D/2]
    z = (x[..., :half] + 1j * x[..., half:]) * turn
    return np.concatenate([z.real, z.imag], axis=-1)


def attention(out, q, k, v, options):
    o = as_float(load(out))
    q, k, v = (as_float(load(p)) for p in (q, k, v))
    causal = "causal" in options
    tol = 1e-4
    keylen = None
    for option in options:
        if option.startswith("tol="):
            tol = float(option[4:])
        if option.startswith("keylen="):
            keylen = load(option[7:])
        if option.startswith("rotary="):
            positions, inv_freq = (as_float(load(p)) for p in option[7:].split(","))
            q, k = rotate_pairs(q, positions, inv_freq), rotate_pairs(k, positions, inv_freq)
    B, Hq, S, D = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    k = np.repeat(k, Hq // Hkv, axis=1)
    v = np.repeat(v, Hq // Hkv, axis=1)
    s = np.einsum("bhsd,bhtd->bhst", q, k) / np.sqrt(D)
    keep = np.ones((B, 1, S, T), bool)
    i = np.arange(S)[:, None] + T - S
    j = np.arange(T)[None, :]
    if causal:
        keep &= (j <= i)[None, None]
    if keylen is not None:
        keep &= (j[None, None] < keylen[:, None, None, None])
    s = np.where(keep, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.where(keep, np.exp(s - m), 0)
    denom = p.sum(-1, keepdims=True)
    p = np.divide(p, denom, out=np.zeros_like(p), where=denom > 0)
    ref = np.einsum("bhst,bhtd->bhsd", p, v)
    assert o.shape == ref.shape, "shape %s, expected %s" % (o.shape, ref.shape)
    assert np.all(np.isfinite(o)), "non-finite values in the output"
    err = np.linalg.norm(o - ref) / np.linalg.norm(ref)
    print("attention rel_err %.3g (tolerance %g) %s" % (err, tol, "ok" if err <= tol else "FAIL"))
    return 0 if err <= tol else 1


def main(argv):
    command, rest = argv[1], argv[2:]
    status, group = 0, []
    for arg in rest + ["+"]:
        if arg != "+":
            group.append(arg)
            continue
        result = run(command, group)
        if result:
            print("failed: %s %s" % (command, " ".join(group)), file=sys.stderr)
        status = max(status, result or 0)
        group = []
    return status


def run(command, args):
    if command == "info":
        info(args)
    elif command == "same" or command == "differ":
        a, b = load(args[0]), load(args[1])
        if a.dtype != b.dtype or a.shape != b.shape:
            print("%s %s vs %s %s" % (a.dtype.str, a.shape, b.dtype.str, b.shape))
            return 1
        identical = a.tobytes() == b.tobytes()
        print("identical" if identical else "different")
        return 0 if identical == (command == "same") else 1
    elif command == "close":
        a, b = load(args[0]), load(args[1])
        if a.dtype != b.dtype or a.shape != b.shape:
            print("%s %s vs %s %s" % (a.dtype.str, a.shape, b.dtype.str, b.shape))
            return 1
        a, b = as_float(a), as_float(b)
        err = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)
        print("rel_err %.3g" % err)
        return 0 if err <= float(args[2]) else 1
    elif command == "make":
        make(*args)
    elif command == "fill":
        fill(*args)
    elif command == "invfreq":
        n, base = int(args[1]), float(args[2])
        np.save(args[0], (base ** (-np.arange(n) / n)).astype("<f4"))
    elif command == "attention":
        return attention(args[0], args[1], args[2], args[3], args[4:])
    elif command == "stats":
        a = as_float(load(args[0]))
        print("min %g max %g mean %g" % (a.min(), a.max(), a.mean()))
    else:
        print("unknown command " + command)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
