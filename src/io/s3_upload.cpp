#include "s3_upload.h"

#include <zlib.h>

#include <algorithm>
#include <set>
#include <utility>

#include "check.h"
#include "crc32.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/s3.h"

namespace onnxzip::s3 {
namespace {

// Parts per step of growth when the part size is not fixed: the first 1,000 parts have the
// part size given, the next 1,000 twice that, and so on up to S3's largest part.
constexpr unsigned kPartsPerGrowth = 1000;

// The uploads not yet completed or aborted, for abort_s3_uploads_in_progress().
struct LiveUploads {
  std::mutex mutex;
  std::set<S3Upload*> uploads;
};

LiveUploads& live_uploads() {
  static LiveUploads live;
  return live;
}

void check_options(const S3Options& options, const std::string& name) {
  if (options.part_size < kS3MinPartSize || options.part_size > kS3MaxPartSize) {
    throw Error(ErrorCode::kInvalidArgument, {.file = name},
                "part size " + std::to_string(options.part_size) +
                    " is outside S3's limits for a part: 5 MiB (5242880) to 5 GiB (5368709120)");
  }
  if (options.parts_in_flight == 0) {
    throw Error(ErrorCode::kInvalidArgument, {.file = name}, "parts in flight must be at least 1");
  }
}

}  // namespace

std::uint64_t S3Upload::part_size_of(const S3Options& options, unsigned number) {
  if (options.fixed_part_size) return options.part_size;
  const unsigned doublings = std::min((number - 1) / kPartsPerGrowth, 10U);
  return std::min(options.part_size << doublings, kS3MaxPartSize);
}

S3Upload::S3Upload(std::string_view url, const S3Options& options, const Environment& environment,
                   ClientOptions client)
    : options_(options),
      location_(parse_s3_url(url)),
      name_(display_name(location_)),
      client_(with_error_context([&] { return ErrorContext{.file = name_}; },
                                 [&] { return resolve_config(options, environment); }),
              client) {
  check_options(options_, name_);
  upload_id_ = client_.create_multipart_upload(location_, true);
  const std::lock_guard lock(live_uploads().mutex);
  live_uploads().uploads.insert(this);
}

S3Upload::~S3Upload() {
  if (!committed_) abandon();
  stop_workers();
}

detail::Fd S3Upload::reader() const {
  throw Error(ErrorCode::kUnsupported, {.file = name_}, "an upload cannot be read back");
}

void S3Upload::ensure_writable(const char* operation) const {
  if (committed_ || abandoned_) {
    throw Error(ErrorCode::kBadState, {.file = name_},
                std::string(operation) +
                    (committed_ ? " after commit()" : " after the upload was aborted"));
  }
}

void S3Upload::start_part() {
  if (next_number_ > kS3MaxParts) {
    throw Error(ErrorCode::kLimitExceeded, {.file = name_},
                "the object needs more than " + std::to_string(kS3MaxParts) +
                    " parts (S3's limit) of " +
                    std::to_string(part_size_of(options_, next_number_ - 1)) +
                    " bytes: set a larger part size");
  }
  Part part{
      .number = next_number_, .start = position_, .capacity = part_size_of(options_, next_number_)};
  part.bytes.reserve(static_cast<std::size_t>(part.capacity));
  ++next_number_;
  held_.push_back(std::move(part));
  most_parts_held_ = std::max(most_parts_held_, held_.size());
}

void S3Upload::write(ByteSpan bytes) {
  ensure_writable("write");
  while (!bytes.empty()) {
    if (held_.empty() || held_.back().full()) start_part();
    Part& part = held_.back();
    const std::size_t count = static_cast<std::size_t>(
        std::min<std::uint64_t>(part.capacity - part.bytes.size(), bytes.size()));
    part.bytes.insert(part.bytes.end(), bytes.begin(),
                      bytes.begin() + static_cast<std::ptrdiff_t>(count));
    position_ += count;
    bytes = bytes.subspan(count);
    if (part.full()) send_ready_parts();
  }
}

void S3Upload::write_zeros(std::uint64_t count) {
  static constexpr std::uint8_t kZeros[4096] = {};
  while (count > 0) {
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(count, sizeof kZeros));
    write(ByteSpan(kZeros, piece));
    count -= piece;
  }
}

void S3Upload::reserve(std::uint64_t count) {
  ensure_writable("reserve");
  if (count == 0) return;
  // Recorded first: the zeros may fill the part, which must then be held, not sent.
  reserved_[position_] = position_ + count;
  write_zeros(count);
}

bool S3Upload::holds_reserved(const Part& part) const {
  const std::uint64_t end = part.start + part.bytes.size();
  // The first range that ends after the part's start, if it begins before the part's end.
  auto next = reserved_.upper_bound(part.start);
  if (next != reserved_.begin()) {
    const auto before = std::prev(next);
    if (before->second > part.start) return true;
  }
  return next != reserved_.end() && next->first < end;
}

void S3Upload::forget_reserved(std::uint64_t first, std::uint64_t end) {
  std::map<std::uint64_t, std::uint64_t> kept;
  for (const auto& [from, to] : reserved_) {
    if (to <= first || from >= end) {
      kept.emplace(from, to);
      continue;
    }
    if (from < first) kept.emplace(from, first);
    if (to > end) kept.emplace(end, to);
  }
  reserved_ = std::move(kept);
}

