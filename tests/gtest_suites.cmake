# fast_add_gtest_suites(): one CTest test per GoogleTest suite of a test executable, run by CTest
# when it reads the build's tests (fast_test(... PER_SUITE), tests/CMakeLists.txt, registers the
# calling script with TEST_INCLUDE_FILES). Executables that link libtorch pay most of a second of
# CPU at every start (its static initialisation), so one process per test costs more than most of
# their tests; one per suite keeps a failure's place (the CTest test names the suite, its output
# the test).
#
# EXE: the executable; PREFIX: the CTest name prefix ("<target>."); TIMEOUT: seconds per suite;
# ENVIRONMENT: the tests' ENVIRONMENT property (may be empty); CACHE: a file for the generated
# add_test calls, reused while it is newer than EXE, the calling script and this file (so the
# listing runs once per build, not at every ctest); UNIT (optional): the label of the other suites
# (`unit` for an in-process executable, else empty; tests/CMakeLists.txt). A suite whose name (or
# instantiation name) starts with "Long" gets the label `long`; suites starting with DISABLED_ are
# left out. When the executable cannot list its tests, one test that runs the listing is added (not
# cached), so that the failure shows.
function(fast_add_gtest_suites exe prefix timeout environment cache)
  set(unit "")
  if(ARGC GREATER 5)
    set(unit "${ARGV5}")
  endif()
  if(EXISTS "${cache}" AND "${cache}" IS_NEWER_THAN "${exe}" AND "${cache}" IS_NEWER_THAN "${CMAKE_CURRENT_LIST_FILE}"
     AND "${cache}" IS_NEWER_THAN "${CMAKE_CURRENT_FUNCTION_LIST_FILE}")
    include("${cache}")
    return()
  endif()
  execute_process(COMMAND "${exe}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE listed
                  ERROR_VARIABLE errors TIMEOUT 60)
  if(NOT listed EQUAL 0)
    add_test("${prefix}list_tests" "${exe}" --gtest_list_tests)
    return()
  endif()
  set(calls "")
  string(REPLACE "\n" ";" lines "${listing}")
  foreach(line IN LISTS lines)
    # Suite lines end with '.' (a typed or parameterised suite adds "  # TypeParam = ..."); test
    # lines are indented.
    if(NOT line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
      continue()
    endif()
    set(suite "${CMAKE_MATCH_1}")
    if(suite MATCHES "^DISABLED_" OR suite MATCHES "/DISABLED_")
      continue()
    endif()
    set(name "${prefix}${suite}")
    string(APPEND calls "add_test([==[${name}]==] [==[${exe}]==] [==[--gtest_filter=${suite}.*]==])\n"
                        "set_tests_properties([==[${name}]==] PROPERTIES TIMEOUT ${timeout})\n")
    if(environment)
      string(APPEND calls "set_tests_properties([==[${name}]==] PROPERTIES ENVIRONMENT [==[${environment}]==])\n")
    endif()
    if(suite MATCHES "^Long")
      string(APPEND calls "set_tests_properties([==[${name}]==] PROPERTIES LABELS long)\n")
    elseif(unit)
      string(APPEND calls "set_tests_properties([==[${name}]==] PROPERTIES LABELS ${unit})\n")
    endif()
  endforeach()
  file(WRITE "${cache}" "${calls}")
  include("${cache}")
endfunction()
