//===- TuningDatabaseTest.cpp - The tuning database keeps what it is given ===//

#include "Tuning/TuningDatabase.h"
#include "Support/Error.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace attnc;
using namespace attnc::tuning;
namespace fs = std::filesystem;

namespace {

class TuningDatabaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    directory =
        fs::temp_directory_path() /
        ("attnc-tuning-" + std::to_string(getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory);
  }
  void TearDown() override { fs::remove_all(directory); }

  std::string path(const std::string &name = "tuning.db") {
    return (directory / name).string();
  }

  static TuningKey key() {
    return {"kernel-1", "S=2^7 T=2^7 BH=2^3", "target-1", "mlir", "0.1.0", 1};
  }
  static TuningRecord measured(const std::string &candidate, double ms,
                               Outcome outcome = Outcome::ok) {
    TuningRecord record;
    record.key = key();
    record.candidate = candidate;
    record.outcome = outcome;
    record.timeMs = ms;
    record.defaultMs = 10.0;
    record.detail = "test";
    record.machine = "test CPU";
    record.createdAt = "2026-11-24T00:00:00Z";
    return record;
  }

  /// Rows and the integrity check, read with SQLite alone.
  static std::pair<int64_t, std::string> inspect(const std::string &file) {
    sqlite3 *db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
              SQLITE_OK);
    auto scalar = [&](const char *sql) {
      sqlite3_stmt *statement = nullptr;
      sqlite3_prepare_v2(db, sql, -1, &statement, nullptr);
      std::string value;
      if (sqlite3_step(statement) == SQLITE_ROW)
        value =
            reinterpret_cast<const char *>(sqlite3_column_text(statement, 0));
      sqlite3_finalize(statement);
      return value;
    };
    std::string integrity = scalar("PRAGMA integrity_check");
    int64_t rows = std::stoll(scalar("SELECT count(*) FROM measurements"));
    sqlite3_close(db);
    return {rows, integrity};
  }

  /// Runs `work(w)` for w < `count` in as many processes at once, and
  /// expects each to finish without an exception.
  static void runTogether(int count, const std::function<void(int)> &work) {
    std::vector<pid_t> children;
    for (int w = 0; w < count; ++w) {
      pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        try {
          work(w);
        } catch (const std::exception &error) {
          std::fprintf(stderr, "process %d: %s\n", w, error.what());
          _exit(1);
        }
        _exit(0);
      }
      children.push_back(child);
    }
    for (pid_t child : children) {
      int status = 0;
      waitpid(child, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }

  static std::string contents(const std::string &file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path directory;
};

TEST_F(TuningDatabaseTest, KeepsTheFastestOkCandidate) {
  auto db = TuningDatabase::open(path(), /*create=*/true);
  db->record(measured("{\"query_tile\":32}", 5.0));
  db->record(measured("{\"query_tile\":64}", 4.0));
  db->record(measured("{\"query_tile\":16}", 1.0, Outcome::wrong));
  db->record(measured("{\"query_tile\":8}", 0.5, Outcome::crashed));
  std::optional<TuningRecord> best = db->best(key());
  ASSERT_TRUE(best);
  EXPECT_EQ(best->candidate, "{\"query_tile\":64}");
  EXPECT_DOUBLE_EQ(best->timeMs, 4.0);
  EXPECT_TRUE(db->contains(key(), "{\"query_tile\":16}"));
  EXPECT_FALSE(db->contains(key(), "{\"query_tile\":128}"));
}

TEST_F(TuningDatabaseTest, AFailureIsNeverForgotten) {
  auto db = TuningDatabase::open(path(), true);
  db->record(measured("a", 2.0));
  db->record(measured("a", 3.0, Outcome::wrong));
  db->record(measured("a", 1.0)); // Measured again, fast: still wrong.
  EXPECT_FALSE(db->best(key()));
  db->record(measured("b", 3.0));
  db->record(measured("b", 2.5)); // Faster: kept.
  db->record(measured("b", 2.8)); // Slower: the 2.5 stays.
  ASSERT_TRUE(db->best(key()));
  EXPECT_DOUBLE_EQ(db->best(key())->timeMs, 2.5);
}

TEST_F(TuningDatabaseTest, StaleRecordsAreNeverUsed) {
  auto db = TuningDatabase::open(path(), true);
  TuningRecord otherMachine = measured("a", 1.0);
  otherMachine.key.target = "target-2";
  TuningRecord otherVersion = measured("b", 1.0);
  otherVersion.key.attncVersion = "0.0.9";
  TuningRecord otherSpace = measured("c", 1.0);
  otherSpace.key.spaceVersion = 2;
  for (const TuningRecord &record : {otherMachine, otherVersion, otherSpace})
    db->record(record);
  EXPECT_FALSE(db->best(key()));
  EXPECT_EQ(db->staleCount(key()), 3);
  db->record(measured("d", 2.0));
  EXPECT_EQ(db->best(key())->candidate, "d");
}

TEST_F(TuningDatabaseTest, ReopensWhatItWrote) {
  {
    auto db = TuningDatabase::open(path(), true);
    db->record(measured("a", 1.5));
  }
  auto db = TuningDatabase::open(path(), /*create=*/false);
  ASSERT_TRUE(db->best(key()));
  EXPECT_EQ(db->best(key())->machine, "test CPU");
}

TEST_F(TuningDatabaseTest, CreatesItsDirectory) {
  std::string nested = (directory / "a" / "b" / "tuning.db").string();
  TuningDatabase::open(nested, true);
  EXPECT_TRUE(fs::exists(nested));
}

TEST_F(TuningDatabaseTest, AMissingFileWithoutCreateIsAnError) {
  try {
    TuningDatabase::open(path(), /*create=*/false);
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()), path() + ": no tuning database here");
  }
  EXPECT_FALSE(fs::exists(path()));
}

