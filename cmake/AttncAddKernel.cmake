# attnc_add_kernel: compile an attention graph with `attnc compile` at build
# time and make a library of it, like Halide's add_halide_library.
#
#   attnc_add_kernel(<target> GRAPH <graph.json>
#                    [BACKEND <mlir|halide>]    # mlir (default)
#                    [SCHEDULE <schedule.json>]
#                    [TARGET <target>]          # host (default), x86-64,
#                                               # x86-64-avx2, x86-64-avx512,
#                                               # x86-64-avx512-bf16,
#                                               # x86-64-amx, or
#                                               # cuda-sm80, cuda-sm90,
#                                               # cuda-sm90a (BACKEND mlir)
#                    [NAME <kernel name>]       # default: "name" in the graph
#                    [TUNING_DB <tuning.db>     # schedule: the database's best
#                     [DIMS <N=V>...]]          # record at these sizes
#                    [EMIT <mlir|llvm>...])     # also NAME.mlir / NAME.ll
#
# Runs `attnc compile <graph> -o <dir> --target <cpu> [--schedule <schedule>]`
# whenever the graph, the schedule or attnc itself changes, writing
# <dir>/NAME.o, NAME.h and NAME.json (dir: ${CMAKE_CURRENT_BINARY_DIR}/<target>.attnc),
# and creates the STATIC library <target> holding NAME.o (BACKEND halide:
# the library is NAME.a itself, Halide's pipeline and runtime with NAME_entry
# and NAME_kernel). Linking <target> gives the include directory of NAME.h
# and links attnc::attnrt, whichever the backend:
#
#   attnc_add_kernel(decode_attention GRAPH decode.json)
#   target_link_libraries(app PRIVATE decode_attention)   # #include "NAME.h"
#
# The library's properties ATTNC_KERNEL_NAME, ATTNC_KERNEL_HEADER and
# ATTNC_KERNEL_MANIFEST give NAME and the paths of NAME.h and NAME.json.
#
# NAME is read from the graph when CMake configures (and CMake reconfigures
# when the graph changes); a NAME given is passed as `attnc compile --name`,
# so one graph can be compiled twice into one program (two backends or two
# schedules), and a graph generated at build time needs no reading.
# SCHEDULE is a file, or `auto:<autoscheduler>` for BACKEND halide.
# TUNING_DB (BACKEND mlir) takes the schedule from a database `attnc tune`
# wrote: its fastest record for the graph at the DIMS sizes (every run-time
# size) on the building machine, else the default; the kernel is rebuilt when
# the database changes. Without it no database is read (--no-tuning-db), so
# a build does not depend on the user's cache. `host` compiles for the machine that builds: name a target
# when the program runs elsewhere.
#
# Works from the installed package (find_package(attnc), which runs the
# imported attnc::attnc) and inside attnc's own build (the `attnc` target,
# e.g. benchmarks/).

include_guard(GLOBAL)

