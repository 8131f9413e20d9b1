//===- DType.cpp - Element types of the graph format ----------------------===//

#include "Support/DType.h"

namespace attnc {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  std::string_view npyDescr;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4, "<f4"},   {DType::F16, "f16", 2, "<f2"},
    {DType::BF16, "bf16", 2, "<u2"}, {DType::I32, "i32", 4, "<i4"},
    {DType::Bool, "bool", 1, "|b1"},
};
const DTypeInfo &info(DType type) { return kDTypes[static_cast<int>(type)]; }
} // namespace

std::string_view dtypeName(DType type) { return info(type).name; }
size_t dtypeSize(DType type) { return info(type).size; }
std::string_view npyDescr(DType type) { return info(type).npyDescr; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &candidate : kDTypes)
    if (candidate.name == name)
      return candidate.type;
  return std::nullopt;
}

} // namespace attnc
