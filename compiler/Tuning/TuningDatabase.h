//===- TuningDatabase.h - Measured schedules, kept in SQLite ----*- C++ -*-===//
//
// What `attnc tune` measured, one row per candidate schedule, in an SQLite
// file (docs/tuning.md). A row is found only by its whole key: the kernel
// variant, the shape bucket, the target fingerprint, the backend, the attnc
// version and the schedule-space version, so a record from another version
// or machine is never used. Every write is one transaction: a tuner killed
// at any point loses at most the candidate it was measuring, and tuners
// writing one file at once wait for each other (WAL, a busy timeout) rather
// than lose rows. A file that is not an attnc tuning database is refused,
// never written.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_TUNINGDATABASE_H
#define ATTNC_TUNING_TUNINGDATABASE_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace attnc::tuning {

/// What a measurement is valid for; every field must match for it to be used.
struct TuningKey {
  std::string kernel;      ///< Canonical hash of the fused kernel variant.
  std::string shapeBucket; ///< Powers of two of the tuned sizes.
  std::string target;      ///< Target fingerprint (hash).
  std::string backend;     ///< "mlir" or "halide".
  std::string attncVersion;
  int64_t spaceVersion = 0; ///< Version of the schedule space searched.

  bool operator==(const TuningKey &other) const {
    return kernel == other.kernel && shapeBucket == other.shapeBucket &&
           target == other.target && backend == other.backend &&
           attncVersion == other.attncVersion &&
           spaceVersion == other.spaceVersion;
  }
};

/// How a candidate ended; only `ok` candidates are ever chosen.
enum class Outcome { ok, wrong, crashed, timedOut, failedToCompile };

const char *outcomeName(Outcome outcome);
/// The outcome named `name`; nullopt for a name no outcome has.
std::optional<Outcome> outcomeNamed(const std::string &name);

struct TuningRecord {
  TuningKey key;
  std::string candidate; ///< The schedule, canonical JSON.
  Outcome outcome = Outcome::ok;
  double timeMs = 0;     ///< The candidate's fastest timed run (ok only).
  double defaultMs = 0;  ///< The default schedule's, timed in the same run.
  std::string detail;    ///< Why it failed, or what was measured.
  std::string machine;   ///< The CPU's name, for people.
  std::string createdAt; ///< UTC, ISO 8601.
  /// Rounds in which the tuner's confirmation timed this candidate beside
  /// the default, in turn (defaultMs is then the median of the default's
  /// fastest runs over those rounds, and timeMs defaultMs times the median
  /// of the candidate's ratios to the default round by round); 0: one
  /// measurement of the search.
  int64_t confirmedRounds = 0;
};

class TuningDatabase {
public:
  /// Opens the database at `path`, creating it (and its directory) when
  /// `create` is set and the file is missing. Throws UserError naming
  /// `path` for a file that is not an attnc tuning database, one written
  /// by a newer attnc, or one that cannot be opened.
  static std::unique_ptr<TuningDatabase> open(const std::string &path,
                                              bool create);
  ~TuningDatabase();
  TuningDatabase(const TuningDatabase &) = delete;
  TuningDatabase &operator=(const TuningDatabase &) = delete;

  const std::string &path() const { return file; }

  /// Stores one measurement in its own transaction. A candidate measured
  /// again keeps the better result: ok over a failure, then the faster.
  void record(const TuningRecord &record);
  /// Whether `candidate` has a row under `key` (a resumed tune skips it).
  bool contains(const TuningKey &key, const std::string &candidate) {
    return find(key, candidate).has_value();
  }
  /// The row of `candidate` under `key`, if any.
  std::optional<TuningRecord> find(const TuningKey &key,
                                   const std::string &candidate);
  /// The row builds use under `key`, if any: of the confirmed rows the one
  /// fastest against the default in its rounds, else the fastest ok row.
  std::optional<TuningRecord> best(const TuningKey &key);
  /// Up to `count` ok rows under `key`, fastest against the default timed
  /// beside them first (the candidates worth confirming).
  std::vector<TuningRecord> fastest(const TuningKey &key, int64_t count);
  /// Rows for the same kernel, bucket and backend under another target,
  /// attnc version or schedule-space version: stale, never used.
  int64_t staleCount(const TuningKey &key);
  /// Every row, in key order (for export).
  std::vector<TuningRecord> records();
  /// Stores `records` in one transaction, keeping the better result per
  /// key and candidate (import).
  void merge(const std::vector<TuningRecord> &records);

private:
  TuningDatabase(sqlite3 *handle, std::string path)
      : db(handle), file(std::move(path)) {}
  void execute(const char *sql);
  void upsert(const TuningRecord &record);

  sqlite3 *db;
  std::string file;
};

/// One record as a line of JSON (export) and back (import). Throws
/// UserError("WHERE: message") for a line that is not a record.
std::string toJsonLine(const TuningRecord &record);
TuningRecord fromJsonLine(const std::string &line, const std::string &where);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_TUNINGDATABASE_H
