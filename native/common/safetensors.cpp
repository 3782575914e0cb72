#include "common/safetensors.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/json.h"

namespace bs {

namespace {
// The safetensors specification caps the header at 100 MB.
constexpr uint64_t kMaxHeader = 100ull * 1000 * 1000;

uint64_t nonneg_int(const Json& v, const std::string& where) {
  if (!v.is_int() || v.as_int() < 0) fail(where, " must be a non-negative integer, got ", v.brief());
  return static_cast<uint64_t>(v.as_int());
}
}  // namespace

// Exact for every accepted tensor: the header check bounds the product by the file's bytes.
int64_t TensorInfo::numel() const {
  const size_t es = dtype_size(dtype);
  return es == 0 ? 0 : static_cast<int64_t>(nbytes / es);
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string TensorInfo::shape_str() const { return shape_to_string(shape); }

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->map_ = MappedFile::open(path);
  f->parse_image(f->map_->data(), f->map_->size());
  return f;
}

void SafetensorsFile::check_size() const {
  if (map_) map_->check_size();
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t* data, size_t size, const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->parse_image(data, size);
  return f;
}

void SafetensorsFile::parse_image(const uint8_t* data, size_t size) {
  const std::string& p = path_;
  size_ = size;
  if (size < 8) fail(p, ": file is ", size, " bytes, too short for the 8-byte header length (truncated download?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8) {
    fail(p, ": header length ", n, " runs past the end of the file (", size,
         " bytes); the file is truncated or not safetensors");
  }
  if (n > kMaxHeader) fail(p, ": header length ", n, " exceeds the 100 MB safetensors limit");
  if (n < 2 || data[8] != '{') fail(p, ": header does not start with a JSON object (not a safetensors file?)");
  const Json header = Json::parse(std::string_view(reinterpret_cast<const char*>(data + 8), n), p + " header");
  if (!header.is_object()) fail(p, ": header must be a JSON object");

  const uint64_t data_start = 8 + n;
  const uint64_t data_size = size - data_start;
  for (const auto& [name, entry] : header.members()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(p, ": __metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.members()) {
        if (!v.is_string()) fail(p, ": __metadata__.", k, " must be a string, got ", v.brief());
        metadata_.emplace_back(k, v.as_string());
      }
      continue;
    }
    const std::string where = p + ": tensor " + name;
    if (!entry.is_object()) fail(where, ": entry must be an object, got ", entry.brief());
    for (const auto& [k, v] : entry.members()) {
      if (k != "dtype" && k != "shape" && k != "data_offsets") fail(where, ": unexpected field \"", k, "\"");
    }
    const Json* dt = entry.find("dtype");
    const Json* shape = entry.find("shape");
    const Json* offs = entry.find("data_offsets");
    if (!dt || !shape || !offs) fail(where, ": entry needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    t.file = &path_;
    if (!dt->is_string() || !parse_dtype(dt->as_string(), t.dtype)) {
      fail(where, ": unknown dtype ", dt->brief(), " (supported: ", dtype_list(), ")");
    }
    if (!shape->is_array()) fail(where, ": shape must be an array, got ", shape->brief());
    // Bytes = shape product × dtype size, capped so neither step wraps (2^62 bytes is past any file).
    // A zero dimension means no bytes whatever the others; a product that merely wraps to 0 must not.
    uint64_t want = dtype_size(t.dtype);
    bool overflow = false, empty = false;
    for (size_t i = 0; i < shape->items().size(); ++i) {
      const uint64_t d = nonneg_int(shape->items()[i], where + ": shape[" + std::to_string(i) + "]");
      t.shape.push_back(static_cast<int64_t>(d));
      if (d == 0) empty = true;
      else if (want > (1ull << 62) / d) overflow = true;
      if (!overflow) want *= d;
    }
    if (empty) {
      overflow = false;
      want = 0;
    }
    if (!offs->is_array() || offs->items().size() != 2) {
      fail(where, ": data_offsets must be [begin, end], got ", offs->brief());
    }
    const uint64_t begin = nonneg_int(offs->items()[0], where + ": data_offsets[0]");
    const uint64_t end = nonneg_int(offs->items()[1], where + ": data_offsets[1]");
    if (end < begin) fail(where, ": data_offsets [", begin, ", ", end, "] end before begin");
    if (end > data_size) {
      fail(where, ": data_offsets [", begin, ", ", end, "] run past the data section (", data_size,
           " bytes); the file is truncated or the header is wrong");
    }
    if (overflow) {
      fail(where, ": shape ", t.shape_str(), " of ", dtype_name(t.dtype),
           " needs more than 2^62 bytes but data_offsets [", begin, ", ", end, "] hold ", end - begin);
    }
    if (want != end - begin) {
      fail(where, ": shape ", t.shape_str(), " of ", dtype_name(t.dtype), " needs ", want, " bytes but data_offsets [",
           begin, ", ", end, "] hold ", end - begin);
    }
    t.nbytes = end - begin;
    t.file_offset = data_start + begin;
    t.data = data + t.file_offset;
    tensors_.push_back(std::move(t));
  }

  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : tensors_) {
    if (t.nbytes) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->file_offset < b->file_offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& a = *order[i - 1];
    const TensorInfo& b = *order[i];
    if (b.file_offset < a.file_offset + a.nbytes) {
      fail(p, ": tensors ", a.name, " and ", b.name, " overlap (data_offsets [", a.file_offset - data_start, ", ",
           a.file_offset - data_start + a.nbytes, ") and [", b.file_offset - data_start, ", ",
           b.file_offset - data_start + b.nbytes, "))");
    }
  }
}

}  // namespace bs
