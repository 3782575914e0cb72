// The I/O layer and the executor's building blocks: explicit reads of any byte range in
// page-cache and direct mode (in place and through the bounce buffer), clear errors for a
// shrunk or unreadable file, the I/O pool's priorities, the slot cache's victim rules, and the
// prerouter head math (hand case; the zero-training head equals the next layer's router).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/error.h"
#include "common/experts/slot-cache.h"
#include "common/io/io-pool.h"
#include "common/io/model-files.h"
#include "common/prerouter/heads.h"
#include "fixtures.h"

namespace {

struct TempFile {
  std::string path;
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    char tmpl[] = "/tmp/bs-io-XXXXXX";
    const int fd = mkstemp(tmpl);
    path = tmpl;
    if (fd >= 0) {
      (void)!::write(fd, bytes.data(), bytes.size());
      ::close(fd);
    }
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const bs::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(model_files_read_any_range_in_both_modes) {
  bt::Rng r(41);
  std::vector<uint8_t> bytes(3 * 1024 * 1024 + 777);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(r.next());
  TempFile f(bytes);
  for (bs::IoMode mode : {bs::IoMode::PageCache, bs::IoMode::Direct}) {
    std::unique_ptr<bs::ModelFiles> files;
    const std::string open_err = error_of([&] {
      files =
          std::make_unique<bs::ModelFiles>(std::vector<std::string>{f.path}, std::vector<uint64_t>{bytes.size()}, mode);
    });
    if (mode == bs::IoMode::Direct && open_err.find("direct I/O is not available") != std::string::npos) {
      std::printf("  (direct I/O unavailable on this filesystem: %s)\n", open_err.c_str());
      continue;
    }
    EXPECT(open_err.empty()) << open_err;
    if (!files) continue;
    bs::ReadScratch scratch;
    bs::AlignedBuffer dst(bytes.size() + 2 * bs::kIoAlign);
    for (int c = 0; c < 200; ++c) {
      // Ranges of every phase and size: inside one block, across blocks, up to the last byte,
      // larger than the bounce buffer; destinations with and without the file's block phase.
      const uint64_t len = c % 5 == 0 ? 1 + r.below(2 * 1024 * 1024) : 1 + r.below(20000);
      const uint64_t off = c % 7 == 0 ? bytes.size() - len : r.below(bytes.size() - len + 1);
      const uint64_t phase = c % 2 ? off % bs::kIoAlign : r.below(bs::kIoAlign);
      uint8_t* out = dst.data() + phase;
      std::memset(out, 0xEE, len);
      files->read(0, off, len, out, scratch, "range");
      EXPECT(std::memcmp(out, bytes.data() + off, len) == 0)
          << bs::io_mode_name(mode) << " case " << c << ": offset " << off << " length " << len << " phase " << phase;
    }
  }
}

TEST(model_files_report_short_and_unreadable_files) {
  std::vector<uint8_t> bytes(100000, 7);
  TempFile f(bytes);
  bs::ModelFiles files({f.path}, {bytes.size()}, bs::IoMode::PageCache);
  bs::ReadScratch scratch;
  std::vector<uint8_t> out(bytes.size());
  EXPECT(::truncate(f.path.c_str(), 50000) == 0);
  const std::string e1 = error_of([&] { files.read(0, 40000, 20000, out.data(), scratch, "expert 3 of layer 1"); });
  EXPECT(e1.find("I/O error reading expert 3 of layer 1 from " + f.path +
                 ": the file ends at byte 50000 but 60000 bytes are needed") != std::string::npos)
      << e1;

  // A folder or a FIFO in place of a model file is refused when opened (a FIFO would block it).
  char dir[] = "/tmp/bs-io-dir-XXXXXX";
  EXPECT(mkdtemp(dir) != nullptr);
  const std::string e3 = error_of([&] { bs::ModelFiles d({dir}, {0}, bs::IoMode::PageCache); });
  EXPECT(e3 == std::string(dir) + " is not a regular file (a folder)") << e3;
  const std::string fifo = std::string(dir) + "/fifo.safetensors";
  EXPECT(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string e5 = error_of([&] { bs::ModelFiles d({fifo}, {0}, bs::IoMode::PageCache); });
  EXPECT(e5 == fifo + " is not a regular file (a FIFO)") << e5;
  ::unlink(fifo.c_str());
  ::rmdir(dir);
  const std::string e4 =
      error_of([] { bs::ModelFiles x({"/nonexistent/model.safetensors"}, {1}, bs::IoMode::PageCache); });
  EXPECT(e4 == "cannot open /nonexistent/model.safetensors: No such file or directory") << e4;
}

TEST(io_pool_runs_urgent_jobs_first_and_survives_throwing_jobs) {
  bs::IoPool pool(1);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::string order;
  std::atomic<int> done{0};
  pool.submit(
      [&](bs::ReadScratch&) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return release; });
      },
      false);
  auto job = [&](char c) {
    return [&, c](bs::ReadScratch&) {
      {
        std::lock_guard<std::mutex> lk(mu);
        order += c;
      }
      ++done;
      if (c == 'B') throw std::runtime_error("jobs report their own errors");
    };
  };
  pool.submit(job('A'), false);
  pool.submit(job('B'), false);
  pool.submit(job('U'), true);
  pool.submit(job('V'), true);
  {
    std::lock_guard<std::mutex> lk(mu);
    release = true;
  }
  cv.notify_all();
  for (int i = 0; i < 2000 && done < 4; ++i) usleep(1000);
  pool.submit(job('C'), false);
  for (int i = 0; i < 2000 && done < 5; ++i) usleep(1000);
  std::lock_guard<std::mutex> lk(mu);
  EXPECT(order == "UVABC") << "run order " << order;
}

