#include "support/memory_probe.h"

#include <fstream>
#include <sstream>
#include <string>

namespace onnxzip::test_support {

std::uint64_t proc_status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream value(line.substr(prefix.size()));
    std::uint64_t kib = 0;
    value >> kib;
    return kib * 1024;
  }
  return 0;
}

AnonMemoryProbe::AnonMemoryProbe(std::chrono::milliseconds period)
    : baseline_(proc_status_bytes("RssAnon")), peak_(baseline_) {
  thread_ = std::thread([this, period] {
    while (!stop_.load()) {
      const std::uint64_t now = proc_status_bytes("RssAnon");
      std::uint64_t peak = peak_.load();
      while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
      }
      std::this_thread::sleep_for(period);
    }
  });
}

AnonMemoryProbe::~AnonMemoryProbe() { stop(); }

void AnonMemoryProbe::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::uint64_t AnonMemoryProbe::growth_bytes() const noexcept {
  const std::uint64_t peak = peak_.load();
  return peak > baseline_ ? peak - baseline_ : 0;
}

}  // namespace onnxzip::test_support
