# Unit tests of compiler/Codegen: MLIR to a loaded, running object.
add_executable(codegen-tests ${CMAKE_CURRENT_LIST_DIR}/CodegenTest.cpp)
target_link_libraries(codegen-tests PRIVATE attnc_codegen GTest::gtest
                      GTest::gtest_main)
gtest_discover_tests(codegen-tests PROPERTIES LABELS unit)

add_executable(kernel-interface-tests ${CMAKE_CURRENT_LIST_DIR}/KernelInterfaceTest.cpp)
target_compile_definitions(kernel-interface-tests PRIVATE
                           ATTNC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(kernel-interface-tests PRIVATE attnc_codegen attnc_graph
                      nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
gtest_discover_tests(kernel-interface-tests PROPERTIES LABELS unit)