TEST(slot_cache_victims_skip_pinned_reserved_loading_and_kept) {
  bt::Rng r(3);
  bt::OwnedMatrix g = bt::random_affine(r, 8, 4, 64, 4, 64, bs::DType::BF16);
  bs::LayerLayout lay;
  lay.n_experts = 8;
  lay.proto[0] = lay.proto[1] = lay.proto[2] = g.m;
  bs::ExpertRange range;
  range.bytes = 256;
  range.file.assign(8, 0);
  range.offset.assign(8, 0);
  lay.ranges.assign(9, range);
  lay.views(std::vector<uint8_t*>(9, g.w.data()).data(), 8, lay.proto);
  bs::SlotCache c(lay, 3);
  std::vector<char> keep(8, 0);
  EXPECT(c.zero_slot() == 3 && c.mapped(5) == 3) << "an expert without a slot maps to the zero slot";
  EXPECT(c.victim(keep) == 0) << "empty slots first";
  c.assign(0, 5, false);
  EXPECT(c.find(5) == 0 && c.mapped(5) == 0);
  EXPECT(c.victim(keep) == 1) << "a loading slot is never a victim";
  c.set_ready(0);
  c.assign(1, 6, true);
  c.set_ready(1);
  c.assign(2, 7, false);
  c.set_ready(2);
  c.pin(0, 10);
  c.pin(1, 5);
  c.pin(2, 7);
  c.unpin(0);
  c.unpin(1);
  c.unpin(2);
  EXPECT(c.victim(keep) == 1) << "least recently used first";
  c.reserve(1);
  EXPECT(c.victim(keep) == 2) << "reserved slots are kept";
  keep[7] = 1;
  EXPECT(c.victim(keep) == 0) << "slots holding kept experts are skipped";
  c.pin(0, 11);
  EXPECT(c.victim(keep) == -1) << "nothing free";
  c.clear_pins();
  c.clear_reservations();
  EXPECT(!c.assign(1, 2, false)) << "expert 6 was prefetched but then used";
  EXPECT(c.find(6) == -1 && c.find(2) == 1);
  c.assign(2, 3, true);
  c.set_ready(2);
  EXPECT(c.assign(2, 4, false)) << "replacing a prefetched, never used expert is reported";
  c.set_failed(1, "disk gone");
  EXPECT(c.find(2) == -1 && c.state(1) == bs::SlotCache::State::Failed && c.error(1) == "disk gone");
  EXPECT(c.victim(keep) == 1) << "failed slots are reused first";
  // The zero slot's bytes are zero: an expert mapped there computes to 0.
  for (size_t rg = 0; rg < 9; ++rg) {
    const uint8_t* p = c.range_ptr(c.zero_slot(), rg);
    for (int i = 0; i < 256; ++i) EXPECT(p[i] == 0) << "zero slot range " << rg << " byte " << i;
  }
}

namespace {

// Two MoE layers (0 → 1) with a random 8-bit router on layer 1.
std::unique_ptr<bs::Model> head_model(bt::Rng& r, int64_t hidden, int experts, bt::OwnedMatrix& router) {
  auto m = std::make_unique<bs::Model>(bs::reference_backend(), 1);
  m->cfg.hidden = hidden;
  m->cfg.n_layers = 2;
  m->cfg.router.n_experts = experts;
  m->layers.resize(2);
  m->layers[0].is_moe = m->layers[1].is_moe = true;
  if (hidden % 64 == 0) router = bt::random_affine(r, 1, experts, hidden, 8, 64, bs::DType::BF16);
  m->layers[1].moe.router.w = router.m;
  return m;
}

}  // namespace

