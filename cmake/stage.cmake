# Run after `cargo build --release` (cmake -P): lay out ${STAGE}/lib and
# ${STAGE}/include as they are installed. Inputs: CARGO_OUT (target/release),
# BLOSC2_PREFIX (where blosc2-sys installed c-blosc2), SOURCE_DIR, STAGE,
# VERSION, SOVERSION, READELF.
cmake_minimum_required(VERSION 3.21)

set(_so "${CARGO_OUT}/libcaterva.so")
if(NOT EXISTS "${_so}")
  message(FATAL_ERROR "cargo did not produce ${_so}")
endif()
# build.rs sets the soname; the names installed here must agree with it.
# (file(READ_ELF ... SONAME) reads none from cargo's output: ask readelf.)
execute_process(COMMAND "${READELF}" -d "${_so}" OUTPUT_VARIABLE _dynamic RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "'${READELF} -d ${_so}' failed")
endif()
string(REGEX MATCH "Library soname: \\[([^]]*)\\]" _ "${_dynamic}")
set(_soname "${CMAKE_MATCH_1}")
set(_expected "libcaterva.so.${SOVERSION}")
if(NOT _soname STREQUAL _expected)
  message(FATAL_ERROR "${_so} has soname '${_soname}', expected '${_expected}' (see build.rs)")
endif()

# Copy a file, keeping the copy's timestamp when nothing changed, so that
# consumers are not relinked needlessly.
function(stage_copy src dst)
  file(COPY_FILE "${src}" "${dst}" ONLY_IF_DIFFERENT)
endfunction()

function(stage_link target link)
  file(CREATE_LINK "${target}" "${link}" SYMBOLIC)
endfunction()

file(MAKE_DIRECTORY "${STAGE}/lib" "${STAGE}/include")

# libcaterva.so.X.Y.Z, with the soname and the link-time name pointing at it.
stage_copy("${_so}" "${STAGE}/lib/libcaterva.so.${VERSION}")
stage_link("libcaterva.so.${VERSION}" "${STAGE}/lib/${_soname}")
stage_link("${_soname}" "${STAGE}/lib/libcaterva.so")
stage_copy("${CARGO_OUT}/libcaterva.a" "${STAGE}/lib/libcaterva.a")

# libblosc2 as c-blosc2 installs it (GNUInstallDirs: lib or lib64), links included.
set(_blosc2_lib "")
foreach(_sub lib lib64)
  if(EXISTS "${BLOSC2_PREFIX}/${_sub}/libblosc2.so")
    set(_blosc2_lib "${BLOSC2_PREFIX}/${_sub}")
    break()
  endif()
endforeach()
if(NOT _blosc2_lib)
  message(FATAL_ERROR "no libblosc2.so under ${BLOSC2_PREFIX}/lib{,64}: blosc2-sys installs it there "
                      "on its first build; delete ${CARGO_OUT} and build again")
endif()
file(GLOB _blosc2_files "${_blosc2_lib}/libblosc2.so*")
foreach(_f IN LISTS _blosc2_files)
  get_filename_component(_name "${_f}" NAME)
  if(IS_SYMLINK "${_f}")
    file(READ_SYMLINK "${_f}" _target)
    stage_link("${_target}" "${STAGE}/lib/${_name}")
  else()
    stage_copy("${_f}" "${STAGE}/lib/${_name}")
  endif()
endforeach()

# caterva.h (committed, kept current by tests/header.rs) and the c-blosc2 headers
# (blosc2.h, which caterva.h includes, and what blosc2.h includes).
stage_copy("${SOURCE_DIR}/include/caterva.h" "${STAGE}/include/caterva.h")
if(NOT EXISTS "${BLOSC2_PREFIX}/include/blosc2.h")
  message(FATAL_ERROR "no blosc2.h under ${BLOSC2_PREFIX}/include")
endif()
file(COPY "${BLOSC2_PREFIX}/include/" DESTINATION "${STAGE}/include")
