// All tensors of a model folder: model.safetensors.index.json (weight_map → shards) or,
// without an index, every model*.safetensors file. Files stay mmapped for the store's life.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/safetensors.h"

namespace bs {

class WeightStore {
 public:
  // Throws bs::Error naming the folder, the file and the field that is wrong.
  static std::unique_ptr<WeightStore> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const TensorInfo* find(const std::string& name) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  size_t tensor_count() const { return by_name_.size(); }
  uint64_t total_bytes() const { return total_bytes_; }
  // Throws bs::Error naming the first weight file that shrank since it was mapped.
  void check_sizes() const;

 private:
  void add_file(const std::string& path);
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, const TensorInfo*> by_name_;
  uint64_t total_bytes_ = 0;
};

// Reads a whole small file (config.json, index) into a string; throws bs::Error.
std::string read_text_file(const std::string& path);

}  // namespace bs
