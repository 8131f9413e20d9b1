# Finds every third-party dependency of attnc. All of them are Debian 12
# packages installed by scripts/setup.sh; see docs/toolchain.md.

find_package(nlohmann_json 3.11 REQUIRED)

# LLVM/MLIR 19. Only the shared libraries (libLLVM.so, libMLIR.so) are linked.
# MLIR's package accepts no bare major version, so check the major ourselves.
find_package(MLIR REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/mlir)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "attnc needs LLVM/MLIR 19, found ${LLVM_PACKAGE_VERSION} "
                      "in ${MLIR_DIR}; run scripts/setup.sh")
endif()
message(STATUS "attnc: MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")
list(APPEND CMAKE_MODULE_PATH ${MLIR_CMAKE_DIR} ${LLVM_CMAKE_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)
set(ATTNC_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}" CACHE PATH
    "Directory holding FileCheck, not, mlir-opt")

# pthreadpool ships no CMake package in Debian.
find_path(PTHREADPOOL_INCLUDE_DIR pthreadpool.h REQUIRED)
find_library(PTHREADPOOL_LIBRARY pthreadpool REQUIRED)
add_library(attnc::pthreadpool UNKNOWN IMPORTED)
set_target_properties(attnc::pthreadpool PROPERTIES
  IMPORTED_LOCATION "${PTHREADPOOL_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${PTHREADPOOL_INCLUDE_DIR}")

find_package(GTest REQUIRED)

# The tuning database (compiler/Tuning).
find_package(SQLite3 REQUIRED)
# ONNX models are read with libonnx (Debian: libonnx-dev), whose protobuf
# classes need libprotobuf.
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)

# Halide 14 is found in its own directory scope (compiler/Halide) because its
# package pulls in LLVM 14 and would shadow LLVM 19's include directories.
