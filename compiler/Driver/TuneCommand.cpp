//===- TuneCommand.cpp - attnc tune ---------------------------------------===//
//
//   attnc tune G.json --dim N=V ... [--budget 120s] [--db PATH]
//   attnc tune export [--db PATH] [-o FILE]
//   attnc tune import FILE.jsonl [--db PATH]
//
// Measures candidate schedules of the MLIR backend (schedules/space/cpu.json)
// on the tuned sizes and stores every result in the tuning database
// (docs/tuning.md). Each candidate runs in a child `attnc run`, in its own
// process group and under a time limit, so a crash or a hang costs that
// candidate only. Before it is timed, a candidate is checked twice: on a
// small odd shape against the float64 reference (`run --check`), and on the
// tuned shape against the reference's outputs, computed once per tune. The
// default schedule is candidate 1 and is timed in the same run, so every
// speedup is a same-run ratio. After the search the fastest few are timed
// again beside the default in rounds (--confirm), and builds rank those
// rounds above single measurements. A tune that is stopped resumes where it
// stopped: candidates the database already holds for this key are skipped.
//
//===----------------------------------------------------------------------===//

#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Driver/Commands.h"
#include "Driver/Inputs.h"
#include "Driver/Model.h"
#include "Driver/Options.h"

#include "Graph/Graph.h"
#include "Support/Error.h"
#include "Support/Npy.h"
#include "Support/OwnerLock.h"
#include "Tuning/CandidateSearch.h"
#include "Tuning/ScheduleSpace.h"
#include "Tuning/TunedSchedule.h"
#include "Tuning/TuningDatabase.h"
#include "Tuning/TuningKey.h"
#include "Tuning/TuningPlot.h"
#include <attnc/attnrt.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <string_view>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace attnc {

namespace {

namespace fs = std::filesystem;
using namespace tuning;
using Clock = std::chrono::steady_clock;

/// Seconds of "120s", "10m", "2h" or a bare number of seconds.
double parseBudget(const std::string &text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception &) {
    end = 0;
  }
  std::string unit = text.substr(end);
  double scale = unit.empty() || unit == "s" ? 1
                 : unit == "m"               ? 60
                 : unit == "h"               ? 3600
                                             : 0;
  if (end == 0 || scale == 0 || !(value > 0) || std::isinf(value))
    throw UserError("--budget " + text +
                    ": expected a time such as 120s, 10m or 1h");
  return value * scale;
}

