//===- TuningKey.cpp - What a tuning record is valid for ------------------===//

#include "Tuning/TuningKey.h"
#include "Import/ImportGraph.h"

#include "Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

namespace attnc::tuning {

namespace {

std::string hash(const std::string &text) {
  uint64_t value = llvm::xxh3_64bits(llvm::StringRef(text));
  std::string hex = llvm::utohexstr(value, /*LowerCase=*/true);
  return std::string(16 - hex.size(), '0') + hex;
}

/// "2^k" with 2^k the smallest power of two >= value.
std::string bucket(int64_t value) {
  int exponent = 0;
  while ((int64_t(1) << exponent) < value && exponent < 62)
    ++exponent;
  return "2^" + std::to_string(exponent);
}

std::string readFile(const std::string &path) {
  std::ifstream stream(path);
  std::string text;
  std::getline(stream, text);
  return text;
}

} // namespace

Graph specializeGraph(const Graph &graph, const DimBindings &dims) {
  Graph result = graph;
  auto bind = [&](Dim &dim) {
    if (!dim.isFixed()) {
      auto found = dims.find(dim.symbol);
      if (found != dims.end())
        dim = Dim::fixed(found->second);
    }
  };
  for (Value &value : result.values)
    for (Dim &dim : value.type.shape)
      bind(dim);
  for (DimDecl &decl : result.dims)
    if (!decl.fixed) {
      auto found = dims.find(decl.name);
      if (found != dims.end())
        decl.fixed = found->second;
    }
  return result;
}

KernelIdentity kernelIdentity(const Graph &graph, const DimBindings &dims) {
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importGraph(specializeGraph(graph, dims), context);
  runAttnPipeline(*module);
  KernelIdentity identity;
  std::string description;
  llvm::raw_string_ostream out(description);
  bool first = true;
  module->walk([&](mlir::Operation *op) {
    auto attention = llvm::dyn_cast<mlir::attn::AttentionOp>(op);
    if (!attention) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "attn")
        out << op->getName().getStringRef() << "\n";
      return;
    }
    auto shape = [](mlir::Value value) {
      return llvm::cast<mlir::RankedTensorType>(value.getType()).getShape();
    };
    mlir::attn::semantics::LayoutAxes axes = attention.getLayoutAxes();
    auto q = shape(attention.getQuery()), k = shape(attention.getKey()),
         v = shape(attention.getValue());
    int64_t group = q[axes.heads] / std::max<int64_t>(k[axes.heads], 1);
    // The variant: what it computes, not how long its sequences are.
    out << "attention " << op->getAttrDictionary() << " Dk=" << q[axes.depth]
        << " Dv=" << v[axes.depth] << " G=" << group << " types:";
    for (mlir::Value operand : op->getOperands())
      out << " "
          << llvm::cast<mlir::ShapedType>(operand.getType()).getElementType();
    out << "\n";
    if (first) {
      identity.queryLength = q[axes.length];
      identity.taskRows = q[axes.length] * group;
      identity.shapeBucket = "S=" + bucket(q[axes.length]) +
                             " T=" + bucket(k[axes.length]) +
                             " BH=" + bucket(q[axes.batch] * q[axes.heads]);
      first = false;
    }
  });
  identity.description = description;
  identity.kernel = hash(description);
  if (identity.shapeBucket.empty())
    identity.shapeBucket = "none";
  return identity;
}

MachineIdentity machineIdentity(const CpuTarget &target) {
  MachineIdentity identity;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      identity.cpu = line.substr(line.find(':') + 2);
      break;
    }
  std::ostringstream out;
  out << "target " << target.name << " " << target.cpu << " " << target.features
      << "\n";
  out << "cpu " << identity.cpu << " (" << llvm::sys::getHostCPUName().str()
      << ")\n";
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> enabled;
  for (const auto &feature : features)
    if (feature.second)
      enabled.push_back(feature.first().str());
  std::sort(enabled.begin(), enabled.end());
  out << "features";
  for (const std::string &feature : enabled)
    out << " " << feature;
  out << "\ncaches";
  for (int index = 0; index < 8; ++index) {
    std::string base =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::string size = readFile(base + "/size");
    if (size.empty())
      break;
    out << " L" << readFile(base + "/level") << readFile(base + "/type")[0]
        << "=" << size;
  }
  out << "\ncores " << std::thread::hardware_concurrency() << "\n";
  identity.description = out.str();
  identity.fingerprint = hash(identity.description);
  return identity;
}

std::string attncVersion() { return ATTNC_VERSION; }

} // namespace attnc::tuning
