// Limits for reading an archive's ZIP structure: what a hostile file may make a reader spend
// (spec §9.2). Every read option record (LoadOptions, VerifyOptions, EditOptions, SignOptions,
// RepackOptions) holds one. Anyone may use this header.
#ifndef ONNXZIP_READ_LIMITS_H_
#define ONNXZIP_READ_LIMITS_H_

#include <cstdint>
#include <filesystem>
#include <string>

namespace onnxzip {

// Deflated entries of at most this many bytes pass whatever their compression ratio: small
// runs of zeros (biases, masks, padding) compress far better than 100:1 and cost nothing.
inline constexpr std::uint64_t kCompressionRatioGraceSize = std::uint64_t{1} << 20;

struct ReadLimits {
  // More central directory records than this is Error(kLimitExceeded).
  std::uint64_t max_entries = 10'000'000;
  // A deflated entry larger than this (uncompressed) is not inflated: Error(kLimitExceeded).
  std::uint64_t max_inflated_size = std::uint64_t{4} << 30;
  // A deflated entry above kCompressionRatioGraceSize whose uncompressed size is more than this
  // many times its compressed size is not inflated: Error(kLimitExceeded) (a zip bomb).
  // 0: no limit.
  std::uint64_t max_compression_ratio = 100;
  // How the caller's users set the two limits above, named by the messages that refuse an entry
  // (a tool passes its flags: "--max-ratio N").
  std::string max_inflated_size_name = "ReadLimits::max_inflated_size";
  std::string max_compression_ratio_name = "ReadLimits::max_compression_ratio";
  // Deflated entries larger than this are inflated in pieces: into a spill file by data(),
  // straight to the consumer by stream() and verify(). Smaller ones are inflated whole into
  // owned memory, which is faster.
  std::uint64_t spill_threshold = std::uint64_t{64} << 20;
  // Where data() puts the spill files: unlinked temporary files (O_TMPFILE) that vanish with the
  // last TensorBytes borrowing from them, even if the process is killed. Empty: $TMPDIR, or /tmp
  // when that is unset. On a tmpfs the spilled bytes live in memory (shared, not anonymous).
  std::filesystem::path spill_directory{};
};

}  // namespace onnxzip

#endif  // ONNXZIP_READ_LIMITS_H_
