# Writes OUT, the initialiser of bs::metal::embedded_sources(): params.h, prelude.metal, then the
# other .metal files of SRC in name order, each as {name, raw string}. Run by the build
# (cmake -P) whenever one of them changes; the file is rewritten only when its text changes.
file(GLOB kernels "${SRC}/*.metal")
list(REMOVE_ITEM kernels "${SRC}/prelude.metal")
list(SORT kernels)
set(body "")
foreach(f "${SRC}/params.h" "${SRC}/prelude.metal" ${kernels})
  file(READ "${f}" text)
  get_filename_component(name "${f}" NAME)
  string(APPEND body "{\"${name}\", R\"msl(${text})msl\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
