#include "zip_writer.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

#include "check.h"
#include "crc32.h"
#include "crc_worker.h"
#include "little_endian.h"
#include "message_text.h"
#include "onnxzip/error.h"
#include "output.h"
#include "zip_layout.h"
#include "zip_records.h"

namespace onnxzip {
namespace {

using detail::ascii_lower;
using detail::quote;

// A name's length is a u16 in both headers (APPNOTE 4.4.10).
constexpr std::size_t kMaxNameLength = 0xFFFF;
// Offset of the CRC-32 field inside a local file header (APPNOTE 4.3.7), patched after streaming.
constexpr std::uint64_t kLocalHeaderCrcOffset = 14;
// Central directory records are gathered and written in batches of about this size.
constexpr std::size_t kCentralBatchSize = 64 * 1024;
// Data at least this large has its CRC-32 computed by the job queue, read back from the output,
// while later entries are copied; below, handing it over would cost more than it saves.
constexpr std::size_t kParallelCrcBytes = std::size_t{256} << 10;

using zip::EntryLayout;
using zip::plan_entry;
using zip::written_entry;

// The gap, then the local header, name, [zip64 extra], [alignment record].
void write_local_header(Output& file, const EntryLayout& layout, std::string_view name,
                        std::uint32_t crc, std::uint32_t alignment) {
  file.write_zeros(layout.gap);
  file.write(zip::encode_local_header(layout, name, crc, alignment));
  ONNXZIP_DCHECK(file.position() == layout.data_offset);
}

// Passes a producer's pieces straight to the file. With `observer_and_crc` (a small entry) the
// CRC-32 is computed as they go by and the observer handed each piece; otherwise both come later,
// from the file (ZipWriter::defer_crc).
class StreamingSink final : public EntrySink {
 public:
  StreamingSink(Output& file, std::uint64_t size, const ErrorContext& label,
                const PieceObserver* observer_and_crc)
      : file_(file),
        remaining_(size),
        size_(size),
        label_(label),
        observer_(observer_and_crc),
        inline_crc_(observer_and_crc != nullptr) {}

  void write(ByteSpan piece) override {
    if (overflowed_ || piece.size() > remaining_) {
      overflowed_ = true;
      throw Error(ErrorCode::kInvalidArgument, label_,
                  "the producer wrote more than the declared " + std::to_string(size_) +
                      " bytes (a piece of " + std::to_string(piece.size()) + " bytes after " +
                      std::to_string(size_ - remaining_) + ")");
    }
    file_.write(piece);
    if (inline_crc_) {
      if (*observer_ && !piece.empty()) (*observer_)(piece);
      crc_ = crc32(piece, crc_);
    }
    remaining_ -= piece.size();
  }

  std::uint64_t remaining() const noexcept override { return remaining_; }
  bool overflowed() const noexcept { return overflowed_; }
  std::uint32_t crc() const noexcept { return crc_; }

 private:
  Output& file_;
  std::uint64_t remaining_;
  const std::uint64_t size_;
  const ErrorContext& label_;
  const PieceObserver* observer_;
  const bool inline_crc_;
  std::uint32_t crc_ = 0;
  bool overflowed_ = false;
};

}  // namespace

ZipWriter::ZipWriter(std::filesystem::path destination, ZipWriterOptions options)
    : alignment_(options.alignment) {
  if (std::string problem = zip::alignment_problem(alignment_); !problem.empty()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = destination.string()}, std::move(problem));
  }
  file_ = open_output(destination, options.output, options.s3, options.buffer_size);
}

ZipWriter::ZipWriter(std::unique_ptr<Output> file, std::vector<WrittenEntry> written,
                     std::uint32_t alignment)
    : file_(std::move(file)), alignment_(alignment) {
  ONNXZIP_DCHECK(zip::alignment_problem(alignment).empty());
  for (WrittenEntry& entry : written) {
    check_unique(entry.name);
    ONNXZIP_DCHECK(entry.data_offset % alignment_ == 0);
    lowered_names_.emplace(ascii_lower(entry.name), entries_.size());
    entries_.push_back(std::move(entry));
  }
  ONNXZIP_DCHECK(entries_.empty() ||
                 file_->position() == entries_.back().data_offset + entries_.back().size);
}

ZipWriter::~ZipWriter() = default;
ZipWriter::ZipWriter(ZipWriter&& other) noexcept = default;
ZipWriter& ZipWriter::operator=(ZipWriter&& other) noexcept = default;

void ZipWriter::validate_name(std::string_view name) {
  const auto fail = [&](const std::string& reason) {
    throw Error(ErrorCode::kInvalidArgument,
                {.entry = "entry name " + quote(name), .entry_name = std::string(name)}, reason);
  };
  if (name.empty()) fail("is empty");
  if (name.size() > kMaxNameLength) {
    fail("is " + std::to_string(name.size()) +
         " bytes long, more than a ZIP name can hold (65535)");
  }
  if (name.find('\0') != std::string_view::npos) fail("holds a NUL byte");
  if (name.find('\\') != std::string_view::npos) fail("holds a backslash; ZIP paths use '/'");
  if (name.front() == '/') fail("starts with '/' (an absolute path)");
  if (name.back() == '/') fail("ends with '/' (a folder, which holds no data)");
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view component = name.substr(start, end - start);
    if (component.empty()) fail("has an empty path component ('//')");
    if (component == "." || component == "..") {
      fail("has a '" + std::string(component) + "' path component");
    }
    start = end + 1;
  }
}

