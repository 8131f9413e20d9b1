//===- DType.h - Element types of the graph format ---------------*- C++
//-*-===//
//
// The five element types a graph may declare, with their names in the graph
// format and their `.npy` descriptors.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_DTYPE_H
#define ATTNC_SUPPORT_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace attnc {

enum class DType { F32, F16, BF16, I32, Bool };

/// The graph-format name: "f32", "f16", "bf16", "i32", "bool".
std::string_view dtypeName(DType type);
/// Parses a graph-format name; nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element.
size_t dtypeSize(DType type);
/// The `.npy` descriptor: "<f4", "<f2", "<u2" (bf16 bit patterns), "<i4",
/// "|b1".
std::string_view npyDescr(DType type);

inline bool isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

} // namespace attnc

#endif // ATTNC_SUPPORT_DTYPE_H
