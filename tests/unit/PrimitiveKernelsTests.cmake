# Unit tests of compiler/Codegen/PrimitiveKernels: every attn primitive
# compiled, run and compared with the float64 reference. Included from
# tests/unit; paths are relative to this file's directory.
add_executable(primitive-kernels-tests
               ${CMAKE_CURRENT_LIST_DIR}/PrimitiveKernelsTest.cpp)
target_link_libraries(primitive-kernels-tests PRIVATE attnc_codegen
                      attnc_import attnc_reference attnc_graph attnc_support
                      GTest::gtest GTest::gtest_main)
gtest_discover_tests(primitive-kernels-tests PROPERTIES LABELS unit)
