//===- TuningDatabase.cpp - Measured schedules, kept in SQLite ------------===//

#include "Tuning/TuningDatabase.h"
#include "Support/Error.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <filesystem>
#include <system_error>

namespace attnc::tuning {

namespace {

/// PRAGMA application_id of an attnc tuning database: "attn".
constexpr int32_t kApplicationId = 0x6174746e;
/// PRAGMA user_version: the schema this file holds. 2 added `confirmed`; 3
/// renamed `median_ms` to `time_ms` when the tuner began timing a run by its
/// fastest repetition. An older file is brought up to date when opened; its
/// rows keep the medians they hold, which can only rank them slower.
constexpr int kSchemaVersion = 3;

constexpr const char *kSchema = R"sql(
CREATE TABLE measurements (
  kernel        TEXT    NOT NULL,
  shape_bucket  TEXT    NOT NULL,
  target        TEXT    NOT NULL,
  backend       TEXT    NOT NULL,
  attnc_version TEXT    NOT NULL,
  space_version INTEGER NOT NULL,
  candidate     TEXT    NOT NULL,
  outcome       TEXT    NOT NULL CHECK (outcome IN
                  ('ok', 'wrong', 'crashed', 'timed-out', 'failed-to-compile')),
  time_ms     REAL    NOT NULL,
  default_ms    REAL    NOT NULL,
  detail        TEXT    NOT NULL,
  machine       TEXT    NOT NULL,
  created_at    TEXT    NOT NULL,
  confirmed     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (kernel, shape_bucket, target, backend, attnc_version,
               space_version, candidate)
);
)sql";

// A candidate measured again keeps the worse verdict (one failure makes it
// a failure for good); between two ok rows a confirmed one (timed in rounds
// beside the default) replaces one of a single measurement, the latest
// confirmation replaces an earlier one, and between single measurements the
// faster stays. The row moves whole, so its default time stays the one timed
// beside it.
constexpr const char *kUpsert = R"sql(
INSERT INTO measurements (kernel, shape_bucket, target, backend,
  attnc_version, space_version, candidate, outcome, time_ms, default_ms,
  detail, machine, created_at, confirmed)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
ON CONFLICT DO UPDATE SET outcome = excluded.outcome,
  time_ms = excluded.time_ms, default_ms = excluded.default_ms,
  detail = excluded.detail, machine = excluded.machine,
  created_at = excluded.created_at, confirmed = excluded.confirmed
WHERE (excluded.outcome != 'ok' AND measurements.outcome = 'ok')
   OR (excluded.outcome = 'ok' AND measurements.outcome = 'ok'
       AND ((excluded.confirmed > 0
             AND (measurements.confirmed = 0
                  OR excluded.created_at >= measurements.created_at))
            OR (excluded.confirmed = 0 AND measurements.confirmed = 0
                AND excluded.time_ms < measurements.time_ms)));
)sql";

constexpr const char *kKeyMatch =
    "kernel = ?1 AND shape_bucket = ?2 AND target = ?3 AND backend = ?4 AND "
    "attnc_version = ?5 AND space_version = ?6";

constexpr const char *kColumns =
    "kernel, shape_bucket, target, backend, attnc_version, space_version, "
    "candidate, outcome, time_ms, default_ms, detail, machine, created_at, "
    "confirmed";

/// A prepared statement, finalized when it goes out of scope.
class Statement {
public:
  Statement(sqlite3 *db, const std::string &sql, const std::string &path)
      : db(db), path(path) {
    check(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr));
  }
  ~Statement() { sqlite3_finalize(statement); }

  Statement &bind(int index, const std::string &text) {
    check(sqlite3_bind_text(statement, index, text.c_str(), -1,
                            SQLITE_TRANSIENT));
    return *this;
  }
  Statement &bind(int index, int64_t value) {
    check(sqlite3_bind_int64(statement, index, value));
    return *this;
  }
  Statement &bind(int index, double value) {
    check(sqlite3_bind_double(statement, index, value));
    return *this;
  }
  Statement &bindKey(const TuningKey &key) {
    return bind(1, key.kernel)
        .bind(2, key.shapeBucket)
        .bind(3, key.target)
        .bind(4, key.backend)
        .bind(5, key.attncVersion)
        .bind(6, key.spaceVersion);
  }
  /// Steps once: true while a row is ready.
  bool step() {
    int status = sqlite3_step(statement);
    if (status == SQLITE_ROW)
      return true;
    if (status != SQLITE_DONE)
      check(status);
    return false;
  }
  std::string text(int column) {
    const unsigned char *value = sqlite3_column_text(statement, column);
    return value ? reinterpret_cast<const char *>(value) : "";
  }
  int64_t integer(int column) {
    return sqlite3_column_int64(statement, column);
  }
  double real(int column) { return sqlite3_column_double(statement, column); }

  /// The row in kColumns order as a record; throws for a row this attnc
  /// cannot read (an outcome it does not know).
  TuningRecord record() {
    TuningRecord result;
    result.key = {text(0), text(1), text(2), text(3), text(4), integer(5)};
    result.candidate = text(6);
    std::optional<Outcome> outcome = outcomeNamed(text(7));
    if (!outcome)
      throw UserError(path + ": a measurement with an unknown outcome \"" +
                      text(7) + "\"");
    result.outcome = *outcome;
    result.timeMs = real(8);
    result.defaultMs = real(9);
    result.detail = text(10);
    result.machine = text(11);
    result.createdAt = text(12);
    result.confirmedRounds = integer(13);
    return result;
  }

