# Helper of bad-npy-corrupt.test: writes damaged .npy files for an f32 input
# of shape [1, 2, 3, 8] into the current directory.
import numpy as np


def header(shape, descr="<f4", fortran=False, raw=None):
    text = raw if raw is not None else "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, fortran, shape)
    text += " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode()


data = np.ones((1, 2, 3, 8), np.float32).tobytes()
good = header("(1, 2, 3, 8)") + data
files = {
    "truncated-data.npy": good[:-10],
    "no-data.npy": header("(1, 2, 3, 8)"),
    "truncated-header.npy": good[:30],
    "magic-only.npy": b"\x93NUMPY",
    "not-npy.npy": b"hello, this is text\n",
    "trailing.npy": good + b"xx",
    "fortran.npy": header("(1, 2, 3, 8)", fortran=True) + data,
    "bad-header.npy": header(None, raw="{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3"),
    "negative.npy": header("(1, 2, -3, 8)"),
    "overflow.npy": header("(1, 2, 18446744073709551617, 8)"),
    "too-many.npy": header("(4611686018427387904, 2, 4, 8)"),
    "empty.npy": b"",
}
for name, content in files.items():
    with open(name, "wb") as f:
        f.write(content)
