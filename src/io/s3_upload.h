// An object in a bucket written like a local file (output.h): the bytes become the parts of one
// multipart upload, uploaded while later bytes are still being written, and the object appears
// complete at commit() or not at all. No local temporary file.
//
// Parts are cut at fixed offsets (S3Options::part_size, growing past 1,000 parts unless
// fixed_part_size) and sent as soon as they are full, up to parts_in_flight at once, each with
// its CRC-32; commit() sends the last part and completes the upload with the full object's CRC-32
// (the parts' CRCs combined) and, unless S3Options::overwrite, If-None-Match: *. write_at() may
// patch bytes a writer reserved (reserve()) — a ZIP local header whose CRC is known only after
// its data — because S3 composes parts by number, not by arrival: a part holding reserved bytes
// is held back in memory until they are written, while the parts after it go ahead. A failure,
// an exception or destruction without commit() aborts the upload, so nothing is left in the
// bucket; so does abort_s3_uploads_in_progress() (internal/s3.h), which the CLI calls on Ctrl-C.
#ifndef ONNXZIP_IO_S3_UPLOAD_H_
#define ONNXZIP_IO_S3_UPLOAD_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "onnxzip/s3_options.h"
#include "output.h"
#include "s3_client.h"
#include "s3_config.h"

namespace onnxzip::s3 {

class S3Upload final : public Output {
 public:
  // Checks the options and starts the upload of `url` ("s3://bucket/key"): one
  // CreateMultipartUpload. Errors: Error(kInvalidArgument) for a part size outside [5 MiB,
  // 5 GiB] or no part in flight, and those of parse_s3_url, resolve_config and the request.
  S3Upload(std::string_view url, const S3Options& options,
           const Environment& environment = process_environment, ClientOptions client = {});
  // Without commit(): abandon().
  ~S3Upload() override;
  S3Upload(const S3Upload&) = delete;
  S3Upload& operator=(const S3Upload&) = delete;

  void write(ByteSpan bytes) override;
  void write_zeros(std::uint64_t count) override;
  void reserve(std::uint64_t count) override;
  // Error(kBadState) for bytes of a part already sent (neither reserved nor in the part being
  // filled): a writer's mistake, never a store's.
  void write_at(std::uint64_t offset, ByteSpan bytes) override;
  std::uint64_t position() const noexcept override { return position_; }
  // Sends what is left, waits for every part and completes the upload. A refusal (412 for an
  // existing object without overwrite) is an Error naming s3://bucket/key; the upload is then
  // aborted by the destructor.
  void commit() override;
  const std::string& name() const noexcept override { return name_; }
  bool can_read_back() const noexcept override { return false; }
  void flush() override {}
  // Error(kUnsupported): an upload cannot be read back.
  detail::Fd reader() const override;

  // Stops the parts under way and aborts the upload (AbortMultipartUpload). Never throws; later
  // writes are Error(kBadState).
  void abandon() noexcept;

  // Sends AbortMultipartUpload and nothing else: safe from another thread while this one writes
  // (abort_s3_uploads_in_progress), whose writes then fail. Never throws.
  void abort_request() noexcept;

  const std::string& upload_id() const noexcept { return upload_id_; }
  // The most parts held in memory at once (filling and held back), for tests of the memory bound.
  std::size_t most_parts_held() const noexcept { return most_parts_held_; }
  // The size of part `number` (from 1) under `options`.
  static std::uint64_t part_size_of(const S3Options& options, unsigned number);

 private:
  struct Part {
    unsigned number = 0;
    std::uint64_t start = 0;  // Its first byte's offset in the object.
    std::uint64_t capacity = 0;
    std::vector<std::uint8_t> bytes{};
    bool full() const noexcept { return bytes.size() == capacity; }
  };
  struct Sent {
    UploadedPart part;
    std::uint64_t size = 0;
  };

  void ensure_writable(const char* operation) const;
  void start_part();
  // Sends every full part that holds no reserved byte.
  void send_ready_parts();
  bool holds_reserved(const Part& part) const;
  void forget_reserved(std::uint64_t first, std::uint64_t end);
  // Queues `part` for a worker, waiting while parts_in_flight are under way; rethrows a worker's
  // failure.
  void send(Part part);
  void work();
  // Waits until no part is under way; rethrows a worker's failure.
  void drain();
  void stop_workers() noexcept;
  std::uint32_t full_object_crc(const std::vector<Sent>& sent) const;

  S3Options options_;
  Location location_;
  std::string name_;
  Client client_;
  std::string upload_id_;
  std::uint64_t position_ = 0;
  unsigned next_number_ = 1;
  std::deque<Part> held_;  // Not yet sent, in order; the last one is being filled.
  std::map<std::uint64_t, std::uint64_t> reserved_;  // first -> end, not yet written.
  std::size_t most_parts_held_ = 0;
  bool committed_ = false;
  bool abandoned_ = false;

  // Shared with the workers.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Part> queue_;
  unsigned busy_ = 0;  // Parts queued or being uploaded.
  std::vector<Sent> sent_;
  std::exception_ptr failure_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_S3_UPLOAD_H_