TEST(prerouter_head_hand_case) {
  bt::Rng r(1);
  bt::OwnedMatrix unused;
  auto m = head_model(r, 2, 2, unused);
  // F = 2 + 2·2 = 6: f = [x0, x1, cur0, cur1, prev0, prev1].
  bs::HeadFloats h;
  h.owner = 0;
  h.units = 1;
  h.linear = {1, 0, 0, 0, 0, 0, /**/ 0, 1, 0, 2, 0, 0};
  h.fc1 = {0.5f, 0, 0, 0, 1, 0};
  h.fc2 = {2, -1};
  std::vector<bs::HeadFloats> heads;
  heads.push_back(h);
  auto p = bs::Prerouter::from_floats(*m, std::move(heads), "hand");
  const float x[2] = {1, -2};
  const int32_t cur[1] = {1}, prev[1] = {0};
  float y[2];
  bs::HeadScratch s;
  p->predict(*m, *p->head(0), x, cur, prev, 1, s, y);
  // linear: [1, -2 + 2] = [1, 0]; fc1: 0.5 + 1 = 1.5 → gelu 1.399789198096713; + [2, -1]·gelu.
  EXPECT(std::fabs(y[0] - 3.799578396193426) < 1e-6 && std::fabs(y[1] + 1.399789198096713) < 1e-6)
      << y[0] << ", " << y[1];
  p->predict(*m, *p->head(0), x, nullptr, nullptr, 1, s, y);  // unknown top-k: one-hots stay 0
  EXPECT(std::fabs(y[0] - (1 + 2 * bs::gelu_erf(0.5f))) < 1e-6 && std::fabs(y[1] - (-2 - bs::gelu_erf(0.5f))) < 1e-6)
      << y[0] << ", " << y[1];
  EXPECT(std::fabs(bs::gelu_erf(-3.0f) - (-0.0040496)) < 1e-6 && bs::gelu_erf(0.0f) == 0.0f);
}

TEST(zero_training_head_equals_the_next_router_on_the_current_hidden_state) {
  for (int c = 0; c < 6; ++c) {
    bt::Rng r(900 + c);
    bt::OwnedMatrix router;
    const int E = 8 + 8 * (c % 2), k = 2 + c % 3;
    auto m = head_model(r, 128, E, router);
    std::vector<bs::HeadFloats> heads;
    heads.push_back(bs::zero_training_floats(*m, 0, 32, 7));
    EXPECT(heads[0].fc2 == std::vector<float>(E * 32, 0.0f)) << "fc2 = 0";
    auto materialised = bs::Prerouter::from_floats(*m, heads, "zero");
    auto alias = bs::Prerouter::zero_training(*m);
    EXPECT(!materialised->head(0)->has_mlp && alias->head(0)->router_alias &&
           alias->owners() == std::vector<int64_t>{0});
    const auto x = bt::random_vec(r, 128);
    std::vector<int32_t> cur(k), prev(k);
    for (int j = 0; j < k; ++j) cur[j] = static_cast<int32_t>(r.below(E)), prev[j] = static_cast<int32_t>(r.below(E));
    std::vector<float> want(E), a(E), b(E);
    bs::linear_forward(m->dispatch(), m->ctx(), m->layers[1].moe.router, x.data(), 1, want.data());
    bs::HeadScratch s;
    materialised->predict(*m, *materialised->head(0), x.data(), cur.data(), prev.data(), k, s, a.data());
    alias->predict(*m, *alias->head(0), x.data(), cur.data(), prev.data(), k, s, b.data());
    const bt::Diff d = bt::compare(a.data(), want.data(), E, 1e-6, 1e-6);
    EXPECT(d.worst <= 1.0) << "case " << c << ": materialised head vs router at expert " << d.at;
    EXPECT(b == want) << "case " << c << ": the alias head is the router itself";
    // The one-hot part of linear_init is zero: the top-k features do not move the logits, until
    // a trained fc2 makes them count.
    heads[0].fc2[0] = 0.5f;
    auto trained = bs::Prerouter::from_floats(*m, heads, "trained");
    trained->predict(*m, *trained->head(0), x.data(), cur.data(), prev.data(), k, s, a.data());
    EXPECT(trained->head(0)->has_mlp && a[0] != want[0]) << "case " << c;
  }
}
