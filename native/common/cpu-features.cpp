#include "common/cpu-features.h"

#if defined(BRAINSTEM_X86)
#include <cpuid.h>
#elif defined(BRAINSTEM_ARM64) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#elif defined(BRAINSTEM_ARM64) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace bs {

static CpuFeatures detect() {
  CpuFeatures f;
#if defined(BRAINSTEM_X86)
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    f.fma = c & (1u << 12);
    f.f16c = c & (1u << 29);
    bool osxsave = c & (1u << 27);
    unsigned long long xcr0 = 0;
    if (osxsave) {
      unsigned lo, hi;
      __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    }
    bool ymm = (xcr0 & 0x6) == 0x6;    // OS saves XMM and YMM state
    bool zmm = (xcr0 & 0xE6) == 0xE6;  // and opmask/ZMM state
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      f.avx2 = ymm && (b & (1u << 5));
      f.avx512f = zmm && (b & (1u << 16));
      f.avx512dq = zmm && (b & (1u << 17));
      f.avx512bw = zmm && (b & (1u << 30));
      f.avx512vl = zmm && (b & (1u << 31));
      f.avx512vnni = zmm && (c & (1u << 11));
    }
    f.fma = f.fma && ymm;
    f.f16c = f.f16c && ymm;
  }
#elif defined(BRAINSTEM_ARM64)
  f.neon = true;
#if defined(__APPLE__)
  f.dotprod = true;  // every Apple M-series core has FEAT_DotProd
  int i8mm = 0;      // M2 and later
  size_t len = sizeof i8mm;
  f.i8mm = sysctlbyname("hw.optional.arm.FEAT_I8MM", &i8mm, &len, nullptr, 0) == 0 && i8mm != 0;
#elif defined(__linux__)
  f.dotprod = getauxval(AT_HWCAP) & HWCAP_ASIMDDP;
  f.i8mm = getauxval(AT_HWCAP2) & HWCAP2_I8MM;
#endif
#endif
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::string cpu_features_string() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512dq, "avx512dq");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni");
  add(f.neon, "neon");
  add(f.dotprod, "dotprod");
  add(f.i8mm, "i8mm");
  return s;
}

}  // namespace bs
