# The attn-dialects lit suite: FileCheck tests of the dialects, beside what
# they test (dialects/**/test/*.mlir). Included from dialects/CMakeLists.txt.
#
#   ctest -L lit -R dialects-lit --output-on-failure   (from the build directory)
#   /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/dialects
#
# lit, FileCheck and not come from LLVM 19 (LLVM_TOOLS_BINARY_DIR).

if(BUILD_TESTING)
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/lit.site.cfg.py.in
                 ${PROJECT_BINARY_DIR}/dialects/lit.site.cfg.py @ONLY)

  add_test(NAME dialects-lit
           COMMAND /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py
                   -sv ${PROJECT_BINARY_DIR}/dialects)
  set_tests_properties(dialects-lit PROPERTIES LABELS lit)
endif()
