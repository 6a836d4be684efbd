#include "zip_inflate.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <string>

#include "crc32.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/zip_reader.h"
#include "posix_file.h"

namespace onnxzip::zip {
namespace {

using detail::quote;

struct LibdeflateDecompressorDelete {
  void operator()(libdeflate_decompressor* d) const noexcept { libdeflate_free_decompressor(d); }
};

// The messages of a deflate stream that disagrees with its entry, the same whichever inflater
// found it.
[[noreturn]] void throw_longer_stream(const ErrorContext& place, std::uint64_t size) {
  throw Error(
      ErrorCode::kCorrupt, place,
      "the deflate stream inflates to more than the " + std::to_string(size) + " bytes recorded");
}
[[noreturn]] void throw_invalid_stream(const ErrorContext& place, std::uint64_t compressed_size,
                                       std::uint64_t data_offset) {
  throw Error(ErrorCode::kCorrupt, place,
              "invalid deflate stream in the " + std::to_string(compressed_size) +
                  " bytes at offset " + std::to_string(data_offset));
}
void check_stream_end(const ErrorContext& place, const ZipEntry& e, std::uint64_t produced,
                      std::uint64_t consumed) {
  if (produced != e.size) {
    throw Error(ErrorCode::kCorrupt, place,
                "the deflate stream inflates to " + std::to_string(produced) + " bytes, not the " +
                    std::to_string(e.size) + " recorded");
  }
  if (consumed != e.compressed_size) {
    throw Error(ErrorCode::kCorrupt, place,
                "the deflate stream ends at offset " +
                    std::to_string(e.local->data_offset + consumed) + ", " +
                    std::to_string(e.compressed_size - consumed) +
                    " bytes before the entry's compressed data does");
  }
}

// zlib's inflater, freed on scope exit.
class ZlibInflater final {
 public:
  ZlibInflater() : ok_(inflateInit2(&stream_, -MAX_WBITS) == Z_OK) {}  // Raw deflate.
  ~ZlibInflater() {
    if (ok_) inflateEnd(&stream_);
  }
  ZlibInflater(const ZlibInflater&) = delete;
  ZlibInflater& operator=(const ZlibInflater&) = delete;
  bool ok() const noexcept { return ok_; }
  z_stream& stream() noexcept { return stream_; }