ErrorContext ZipWriter::entry_label(std::string_view name) const {
  return {.file = file_->name(), .entry = "entry " + quote(name), .entry_name = std::string(name)};
}

void ZipWriter::ensure_usable(const char* operation) const {
  if (!file_) {
    throw Error(ErrorCode::kBadState, std::string(operation) + " on a moved-from ZipWriter");
  }
  const char* reason = nullptr;
  if (in_producer_) {
    reason = "from inside an entry producer";
  } else if (finished_) {
    reason = "after finish()";
  } else if (failed_) {
    reason = "after an entry failed; the archive cannot be completed";
  }
  if (reason != nullptr) {
    throw Error(ErrorCode::kBadState, {.file = file_->name()},
                std::string(operation) + " called " + reason);
  }
}

void ZipWriter::check_unique(std::string_view name) const {
  const auto found = lowered_names_.find(ascii_lower(name));
  if (found == lowered_names_.end()) return;
  const std::string& existing = entries_[found->second].name;
  if (existing == name) {
    throw Error(ErrorCode::kInvalidArgument, entry_label(name), "duplicate name");
  }
  throw Error(ErrorCode::kInvalidArgument, entry_label(name),
              "differs from the earlier entry " + quote(existing) +
                  " only in ASCII case (they would collide on case-insensitive file systems)");
}

void ZipWriter::check_size(std::string_view name, std::uint64_t size) const {
  // Checked before anything is written, so the layout's offset arithmetic cannot overflow.
  if (!zip::entry_fits_file(file_->position(), size)) {
    throw Error(ErrorCode::kInvalidArgument, entry_label(name),
                "size " + std::to_string(size) +
                    " would take the file past the largest size"
                    " the system allows");
  }
}

void ZipWriter::remember(WrittenEntry entry) {
  ONNXZIP_DCHECK(entry.data_offset % alignment_ == 0);
  ONNXZIP_DCHECK(file_->position() == entry.data_offset + entry.size);
  lowered_names_.emplace(ascii_lower(entry.name), entries_.size());
  entries_.push_back(std::move(entry));
}

