# The attn-opt lit suites: FileCheck tests beside what they test, the
# dialects' (dialects/**/test/*.mlir, defined here) and the CPU backend's
# passes' (compiler/Codegen/test/*.mlir, compiler/Codegen/CMakeLists.txt).
# Included from dialects/CMakeLists.txt.
#
#   ctest -L lit -R 'dialects-lit|codegen-lit' --output-on-failure
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/dialects
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/compiler/Codegen/test
#
# lit, FileCheck and not come from LLVM 19 (LLVM_TOOLS_BINARY_DIR).

# attnc_add_lit_suite(NAME SOURCE_DIR): a suite of attn-opt FileCheck tests
# under SOURCE_DIR, run from build/<SOURCE_DIR relative to the project>
# by the ctest NAME (label lit).
function(attnc_add_lit_suite name source_dir)
  if(NOT BUILD_TESTING)
    return()
  endif()
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR} ${source_dir})
  set(ATTNC_LIT_SUITE ${name})
  set(ATTNC_LIT_SOURCE_ROOT ${source_dir})
  set(ATTNC_LIT_EXEC_ROOT ${PROJECT_BINARY_DIR}/${relative})
  configure_file(${PROJECT_SOURCE_DIR}/dialects/lit.site.cfg.py.in
                 ${ATTNC_LIT_EXEC_ROOT}/lit.site.cfg.py @ONLY)
  add_test(NAME ${name}-lit
           COMMAND /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py
                   -sv ${ATTNC_LIT_EXEC_ROOT})
  set_tests_properties(${name}-lit PROPERTIES LABELS lit)
endfunction()

attnc_add_lit_suite(dialects ${CMAKE_CURRENT_SOURCE_DIR})