 private:
  z_stream stream_{};
  bool ok_;
};

// An unlinked temporary file in `directory`, open for reading and writing, or -1 (errno set).
// O_TMPFILE never gives the file a name, so nothing is left behind whatever happens to the
// process; file systems without it get a named file that is removed at once.
int open_spill_file(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
  std::string name = (directory / ".onnxzip-spill.XXXXXX").string();
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

// Writes all of `bytes` to `fd`; false (errno set) on failure.
bool write_all(int fd, ByteSpan bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ENOSPC;
      return false;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::uint32_t inflate_in_pieces(ByteSpan raw, const ZipEntry& e, const ErrorContext& place,
                                const std::function<void(ByteSpan)>& consumer) {
  // zlib counts in 32-bit unsigned ints.
  constexpr std::size_t kMaxInput = std::size_t{1} << 30;
  ZlibInflater inflater;
  const auto buffer = std::make_unique_for_overwrite<std::uint8_t[]>(ZipReader::kStreamPieceBytes);
  if (!inflater.ok() || buffer == nullptr) {
    throw Error(ErrorCode::kLimitExceeded, place, "cannot allocate an inflater");
  }
  z_stream& z = inflater.stream();
  ByteSpan input = raw;
  std::uint64_t produced = 0;
  std::uint32_t crc = 0;
  for (;;) {
    if (z.avail_in == 0 && !input.empty()) {
      const std::size_t n = std::min(input.size(), kMaxInput);
      z.next_in = const_cast<Bytef*>(input.data());  // zlib never writes through it.
      z.avail_in = static_cast<uInt>(n);
      input = input.subspan(n);
    }
    z.next_out = buffer.get();
    z.avail_out = static_cast<uInt>(ZipReader::kStreamPieceBytes);
    const int result = inflate(&z, Z_NO_FLUSH);
    const std::size_t count = ZipReader::kStreamPieceBytes - z.avail_out;
    if (count > e.size - produced) throw_longer_stream(place, e.size);
    if (count != 0) {
      const ByteSpan piece(buffer.get(), count);
      produced += count;
      crc = onnxzip::crc32(piece, crc);
      consumer(piece);
    }
    if (result == Z_STREAM_END) break;
    if (result == Z_OK || (result == Z_BUF_ERROR && (z.avail_in != 0 || !input.empty()))) {
      continue;
    }
    if (result == Z_MEM_ERROR) {
      throw Error(ErrorCode::kLimitExceeded, place, "out of memory while inflating");
    }
    // Z_DATA_ERROR, or Z_BUF_ERROR with all input used: a bad or truncated stream.
    throw_invalid_stream(place, raw.size(), e.local->data_offset);
  }
  check_stream_end(place, e, produced, raw.size() - input.size() - z.avail_in);
  return crc;
}

// The messages name the option that sets each limit as the caller's users set it
// (ReadLimits::max_inflated_size_name...).
void check_inflate_limits(const ZipEntry& e, const ZipReaderOptions& options,
                          const ErrorContext& place) {
  if (e.size > options.max_inflated_size || e.size > std::numeric_limits<std::size_t>::max()) {
    throw Error(ErrorCode::kLimitExceeded, place,
                "inflates to " + std::to_string(e.size) + " bytes, above the limit of " +
                    std::to_string(options.max_inflated_size) + " (" +
                    options.max_inflated_size_name + ": raise it for an archive you trust)");
  }
  const std::uint64_t ratio = options.max_compression_ratio;
  std::uint64_t allowed = 0;  // ratio x compressed size; past 2^64 it allows any size.
  if (ratio != 0 && e.size > kCompressionRatioGraceSize &&
      !__builtin_mul_overflow(ratio, e.compressed_size, &allowed) && e.size > allowed) {
    // compressed_size > 0 here: the reader refused more than 1032:1 when it opened the archive.
    const std::uint64_t actual = e.size / std::max<std::uint64_t>(e.compressed_size, 1);
    throw Error(ErrorCode::kLimitExceeded, place,
                "deflated from " + std::to_string(e.compressed_size) + " to " +
                    std::to_string(e.size) + " bytes, a compression ratio of " +
                    std::to_string(actual) + ":1, above the limit of " + std::to_string(ratio) +
                    ":1 that refuses zip bombs (" + options.max_compression_ratio_name +
                    ": raise it for an archive you trust, 0 for no limit)");
  }
}

TensorBytes inflate_whole(ByteSpan raw, const ZipEntry& e, const ErrorContext& place) {
  // Not a valid deflate stream (RFC 1951 wants one block), but its content is unambiguous and
  // some writers store empty deflated entries this way.
  if (e.size == 0 && raw.empty()) return TensorBytes::owned(OwnedBytes());
  OwnedBytes out;
  std::unique_ptr<libdeflate_decompressor, LibdeflateDecompressorDelete> decompressor;
  try {
    out = OwnedBytes(static_cast<std::size_t>(e.size));
    decompressor.reset(libdeflate_alloc_decompressor());
  } catch (const std::bad_alloc&) {
  }
  if ((e.size > 0 && out.data() == nullptr) || decompressor == nullptr) {
    throw Error(ErrorCode::kLimitExceeded, place,
                "cannot allocate " + std::to_string(e.size) + " bytes to inflate into");
  }
  std::size_t in_used = 0;
  std::size_t out_used = 0;
  const libdeflate_result result = libdeflate_deflate_decompress_ex(
      decompressor.get(), raw.data(), raw.size(), out.data(), out.size(), &in_used, &out_used);
  switch (result) {
    case LIBDEFLATE_SUCCESS:
      break;
    case LIBDEFLATE_INSUFFICIENT_SPACE:
      throw_longer_stream(place, e.size);
    default:
      throw_invalid_stream(place, raw.size(), e.local->data_offset);
  }
  check_stream_end(place, e, out_used, in_used);
  return TensorBytes::owned(std::move(out));
}

TensorBytes inflate_to_spill_file(ByteSpan raw, const ZipEntry& e, const ErrorContext& place,
                                  std::filesystem::path directory,
                                  const std::function<void(std::uint32_t)>& check_crc) {
  if (directory.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    directory = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  const std::string spill_text = "a temporary file in " + quote(directory.string()) +
                                 " (ZipReaderOptions::spill_directory, or TMPDIR)";
  detail::Fd fd(open_spill_file(directory));
  if (fd.get() < 0) {
    const std::string reason = std::strerror(errno);
    throw Error(
        ErrorCode::kIo, place,
        "cannot inflate " + std::to_string(e.size) + " bytes into " + spill_text + ": " + reason);
  }
  const std::uint32_t crc = inflate_in_pieces(raw, e, place, [&](ByteSpan piece) {
    if (!write_all(fd.get(), piece)) {
      const std::string reason = std::strerror(errno);
      throw Error(ErrorCode::kIo, place,
                  "cannot write the " + std::to_string(e.size) + " inflated bytes to " +
                      spill_text + ": " + reason);
    }
  });
  check_crc(crc);
  const std::shared_ptr<const MappedFile> mapping = MappedFile::adopt(
      fd.release(), place.file + ": " + place.entry + " (inflated into " + spill_text + ")");
  return TensorBytes::borrowed(mapping->bytes(), mapping);
}

}  // namespace onnxzip::zip
