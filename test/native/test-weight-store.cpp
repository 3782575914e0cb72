// Model folders on disk: shards through the index, and weights that stay file-backed
// (reading every byte grows RssFile, not RssAnon).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/weight-store.h"
#include "fixtures.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/bs-native-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A status line of /proc/self/status in bytes (-1 when absent).
int64_t proc_status(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0 && line[std::strlen(key)] == ':')
      return std::stoll(line.substr(std::strlen(key) + 1)) * 1024;
  }
  return -1;
}

std::vector<uint8_t> one_tensor(const std::string& name, size_t bytes, uint8_t fill) {
  return bt::safetensors_image("{\"" + name + "\": {\"dtype\": \"U8\", \"shape\": [" + std::to_string(bytes) +
                                   "], \"data_offsets\": [0, " + std::to_string(bytes) + "]}}",
                               std::vector<uint8_t>(bytes, fill));
}

}  // namespace

TEST(weight_store_reads_shards_through_the_index) {
  TempDir d;
  write_file(d.path / "model-00001-of-00002.safetensors", one_tensor("a", 16, 1));
  write_file(d.path / "model-00002-of-00002.safetensors", one_tensor("b", 8, 2));
  std::ofstream(d.path / "model.safetensors.index.json")
      << R"({"metadata": {"total_size": 24}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
  auto s = bs::WeightStore::open(d.path.string());
  EXPECT(s->files().size() == 2u && s->tensor_count() == 2u && s->total_bytes() == 24u);
  EXPECT(s->find("b") && s->find("b")->data[7] == 2);
  EXPECT(s->find("c") == nullptr);

  // Without an index every model*.safetensors is read; a name in two files is an error.
  fs::remove(d.path / "model.safetensors.index.json");
  write_file(d.path / "model-extra.safetensors", one_tensor("a", 4, 3));
  EXPECT_ERROR(bs::WeightStore::open(d.path.string()), "tensor a appears in both");
  EXPECT_ERROR(bs::WeightStore::open((d.path / "none").string()), "does not exist or is not a directory");
}

TEST(weights_stay_file_backed_when_read) {
  if (proc_status("RssAnon") < 0) return;  // not Linux
  TempDir d;
  const size_t bytes = 48u << 20;
  write_file(d.path / "model.safetensors", one_tensor("w", bytes, 5));
  auto s = bs::WeightStore::open(d.path.string());
  const int64_t anon0 = proc_status("RssAnon"), file0 = proc_status("RssFile");
  const bs::TensorInfo* w = s->find("w");
  uint64_t sum = 0;
  for (size_t i = 0; i < w->nbytes; i += 4096) sum += w->data[i];
  const int64_t anon = proc_status("RssAnon") - anon0, file = proc_status("RssFile") - file0;
  EXPECT(sum == 5ull * ((bytes + 4095) / 4096));
  EXPECT(anon < (4 << 20)) << "anonymous RSS grew by " << anon << " bytes reading " << bytes << " mmapped bytes";
  EXPECT(file > static_cast<int64_t>(bytes) / 2) << "file-backed RSS grew by only " << file;
}