void S3Upload::write_at(std::uint64_t offset, ByteSpan bytes) {
  ensure_writable("write_at");
  if (!fits(offset, bytes.size(), position_)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = name_},
                "write_at offset " + std::to_string(offset) + " length " +
                    std::to_string(bytes.size()) + " is past the written end " +
                    std::to_string(position_));
  }
  const std::uint64_t end = offset + bytes.size();
  std::uint64_t copied = 0;
  for (Part& part : held_) {
    const std::uint64_t from = std::max(offset, part.start);
    const std::uint64_t to = std::min(end, part.start + part.bytes.size());
    if (from >= to) continue;
    std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(from - offset), to - from,
                part.bytes.begin() + static_cast<std::ptrdiff_t>(from - part.start));
    copied += to - from;
  }
  if (copied != bytes.size()) {
    ONNXZIP_DCHECK(false && "write_at into a part already sent");
    throw Error(ErrorCode::kBadState, {.file = name_},
                "write_at offset " + std::to_string(offset) +
                    ": those bytes were not reserved and their part is already uploaded");
  }
  forget_reserved(offset, end);
  send_ready_parts();
}

void S3Upload::send_ready_parts() {
  for (auto part = held_.begin(); part != held_.end();) {
    if (part->full() && !holds_reserved(*part)) {
      Part ready = std::move(*part);
      part = held_.erase(part);
      send(std::move(ready));
    } else {
      ++part;
    }
  }
}

void S3Upload::send(Part part) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return busy_ < options_.parts_in_flight || failure_; });
  if (failure_) std::rethrow_exception(failure_);
  queue_.push_back(std::move(part));
  ++busy_;
  if (workers_.size() < options_.parts_in_flight) workers_.emplace_back([this] { work(); });
  changed_.notify_all();
}

void S3Upload::work() {
  for (;;) {
    Part part;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      part = std::move(queue_.front());
      queue_.pop_front();
    }
    std::optional<Sent> sent;
    std::exception_ptr error;
    try {
      const std::uint32_t crc = crc32(part.bytes);
      sent = Sent{client_.upload_part(location_, upload_id_, part.number, part.bytes, crc),
                  part.bytes.size()};
    } catch (...) {
      error = std::current_exception();
    }
    part.bytes = {};  // Its memory goes back before the next part is taken.
    const std::lock_guard lock(mutex_);
    if (sent) sent_.push_back(std::move(*sent));
    if (error && !failure_) failure_ = error;
    --busy_;
    changed_.notify_all();
  }
}

void S3Upload::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return busy_ == 0; });
  if (failure_) std::rethrow_exception(failure_);
}

void S3Upload::stop_workers() noexcept {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    busy_ -= static_cast<unsigned>(queue_.size());
    queue_.clear();
  }
  changed_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  workers_.clear();
}

std::uint32_t S3Upload::full_object_crc(const std::vector<Sent>& sent) const {
  std::uint32_t crc = 0;
  for (const Sent& part : sent) {
    crc = static_cast<std::uint32_t>(
        ::crc32_combine(crc, *part.part.crc32, static_cast<z_off_t>(part.size)));
  }
  return crc;
}

void S3Upload::commit() {
  ensure_writable("commit");
  if (!reserved_.empty()) {
    throw Error(ErrorCode::kBadState, {.file = name_},
                "commit with " + std::to_string(reserved_.size()) +
                    " reserved byte ranges never written (the first at offset " +
                    std::to_string(reserved_.begin()->first) + ")");
  }
  if (held_.empty() && next_number_ == 1) start_part();  // An empty object: one empty part.
  while (!held_.empty()) {
    Part last = std::move(held_.front());
    held_.pop_front();
    send(std::move(last));
  }
  drain();
  std::vector<Sent> sent;
  {
    const std::lock_guard lock(mutex_);
    sent = std::move(sent_);
  }
  std::sort(sent.begin(), sent.end(),
            [](const Sent& a, const Sent& b) { return a.part.number < b.part.number; });
  std::vector<UploadedPart> parts;
  parts.reserve(sent.size());
  for (const Sent& part : sent) parts.push_back(part.part);
  ONNXZIP_DCHECK(parts.size() + 1 == next_number_);
  client_.complete_multipart_upload(
      location_, upload_id_, parts,
      {.full_object_crc32 = full_object_crc(sent), .if_none_match = !options_.overwrite});
  committed_ = true;
  const std::lock_guard lock(live_uploads().mutex);
  live_uploads().uploads.erase(this);
}

void S3Upload::abandon() noexcept {
  if (abandoned_ || committed_) return;
  abandoned_ = true;
  stop_workers();
  {
    const std::lock_guard lock(live_uploads().mutex);
    live_uploads().uploads.erase(this);
  }
  abort_request();
}

void S3Upload::abort_request() noexcept {
  try {
    client_.abort_multipart_upload(location_, upload_id_);
  } catch (...) {
    // Nothing more can be done from here; a bucket's lifecycle rule for incomplete uploads
    // (spec/object-storage.md) removes what is left.
  }
}

}  // namespace onnxzip::s3

namespace onnxzip {

void abort_s3_uploads_in_progress() noexcept {
  s3::LiveUploads& live = s3::live_uploads();
  const std::lock_guard lock(live.mutex);
  for (s3::S3Upload* upload : live.uploads) upload->abort_request();
}

}  // namespace onnxzip
