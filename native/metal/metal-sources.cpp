// The kernel sources, embedded by cmake/embed-metal.cmake: the addon carries them and compiles
// them at run time, so users need no Metal toolchain.
#include "metal/metal-device.h"

namespace bs::metal {

const std::vector<Source>& embedded_sources() {
  static const std::vector<Source> sources = {
#include "metal-sources.inc"
  };
  return sources;
}

std::string library_source() {
  std::string all;
  for (const Source& s : embedded_sources()) {
    all += "// ---- ";
    all += s.name;
    all += "\n";
    all += s.text;
  }
  return all;
}

}  // namespace bs::metal
