//===- Npy.h - numpy .npy reading and writing -------------------*- C++ -*-===//
//
// Every tensor that enters or leaves attnc (`--input NAME=F.npy`, the output
// directory of `run`/`reference`) is a `.npy` file. The descriptors attnc
// speaks are those of DType: <f4, <f2, <u2 (bf16 bit patterns), <i4, |b1;
// multi-byte ones may also be spelled with '=' (native, i.e. little-endian on
// every host attnc supports). Anything else, Fortran order, a malformed or
// truncated file is one UserError naming the file; nothing else is thrown.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_NPY_H
#define ATTNC_SUPPORT_NPY_H

#include "Support/Tensor.h"

#include <optional>
#include <string>
#include <string_view>

namespace attnc {

/// Parses a .npy image (format versions 1.0, 2.0, 3.0). \p source names it in
/// errors ("SOURCE: problem").
/// With `convertTo`, other numeric dtypes (int64, float64, int8/16,
/// uint8/16) are read too and converted to it when every value converts
/// exactly (0/1 to bool, integers in range to i32, floats a float holds).
Tensor parseNpy(std::string_view bytes, const std::string &source,
                std::optional<DType> convertTo = std::nullopt);

/// Reads a file; errors name \p path (unreadable, not .npy, corrupt, truncated,
/// unsupported dtype).
Tensor readNpy(const std::string &path);

/// Serializes as format 1.0 exactly as numpy 1.24's np.save does (header padded
/// to a multiple of 64 bytes, ending in '\n'), C order. Falls back to 2.0 only
/// for a header over 64 KiB, as numpy does. \p t's data must match its shape.
std::string serializeNpy(const Tensor &t);

/// Writes atomically: a temporary file next to \p path, then rename, so that a
/// failure never leaves a partial file at \p path. Throws UserError naming
/// \p path on failure.
void writeNpy(const std::string &path, const Tensor &t);

} // namespace attnc

#endif // ATTNC_SUPPORT_NPY_H
