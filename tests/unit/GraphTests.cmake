# Unit tests of compiler/Graph (parsing, validation, shape rules) and
# compiler/Reference (the float64 evaluator). Included from tests/unit; paths
# are relative to this file's directory.
add_executable(graph-tests
  ${CMAKE_CURRENT_LIST_DIR}/ParseTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ShapeRulesTest.cpp)
target_include_directories(graph-tests PRIVATE ${PROJECT_SOURCE_DIR}/compiler)
target_compile_definitions(graph-tests PRIVATE
                           ATTNC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(graph-tests PRIVATE attnc_graph attnc_support
                      GTest::gtest GTest::gtest_main)
gtest_discover_tests(graph-tests PROPERTIES LABELS unit)

add_executable(reference-tests
  ${CMAKE_CURRENT_LIST_DIR}/ReferenceTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ReferencePropertiesTest.cpp
  ${PROJECT_SOURCE_DIR}/compiler/Driver/Inputs.cpp)
target_include_directories(reference-tests PRIVATE
                           ${PROJECT_SOURCE_DIR}/compiler)
target_link_libraries(reference-tests PRIVATE attnc_reference attnc_graph
                      attnc_support GTest::gtest GTest::gtest_main)
gtest_discover_tests(reference-tests PROPERTIES LABELS unit)
