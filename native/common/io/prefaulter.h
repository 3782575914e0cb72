// Maps a resident model's weight files into the process on a background thread (8 MiB steps:
// MADV_WILLNEED where the page cache lacks pages, then MADV_POPULATE_READ), so requests take few
// page faults while the load itself waits for none: a warm 17 GB moe-30b maps in ~1 s alone, a
// cold one as fast as its disk reads.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace bs {

class Prefaulter {
 public:
  using Span = std::pair<const uint8_t*, uint64_t>;  // start, bytes
  // Work for the same idle thread once every span is mapped (the state stays Running until it
  // returns): it returns early once `stop` is set and counts the units it finished in `done`.
  using After = std::function<void(const std::atomic<bool>& stop, std::atomic<uint64_t>& done)>;
  enum class State : uint8_t { Running, Mapped, Advised, Stopped };
  struct Status {
    State state;
    uint64_t done_bytes, total_bytes;
    uint64_t after_done;  // units `after` finished
  };

  // Starts the thread; the spans (and what `after` reads) must stay valid until the destructor
  // returns.
  explicit Prefaulter(std::vector<Span> spans, After after = {});
  // Stops between steps and joins.
  ~Prefaulter();
  Prefaulter(const Prefaulter&) = delete;
  Prefaulter& operator=(const Prefaulter&) = delete;

  Status status() const;

 private:
  void run();
  std::vector<Span> spans_;
  After after_;
  uint64_t total_ = 0;
  std::atomic<uint64_t> done_{0}, after_done_{0};
  std::atomic<State> state_{State::Running};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

const char* prefault_state_name(Prefaulter::State s);

}  // namespace bs
