#include "common/experts/stream-options.h"

namespace bs {

const char* path_name(ExpertPath p) {
  switch (p) {
    case ExpertPath::Exact: return "exact";
    case ExpertPath::Staged: return "staged";
    case ExpertPath::Hot: return "hot";
    case ExpertPath::WholeLayer: return "whole-layer";
  }
  return "?";
}

bool parse_path(std::string_view s, ExpertPath& out) {
  for (ExpertPath p : {ExpertPath::Exact, ExpertPath::Staged, ExpertPath::Hot, ExpertPath::WholeLayer}) {
    if (s == path_name(p)) {
      out = p;
      return true;
    }
  }
  return false;
}

bool parse_io_mode(std::string_view s, IoMode& out) {
  for (IoMode m : {IoMode::PageCache, IoMode::Direct}) {
    if (s == io_mode_name(m)) {
      out = m;
      return true;
    }
  }
  return false;
}

}  // namespace bs
