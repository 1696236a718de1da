# fast_pkg_config_isystem(TARGET): moves the `-isystem DIR` (or `-isystemDIR`) compile options of a
# pkg-config imported target (pkg_check_modules(... IMPORTED_TARGET ...)) into its include
# directories, which CMake passes as -isystem too (the target is imported).
#
# Why: CMake 3.25's FindPkgConfig moves such flags into the include directories only on the
# configure that runs pkg-config; a later configure of the same build tree takes the cached
# flags, where they are still compile options. The compile command lines of every target using
# the module then change and the whole set is compiled again: with Debian's libzmq, whose
# pkg-config flags hold `-isystem /usr/include/mit-krb5`, the second `make build` of a tree
# recompiled 71 objects. With this, every configure gives the same command lines.
# Installed with the CMake package; fastConfig.cmake applies it to the targets it creates again.
function(fast_pkg_config_isystem target)
  get_target_property(options ${target} INTERFACE_COMPILE_OPTIONS)
  if(NOT options)
    return()
  endif()
  set(kept "")
  set(dirs "")
  set(next_is_dir FALSE)
  foreach(option IN LISTS options)
    if(next_is_dir)
      list(APPEND dirs "${option}")
      set(next_is_dir FALSE)
    elseif(option STREQUAL "-isystem")
      set(next_is_dir TRUE)
    elseif(option MATCHES "^-isystem(.+)$")
      list(APPEND dirs "${CMAKE_MATCH_1}")
    else()
      list(APPEND kept "${option}")
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY INTERFACE_COMPILE_OPTIONS "${kept}")
  get_target_property(includes ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT includes)
    set(includes "")
  endif()
  foreach(dir IN LISTS dirs)
    if(NOT dir IN_LIST includes)
      list(APPEND includes "${dir}")
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${includes}")
endfunction()
