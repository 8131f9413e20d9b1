//===- LoadObject.h - Run compiled objects in process -------------*- C++
//-*-===//
//
// `attnc run` executes exactly what `attnc compile` ships: the object file is
// linked into a temporary shared library with clang-19 and dlopen'ed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_LOADOBJECT_H
#define ATTNC_CODEGEN_LOADOBJECT_H

#include <memory>
#include <string>

namespace attnc {

/// A dlopen'ed library; closed on destruction.
class LoadedObject {
public:
  ~LoadedObject();
  LoadedObject(const LoadedObject &) = delete;
  LoadedObject &operator=(const LoadedObject &) = delete;

  /// The address of `name`, or null.
  void *symbol(const std::string &name) const;

  /// Links `object` (ELF bytes) into a shared library and loads it. Throws
  /// std::runtime_error naming what failed (no clang-19, a link error).
  static std::unique_ptr<LoadedObject> load(const std::string &object);
  /// The same for a static library (the Halide backend's NAME.a): all of its
  /// members are linked in.
  static std::unique_ptr<LoadedObject> loadArchive(const std::string &archive);

private:
  static std::unique_ptr<LoadedObject> link(const std::string &bytes,
                                            bool isArchive);
  explicit LoadedObject(void *handle) : handle(handle) {}
  void *handle;
};

} // namespace attnc

#endif // ATTNC_CODEGEN_LOADOBJECT_H
