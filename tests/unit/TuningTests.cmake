# Unit tests of compiler/Tuning (the tuning database). Included from
# tests/unit; paths are relative to this file's directory.
add_executable(tuning-tests ${CMAKE_CURRENT_LIST_DIR}/TuningDatabaseTest.cpp
               ${CMAKE_CURRENT_LIST_DIR}/CandidateSearchTest.cpp)
target_link_libraries(tuning-tests PRIVATE attnc_tuning SQLite::SQLite3
                      GTest::gtest GTest::gtest_main)
gtest_discover_tests(tuning-tests PROPERTIES LABELS unit)