TEST_F(TuningDatabaseTest, RefusesAndKeepsAFileOfAnotherKind) {
  fs::create_directories(directory);
  std::string text = path("notes.txt");
  std::ofstream(text) << "my notes, not a database\n";
  EXPECT_THROW(TuningDatabase::open(text, true), UserError);
  EXPECT_EQ(contents(text), "my notes, not a database\n");

  // Another program's SQLite database: refused, byte for byte unchanged.
  std::string other = path("other.db");
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", nullptr,
               nullptr, nullptr);
  sqlite3_close(db);
  std::string before = contents(other);
  try {
    TuningDatabase::open(other, true);
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()),
              other + ": not an attnc tuning database (left untouched)");
  }
  EXPECT_EQ(contents(other), before);
}

TEST_F(TuningDatabaseTest, RefusesANewerSchema) {
  TuningDatabase::open(path(), true);
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    TuningDatabase::open(path(), true);
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find("newer attnc (schema 99"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(TuningDatabaseTest, AKilledWriterLosesNothingCommitted) {
  TuningDatabase::open(path(), true);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto db = TuningDatabase::open(path(), false);
    for (int i = 0;; ++i)
      db->record(measured("candidate " + std::to_string(i), 1.0 + i));
  }
  // Let it commit some, then SIGKILL it mid-stream.
  for (int tries = 0; tries < 500 && inspect(path()).first < 40; ++tries)
    usleep(10000);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto [rows, integrity] = inspect(path());
  EXPECT_EQ(integrity, "ok");
  EXPECT_GE(rows, 40);
  // Every committed candidate is whole, and the database takes more.
  auto db = TuningDatabase::open(path(), false);
  std::vector<TuningRecord> records = db->records();
  EXPECT_EQ(int64_t(records.size()), rows);
  for (const TuningRecord &record : records)
    EXPECT_EQ(record.machine, "test CPU");
  db->record(measured("after", 0.1));
  EXPECT_EQ(db->best(key())->candidate, "after");
}

TEST_F(TuningDatabaseTest, ConcurrentWritersLoseNothing) {
  TuningDatabase::open(path(), true);
  constexpr int kWriters = 3, kEach = 150;
  runTogether(kWriters, [&](int w) {
    auto db = TuningDatabase::open(path(), false);
    for (int i = 0; i < kEach; ++i)
      db->record(
          measured(std::to_string(w) + "/" + std::to_string(i), 1.0 + i));
  });
  auto [rows, integrity] = inspect(path());
  EXPECT_EQ(integrity, "ok");
  EXPECT_EQ(rows, kWriters * kEach);
}

TEST_F(TuningDatabaseTest, ConcurrentCreatorsMakeOneDatabase) {
  // Tuners started together on a database that does not exist yet.
  fs::create_directories(directory);
  runTogether(4, [&](int w) {
    auto db = TuningDatabase::open(path(), /*create=*/true);
    db->record(measured("creator " + std::to_string(w), 1.0 + w));
  });
  auto [rows, integrity] = inspect(path());
  EXPECT_EQ(integrity, "ok");
  EXPECT_EQ(rows, 4);
}

TEST_F(TuningDatabaseTest, ExportAndImportRoundTrip) {
  auto source = TuningDatabase::open(path("a.db"), true);
  source->record(measured("{\"key_tile\":48,\"query_tile\":32}", 3.0));
  source->record(measured("{\"key_tile\":64,\"query_tile\":32}", 2.0));
  source->record(
      measured("{\"key_tile\":16,\"query_tile\":32}", 9.0, Outcome::timedOut));
  std::vector<TuningRecord> lines;
  for (const TuningRecord &record : source->records())
    lines.push_back(fromJsonLine(toJsonLine(record), "export.jsonl:1"));

  auto target = TuningDatabase::open(path("b.db"), true);
  target->merge(lines);
  std::vector<TuningRecord> copied = target->records();
  std::vector<TuningRecord> original = source->records();
  ASSERT_EQ(copied.size(), original.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(copied[i].key, original[i].key);
    EXPECT_EQ(copied[i].candidate, original[i].candidate);
    EXPECT_EQ(copied[i].outcome, original[i].outcome);
    EXPECT_DOUBLE_EQ(copied[i].timeMs, original[i].timeMs);
  }

  // Import keeps the better result per candidate.
  TuningRecord slower = measured("{\"key_tile\":64,\"query_tile\":32}", 5.0);
  TuningRecord faster = measured("{\"key_tile\":48,\"query_tile\":32}", 1.0);
  target->merge({slower, faster});
  EXPECT_EQ(target->best(key())->candidate,
            "{\"key_tile\":48,\"query_tile\":32}");
  EXPECT_DOUBLE_EQ(target->best(key())->timeMs, 1.0);
  EXPECT_EQ(target->records().size(), 3u);
}

TEST_F(TuningDatabaseTest, ConfirmedRowsOutrankLuckyMeasurements) {
  auto db = TuningDatabase::open(path(), true);
  // The search: "lucky" measured once at 6 ms beside a 10 ms default.
  db->record(measured("default", 10.0));
  db->record(measured("lucky", 6.0));
  db->record(measured("steady", 8.0));
  EXPECT_EQ(db->best(key())->candidate, "lucky");
  std::vector<TuningRecord> fastest = db->fastest(key(), 2);
  ASSERT_EQ(fastest.size(), 2u);
  EXPECT_EQ(fastest[0].candidate, "lucky");
  EXPECT_EQ(fastest[1].candidate, "steady");

  // The confirmation's rounds: "lucky" is slower than the default, "steady"
  // a little faster, against the default's 9 ms in the same rounds.
  auto confirmed = [](const std::string &candidate, double ms) {
    TuningRecord record = measured(candidate, ms);
    record.defaultMs = 9.0;
    record.confirmedRounds = 5;
    record.createdAt = "2026-11-25T00:00:00Z";
    return record;
  };
  db->record(confirmed("default", 9.0));
  db->record(confirmed("lucky", 9.5));
  EXPECT_EQ(db->best(key())->candidate, "default");
  db->record(confirmed("steady", 8.6));
  EXPECT_EQ(db->best(key())->candidate, "steady");
  EXPECT_EQ(db->best(key())->confirmedRounds, 5);

  // A single measurement later, however fast, does not displace a
  // confirmed row; a failure still does.
  db->record(measured("lucky", 1.0));
  EXPECT_EQ(db->find(key(), "lucky")->confirmedRounds, 5);
  EXPECT_DOUBLE_EQ(db->find(key(), "lucky")->timeMs, 9.5);
  db->record(measured("steady", 20.0, Outcome::wrong));
  EXPECT_EQ(db->best(key())->candidate, "default");

  // Export and import keep the rounds.
  TuningRecord copy =
      fromJsonLine(toJsonLine(*db->find(key(), "default")), "x.jsonl:1");
  EXPECT_EQ(copy.confirmedRounds, 5);
  std::string old = toJsonLine(measured("old", 1.0));
  old.replace(old.find(",\"confirmed_rounds\":0"), 21, "");
  EXPECT_EQ(fromJsonLine(old, "x.jsonl:2").confirmedRounds, 0);
  // Before schema 3 a line called the time median_ms.
  old.replace(old.find("\"time_ms\""), 9, "\"median_ms\"");
  EXPECT_DOUBLE_EQ(fromJsonLine(old, "x.jsonl:3").timeMs, 1.0);
}

/// Writes the database of an older attnc: schema 1 (no `confirmed`) or 2
/// (the time column still called median_ms), holding one ok row "a".
void writeOlderDatabase(const std::string &path, int schema) {
  std::string confirmed = schema >= 2 ? ", confirmed INTEGER NOT NULL "
                                        "DEFAULT 0"
                                      : "";
  std::string sql =
      "CREATE TABLE measurements (kernel TEXT NOT NULL, shape_bucket TEXT "
      "NOT NULL, target TEXT NOT NULL, backend TEXT NOT NULL, "
      "attnc_version TEXT NOT NULL, space_version INTEGER NOT NULL, "
      "candidate TEXT NOT NULL, outcome TEXT NOT NULL, median_ms REAL NOT "
      "NULL, default_ms REAL NOT NULL, detail TEXT NOT NULL, machine TEXT "
      "NOT NULL, created_at TEXT NOT NULL" +
      confirmed +
      ", PRIMARY KEY (kernel, shape_bucket, target, backend, attnc_version, "
      "space_version, candidate)); INSERT INTO measurements (kernel, "
      "shape_bucket, target, backend, attnc_version, space_version, "
      "candidate, outcome, median_ms, default_ms, detail, machine, "
      "created_at) VALUES ('kernel-1', 'S=2^7 T=2^7 BH=2^3', 'target-1', "
      "'mlir', '0.1.0', 1, 'a', 'ok', 2.0, 3.0, 'test', 'test CPU', "
      "'2026-11-24T00:00:00Z'); PRAGMA application_id = 1635021934; PRAGMA "
      "user_version = " +
      std::to_string(schema) + ";";
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST_F(TuningDatabaseTest, OpensOlderSchemas) {
  for (int schema : {1, 2}) {
    SCOPED_TRACE("schema " + std::to_string(schema));
    fs::create_directories(directory);
    std::string file = path("schema" + std::to_string(schema) + ".db");
    writeOlderDatabase(file, schema);
    auto opened = TuningDatabase::open(file, false);
    std::optional<TuningRecord> kept = opened->best(key());
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->candidate, "a");
    EXPECT_DOUBLE_EQ(kept->timeMs, 2.0);
    EXPECT_EQ(kept->confirmedRounds, 0);
    opened->record(measured("b", 1.0));
    EXPECT_EQ(opened->best(key())->candidate, "b");
  }
}

TEST_F(TuningDatabaseTest, ABadImportLineNamesItsPlace) {
  try {
    fromJsonLine("{\"kernel\": \"k\"}", "in.jsonl:3");
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()),
              "in.jsonl:3: missing \"shape_bucket\"");
  }
  EXPECT_THROW(fromJsonLine("not json", "in.jsonl:4"), UserError);
  TuningRecord record = measured("{}", 1.0);
  std::string line = toJsonLine(record);
  line.replace(line.find("\"ok\""), 4, "\"fine\"");
  try {
    fromJsonLine(line, "in.jsonl:5");
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()),
              "in.jsonl:5: /outcome: unknown outcome \"fine\"");
  }
}

} // namespace
