// Test support: how much private (anonymous) memory the process uses while an operation runs.
// File-backed pages of a mapping count in RSS too, so peak RSS (VmHWM) says nothing about a
// library that reads through mappings; RssAnon of /proc/self/status counts only anonymous pages
// (heap, stacks, private copies).
#ifndef ONNXZIP_TESTS_SUPPORT_MEMORY_PROBE_H_
#define ONNXZIP_TESTS_SUPPORT_MEMORY_PROBE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace onnxzip::test_support {

// Sanitizers keep freed memory in quarantine and map shadow memory, so bounds on a process's
// memory or page faults hold only without them.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// A field of /proc/self/status in bytes ("RssAnon", "VmHWM", "VmRSS"...), or 0 when absent.
std::uint64_t proc_status_bytes(const char* field);

// Samples RssAnon every `period` from construction until stop() (or destruction) and keeps the
// largest value. A sample every few milliseconds catches any allocation that lives that long; a
// buffer the size of the weights would live for seconds.
class AnonMemoryProbe final {
 public:
  explicit AnonMemoryProbe(std::chrono::milliseconds period = std::chrono::milliseconds(2));
  ~AnonMemoryProbe();
  AnonMemoryProbe(const AnonMemoryProbe&) = delete;
  AnonMemoryProbe& operator=(const AnonMemoryProbe&) = delete;

  void stop();
  std::uint64_t baseline_bytes() const noexcept { return baseline_; }
  std::uint64_t peak_bytes() const noexcept { return peak_.load(); }
  // Peak above the baseline.
  std::uint64_t growth_bytes() const noexcept;

 private:
  std::uint64_t baseline_ = 0;
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace onnxzip::test_support

#endif  // ONNXZIP_TESTS_SUPPORT_MEMORY_PROBE_H_
