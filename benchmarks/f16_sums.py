#!/usr/bin/env python3
"""How far attention's output strays when its products are summed in f16, as
AVX512-FP16's multiply-adds (vfmadd*ph) sum them, rather than in f32.

Emulates the rounding: Q·Kᵀ in 32 f16 lanes (one rounding per multiply-add,
then a tree of f16 adds), P·V in f16 over blocks of 32 keys, each block added
into f32; the probabilities rounded to f16 either way. Prints the normwise
error against float64 for each case; f16's tolerance in attnc is 2e-2. docs/design/cpu-backend.md states the result.

    /usr/bin/python3 benchmarks/f16_sums.py
"""

import numpy as np

LANES = 32   # f16 lanes of a 512-bit vector
BLOCK = 32   # keys of a P·V block summed in f16


def round16(x):
    return x.astype(np.float16).astype(np.float32)


def scores_f16(q, k):
    """q [S, D] and k [T, D] (f16 values) summed in f16 lanes."""
    lanes = np.zeros((q.shape[0], k.shape[0], LANES), np.float32)
    for d0 in range(0, q.shape[1], LANES):
        w = min(LANES, q.shape[1] - d0)
        # A multiply-add's exact result rounded once (f16 products are exact
        # in f32).
        lanes[..., :w] = round16(lanes[..., :w] +
                                 q[:, None, d0:d0 + w] * k[None, :, d0:d0 + w])
    while lanes.shape[-1] > 1:
        half = lanes.shape[-1] // 2
        lanes = round16(lanes[..., :half] + lanes[..., half:])
    return lanes[..., 0]


def values_f16(p, v):
    """Unnormalised probabilities p [S, T] (rounded to f16) times v [T, D]."""
    p = round16(p)
    out = np.zeros((p.shape[0], v.shape[1]), np.float32)
    for t0 in range(0, p.shape[1], BLOCK):
        block = np.zeros_like(out)
        for t in range(t0, min(p.shape[1], t0 + BLOCK)):
            block = round16(block + p[:, t, None] * v[t])
        out += block
    return out


def error(rng, queries, keys, depth, score_sd, f16_scores, f16_values):
    # Scores q·k / sqrt(D) of standard deviation score_sd.
    q = round16(rng.standard_normal((queries, depth)) * score_sd)
    k = round16(rng.standard_normal((keys, depth)))
    v = round16(rng.standard_normal((keys, depth)))
    scale = 1 / np.sqrt(depth)
    s = q.astype(np.float64) @ k.T.astype(np.float64) * scale
    e = np.exp(s - s.max(1, keepdims=True))
    expected = e @ v.astype(np.float64) / e.sum(1, keepdims=True)
    raw = scores_f16(q, k) if f16_scores else q @ k.T
    s32 = raw * np.float32(scale)
    e32 = np.exp(s32 - s32.max(1, keepdims=True))
    pv = values_f16(e32, v) if f16_values else round16(e32) @ v
    got = pv / e32.sum(1, keepdims=True)
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


def main():
    rng = np.random.default_rng(0)
    print("| D | score sd | T | f32 sums | f16 Q·Kᵀ | f16 P·V | both in f16 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for depth in (64, 128, 256):
        for score_sd in (1, 4, 16):
            for keys in (1024, 4096):
                errors = [error(rng, 8, keys, depth, score_sd, a, b)
                          for a, b in ((False, False), (True, False),
                                       (False, True), (True, True))]
                print("| %d | %d | %d | %s |" % (
                    depth, score_sd, keys,
                    " | ".join("%.1e" % e for e in errors)), flush=True)


if __name__ == "__main__":
    main()
