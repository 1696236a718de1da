# Writes OUT from the template IN with FAST_SOURCE_COMMIT set to `git describe --always --dirty` of
# SOURCE_DIR (empty where SOURCE_DIR is no git checkout, GIT is not found or git fails) and
# PROJECT_VERSION as given. configure_file leaves OUT untouched when its text would not change, so
# the file that includes it is compiled again only when the commit (or its dirty mark) changed.
# Run by src/core/CMakeLists.txt at configure time and before every build of fast_core
# (cmake -P, the target fast_source_commit).
set(FAST_SOURCE_COMMIT "")
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" describe --always --dirty WORKING_DIRECTORY "${SOURCE_DIR}"
                  OUTPUT_VARIABLE FAST_SOURCE_COMMIT RESULT_VARIABLE git_result OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(NOT git_result EQUAL 0)
    set(FAST_SOURCE_COMMIT "")
  endif()
endif()
configure_file("${IN}" "${OUT}" @ONLY)
