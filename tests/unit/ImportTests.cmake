# Unit tests of compiler/Import (graph -> attn IR, the attn pipeline's kernel
# counts on examples/graphs). Included from tests/unit; paths are relative to
# this file's directory.
add_executable(import-tests ${CMAKE_CURRENT_LIST_DIR}/ImportTest.cpp)
target_compile_definitions(import-tests PRIVATE
                           ATTNC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(import-tests PRIVATE attnc_import attnc_graph
                      attnc_support GTest::gtest GTest::gtest_main)
gtest_discover_tests(import-tests PROPERTIES LABELS unit)
