# Helper of input-streams.test: checks the random inputs that
# Inputs/streams.json writes back as outputs (decision f of
# docs/graph-format.md). Usage: check_random.py DIR T
import sys

import numpy as np

directory, T = sys.argv[1], int(sys.argv[2])
q = np.load(directory + "/q.npy")
v = np.load(directory + "/v.npy")
keep = np.load(directory + "/keep.npy")
length = np.load(directory + "/len.npy")

# Floats: standard normal; bf16 travels as <u2 bit patterns.
for name, values in [("q", q.astype(np.float64)),
                     ("v", (v.astype(np.uint32) << 16).view(np.float32).astype(np.float64))]:
    assert abs(values.mean()) < 0.15, "%s: mean %g" % (name, values.mean())
    assert 0.85 < values.std() < 1.15, "%s: std %g" % (name, values.std())
    assert len(np.unique(values)) > 500, "%s: few distinct values" % name
assert v.dtype == np.dtype("<u2"), v.dtype
# Bool attention masks: mostly true (attend).
assert keep.dtype == np.dtype("|b1"), keep.dtype
assert 0.6 < keep.mean() < 0.97, "keep: %g true" % keep.mean()
# Key lengths: uniform in [0, T].
assert length.dtype == np.dtype("<i4"), length.dtype
assert length.min() >= 0 and length.max() <= T, "len outside [0, %d]: %s" % (T, length)
assert len(np.unique(length)) > 3, "len: %s" % length
print("random inputs ok")
