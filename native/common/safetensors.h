// One safetensors file: 8-byte little-endian header length N, N bytes of JSON header,
// then the tensor bytes. Every header field is validated before any tensor is used.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "common/mmap-file.h"

namespace bs {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping
  uint64_t nbytes = 0;
  uint64_t file_offset = 0;  // of the first byte, from the start of the file
  const std::string* file = nullptr;

  int64_t numel() const;
  // "[8, 64, 16]"
  std::string shape_str() const;
};

std::string shape_to_string(const std::vector<int64_t>& shape);

class SafetensorsFile {
 public:
  // Maps the file read-only and validates its header; throws bs::Error naming the path.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  // Validates an in-memory image (tests); `data` must outlive the result.
  static std::unique_ptr<SafetensorsFile> parse(const uint8_t* data, size_t size, const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  size_t size() const { return size_; }
  // Throws bs::Error when the mapped file shrank since it was opened (an in-memory image never).
  void check_size() const;

 private:
  void parse_image(const uint8_t* data, size_t size);
  std::string path_;
  std::unique_ptr<MappedFile> map_;
  size_t size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace bs
