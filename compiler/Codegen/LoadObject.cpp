//===- LoadObject.cpp - Run compiled objects in process -------------------===//

#include "Codegen/LoadObject.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <stdexcept>

namespace attnc {
namespace {

/// A new file in the temporary directory, removed on destruction, and by
/// LLVM's handler if SIGINT or SIGTERM (a timeout) stops attnc first. The
/// path is registered for that before the file exists: a signal that lands
/// between creating and registering (a preempted process gets it exactly
/// there) would leave the file behind.
struct TemporaryFile {
  llvm::SmallString<128> path;
  int fd = -1;

  explicit TemporaryFile(llvm::StringRef suffix) {
    llvm::SmallString<128> model;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, model);
    llvm::sys::path::append(model, "attnc-kernel-%%%%%%." + suffix);
    for (int attempt = 0; attempt < 128 && fd < 0; ++attempt) {
      llvm::sys::fs::createUniquePath(model, path, /*MakeAbsolute=*/false);
      llvm::sys::RemoveFileOnSignal(path);
      std::error_code error = llvm::sys::fs::openFileForWrite(
          path, fd, llvm::sys::fs::CD_CreateNew);
      if (!error)
        return;
      llvm::sys::DontRemoveFileOnSignal(path);
      if (error != std::errc::file_exists)
        break;
    }
    throw std::runtime_error(
        "cannot create a temporary file for the kernel in " +
        std::string(model.str().rsplit('/').first));
  }
  void closeDescriptor() {
    if (fd >= 0)
      llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    fd = -1;
  }
  ~TemporaryFile() {
    closeDescriptor();
    llvm::sys::fs::remove(path);
    llvm::sys::DontRemoveFileOnSignal(path);
  }
  TemporaryFile(const TemporaryFile &) = delete;
  TemporaryFile &operator=(const TemporaryFile &) = delete;
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
  TemporaryFile objectFile(isArchive ? "a" : "o"), libraryFile("so");
  libraryFile.closeDescriptor(); // The linker writes it by name.
  {
    llvm::raw_fd_ostream stream(objectFile.fd, /*shouldClose=*/true);
    objectFile.fd = -1;
    stream << object;
  }
  std::string program = linker();
  llvm::SmallVector<llvm::StringRef> args{program, "-shared", "-o",
                                          libraryFile.path};
  if (isArchive) {
    // Every member: nothing in the library references NAME_kernel. Halide's
    // runtime symbols are weak and exported; -Bsymbolic keeps the kernel's
    // calls on its own copy rather than any other Halide in this process.
    args.append({"-Wl,--whole-archive", objectFile.path,
                 "-Wl,--no-whole-archive", "-Wl,-Bsymbolic", "-lpthread",
                 "-ldl"});
  } else {
    args.push_back(objectFile.path);
  }
  std::string message;
  if (llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0,
                                &message) != 0)
    throw std::runtime_error("linking the kernel failed" +
                             (message.empty() ? "" : ": " + message));
  // The mapping outlives the file, which TemporaryFile removes.
  void *handle = dlopen(libraryFile.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw std::runtime_error(std::string("dlopen of the kernel failed: ") +
                             dlerror());
  return std::unique_ptr<LoadedObject>(new LoadedObject(handle));
}

} // namespace attnc