private:
  void check(int status) {
    if (status != SQLITE_OK)
      throw UserError(path + ": " + sqlite3_errmsg(db));
  }
  sqlite3 *db;
  sqlite3_stmt *statement = nullptr;
  const std::string &path;
};

/// Commits when `commit` is called, rolls back otherwise (an exception).
class Transaction {
public:
  Transaction(TuningDatabase &database, sqlite3 *db) : db(db) {
    // IMMEDIATE takes the write lock now, waiting out other writers (the
    // busy timeout) instead of failing halfway.
    run("BEGIN IMMEDIATE", database.path());
  }
  ~Transaction() {
    if (!done)
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit(const std::string &path) {
    run("COMMIT", path);
    done = true;
  }

private:
  void run(const char *sql, const std::string &path) {
    char *message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message ? message : sqlite3_errmsg(db);
      sqlite3_free(message);
      throw UserError(path + ": " + text);
    }
  }
  sqlite3 *db;
  bool done = false;
};

} // namespace

const char *outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::ok:
    return "ok";
  case Outcome::wrong:
    return "wrong";
  case Outcome::crashed:
    return "crashed";
  case Outcome::timedOut:
    return "timed-out";
  case Outcome::failedToCompile:
    return "failed-to-compile";
  }
  return "?";
}

std::optional<Outcome> outcomeNamed(const std::string &name) {
  for (Outcome outcome : {Outcome::ok, Outcome::wrong, Outcome::crashed,
                          Outcome::timedOut, Outcome::failedToCompile})
    if (name == outcomeName(outcome))
      return outcome;
  return std::nullopt;
}