std::string databasePath() {
  if (options::database.getNumOccurrences() && options::database.empty())
    throw UserError("--db: needs a path");
  if (!options::database.empty())
    return options::database;
  std::string path = defaultTuningDatabasePath();
  if (path.empty())
    throw UserError("--db: no default (neither XDG_CACHE_HOME nor HOME is "
                    "set); give --db PATH");
  return path;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

/// Set by SIGINT and SIGTERM: the tuner stops its child, removes its
/// scratch directory and says how to resume.
volatile std::sig_atomic_t interrupted = 0;

void onInterrupt(int) { interrupted = 1; }

[[noreturn]] void stopInterrupted() {
  throw UserError("attnc tune: interrupted; the database keeps every "
                  "candidate measured so far: run the same command to "
                  "resume");
}

/// How a child `attnc` ended.
struct ChildResult {
  int exitCode = -1; ///< When it exited.
  int signal = 0;    ///< When a signal ended it.
  bool timedOut = false;
  std::string output; ///< stdout and stderr together.
};

/// Names the tuner's process id in a candidate's environment.
constexpr const char *kTunerVariable = "ATTNC_TUNER_PID";

/// Runs this attnc with `arguments` in its own process group, killed (with
/// every process it started) after `limit` seconds. Its temporary files go
/// into `scratch`, which the tuner removes however the child ends: a child
/// killed with SIGKILL cannot remove its own.
ChildResult runChild(const std::vector<std::string> &arguments, double limit,
                     const std::string &scratch, const std::string &log,
                     const char *testHook = nullptr) {
  std::vector<std::string> words = {"attnc"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char **entry = environ; *entry; ++entry) {
    std::string_view variable = *entry;
    if (variable.rfind("ATTNC_TEST_", 0) != 0 &&
        variable.rfind("TMPDIR=", 0) != 0 &&
        variable.rfind(std::string(kTunerVariable) + "=", 0) != 0)
      environment.push_back(*entry);
  }
  if (testHook)
    environment.push_back(testHook);
  environment.push_back("TMPDIR=" + scratch);
  environment.push_back(std::string(kTunerVariable) + "=" +
                        std::to_string(getpid()));
  std::vector<char *> envp;
  for (std::string &entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  int error = posix_spawn(&child, "/proc/self/exe", &actions, &attributes,
                          argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0)
    throw std::runtime_error(std::string("cannot start attnc: ") +
                             std::strerror(error));

  ChildResult result;
  int status = 0;
  auto deadline = Clock::now() + std::chrono::duration<double>(limit);
  while (true) {
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child)
      break;
    if (interrupted) {
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      stopInterrupted();
    }
    if (Clock::now() > deadline) {
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      result.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(-child, SIGKILL); // Whatever it started and left behind.
  if (!result.timedOut) {
    if (WIFEXITED(status))
      result.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      result.signal = WTERMSIG(status);
  }
  std::ifstream stream(log);
  std::stringstream text;
  text << stream.rdbuf();
  result.output = text.str();
  return result;
}

std::string lastLine(const std::string &text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n')
    trimmed.pop_back();
  size_t start = trimmed.rfind('\n');
  return start == std::string::npos ? trimmed : trimmed.substr(start + 1);
}

struct Measurement {
  Outcome outcome = Outcome::ok;
  /// The fastest of the timed runs: a busy neighbour only ever adds time,
  /// so the fastest run is the one it disturbed least, where a median moves
  /// with the neighbour's load.
  double timeMs = 0;
  std::string detail;
};

/// The outcome of a child that did not exit 0.
Measurement failure(const ChildResult &child, const std::string &stage) {
  Measurement result;
  if (child.timedOut) {
    result.outcome = Outcome::timedOut;
    result.detail = stage + ": over its time limit";
  } else if (child.signal) {
    result.outcome = Outcome::crashed;
    result.detail = stage + ": " + strsignal(child.signal);
  } else if (size_t fail = child.output.find(" FAIL\n");
             child.exitCode == 1 && fail != std::string::npos) {
    result.outcome = Outcome::wrong;
    result.detail = stage + ": " + lastLine(child.output.substr(0, fail + 5));
  } else {
    result.outcome = Outcome::failedToCompile;
    result.detail = stage + ": exit " + std::to_string(child.exitCode) + ": " +
                    lastLine(child.output);
  }
  return result;
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
std::string csvField(const std::string &text) {
  if (text.find_first_of(",\"\n") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

/// Sizes for a quick check: each run-time size made small and odd where the
/// graph's divisibilities allow it.
DimBindings smallOddShape(const Graph &graph, const DimBindings &dims) {
  DimBindings small = dims;
  for (auto &[name, value] : small)
    if (value > 3)
      value = std::min<int64_t>(value % 2 ? value : value - 1, 37);
  for (auto &[name, value] : small) {
    try {
      checkBindings(graph, small);
      return small;
    } catch (const UserError &) {
      value = dims.at(name); // A head count that must divide another.
    }
  }
  return dims;
}

std::vector<std::string> dimArguments(const DimBindings &dims) {
  std::vector<std::string> result;
  for (const auto &[name, value] : dims)
    result.push_back("--dim=" + name + "=" + std::to_string(value));
  return result;
}

// A tuner's scratch directory, `attnc-tune-XXXXXX` in TMPDIR, holds an owner
// lock on its `.lock` for the tuner's life (Support/OwnerLock.h). A tuner
// killed with SIGKILL cannot remove its directory, so each new tuner removes
// those whose owner is gone.
struct ScratchDirectory {
  static constexpr std::string_view kPrefix = "attnc-tune-";
  static constexpr size_t kRandomChars = 6; ///< mkdtemp's XXXXXX.
  std::string path;
  int lock = -1;
  ScratchDirectory() {
    fs::path temp = fs::temp_directory_path();
    removeAbandoned(temp);
    std::string pattern =
        (temp / (std::string(kPrefix) + std::string(kRandomChars, 'X')))
            .string();
    if (!mkdtemp(pattern.data()))
      throw UserError(pattern + ": cannot create a scratch directory: " +
                      std::strerror(errno));
    path = pattern;
    lock = createOwnerLock(path + "/.lock");
    if (lock < 0) {
      std::string reason = std::strerror(errno);
      std::error_code ignored;
      fs::remove_all(path, ignored);
      throw UserError(path + ": cannot lock the scratch directory: " + reason);
    }
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
    close(lock);
  }
  // Best effort: a directory that cannot be read or removed stays.
  static void removeAbandoned(const fs::path &temp) try {
    std::error_code error;
    for (const fs::directory_entry &entry :
         fs::directory_iterator(temp, error)) {
      std::string name = entry.path().filename().string();
      if (name.rfind(kPrefix, 0) != 0 ||
          name.size() != kPrefix.size() + kRandomChars)
        continue;
      struct stat directory;
      int held = -1;
      if (lstat(entry.path().c_str(), &directory) != 0 ||
          !S_ISDIR(directory.st_mode) || directory.st_uid != getuid() ||
          !takeAbandonedLock((entry.path() / ".lock").string(), held))
        continue;
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
      close(held);
    }
  } catch (const fs::filesystem_error &) {
  }
};

class Tuner {
public:
  Tuner(const Graph &graph, const DimBindings &dims, CpuTarget target,
        std::string backend)
      : graph(graph), dims(dims), target(std::move(target)),
        backend(std::move(backend)) {}

  int run();

private:
  Graph graph;
  DimBindings dims, oddDims;
  CpuTarget target;
  std::string work;
  uint64_t threads = 1, repeat = 5, seed = 0;
  uint64_t inputSets = 1;    ///< Input sets the timed runs take in turn.
  double defaultSeconds = 0; ///< Wall time of the default's measurement.
  int corruptIndex = 0;      ///< The test hooks' N (0: none).
  int hangIndex = 0;

  std::string backend; ///< "mlir" or "halide".
  /// `attnc run` of the graph with `schedule` at `sizes`, then `flags`.
  std::vector<std::string> runArguments(const std::string &schedule,
                                        const DimBindings &sizes,
                                        std::vector<std::string> flags) const {
    std::vector<std::string> arguments = {"run",
                                          graph.file,
                                          "--schedule=" + schedule,
                                          "--backend=" + backend,
                                          "--target=" + target.name,
                                          "--threads=" +
                                              std::to_string(threads),
                                          "--seed=" + std::to_string(seed)};
    for (const std::string &argument : dimArguments(sizes))
      arguments.push_back(argument);
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    return arguments;
  }
  /// Checks `candidate` on the small odd shape (unless `checkOddShape` is
  /// off: a confirmation of a candidate the search checked), then times it
  /// on the tuned shape and compares its outputs with the reference's.
  /// `index` counts the measurements (the test hooks' N; 0 is never hooked).
  Measurement measure(const TuneCandidate &candidate, int index,
                      bool checkOddShape = true);
  /// Times the default and the fastest few candidates of `key` in `rounds`
  /// rounds, each round all of them in turn, and records each one's time
  /// over the rounds as a confirmed row (TuningRecord::confirmedRounds).
  void confirm(TuningDatabase *database, const TuningKey &key,
               const std::string &machineName,
               const std::vector<TuneCandidate> &all,
               const std::vector<int> &order, uint64_t rounds);
  bool sameAsReference(std::string &detail);
};

Measurement Tuner::measure(const TuneCandidate &candidate, int index,
                           bool checkOddShape) {
  std::string file = candidate.scheduleFlag;
  if (file.empty()) {
    file = work + "/candidate.json";
    std::ofstream out(file);
    out << candidate.scheduleText;
  }
  const char *testHook = index <= 0              ? nullptr
                         : index == corruptIndex ? "ATTNC_TEST_CORRUPT_OUTPUT=1"
                         : index == hangIndex    ? "ATTNC_TEST_HANG=1"
                                                 : nullptr;
  // A slow candidate is allowed ten times the default's time, at least 60 s.
  double limit = std::max(60.0, 10 * defaultSeconds);
  if (checkOddShape) {
    ChildResult odd = runChild(runArguments(file, oddDims, {"--check"}), limit,
                               work, work + "/child.log", testHook);
    if (odd.exitCode != 0)
      return failure(odd, "small odd shape");
  }

  fs::remove_all(work + "/out");
  ChildResult timed =
      runChild(runArguments(file, dims,
                            {"--repeat=" + std::to_string(repeat),
                             "--input-sets=" + std::to_string(inputSets),
                             "--output-dir=" + work + "/out"}),
               limit, work, work + "/child.log", testHook);
  if (timed.exitCode != 0)
    return failure(timed, "tuned shape");
  Measurement result;
  size_t at = timed.output.find("min_ms: ");
  if (at == std::string::npos) {
    result.outcome = Outcome::crashed;
    result.detail = "tuned shape: no min_ms in its output";
    return result;
  }
  result.timeMs = std::stod(timed.output.substr(at + 8));
  std::string detail;
  if (!sameAsReference(detail)) {
    result.outcome = Outcome::wrong;
    result.detail = "tuned shape: " + detail;
  }
  return result;
}

void Tuner::confirm(TuningDatabase *database, const TuningKey &key,
                    const std::string &machineName,
                    const std::vector<TuneCandidate> &all,
                    const std::vector<int> &order, uint64_t rounds) {
  // One measurement per candidate is a draw on a busy machine, and the
  // fastest of hundreds of draws is partly luck: a candidate can come out
  // ahead of a default it does not beat. The finalists are timed again
  // beside the default, in turn, and builds rank them by those rounds.
  constexpr int64_t kFinalists = 3;
  if (rounds == 0)
    return;
  std::map<std::string, int> indexOf;
  for (int index : order)
    indexOf[all[index].key] = index;
  std::vector<int> finalists = {0};
  for (const TuningRecord &row : database->fastest(key, kFinalists + 1)) {
    auto found = indexOf.find(row.candidate);
    if (found != indexOf.end() && found->second != 0 &&
        int64_t(finalists.size()) <= kFinalists)
      finalists.push_back(found->second);
  }
  if (finalists.size() < 2)
    return;
  std::fprintf(stderr,
               "  confirming the %zu fastest against the default in %llu "
               "rounds...\n",
               finalists.size() - 1, (unsigned long long)rounds);
  std::vector<std::vector<double>> times(finalists.size());
  std::vector<std::optional<Measurement>> failures(finalists.size());
  for (uint64_t round = 0; round < rounds; ++round) {
    for (size_t turn = 0; turn < finalists.size(); ++turn) {
      if (interrupted)
        stopInterrupted();
      // Each round starts with another one, so none is always timed first.
      size_t n = (turn + round) % finalists.size();
      if (failures[n])
        continue;
      Measurement result =
          measure(all[finalists[n]], 0, /*checkOddShape=*/false);
      if (result.outcome == Outcome::ok)
        times[n].push_back(result.timeMs);
      else
        failures[n] = result;
    }
  }
  if (failures[0]) {
    std::fprintf(stderr,
                 "  the default failed its confirmation (%s); "
                 "nothing confirmed\n",
                 failures[0]->detail.c_str());
    return;
  }
  double defaultMs = median(times[0]);
  for (size_t n = 0; n < finalists.size(); ++n) {
    TuningRecord row;
    row.key = key;
    row.candidate = all[finalists[n]].key;
    row.machine = machineName;
    row.createdAt = utcNow();
    row.defaultMs = defaultMs;
    if (failures[n]) {
      row.outcome = failures[n]->outcome;
      row.detail = "confirmation: " + failures[n]->detail;
    } else {
      // Each round times the candidate beside the default, so a slow minute
      // of a busy host falls on both: the candidate's time is the default's
      // median times the median of their ratios round by round, below the
      // default's only where the candidate won most rounds.
      std::vector<double> ratios;
      int wins = 0;
      for (size_t round = 0; round < times[n].size(); ++round) {
        ratios.push_back(times[n][round] / times[0][round]);
        wins += times[n][round] < times[0][round];
      }
      row.timeMs = defaultMs * median(ratios);
      row.confirmedRounds = int64_t(rounds);
      if (n > 0)
        std::fprintf(stderr,
                     "  confirmed %s: %.3f ms, the default %.3f ms "
                     "(%.2fx; faster in %d of %zu rounds)\n",
                     all[finalists[n]].description.c_str(), row.timeMs,
                     defaultMs, defaultMs / row.timeMs, wins, ratios.size());
    }
    database->record(row);
  }
}

/// Compares every output of the last timed run with the reference's.
bool Tuner::sameAsReference(std::string &detail) {
  for (ValueId id : graph.outputs) {
    const std::string &name = graph.value(id).name;
    Tensor output = readNpy(work + "/out/" + name + ".npy");
    Tensor expected = readNpy(work + "/reference/" + name + ".npy");
    double error = relativeError(toDoubles(output), toDoubles(expected));
    double tolerance = checkTolerance(output.dtype);
    if (!(error <= tolerance)) {
      std::ostringstream text;
      text << name << ": rel_err " << error << " over " << tolerance;
      detail = text.str();
      return false;
    }
  }
  return true;
}

int Tuner::run() {
  threads = options::integer(options::threads, 0, ATTNRT_MAX_THREADS);
  repeat = std::max<uint64_t>(
      options::integer(options::repeat, 0, options::kMaxRepeat), 1);
  if (!options::repeat.getNumOccurrences())
    repeat = 5;
  seed = options::integer(options::seed, 0);
  corruptIndex = int(options::integer(options::corruptCandidate, 0));
  hangIndex = int(options::integer(options::hangCandidate, 0));
  uint64_t confirmRounds = options::integer(options::confirmRounds, 0, 100);
  double budget = parseBudget(options::budget);
  int64_t shardIndex = 0, shardCount = 1;
  if (!options::shard.empty()) {
    std::string text = options::shard;
    size_t slash = text.find('/');
    try {
      if (slash == std::string::npos)
        throw std::invalid_argument("no slash");
      size_t end = 0;
      shardIndex = std::stoll(text.substr(0, slash), &end);
      if (end != slash)
        throw std::invalid_argument("index");
      shardCount = std::stoll(text.substr(slash + 1), &end);
      if (slash + 1 + end != text.size())
        throw std::invalid_argument("count");
    } catch (const std::exception &) {
      shardCount = 0;
    }
    if (shardCount < 1 || shardIndex < 0 || shardIndex >= shardCount)
      throw UserError("--shard " + text +
                      ": expected I/N with 0 <= I < N, such as 0/4");
  }
  std::string spaceText;
  if (options::space.getNumOccurrences()) {
    std::ifstream in(std::string(options::space));
    if (!in)
      throw UserError("--space " + options::space + ": cannot open the file");
    std::stringstream text;
    text << in.rdbuf();
    spaceText = text.str();
  }
  KernelIdentity kernel = kernelIdentity(graph, dims);
  CandidateList list;
  int64_t spaceVersion = 0;
  if (backend == "mlir") {
    ScheduleSpace space = spaceText.empty()
                              ? cpuScheduleSpace()
                              : parseScheduleSpace(spaceText, options::space);
    AttentionSchedule defaults = defaultSchedule(target);
    list =
        mlirCandidates(space, defaults,
                       decodeTilesOnly(kernel.taskRows, defaults.vectorWidth));
    spaceVersion = space.version;
  } else {
    HalideScheduleSpace space =
        spaceText.empty() ? halideScheduleSpace()
                          : parseHalideScheduleSpace(spaceText, options::space);
    HalideSchedule defaults = defaultHalideSchedule(targetClassOf(target));
    bool decodeForm =
        kernel.queryLength >= 0 && kernel.queryLength < defaults.decodeBelow();
    list = halideCandidates(space, defaults, decodeForm);
    spaceVersion = space.version;
  }
  const std::vector<TuneCandidate> &all = list.candidates;
  const std::vector<std::string> &parameterNames = list.parameterNames;
  MachineIdentity machine = machineIdentity(target);
  TuningKey key{kernel.kernel, kernel.shapeBucket, machine.fingerprint,
                backend,       attncVersion(),     spaceVersion};
  std::string path = databasePath();
  std::unique_ptr<TuningDatabase> database =
      TuningDatabase::open(path, /*create=*/true);

  std::vector<int> order; // Indices into `all` this shard measures.
  for (int i = 0; i < int(all.size()); ++i)
    if (i == 0 || i % shardCount == shardIndex)
      order.push_back(i);
  int64_t stale = database->staleCount(key);
  std::fprintf(stderr,
               "attnc tune: %s, kernel %s, %s, on %s\n"
               "  database %s%s\n"
               "  %zu candidates%s, budget %.0fs\n",
               graph.name.c_str(), key.kernel.c_str(), key.shapeBucket.c_str(),
               machine.cpu.empty() ? target.name.c_str() : machine.cpu.c_str(),
               path.c_str(),
               stale ? (" (" + std::to_string(stale) +
                        " records of another machine or version ignored)")
                           .c_str()
                     : "",
               order.size(),
               shardCount > 1 ? (" in shard " + std::to_string(shardIndex) +
                                 "/" + std::to_string(shardCount))
                                    .c_str()
                              : "",
               budget);

  // Scratch: the reference outputs, candidate files, child logs.
  ScratchDirectory scratch;
  work = scratch.path;
  oddDims = smallOddShape(graph, dims);
  // Timed runs rotate over three input sets where they fit in 256 MB, so
  // a kernel is not timed on inputs the previous run left in the caches.
  double inputBytes = 0;
  for (ValueId id : graph.inputs)
    inputBytes += tensorBytes(graph.type(id), dims);
  inputSets = 3 * inputBytes <= double(256 << 20) ? 3 : 1;
  std::vector<std::string> arguments = {"reference", graph.file,
                                        "--seed=" + std::to_string(seed),
                                        "--output-dir=" + work + "/reference"};
  for (const std::string &argument : dimArguments(dims))
    arguments.push_back(argument);
  std::fprintf(stderr, "  computing the float64 reference once...\n");
  ChildResult reference =
      runChild(arguments, 3600, work, work + "/reference.log");
  if (reference.exitCode != 0)
    throw UserError("attnc tune: the reference evaluation failed: " +
                    lastLine(reference.output));

  bool terminal = isatty(2);
  auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::ofstream csv;
  if (!options::report.empty()) {
    fs::create_directories(std::string(options::report));
    csv.open(std::string(options::report) + "/candidates.csv");
    if (!csv)
      throw UserError("--report " + options::report +
                      ": cannot write candidates.csv");
    csv << "index";
    for (const std::string &name : parameterNames)
      csv << "," << csvField(name);
    csv << ",outcome,time_ms,speedup,detail,candidate\n";
  }

  double defaultMs = 0, bestMs = 0;
  int bestIndex = -1, done = 0, skipped = 0;
  std::vector<PlotPoint> plotted; // This run's candidates, default first.
  auto record = [&](int index, const Measurement &result) {
    PlotPoint point{all[index].parameters, all[index].description,
                    result.outcome, result.timeMs};
    if (index != 0 || plotted.empty())
      plotted.push_back(point);
    else
      plotted[0] = point;
    TuningRecord row;
    row.key = key;
    row.candidate = all[index].key;
    row.outcome = result.outcome;
    row.timeMs = result.timeMs;
    row.defaultMs = defaultMs;
    row.detail = result.detail;
    row.machine = machine.cpu;
    row.createdAt = utcNow();
    database->record(row);
    if (csv) {
      csv << index;
      for (const std::string &value : all[index].parameters)
        csv << "," << csvField(value);
      csv << "," << outcomeName(result.outcome) << "," << result.timeMs << ","
          << (result.outcome == Outcome::ok ? defaultMs / result.timeMs : 0)
          << "," << csvField(result.detail) << "," << csvField(all[index].key)
          << "\n";
      csv.flush();
    }
  };
  auto progress = [&](int index, const Measurement &result) {
    std::string left =
        options::exhaustive
            ? std::to_string(int(elapsed())) + "s, exhaustive"
            : std::to_string(int(std::max(0.0, budget - elapsed()))) + "s left";
    std::string line = "[" + std::to_string(done) + "/" +
                       std::to_string(order.size()) + ", " + left + "] " +
                       all[index].description + ": ";
    char text[160];
    if (result.outcome == Outcome::ok)
      std::snprintf(text, sizeof text, "%.3f ms (%.2fx)", result.timeMs,
                    defaultMs / result.timeMs);
    else
      std::snprintf(text, sizeof text, "%s", outcomeName(result.outcome));
    line += text;
    std::snprintf(text, sizeof text, " | best %.3f ms (%.2fx)", bestMs,
                  defaultMs / bestMs);
    line += text;
    if (terminal)
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
    else
      std::fprintf(stderr, "  %s\n", line.c_str());
  };

  // Candidate 1: the default, always timed in this run. `measured` counts
  // the candidates measured so far, the default first.
  int measured = 0;
  std::optional<CandidateSearch> search;
  auto measureOne = [&](int index) {
    auto begin = Clock::now();
    Measurement result = measure(all[index], ++measured);
    if (index == 0) {
      defaultSeconds =
          std::chrono::duration<double>(Clock::now() - begin).count();
      if (result.outcome != Outcome::ok)
        throw UserError("attnc tune: the default schedule fails (" +
                        result.detail + "); nothing to compare with");
      defaultMs = result.timeMs;
    }
    ++done;
    if (result.outcome == Outcome::ok &&
        (bestIndex < 0 || result.timeMs < bestMs)) {
      bestMs = result.timeMs;
      bestIndex = index;
    }
    if (search)
      search->report(index, result.outcome == Outcome::ok
                                ? std::optional<double>(result.timeMs)
                                : std::nullopt);
    record(index, result);
    progress(index, result);
  };
  measureOne(0);
  if (!options::repeat.getNumOccurrences() && defaultMs * repeat < 300) {
    // A short kernel is timed over at least 0.3 s per candidate, the
    // default again with it, so the ratios stay same-run and settled.
    repeat = std::min<uint64_t>(200, uint64_t(std::ceil(300 / defaultMs)));
    --done;
    --measured;
    bestIndex = -1;
    measureOne(0);
  }

  // The whole shard when it fits the budget at the default's cost per
  // candidate (or with --exhaustive), else a seeded local search.
  double perCandidate = std::max(defaultSeconds, 0.05);
  bool whole =
      options::exhaustive || perCandidate * double(order.size()) <= budget;
  std::vector<std::vector<std::string>> parameters;
  for (const TuneCandidate &candidate : all)
    parameters.push_back(candidate.parameters);
  search.emplace(std::move(parameters), order, whole, seed);
  search->report(0, defaultMs);
  while (options::exhaustive || elapsed() < budget) {
    if (interrupted)
      stopInterrupted();
    std::optional<int> index = search->next();
    if (!index)
      break;
    if (std::optional<TuningRecord> earlier =
            database->find(key, all[*index].key)) {
      // Measured by an earlier run: resume past it, and let its time,
      // scaled to this run's default, steer the search.
      ++skipped;
      ++done;
      bool ok = earlier->outcome == Outcome::ok && earlier->defaultMs > 0;
      search->report(*index,
                     ok ? std::optional<double>(earlier->timeMs * defaultMs /
                                                earlier->defaultMs)
                        : std::nullopt);
      continue;
    }
    measureOne(*index);
  }
  if (terminal)
    std::fprintf(stderr, "\n");
  confirm(database.get(), key, machine.cpu, all, order, confirmRounds);

  if (!options::report.empty()) {
    std::string file = std::string(options::report) + "/candidates.svg";
    std::ofstream svg(file);
    svg << tuningPlotSvg(plotted, parameterNames,
                         graph.name + " (" + backend + ") at " +
                             key.shapeBucket + " on " + machine.cpu);
    if (!svg.flush())
      throw UserError("--report " + options::report + ": cannot write " +
                      "candidates.svg");
  }
  std::optional<TuningRecord> best = database->best(key);
  std::printf("candidates: %d measured in %.0fs, %d from earlier runs, %zu "
              "in the %s\n",
              done - skipped, elapsed(), skipped, order.size(),
              shardCount > 1 ? "shard" : "space");
  std::printf("default: %s, %.3f ms\n", all[0].description.c_str(), defaultMs);
  std::printf("best this run: %s, %.3f ms (%.2fx the default)\n",
              all[bestIndex].description.c_str(), bestMs, defaultMs / bestMs);
  if (best) {
    std::string timed = best->confirmedRounds > 0
                            ? ", " + std::to_string(best->confirmedRounds) +
                                  " rounds timing both in turn"
                            : " in its run";
    std::printf("best in the database: %s, %.3f ms (default %.3f ms%s)\n",
                best->candidate.c_str(), best->timeMs, best->defaultMs,
                timed.c_str());
  }
  return 0;
}

int exportRecords() {
  if (options::tuneArguments.size() != 1)
    throw UserError("attnc tune export: takes no file (use -o FILE)");
  auto database = TuningDatabase::open(databasePath(), /*create=*/false);
  std::vector<TuningRecord> records = database->records();
  std::string text;
  for (const TuningRecord &record : records)
    text += toJsonLine(record) + "\n";
  if (options::exportFile.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  // Written whole or not at all: a temporary file renamed into place.
  std::string file = options::exportFile;
  std::string temporary = file + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out.flush())
      throw UserError("-o " + file + ": cannot write the file");
  }
  std::error_code error;
  fs::rename(temporary, file, error);
  if (error)
    throw UserError("-o " + file + ": " + error.message());
  std::fprintf(stderr, "exported %zu records to %s\n", records.size(),
               file.c_str());
  return 0;
}

int importRecords() {
  if (options::tuneArguments.size() != 2)
    throw UserError("attnc tune import: needs one file of records");
  std::string file = options::tuneArguments[1];
  std::ifstream in(file);
  if (!in)
    throw UserError(file + ": cannot open the file");
  // Every line is read and checked before anything is written.
  std::vector<TuningRecord> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    records.push_back(fromJsonLine(line, file + ":" + std::to_string(number)));
  }
  auto database = TuningDatabase::open(databasePath(), /*create=*/true);
  database->merge(records);
  std::fprintf(stderr, "imported %zu records into %s\n", records.size(),
               database->path().c_str());
  return 0;
}

} // namespace

void followTuner() {
  const char *tuner = std::getenv(kTunerVariable);
  if (!tuner)
    return;
  // The kernel sends SIGKILL when the tuner dies, SIGKILL included, so a
  // hanging candidate does not outlive it; a tuner already gone is seen
  // through the parent it left (init or a subreaper).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (std::to_string(getppid()) != tuner) {
    std::fprintf(stderr,
                 "attnc: %s=%s names a tuner that is not this process's "
                 "parent (it has ended); not running\n",
                 kTunerVariable, tuner);
    std::_Exit(1);
  }
}

int tuneCommand() {
  const std::string &first = options::tuneArguments.front();
  if (first == "export")
    return exportRecords();
  if (first == "import")
    return importRecords();
  if (options::tuneArguments.size() != 1)
    throw UserError("attnc tune: takes exactly one graph file");
  Graph graph = loadModelGraph(first);
  std::map<std::string, std::string> flagOf;
  DimBindings dims = bindDimFlags(graph, options::dims, &flagOf);
  std::string missing;
  for (const std::string &name : graph.runtimeDims())
    if (!dims.count(name))
      missing += (missing.empty() ? "" : ", ") + name;
  if (!missing.empty())
    throw UserError(first +
                    ": attnc tune measures one shape; give every "
                    "run-time size with --dim (missing: " +
                    missing + ")");
  checkBindings(graph, dims);
  struct sigaction action = {};
  action.sa_handler = onInterrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  if (options::backend != "mlir" && options::backend != "halide" &&
      options::backend != "all")
    throw UserError("--backend " + options::backend +
                    ": unknown backend; allowed: mlir, halide, all");
  if (options::backend == "all" && options::space.getNumOccurrences())
    throw UserError("--space: one backend's space; give --backend mlir or "
                    "halide with it");
  CpuTarget target = cpuTarget(options::target);
  requireHostRuns(options::target); // Every candidate runs here.
  std::vector<std::string> backends = {options::backend};
  if (options::backend == "all")
    backends = {"mlir", "halide"};
  for (const std::string &backend : backends)
    if (int status = Tuner(graph, dims, target, backend).run())
      return status;
  return 0;
}

} // namespace attnc
