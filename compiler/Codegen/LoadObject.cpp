//===- LoadObject.cpp - Run compiled objects in process -------------------===//

#include "Codegen/LoadObject.h"
#include "Support/OwnerLock.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <stdexcept>
#include <unistd.h>

namespace attnc {
namespace {

/// The files one link needs, `attnc-kernel-XXXXXX.{lock,o|a,so}` in the
/// temporary directory, removed on destruction, and by LLVM's handler if
/// SIGINT or SIGTERM (a timeout) stops attnc first; each path is registered
/// for that before its file exists (a preempted process gets the signal
/// exactly between the two). SIGKILL removes nothing, so the set holds an
/// owner lock on its `.lock` (Support/OwnerLock.h) and every new set first
/// removes the sets of owners that are gone.
class KernelFiles {
public:
  explicit KernelFiles(llvm::StringRef objectSuffix) {
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, directory);
    removeAbandoned();
    llvm::SmallString<128> model(directory);
    llvm::sys::path::append(model, std::string(kPrefix) + "%%%%%%");
    for (int attempt = 0; attempt < 128 && lock < 0; ++attempt) {
      llvm::sys::fs::createUniquePath(model, stem, /*MakeAbsolute=*/false);
      std::string lockPath = path(kLock), staged = lockPath + ".new";
      for (const std::string &file : {staged, lockPath})
        llvm::sys::RemoveFileOnSignal(file);
      lock = createOwnerLock(lockPath);
      int reason = errno;
      llvm::sys::DontRemoveFileOnSignal(staged);
      if (lock < 0) {
        llvm::sys::DontRemoveFileOnSignal(lockPath);
        if (reason != EEXIST)
          fail(reason);
      }
    }
    if (lock < 0)
      fail(EEXIST);
    object = path("." + objectSuffix.str());
    library = path(".so");
    for (const std::string &file : {object, library})
      llvm::sys::RemoveFileOnSignal(file);
  }
  ~KernelFiles() {
    for (const std::string &file : {object, library, path(kLock)}) {
      llvm::sys::fs::remove(file);
      llvm::sys::DontRemoveFileOnSignal(file);
    }
    close(lock);
  }
  KernelFiles(const KernelFiles &) = delete;
  KernelFiles &operator=(const KernelFiles &) = delete;

  std::string object;  ///< The object or archive to link.
  std::string library; ///< The shared library the linker writes.

private:
  static constexpr llvm::StringLiteral kPrefix = "attnc-kernel-";
  static constexpr size_t kRandomChars = 6;
  static constexpr llvm::StringLiteral kLock = ".lock";

  std::string path(llvm::StringRef suffix) const {
    return (stem + suffix).str();
  }
  [[noreturn]] void fail(int reason) const {
    throw std::runtime_error(
        "cannot create a temporary file for the kernel in " +
        directory.str().str() + ": " + std::strerror(reason));
  }
  /// Best effort: a set that cannot be read or removed stays.
  void removeAbandoned() const {
    std::error_code error;
    for (llvm::sys::fs::directory_iterator entry(directory, error), end;
         !error && entry != end; entry.increment(error)) {
      llvm::StringRef name = llvm::sys::path::filename(entry->path());
      int held = -1;
      if (!name.starts_with(kPrefix) || !name.ends_with(kLock) ||
          name.size() != kPrefix.size() + kRandomChars + kLock.size() ||
          !takeAbandonedLock(entry->path(), held))
        continue;
      llvm::StringRef stem =
          llvm::StringRef(entry->path()).drop_back(kLock.size());
      for (llvm::StringRef suffix : {".o", ".a", ".so", kLock.data()})
        unlink((stem + suffix).str().c_str());
      close(held);
    }
  }

  llvm::SmallString<128> directory, stem;
  int lock = -1;
};

std::string linker() {
  for (const char *candidate : {"clang-19", "/usr/lib/llvm-19/bin/clang"})
    if (llvm::ErrorOr<std::string> path =
            llvm::sys::findProgramByName(candidate))
      return *path;
  throw std::runtime_error("clang-19 is needed to load compiled kernels "
                           "(scripts/setup.sh installs it)");
}

} // namespace

LoadedObject::~LoadedObject() {
  if (handle)
    dlclose(handle);
}

void *LoadedObject::symbol(const std::string &name) const {
  return dlsym(handle, name.c_str());
}

std::unique_ptr<LoadedObject> LoadedObject::load(const std::string &object) {
  return link(object, /*isArchive=*/false);
}

std::unique_ptr<LoadedObject>
LoadedObject::loadArchive(const std::string &archive) {
  return link(archive, /*isArchive=*/true);
}

std::unique_ptr<LoadedObject> LoadedObject::link(const std::string &object,
                                                 bool isArchive) {
  KernelFiles files(isArchive ? "a" : "o");
  {
    std::error_code error;
    llvm::raw_fd_ostream stream(files.object, error,
                                llvm::sys::fs::CD_CreateNew);
    if (!error)
      stream << object;
    stream.close();
    if (error || stream.has_error())
      throw std::runtime_error("cannot write " + files.object + ": " +
                               (error ? error : stream.error()).message());
  }
  std::string program = linker();
  llvm::SmallVector<llvm::StringRef> args{program, "-shared", "-o",
                                          files.library};
  if (isArchive) {
    // Every member: nothing in the library references NAME_kernel. Halide's
    // runtime symbols are weak and exported; -Bsymbolic keeps the kernel's
    // calls on its own copy rather than any other Halide in this process.
    args.append({"-Wl,--whole-archive", files.object, "-Wl,--no-whole-archive",
                 "-Wl,-Bsymbolic", "-lpthread", "-ldl"});
  } else {
    args.push_back(files.object);
  }
  std::string message;
  if (llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0,
                                &message) != 0)
    throw std::runtime_error("linking the kernel failed" +
                             (message.empty() ? "" : ": " + message));
  // The mapping outlives the file, which KernelFiles removes.
  void *handle = dlopen(files.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw std::runtime_error(std::string("dlopen of the kernel failed: ") +
                             dlerror());
  return std::unique_ptr<LoadedObject>(new LoadedObject(handle));
}

} // namespace attnc
