//===- HalideBackend.h - Kernels through Halide 14 --------------*- C++ -*-===//
//
// The Halide backend's interface to the driver. Plain C++ only: the Halide
// headers (which pull in LLVM 14) stay inside compiler/Halide, and the
// driver and the LLVM 19 code never see them (docs/toolchain.md, trap 1).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_HALIDEBACKEND_H
#define ATTNC_HALIDE_HALIDEBACKEND_H

#include "Import/KernelPlan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc {

/// How the attention pipeline is scheduled on a CPU (schedules/halide/).
struct HalideSchedule {
  std::string targetClass; ///< "x86-64", "x86-64-avx2", "x86-64-avx512".
  std::string kind = "hand"; ///< "hand" or "auto:<autoscheduler>".
  int64_t taskQueries = 0;   ///< Queries per attnrt_parallel_for task.
  int64_t queryTile = 0;     ///< Queries whose scores are kept at once.
  int64_t keyTile = 0; ///< Keys per tile of the online softmax (rows form).
  int64_t vectorWidth = 0;   ///< f32 lanes.
  int64_t scoreVectors = 0, scoreKeys = 0; ///< QKᵀ register block.
  int64_t pvRows = 0, pvVectors = 0;       ///< P·V register block.
  /// The decode form's blocks (tasks of fewer queries than a vector):
  /// Q·Kᵀ heads × keys, P·V heads × vectors of the value's head dim.
  int64_t decodeScoreHeads = 0, decodeScoreKeys = 0;
  int64_t decodePvHeads = 0, decodePvVectors = 0;
  /// The most keys a decode task's part sees (0: no bound): NAME_entry
  /// splits longer key ranges into parts, merged afterwards, so that a
  /// part's scores and weights stay in L2.
  int64_t decodePartKeys = 0;
  /// Keys per chunk of the decode form's P·V (0: one pass over a part's
  /// keys): each chunk's V rows are copied once and every P·V block reads
  /// them from L1, so V comes from memory once however many blocks the
  /// registers need to cover every head and Dv.
  int64_t decodePvKeys = 0;
  /// The values decodePvKeys may hold (schedule files and tuning spaces):
  /// 0, or whole 16 keys (whole vectors, whole bf16 pairs) up to
  /// kMostDecodePvKeys.
  static constexpr int64_t kMostDecodePvKeys = 4096;
  static bool validDecodePvKeys(int64_t keys) {
    return keys >= 0 && keys <= kMostDecodePvKeys && keys % 16 == 0;
  }
  std::string measured; ///< What it measured, free text.
  std::string source;   ///< The file it came from, or "default".

  /// For "auto:<name>" only. One pipeline call is one task on one thread:
  /// the autoscheduler is told parallelism 1 (Halide's MachineParams).
  std::string autoscheduler; ///< "adams2019", "mullapudi2016", "li2018".
  int64_t parallelism = 1;
  int64_t lastLevelCacheBytes = 0;
  double balance = 0; ///< Cost of a load relative to arithmetic.
  /// The size the autoscheduler plans for, per run-time dim of the graph,
  /// and which of them are defaults rather than given by --dim.
  std::map<std::string, int64_t> estimates;
  std::vector<std::string> defaultedEstimates;

  bool isAuto() const { return !autoscheduler.empty(); }
  /// Why the register blocks do not fit the query tile ("" when they do).
  /// A Q·Kᵀ block wider than the tile is rounded up over clamped rows past
  /// it, which made H=8 S=T=1024 D=128 12-50 times slower.
  std::string blocksOutsideTile() const;
  /// Attention with fewer queries than this runs the decode form (keys in
  /// the lanes): a vector's width; 0 for an autoscheduler (rows form only).
  int64_t decodeBelow() const { return isAuto() ? 0 : vectorWidth; }
  /// For the manifest: what was used, "kind" included.
  std::string toJson() const;
  /// A hand schedule in the --schedule file format (toJson without "kind",
  /// which files do not hold).
  std::string toFileJson() const;
};