const WrittenEntry& ZipWriter::add(std::string_view name, ByteSpan data,
                                   const PieceObserver& observer, const EntryDone& done) {
  ensure_usable("add");
  validate_name(name);
  check_unique(name);
  check_size(name, data.size());
  const EntryLayout layout = plan_entry(file_->position(), name.size(), data.size(), alignment_);
  try {
    // An output that cannot be read back (an upload) gets every CRC-32 here, from `data`.
    if (data.size() < kParallelCrcBytes || !file_->can_read_back()) {
      const std::uint32_t crc = crc32(data);
      if (observer && !data.empty()) observer(data);
      write_local_header(*file_, layout, name, crc, alignment_);
      file_->write(data);
      remember(written_entry(layout, name, crc));
      complete_now(done);
    } else {
      // The header once the CRC-32 is known: one write for the gap and the header instead of a
      // header, then a patch of its CRC field.
      const std::uint64_t start = layout.local_header_offset - layout.gap;
      file_->reserve(layout.data_offset - start);
      file_->write(data);
      std::vector<std::uint8_t> head(layout.gap, 0);
      const std::vector<std::uint8_t> header =
          zip::encode_local_header(layout, name, 0, alignment_);
      head.insert(head.end(), header.begin(), header.end());
      ONNXZIP_DCHECK(start + head.size() == layout.data_offset);
      remember(written_entry(layout, name, 0));
      defer_crc(start, std::move(head), observer, done);
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
  return entries_.back();
}

const WrittenEntry& ZipWriter::add(std::string_view name, std::uint64_t size,
                                   const EntryProducer& producer, const PieceObserver& observer,
                                   const EntryDone& done) {
  ensure_usable("add");
  validate_name(name);
  check_unique(name);
  check_size(name, size);
  const ErrorContext label = entry_label(name);
  if (!producer) throw Error(ErrorCode::kInvalidArgument, label, "no producer given");
  const EntryLayout layout = plan_entry(file_->position(), name.size(), size, alignment_);
  try {
    const bool deferred = size >= kParallelCrcBytes && file_->can_read_back();
    if (file_->can_read_back()) {
      write_local_header(*file_, layout, name, 0, alignment_);
    } else {
      // An upload sends a part once it is full, unless it holds reserved bytes: the header's
      // part waits for the CRC-32 (written last, below) while the data's parts go ahead.
      file_->write_zeros(layout.gap);
      file_->reserve(layout.data_offset - layout.local_header_offset);
    }
    StreamingSink sink(*file_, size, label, deferred ? nullptr : &observer);
    in_producer_ = true;
    try {
      producer(sink);
    } catch (...) {
      in_producer_ = false;
      throw;
    }
    in_producer_ = false;
    // A producer may swallow the sink's overflow error; the entry is still wrong.
    if (sink.overflowed()) {
      throw Error(ErrorCode::kInvalidArgument, label,
                  "the producer wrote more than the declared " + std::to_string(size) + " bytes");
    }
    if (sink.remaining() != 0) {
      throw Error(ErrorCode::kInvalidArgument, label,
                  "the producer wrote " + std::to_string(size - sink.remaining()) +
                      " of the declared " + std::to_string(size) + " bytes");
    }
    if (deferred) {
      remember(written_entry(layout, name, 0));
      defer_crc(layout.local_header_offset, {}, observer, done);
    } else {
      if (file_->can_read_back()) {
        std::uint8_t crc_bytes[4];
        detail::store_le32(crc_bytes, sink.crc());
        file_->write_at(layout.local_header_offset + kLocalHeaderCrcOffset, crc_bytes);
      } else {
        file_->write_at(layout.local_header_offset,
                        zip::encode_local_header(layout, name, sink.crc(), alignment_));
      }
      remember(written_entry(layout, name, sink.crc()));
      complete_now(done);
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
  return entries_.back();
}

void ZipWriter::defer_crc(std::uint64_t head_offset, std::vector<std::uint8_t> head,
                          const PieceObserver& observer, const EntryDone& done) {
  if (!crc_jobs_) {
    crc_jobs_ = std::make_unique<detail::CrcJobQueue>(
        file_->reader(), detail::CrcJobQueue::kDefaultMaxWaiting, detail::crc_job_threads());
  }
  // The jobs read the file: the last bytes of the data may still be in the write buffer.
  file_->flush();
  const WrittenEntry& entry = entries_.back();
  pending_.push_back({.index = entries_.size() - 1,
                      .head_offset = head_offset,
                      .head = std::move(head),
                      .crc_known = false,
                      .done = done});
  crc_jobs_->submit({.offset = entry.data_offset, .size = entry.size, .observer = observer});
  complete(crc_jobs_->take_done());
}

void ZipWriter::complete_now(const EntryDone& done) {
  if (pending_.empty()) {
    if (done) done(entries_.back());
    return;
  }
  pending_.push_back({.index = entries_.size() - 1,
                      .head_offset = 0,
                      .head = {},
                      .crc_known = true,
                      .done = done});
}

void ZipWriter::complete(std::vector<detail::CrcJobResult> results) {
  // The results belong to the first entries still waiting for their CRC-32, in order.
  auto waiting = pending_.begin();
  for (detail::CrcJobResult& result : results) {
    while (waiting->crc_known) ++waiting;
    ONNXZIP_DCHECK(waiting != pending_.end());
    WrittenEntry& entry = entries_[waiting->index];
    if (result.error) {
      with_error_context([&] { return entry_label(entry.name); },
                         [&] { std::rethrow_exception(result.error); });
    }
    entry.crc32 = result.crc;
    std::uint8_t crc_bytes[4];
    detail::store_le32(crc_bytes, result.crc);
    if (waiting->head.empty()) {
      file_->write_at(entry.local_header_offset + kLocalHeaderCrcOffset, crc_bytes);
    } else {
      const std::uint64_t crc_at =
          entry.local_header_offset - waiting->head_offset + kLocalHeaderCrcOffset;
      std::copy(std::begin(crc_bytes), std::end(crc_bytes),
                waiting->head.begin() + static_cast<std::ptrdiff_t>(crc_at));
      file_->write_at(waiting->head_offset, waiting->head);
    }
    waiting->crc_known = true;
    ++waiting;
  }
  while (!pending_.empty() && pending_.front().crc_known) {
    // Popped first: should `done` throw, the entry is not completed twice.
    const PendingEntry finished = std::move(pending_.front());
    pending_.pop_front();
    if (finished.done) finished.done(entries_[finished.index]);
  }
}

void ZipWriter::settle() {
  ensure_usable("settle");
  settle_jobs();
}

void ZipWriter::settle_jobs() {
  if (!crc_jobs_) return;
  try {
    complete(crc_jobs_->take_all());
  } catch (...) {
    failed_ = true;
    throw;
  }
  ONNXZIP_DCHECK(pending_.empty());
}

void ZipWriter::write_central_directory() {
  const std::uint64_t central_offset = file_->position();
  std::vector<std::uint8_t> batch;
  batch.reserve(kCentralBatchSize + zip::CentralDirectoryHeader::kSize + kMaxNameLength + 32);
  for (const WrittenEntry& entry : entries_) {
    zip::append_central_record(batch, entry);
    if (batch.size() >= kCentralBatchSize) {
      file_->write(batch);
      batch.clear();
    }
  }
  file_->write(batch);
  batch.clear();
  zip::append_end_records(batch, entries_.size(), central_offset,
                          file_->position() - central_offset);
  file_->write(batch);
}

void ZipWriter::finish() {
  ensure_usable("finish");
  settle_jobs();
  try {
    write_central_directory();
    file_->commit();
  } catch (...) {
    failed_ = true;
    throw;
  }
  finished_ = true;
}

}  // namespace onnxzip
