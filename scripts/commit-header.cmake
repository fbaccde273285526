# Writes OUT, a C header defining GCLUSTER_COMMIT: `git describe` of the checkout at SOURCE_DIR
# (the commit, with "-dirty" when files were changed), or "unknown" when SOURCE_DIR is not the top
# of a git work tree (a release tarball, possibly unpacked inside some other repository) or GIT is
# empty. Run at every build (cmake -P); the file is only rewritten when its text changes, so an
# unchanged commit recompiles nothing.
set(commit "unknown")
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" source)
    if(top STREQUAL source)
      execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                      OUTPUT_VARIABLE described RESULT_VARIABLE rc
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND described)
        set(commit "${described}")
      endif()
    endif()
  endif()
endif()
set(text "#define GCLUSTER_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
