// A minimal test harness for brainstem-native-tests: self-registering cases, streaming
// EXPECT messages that print the failing input, and a seeded generator.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/prng.h"

namespace bt {

class T {
 public:
  void record(const std::string& msg) {
    if (failures_.size() < 20) failures_.push_back(msg);
    ++count_;
  }
  int count() const { return count_; }
  // Marks the case skipped (reported with the reason, never as a pass); return after calling.
  void skip(const std::string& why) { skipped_ = why; }
  const std::string& skipped() const { return skipped_; }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  std::vector<std::string> failures_;
  int count_ = 0;
  std::string skipped_;
};

class Failure {
 public:
  Failure(T& t, bool ok, const char* expr, const char* file, int line) : t_(t), ok_(ok) {
    if (!ok_) os_ << file << ":" << line << ": expected " << expr << " ";
  }
  ~Failure() {
    if (!ok_) t_.record(os_.str());
  }
  template <class X>
  Failure& operator<<(const X& x) {
    if (!ok_) os_ << x;
    return *this;
  }

 private:
  T& t_;
  bool ok_;
  std::ostringstream os_;
};

struct Case {
  const char* name;
  void (*fn)(T&);
};
std::vector<Case>& cases();
struct Register {
  Register(const char* name, void (*fn)(T&)) { cases().push_back({name, fn}); }
};

// Ops to time in --bench mode: name, and a function returning seconds per call.
struct BenchCase {
  std::string op, backend, shape;
  double bytes;               // bytes of weights/activations read per call (for GB/s)
  std::function<void()> run;  // one call
};
std::vector<BenchCase> bench_cases();

// splitmix64 (the engine's generator): deterministic across platforms (std distributions are not).
class Rng : public bs::SplitMix {
 public:
  using bs::SplitMix::SplitMix;
  double uniform(double lo, double hi) { return lo + (hi - lo) * bs::SplitMix::uniform(); }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

}  // namespace bt

#define BT_CAT2(a, b) a##b
#define BT_CAT(a, b) BT_CAT2(a, b)
#define TEST(name)                                        \
  static void name(bt::T& t);                             \
  static bt::Register BT_CAT(bt_reg_, name)(#name, name); \
  static void name([[maybe_unused]] bt::T& t)
#define EXPECT(cond) bt::Failure(t, static_cast<bool>(cond), #cond, __FILE__, __LINE__)
// Runs `stmt`, expecting a bs::Error whose message contains `needle`.
#define EXPECT_ERROR(stmt, needle)                                                              \
  do {                                                                                          \
    std::string bt_msg_;                                                                        \
    try {                                                                                       \
      stmt;                                                                                     \
    } catch (const bs::Error& e) {                                                              \
      bt_msg_ = e.what();                                                                       \
    }                                                                                           \
    EXPECT(bt_msg_.find(needle) != std::string::npos)                                           \
        << "error containing \"" << (needle) << "\" from " #stmt ", got \"" << bt_msg_ << "\""; \
  } while (0)
