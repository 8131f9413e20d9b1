//===- LoadObject.cpp - Run compiled objects in process -------------------===//

#include "Codegen/LoadObject.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <stdexcept>

namespace attnc {
namespace {

/// Removes a file when it goes out of scope.
/// Removed on destruction, and by LLVM's handler if SIGINT or SIGTERM
/// (a timeout) stops attnc first.
struct TemporaryFile {
  llvm::SmallString<128> path;
  void removeOnSignal() { llvm::sys::RemoveFileOnSignal(path); }
  ~TemporaryFile() {
    if (path.empty())
      return;
    llvm::sys::fs::remove(path);
    llvm::sys::DontRemoveFileOnSignal(path);
  }
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
  TemporaryFile objectFile, libraryFile;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("attnc-kernel", isArchive ? "a" : "o",
                                         fd,
                                         objectFile.path) ||
      llvm::sys::fs::createTemporaryFile("attnc-kernel", "so",
                                         libraryFile.path))
    throw std::runtime_error("cannot create temporary files for the kernel");
  objectFile.removeOnSignal();
  libraryFile.removeOnSignal();
  {
    llvm::raw_fd_ostream stream(fd, /*shouldClose=*/true);
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
