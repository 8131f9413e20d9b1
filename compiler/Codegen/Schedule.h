//===- Schedule.h - Kernel schedules as data ----------------------*- C++
//-*-===//
//
// How an attention kernel is tiled, kept apart from what it computes: read
// from schedules/cpu/<target class>.json (compiled in) or from a user's
// --schedule file, validated, and recorded in every kernel's manifest.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_SCHEDULE_H
#define ATTNC_CODEGEN_SCHEDULE_H

#include "Codegen/Target.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnc {

/// How a kernel computes the bf16 tiles of its prefill products.
enum class MatrixTiles {
  none,     ///< Vector code only.
  amx,      ///< AMX instructions (the target has amx-tile and amx-bf16).
  emulated, ///< The AMX path with its tile operations in vector code, to
            ///< check it on CPUs without AMX (Codegen/MatrixTiles.h).
};

/// "none", "amx" or "emulated".
const char *matrixTilesName(MatrixTiles tiles);
/// The MatrixTiles of a matrixTilesName; nullopt for any other name.
std::optional<MatrixTiles> parseMatrixTiles(std::string_view name);

struct AttentionSchedule {
  std::string targetClass; ///< "x86-64", "x86-64-avx2", "x86-64-avx512".
  int64_t queryTile = 0;   ///< Queries per task.
  int64_t keyTile = 0;     ///< Keys per online-softmax step.
  int64_t vectorWidth = 0; ///< f32 lanes per vector.
  int64_t scoreVectors = 0, scoreKeys = 0; ///< QKᵀ register block.
  int64_t pvRows = 0, pvVectors = 0;       ///< P·V register block.
  int64_t threads = 0;  ///< Default threads; 0 = one per core.
  /// A decode step (a tile of at most one vector of rows) prefetches its V
  /// rows while its scores run when a V element has at most this many
  /// bytes: 0 never, 2 f16/bf16 only, 4 every element type.
  int64_t valuePrefetchBytes = 4;
  /// Keys per online-softmax step of a decode tile: its K and V rows stay in
  /// L1 from the products to P·V, and the next step's K rows are prefetched.
  /// A multiple of decodeKeyBlock(vectorWidth).
  int64_t decodeStep = 0;
  /// The cache a decode step's prefetches fill: 1 = L1 (prefetcht0), 2 =
  /// L2 (prefetcht1).
  int64_t decodePrefetchLevel = 1;
  /// bf16 Q·Kᵀ and P·V through AVX512-BF16 dot products (vdpbf16ps): set
  /// from the target's features when compiling, never read from a file.
  bool bf16Dot = false;
  /// bf16 prefill products on AMX tiles: set from the target's features
  /// (amx-bf16) or --emulate-amx when compiling, never read from a file.
  MatrixTiles matrixTiles = MatrixTiles::none;
  std::string measured; ///< What the schedule measured, free text.
  std::string source;   ///< The file it came from, or "default".

  /// The schedule as JSON text, in the file format.
  std::string toJson() const;
};

/// Keys per register block of a decode tile's scores (depth in lanes: each
/// block fills one vector with min(W, 4) rows × W / min(W, 4) keys).
inline int64_t decodeKeyBlock(int64_t vectorWidth) {
  return vectorWidth / (vectorWidth < 4 ? vectorWidth : 4);
}

/// Whether every tile of an attention whose tasks hold `taskRows` query rows
/// (S × Hq/Hkv: one kv head's query heads) is a decode tile of at most one
/// vector of rows (AttentionKernel.cpp's `oneVector`). Then query_tile and
/// score_block shape no loop that runs; key_tile, pv_block and the decode
/// parameters do.
inline bool decodeTilesOnly(int64_t taskRows, int64_t vectorWidth) {
  return taskRows >= 1 && taskRows <= vectorWidth;
}

/// decode_step when a schedule leaves it out: two vectors of keys, measured
/// best for f32 and bf16 rows of 128 on AVX2 (docs/design/cpu-backend.md).
inline int64_t defaultDecodeStep(int64_t vectorWidth) {
  return 2 * vectorWidth;
}

/// The default schedule of `target`'s class (host: the class its vector
/// width gives).
AttentionSchedule defaultSchedule(const CpuTarget &target);

/// Parses and validates a schedule file for `target`. Throws
/// UserError("FILE: /json/pointer: message").
AttentionSchedule parseSchedule(const std::string &text,
                                const std::string &file,
                                const CpuTarget &target);
AttentionSchedule loadSchedule(const std::string &path,
                               const CpuTarget &target);

} // namespace attnc

#endif // ATTNC_CODEGEN_SCHEDULE_H
