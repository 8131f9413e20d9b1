# cmake -DATTNC_BINARY_DIR=... -DEXAMPLE_SOURCE_DIR=... -DWORK_DIR=...
#       -DGENERATOR=... [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DBACKEND=halide]
#       [-DTUNED=ON] [-DKERNEL_TARGET=cuda-sm90] -P install_and_build.cmake
#
# 1. cmake --install ATTNC_BINARY_DIR --prefix WORK_DIR/stage
# 2. renames WORK_DIR/stage to WORK_DIR/prefix (the package must not remember
#    where it was installed)
# 3. configures and builds EXAMPLE_SOURCE_DIR in WORK_DIR/build with only
#    CMAKE_PREFIX_PATH=WORK_DIR/prefix, checking that find_package(attnc)
#    found that copy
# 4. runs the program it built (toy_decoder), which exits 1 on a wrong result
#    (for a CUDA KERNEL_TARGET, 77 without a GPU: "not run: no CUDA device")
# With TUNED, the installed attnc first tunes the example's graph over two
# candidates into WORK_DIR/tuning.db, the example is built with
# ATTNC_EMBED_TUNING_DB, and its manifest must name the record.
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
if(KERNEL_TARGET)
  list(APPEND configure "-DATTNC_EMBED_TARGET=${KERNEL_TARGET}")
endif()
if(TUNED)
  set(space "${WORK_DIR}/space.json")
  # The compiled-in space's version, so that compile uses the records.
  file(READ "${CMAKE_CURRENT_LIST_DIR}/../../schedules/space/cpu.json" builtin)
  string(JSON version GET "${builtin}" version)
  file(WRITE "${space}" "{\"attnc_schedule_space\": 1, \"version\": ${version}, \"query_tile\": [16, 32], \"key_tile\": [48], \"score_block\": [[2, 6]], \"pv_block\": [[4, 2]], \"registers\": {\"x86-64\": 16, \"x86-64-avx2\": 16, \"x86-64-avx512\": 32}}")
  step(tune "${prefix}/bin/attnc" tune "${EXAMPLE_SOURCE_DIR}/toy_attention.json"
       --dim S=1 --dim T=64 --db "${WORK_DIR}/tuning.db" --space "${space}"
       --repeat 3)
  list(APPEND configure "-DATTNC_EMBED_TUNING_DB=${WORK_DIR}/tuning.db"
       "-DATTNC_EMBED_TUNING_DIMS=S=1,T=64")
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
if(TUNED)
  file(READ "${build}/toy_attention_kernel.attnc/toy_attention.json" manifest_text)
  string(JSON source GET "${manifest_text}" schedule_source)
  if(NOT source MATCHES "^tuning database ${WORK_DIR}/tuning.db: kernel ")
    fail("the tuned build's manifest says schedule_source \"${source}\"")
  endif()
  message(STATUS "tuned build: ${source}")
endif()
# A CUDA build on a machine without a GPU: built and linked, and the
# program says it cannot run (exit 77), which ctest reports as skipped.
execute_process(COMMAND "${build}/toy_decoder" RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(status EQUAL 77 AND KERNEL_TARGET MATCHES "^cuda-")
  message("not run: no CUDA device")
elseif(NOT status EQUAL 0)
  fail("run failed (${status}):\n${out}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
