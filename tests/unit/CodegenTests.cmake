# Unit tests of compiler/Codegen: MLIR to a loaded, running object.
add_executable(codegen-tests ${CMAKE_CURRENT_LIST_DIR}/CodegenTest.cpp)
target_link_libraries(codegen-tests PRIVATE attnc_codegen GTest::gtest
                      GTest::gtest_main)
gtest_discover_tests(codegen-tests PROPERTIES LABELS unit)
