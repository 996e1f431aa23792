# Install-time script (install(SCRIPT)): write caterva.pc for the prefix the
# files are installed under. Set by the install(CODE) before it: CATERVA_PC_IN,
# CATERVA_PC_TMP, CATERVA_LIBDIR, CATERVA_INCLUDEDIR, CATERVA_VERSION,
# CATERVA_DESCRIPTION, CATERVA_IMPLICIT_LINK_DIRS.

set(prefix "${CMAKE_INSTALL_PREFIX}")
# GNUInstallDirs' dirs are relative to the prefix unless the user made them absolute.
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CATERVA_${_dir}}")
    set(_pc_${_dir} "${CATERVA_${_dir}}")
  else()
    set(_pc_${_dir} "\${prefix}/${CATERVA_${_dir}}")
  endif()
endforeach()
set(libdir "${_pc_LIBDIR}")
set(includedir "${_pc_INCLUDEDIR}")
set(version "${CATERVA_VERSION}")
set(description "${CATERVA_DESCRIPTION}")

# Programs linked with `pkg-config --libs caterva` find the libraries without
# LD_LIBRARY_PATH: an rpath to libdir, unless libdir is one the loader searches anyway.
if(IS_ABSOLUTE "${CATERVA_LIBDIR}")
  set(_abs_libdir "${CATERVA_LIBDIR}")
else()
  set(_abs_libdir "${prefix}/${CATERVA_LIBDIR}")
endif()
set(rpath "-Wl,-rpath,\${libdir} ")
foreach(_implicit IN LISTS CATERVA_IMPLICIT_LINK_DIRS)
  if(_implicit AND _abs_libdir STREQUAL _implicit)
    set(rpath "")
  endif()
endforeach()

configure_file("${CATERVA_PC_IN}" "${CATERVA_PC_TMP}" @ONLY)
file(INSTALL "${CATERVA_PC_TMP}" DESTINATION "${_abs_libdir}/pkgconfig")
