#include "common/weight-store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "common/json.h"
#include "common/mmap-file.h"

namespace fs = std::filesystem;

namespace bs {

constexpr size_t kMaxTextFile = size_t{64} << 20;

std::string read_text_file(const std::string& path) {
  const int fd = open_regular(path);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int e = errno;
      ::close(fd);
      fail("cannot read ", path, ": ", std::strerror(e));
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
    // config.json and index files are kilobytes: a huge one is a wrong file, not read into memory.
    if (text.size() > kMaxTextFile) {
      ::close(fd);
      fail(path, " is over ", kMaxTextFile >> 20, " MiB; it cannot be a model's JSON file");
    }
  }
  ::close(fd);
  return text;
}

const TensorInfo* WeightStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void WeightStore::add_file(const std::string& path) {
  files_.push_back(SafetensorsFile::open(path));
  for (const TensorInfo& t : files_.back()->tensors()) {
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted) fail("tensor ", t.name, " appears in both ", *it->second->file, " and ", path);
    total_bytes_ += t.nbytes;
  }
}

void WeightStore::check_sizes() const {
  for (const auto& f : files_) f->check_size();
}

std::unique_ptr<WeightStore> WeightStore::open(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("model folder ", dir, " does not exist or is not a directory");
  std::unique_ptr<WeightStore> s(new WeightStore());
  s->dir_ = dir;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    const std::string what = index_path.string();
    const Json index = Json::parse(read_text_file(what), what);
    const Json* map = index.is_object() ? index.find("weight_map") : nullptr;
    if (!map || !map->is_object()) fail(what, ": needs a \"weight_map\" object of tensor name → shard file");
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, shard] : map->members()) {
      if (!shard.is_string()) fail(what, ": weight_map.", name, " must be a file name, got ", shard.brief());
      const std::string& f = shard.as_string();
      if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." || f == "..") {
        fail(what, ": weight_map.", name, " names \"", f, "\", which is not a plain file name in the folder");
      }
      by_shard[f].push_back(name);
    }
    for (const auto& [shard, names] : by_shard) {
      const std::string path = (fs::path(dir) / shard).string();
      if (!fs::exists(path, ec)) fail(what, " lists shard ", shard, " but ", path, " does not exist");
      s->add_file(path);
      for (const std::string& name : names) {
        const TensorInfo* t = s->find(name);
        if (!t || *t->file != path)
          fail(what, " maps tensor ", name, " to ", shard, " but that shard has no such tensor");
      }
    }
  } else {
    std::vector<std::string> paths;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name.rfind("model", 0) == 0 && e.path().extension() == ".safetensors") {
        paths.push_back(e.path().string());
      }
    }
    if (paths.empty()) fail("model folder ", dir, " has neither model.safetensors.index.json nor model*.safetensors");
    std::sort(paths.begin(), paths.end());
    for (const std::string& p : paths) s->add_file(p);
  }
  return s;
}

}  // namespace bs
