# Unit tests of compiler/Support (.npy I/O, f16/bf16 conversions, writing
# files whole, owner locks). Included from tests/unit; paths are relative to this file's
# directory.
add_executable(support-tests
  ${CMAKE_CURRENT_LIST_DIR}/NpyTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Float16Test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/OwnerLockTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TextFileTest.cpp)
target_link_libraries(support-tests PRIVATE attnc_support GTest::gtest
                      GTest::gtest_main)
gtest_discover_tests(support-tests PROPERTIES LABELS unit)