function(attnc_add_kernel target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG ""
                        "GRAPH;SCHEDULE;TARGET;NAME;BACKEND;TUNING_DB" "EMIT;DIMS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attnc_add_kernel(${target}): unknown arguments "
                        "'${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT ARG_GRAPH)
    message(FATAL_ERROR "attnc_add_kernel(${target}): GRAPH <graph.json> is required")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  if(NOT ARG_BACKEND)
    set(ARG_BACKEND mlir)
  endif()
  if(NOT ARG_BACKEND MATCHES "^(mlir|halide)$")
    message(FATAL_ERROR "attnc_add_kernel(${target}): BACKEND '${ARG_BACKEND}': "
                        "expected mlir or halide")
  endif()

  # The compiler: the imported one of the installed package, or attnc's own
  # target when this runs inside attnc's build.
  if(TARGET attnc::attnc)
    set(compiler attnc::attnc)
  elseif(TARGET attnc)
    set(compiler attnc)
  else()
    message(FATAL_ERROR "attnc_add_kernel(${target}): no attnc executable; "
                        "call find_package(attnc) first")
  endif()

  get_filename_component(graph "${ARG_GRAPH}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(name "${ARG_NAME}")
  if(NOT name)
    if(NOT EXISTS "${graph}")
      message(FATAL_ERROR "attnc_add_kernel(${target}): ${graph} does not exist "
                          "(give NAME for a graph generated at build time)")
    endif()
    file(READ "${graph}" text)
    string(JSON name ERROR_VARIABLE problem GET "${text}" name)
    if(problem)
      message(FATAL_ERROR "attnc_add_kernel(${target}): cannot read \"name\" "
                          "from ${graph}: ${problem}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${graph}")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "attnc_add_kernel(${target}): graph name '${name}' "
                        "does not match [A-Za-z_][A-Za-z0-9_]*")
  endif()

  set(schedule_args "")
  set(schedule "")
  if(ARG_SCHEDULE MATCHES "^auto:")
    set(schedule_args --schedule "${ARG_SCHEDULE}")
  elseif(ARG_SCHEDULE)
    get_filename_component(schedule "${ARG_SCHEDULE}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(schedule_args --schedule "${schedule}")
  endif()
  set(tuning_args --no-tuning-db)
  set(tuning_db "")
  if(ARG_TUNING_DB)
    if(NOT ARG_BACKEND STREQUAL "mlir" OR ARG_SCHEDULE)
      message(FATAL_ERROR "attnc_add_kernel(${target}): TUNING_DB needs "
                          "BACKEND mlir and no SCHEDULE")
    endif()
    get_filename_component(tuning_db "${ARG_TUNING_DB}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(tuning_args --tuning-db "${tuning_db}")
    foreach(dim IN LISTS ARG_DIMS)
      list(APPEND tuning_args --dim "${dim}")
    endforeach()
  elseif(ARG_DIMS)
    message(FATAL_ERROR "attnc_add_kernel(${target}): DIMS only with TUNING_DB")
  endif()
  if(ARG_BACKEND STREQUAL "halide")
    set(tuning_args "")
  endif()
  set(name_args "")
  if(ARG_NAME)
    set(name_args --name "${name}")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.attnc")
  # Exists before the build: an imported target's include directory must.
  file(MAKE_DIRECTORY "${dir}")
  set(object "${dir}/${name}.o")
  if(ARG_BACKEND STREQUAL "halide")
    set(object "${dir}/${name}.a")
  endif()
  set(header "${dir}/${name}.h")
  set(manifest "${dir}/${name}.json")

  set(emit_args "")
  set(extra_outputs "")
  if(ARG_EMIT)
    foreach(kind IN LISTS ARG_EMIT)
      if(kind STREQUAL "mlir")
        list(APPEND extra_outputs "${dir}/${name}.mlir")
      elseif(kind STREQUAL "llvm")
        list(APPEND extra_outputs "${dir}/${name}.ll")
      else()
        message(FATAL_ERROR "attnc_add_kernel(${target}): EMIT '${kind}': "
                            "expected mlir or llvm")
      endif()
    endforeach()
    string(REPLACE ";" "," emit "${ARG_EMIT}")
    set(emit_args --emit "${emit}")
  endif()

  add_custom_command(
    OUTPUT "${object}" "${header}" "${manifest}" ${extra_outputs}
    COMMAND ${compiler} compile "${graph}" -o "${dir}" --target "${ARG_TARGET}"
            --backend "${ARG_BACKEND}" ${name_args} ${schedule_args}
            ${tuning_args} ${emit_args}
    DEPENDS "${graph}" ${schedule} ${tuning_db} "$<TARGET_FILE:${compiler}>"
    COMMENT "attnc compile ${name} (${ARG_TARGET})"
    VERBATIM)

  if(ARG_BACKEND STREQUAL "halide")
    # NAME.a is already the library: import it, built by the command above.
    add_custom_target(${target}_attnc_compile DEPENDS "${object}" "${header}")
    add_library(${target} STATIC IMPORTED)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${object}")
    add_dependencies(${target} ${target}_attnc_compile)
    # Halide's runtime uses threads and dlopen.
    find_package(Threads REQUIRED)
    target_link_libraries(${target} INTERFACE Threads::Threads ${CMAKE_DL_LIBS})
  else()
    add_library(${target} STATIC "${object}" "${header}")
    set_source_files_properties("${object}" PROPERTIES EXTERNAL_OBJECT TRUE
                                                       GENERATED TRUE)
    # An archive of one foreign object: any enabled language can archive it.
    get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if("CXX" IN_LIST languages)
      set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
    else()
      set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
    endif()
  endif()
  set_target_properties(${target} PROPERTIES
    ATTNC_KERNEL_NAME "${name}"
    ATTNC_KERNEL_HEADER "${header}"
    ATTNC_KERNEL_MANIFEST "${manifest}")
  # NAME.o needs libattnrt, libc and libm, nothing else. (IMPORTED targets
  # take INTERFACE properties only; INTERFACE is what consumers see anyway.)
  target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${dir}>")
  target_link_libraries(${target} INTERFACE attnc::attnrt)
  if(UNIX AND NOT APPLE)
    target_link_libraries(${target} INTERFACE m)
  endif()
endfunction()