std::unique_ptr<TuningDatabase> TuningDatabase::open(const std::string &path,
                                                     bool create) {
  namespace fs = std::filesystem;
  std::error_code error;
  bool exists = fs::exists(path, error);
  if (!exists && !create)
    throw UserError(path + ": no tuning database here");
  if (exists && !fs::is_regular_file(path, error))
    throw UserError(path + ": not a file");
  if (!exists) {
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::create_directories(parent, error) && error)
      throw UserError(path +
                      ": cannot create its directory: " + error.message());
  }
  sqlite3 *handle = nullptr;
  int flags = SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &handle, flags, nullptr) != SQLITE_OK) {
    std::string message = handle ? sqlite3_errmsg(handle) : "out of memory";
    sqlite3_close(handle);
    throw UserError(path + ": cannot open: " + message);
  }
  std::unique_ptr<TuningDatabase> database(new TuningDatabase(handle, path));
  sqlite3_busy_timeout(handle, 30000);

  // Look before writing anything: a file of another kind stays as it was.
  auto pragma = [&](const char *name) {
    Statement statement(handle, std::string("PRAGMA ") + name, path);
    return statement.step() ? statement.integer(0) : int64_t(0);
  };
  int64_t applicationId = 0, version = 0, tableCount = 0;
  auto inspect = [&] {
    applicationId = pragma("application_id");
    version = pragma("user_version");
    Statement tables(handle, "SELECT count(*) FROM sqlite_schema", path);
    tables.step();
    tableCount = tables.integer(0);
  }; // Each statement finalized: an open one would hold a read transaction.
  auto empty = [&] {
    return applicationId == 0 && version == 0 && tableCount == 0;
  };
  {
    // One write transaction for the look and the creation: tuners opening a
    // new file together see it either empty or whole, and create it once.
    Transaction transaction(*database, handle);
    inspect();
    if (empty()) {
      database->execute(kSchema);
      database->execute(
          ("PRAGMA application_id = " + std::to_string(kApplicationId))
              .c_str());
      database->execute(
          ("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
    } else if (applicationId == kApplicationId && version >= 1 &&
               version < kSchemaVersion) {
      // Every record of schema 1 was a single measurement.
      if (version == 1)
        database->execute("ALTER TABLE measurements ADD COLUMN confirmed "
                          "INTEGER NOT NULL DEFAULT 0");
      if (version <= 2)
        database->execute(
            "ALTER TABLE measurements RENAME COLUMN median_ms TO time_ms");
      database->execute(
          ("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
    }
    transaction.commit(path);
  }
  if (applicationId != kApplicationId && !empty()) {
    throw UserError(path + ": not an attnc tuning database (left untouched)");
  } else if (version > kSchemaVersion) {
    throw UserError(path + ": written by a newer attnc (schema " +
                    std::to_string(version) + "; this attnc reads schema " +
                    std::to_string(kSchemaVersion) + ")");
  }
  // Readers do not block the writer, and a commit survives a crash. WAL is
  // stored in the file; switching needs the file alone, which SQLite reports
  // as busy without waiting when another opener holds it: retry for as long
  // as the busy timeout.
  for (int attempt = 0;; ++attempt) {
    if (std::string current =
            [&] {
              Statement mode(handle, "PRAGMA journal_mode", path);
              return mode.step() ? mode.text(0) : std::string();
            }();
        current == "wal")
      break;
    char *message = nullptr;
    int status = sqlite3_exec(handle, "PRAGMA journal_mode = WAL", nullptr,
                              nullptr, &message);
    sqlite3_free(message);
    if (status == SQLITE_OK)
      continue; // Read the mode back.
    if (status != SQLITE_BUSY || attempt >= 3000)
      throw UserError(path + ": " + sqlite3_errmsg(handle));
    sqlite3_sleep(10);
  }
  database->execute("PRAGMA synchronous = NORMAL");
  return database;
}

TuningDatabase::~TuningDatabase() { sqlite3_close(db); }

void TuningDatabase::execute(const char *sql) {
  char *message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw UserError(file + ": " + text);
  }
}

void TuningDatabase::upsert(const TuningRecord &record) {
  Statement statement(db, kUpsert, file);
  statement.bindKey(record.key)
      .bind(7, record.candidate)
      .bind(8, std::string(outcomeName(record.outcome)))
      .bind(9, record.timeMs)
      .bind(10, record.defaultMs)
      .bind(11, record.detail)
      .bind(12, record.machine)
      .bind(13, record.createdAt)
      .bind(14, record.confirmedRounds);
  statement.step();
}

void TuningDatabase::record(const TuningRecord &record) {
  Transaction transaction(*this, db);
  upsert(record);
  transaction.commit(file);
}

void TuningDatabase::merge(const std::vector<TuningRecord> &records) {
  Transaction transaction(*this, db);
  for (const TuningRecord &record : records)
    upsert(record);
  transaction.commit(file);
}

std::optional<TuningRecord> TuningDatabase::find(const TuningKey &key,
                                                 const std::string &candidate) {
  Statement statement(db,
                      std::string("SELECT ") + kColumns +
                          " FROM measurements WHERE " + kKeyMatch +
                          " AND candidate = ?7",
                      file);
  statement.bindKey(key).bind(7, candidate);
  if (!statement.step())
    return std::nullopt;
  return statement.record();
}

std::optional<TuningRecord> TuningDatabase::best(const TuningKey &key) {
  // Confirmed rows first, ranked by their time over the default's in the
  // same rounds (the default's own row is 1), so a candidate one lucky
  // measurement put ahead cannot displace a default it does not beat; then
  // single measurements by time. Ties go to the smaller candidate text, so
  // the choice is reproducible.
  Statement statement(
      db,
      std::string("SELECT ") + kColumns + " FROM measurements WHERE " +
          kKeyMatch +
          " AND outcome = 'ok' ORDER BY confirmed > 0 DESC, CASE WHEN "
          "confirmed > 0 THEN time_ms / default_ms ELSE time_ms END, "
          "candidate LIMIT 1",
      file);
  statement.bindKey(key);
  if (!statement.step())
    return std::nullopt;
  return statement.record();
}

std::vector<TuningRecord> TuningDatabase::fastest(const TuningKey &key,
                                                  int64_t count) {
  Statement statement(db,
                      std::string("SELECT ") + kColumns +
                          " FROM measurements WHERE " + kKeyMatch +
                          " AND outcome = 'ok' AND default_ms > 0 ORDER BY "
                          "time_ms / default_ms, candidate LIMIT ?7",
                      file);
  statement.bindKey(key).bind(7, count);
  std::vector<TuningRecord> result;
  while (statement.step())
    result.push_back(statement.record());
  return result;
}

int64_t TuningDatabase::staleCount(const TuningKey &key) {
  Statement statement(
      db,
      "SELECT count(*) FROM measurements WHERE kernel = ?1 AND "
      "shape_bucket = ?2 AND backend = ?4 AND NOT (target = ?3 AND "
      "attnc_version = ?5 AND space_version = ?6)",
      file);
  statement.bindKey(key);
  statement.step();
  return statement.integer(0);
}

std::vector<TuningRecord> TuningDatabase::records() {
  Statement statement(db,
                      std::string("SELECT ") + kColumns +
                          " FROM measurements ORDER BY kernel, shape_bucket, "
                          "target, backend, attnc_version, space_version, "
                          "candidate",
                      file);
  std::vector<TuningRecord> result;
  while (statement.step())
    result.push_back(statement.record());
  return result;
}

std::string toJsonLine(const TuningRecord &record) {
  nlohmann::json line = {
      {"kernel", record.key.kernel},
      {"shape_bucket", record.key.shapeBucket},
      {"target", record.key.target},
      {"backend", record.key.backend},
      {"attnc_version", record.key.attncVersion},
      {"space_version", record.key.spaceVersion},
      {"candidate", nlohmann::json::parse(record.candidate, nullptr,
                                          /*allow_exceptions=*/false)},
      {"outcome", outcomeName(record.outcome)},
      {"time_ms", record.timeMs},
      {"default_ms", record.defaultMs},
      {"detail", record.detail},
      {"machine", record.machine},
      {"created_at", record.createdAt},
      {"confirmed_rounds", record.confirmedRounds}};
  if (line["candidate"].is_discarded())
    line["candidate"] = record.candidate; // Not JSON: kept as text.
  return line.dump();
}

TuningRecord fromJsonLine(const std::string &text, const std::string &where) {
  nlohmann::json line =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object())
    throw UserError(where + ": not a JSON object");
  auto field = [&](const char *name) -> const nlohmann::json & {
    auto found = line.find(name);
    if (found == line.end())
      throw UserError(where + ": missing \"" + name + "\"");
    return *found;
  };
  auto string = [&](const char *name) {
    const nlohmann::json &value = field(name);
    if (!value.is_string())
      throw UserError(where + ": /" + name + ": expected a string");
    return value.get<std::string>();
  };
  auto number = [&](const char *name) {
    const nlohmann::json &value = field(name);
    if (!value.is_number())
      throw UserError(where + ": /" + name + ": expected a number");
    return value.get<double>();
  };
  TuningRecord record;
  record.key.kernel = string("kernel");
  record.key.shapeBucket = string("shape_bucket");
  record.key.target = string("target");
  record.key.backend = string("backend");
  record.key.attncVersion = string("attnc_version");
  const nlohmann::json &space = field("space_version");
  if (!space.is_number_integer())
    throw UserError(where + ": /space_version: expected an integer");
  record.key.spaceVersion = space.get<int64_t>();
  const nlohmann::json &candidate = field("candidate");
  record.candidate =
      candidate.is_string() ? candidate.get<std::string>() : candidate.dump();
  std::string outcome = string("outcome");
  std::optional<Outcome> known = outcomeNamed(outcome);
  if (!known)
    throw UserError(where + ": /outcome: unknown outcome \"" + outcome + "\"");
  record.outcome = *known;
  // Lines of an attnc before schema 3 call the time median_ms.
  bool older = line.contains("median_ms") && !line.contains("time_ms");
  record.timeMs = number(older ? "median_ms" : "time_ms");
  record.defaultMs = number("default_ms");
  record.detail = string("detail");
  record.machine = string("machine");
  record.createdAt = string("created_at");
  // Absent from the lines of an attnc before confirmation: 0.
  if (auto rounds = line.find("confirmed_rounds"); rounds != line.end()) {
    if (!rounds->is_number_integer() || rounds->get<int64_t>() < 0)
      throw UserError(where + ": /confirmed_rounds: expected an integer >= 0");
    record.confirmedRounds = rounds->get<int64_t>();
  }
  return record;
}

} // namespace attnc::tuning
