# cmake -DATTNC_BINARY_DIR=... -DEXAMPLE_SOURCE_DIR=... -DWORK_DIR=...
#       -DGENERATOR=... [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DBACKEND=halide]
#       -P install_and_build.cmake
#
# 1. cmake --install ATTNC_BINARY_DIR --prefix WORK_DIR/stage
# 2. renames WORK_DIR/stage to WORK_DIR/prefix (the package must not remember
#    where it was installed)
# 3. configures and builds EXAMPLE_SOURCE_DIR in WORK_DIR/build with only
#    CMAKE_PREFIX_PATH=WORK_DIR/prefix, checking that find_package(attnc)
#    found that copy
# 4. runs the program it built (toy_decoder), which exits 1 on a wrong result
# WORK_DIR is removed at the end, whether the steps pass or fail, and the
# build directory's install_manifest.txt is left as it was.
cmake_minimum_required(VERSION 3.20)

foreach(variable ATTNC_BINARY_DIR EXAMPLE_SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "install_and_build.cmake: -D${variable}=... is required")
  endif()
endforeach()

set(stage "${WORK_DIR}/stage")
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")

function(fail message)
  file(REMOVE_RECURSE "${WORK_DIR}")
  message(FATAL_ERROR "${message}")
endfunction()

# Runs one step; on failure prints its output, cleans up and stops.
function(step name)
  message(STATUS "${name}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    fail("${name} failed (${status}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# cmake --install (re)writes install_manifest.txt in the build directory:
# put back what was there.
set(manifest "${ATTNC_BINARY_DIR}/install_manifest.txt")
if(EXISTS "${manifest}")
  file(READ "${manifest}" saved_manifest)
endif()
step(install "${CMAKE_COMMAND}" --install "${ATTNC_BINARY_DIR}" --prefix "${stage}")
if(DEFINED saved_manifest)
  file(WRITE "${manifest}" "${saved_manifest}")
else()
  file(REMOVE "${manifest}")
endif()
file(RENAME "${stage}" "${prefix}")

set(configure "${CMAKE_COMMAND}" -S "${EXAMPLE_SOURCE_DIR}" -B "${build}"
    -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(BACKEND)
  list(APPEND configure "-DATTNC_EMBED_BACKEND=${BACKEND}")
endif()
if(MAKE_PROGRAM)
  list(APPEND configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
step(configure ${configure})

file(STRINGS "${build}/CMakeCache.txt" found REGEX "^attnc_DIR:")
if(NOT found STREQUAL "attnc_DIR:PATH=${prefix}/lib/cmake/attnc")
  fail("find_package(attnc) found another attnc: ${found}")
endif()

step(build "${CMAKE_COMMAND}" --build "${build}")
step(run "${build}/toy_decoder")
message("${step_output}")

file(REMOVE_RECURSE "${WORK_DIR}")