/// The autoschedulers `--schedule auto:NAME` accepts.
const std::vector<std::string> &halideAutoschedulers();
/// `--schedule auto:NAME`: the target class's task size (from its hand
/// schedule) with `name`'s autoscheduler; estimates are left to the caller.
/// Throws UserError for an unknown name.
HalideSchedule autoHalideSchedule(const std::string &name,
                                  const std::string &targetClass);

/// The hand schedule of a target class (compiled in from schedules/halide).
HalideSchedule defaultHalideSchedule(const std::string &targetClass);
/// Parses a hand schedule's text; throws UserError("FILE: /pointer: ...").
HalideSchedule parseHalideSchedule(const std::string &text,
                                   const std::string &file,
                                   const std::string &targetClass);
/// Reads a --schedule file; throws UserError("FILE: /pointer: message").
HalideSchedule loadHalideSchedule(const std::string &path,
                                  const std::string &targetClass);

/// One kernel compiled by Halide: an object holding the pipeline `function`
/// (compiled with no_runtime: every pipeline of a graph shares the one
/// runtime of halideRuntime), whose arguments are halide_buffer_t
/// pointers for the plan values in `arguments`, in order. An attention takes
/// its crop (int32 batch, first query, query count, key length, and for the
/// decode form the kv head, key part and parts) before `arguments[cropAt]`,
/// the first output; a primitive has no crop (-1).
struct HalideLibrary {
  std::string object; ///< The object file's bytes, or LLVM bitcode's.
  /// `object` is LLVM bitcode, for the driver to compile for the target's
  /// CPU (bf16 products: Halide's Sapphire Rapids patterns, not its CPU).
  bool bitcode = false;
  std::string function;
  std::vector<int> arguments;
  int cropAt = -1;
};

/// Throws UserError naming the node for what the Halide backend cannot
/// compile, std::logic_error for Halide failures on valid input. `decode`:
/// the pipeline for NAME_entry's decode tasks (every query head of one kv
/// head, fewer queries than the schedule's vector, one part of the keys),
/// hand schedules only; it takes the inputs, the crop (with the key part
/// and the number of parts after the kv head) and, instead of the outputs,
/// the partial rows (f32, 5-D, AttentionFuncs.h) it writes.
HalideLibrary compileHalideAttention(const KernelPlan &plan,
                                     const PlannedKernel &kernel,
                                     const HalideSchedule &schedule,
                                     const std::string &targetClass,
                                     const std::string &function,
                                     bool decode = false,
                                     bool bf16Products = false);

/// The merge of an attention's decode-form partial rows: a pipeline taking
/// the partial rows of every part, the number of key positions T (int32),
/// then the outputs in `arguments` (those of the rows form).
HalideLibrary compileHalideMerge(const KernelPlan &plan,
                                 const PlannedKernel &kernel,
                                 const HalideSchedule &schedule,
                                 const std::string &targetClass,
                                 const std::string &function);

/// A primitive kernel (kernel.primitive set; not reshape, unsqueeze or
/// copy, whose bytes NAME_entry copies itself) as one serial pipeline.
HalideLibrary compileHalidePrimitive(const KernelPlan &plan,
                                     const PlannedKernel &kernel,
                                     const HalideSchedule &schedule,
                                     const std::string &targetClass,
                                     const std::string &function);

/// Halide's runtime for `targetClass` as one object, shared by all
/// pipelines of a library (compiled once, when attnc was built).
std::string halideRuntime(const std::string &targetClass);

/// Told of every temporary file the backend has Halide write, with `live`
/// true once it exists and false once it is removed, so that the driver can
/// remove the live ones should SIGINT or SIGTERM end the process (this
/// library is built without LLVM's signal handling). Null: nobody is told.
using TemporaryFileObserver = void (*)(const std::string &path, bool live);
void setTemporaryFileObserver(TemporaryFileObserver observer);

} // namespace attnc

#endif // ATTNC_HALIDE_HALIDEBACKEND_H
