// convert_remote(): a remote archive written as a legacy model while it downloads (convert.h).
//
// The plan: the archive's tail (HttpSource::open) gives the model and the central directory;
// the output is planned as write_legacy_model plans it (legacy_fill.h), each payload getting a
// destination -- its offset in a data file, or memory for one that stays inline; then the bytes
// from the first payload's local header to the last payload's end are read in ranges of
// HttpOptions::piece_size, max_parallel at once, and every byte goes to its destinations as it
// arrives. Ranges complete in any order: an entry's local header is gathered from the bytes that
// start it (a range that brings later bytes of the entry first waits for it), and its CRC-32 is
// kept per run of bytes and combined in order at the end.
#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "convert_internal.h"
#include "crc32.h"
#include "legacy_fill.h"
#include "message_text.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/tensor.h"

namespace onnxzip {
namespace {

using detail::quote;
namespace fs = std::filesystem;

// The longest local header: the fixed part, a name and an extra field of 65,535 bytes each.
constexpr std::size_t kMaxLocalHeaderBytes = 30 + 2 * std::size_t{0xFFFF};

// Address space that no byte is behind (PROT_NONE): the placeholder payload of a tensor whose
// bytes go straight to a data file, which the writer sizes but never reads.
class Placeholder final {
 public:
  explicit Placeholder(std::uint64_t size) : size_(std::max<std::uint64_t>(size, 1)) {
    void* const at = ::mmap(nullptr, static_cast<std::size_t>(size_), PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (at == MAP_FAILED) {
      throw Error(ErrorCode::kLimitExceeded, "cannot reserve " + std::to_string(size_) +
                                                 " bytes of address space for the largest payload");
    }
    at_ = static_cast<const std::uint8_t*>(at);
  }
  ~Placeholder() { ::munmap(const_cast<std::uint8_t*>(at_), static_cast<std::size_t>(size_)); }
  Placeholder(const Placeholder&) = delete;
  Placeholder& operator=(const Placeholder&) = delete;
  ByteSpan first(std::uint64_t size) const { return {at_, static_cast<std::size_t>(size)}; }

 private:
  std::uint64_t size_;
  const std::uint8_t* at_ = nullptr;
};

// Where a payload's bytes go: a data file (at `offset`), or memory.
struct Destination {
  AtomicOutputFile* file = nullptr;
  std::mutex* file_mutex = nullptr;  // write_at is not made for concurrent calls.
  std::uint64_t offset = 0;
  std::uint8_t* memory = nullptr;
};

// A run of an entry's data that arrived in one range: [start, start + length) of the data.
struct Run {
  std::uint64_t start = 0;
  std::uint64_t length = 0;
  std::uint32_t crc = 0;
};

// A stored payload entry whose bytes come in the stream.
struct StreamedEntry {
  const ZipEntry* entry = nullptr;
  std::uint64_t limit = 0;  // Its bytes end here at the latest (ZipReader::limit_of).
  std::vector<Destination> destinations;
  // Under RemoteWrite::mutex_:
  std::vector<std::uint8_t> header;  // The bytes from its local header on, until it is located.
  std::optional<ZipEntry> located;
  std::vector<Run> runs;
};

class RemoteWrite final {
 public:
  RemoteWrite(const HttpSource& source, const ZipReader& zip, ProgressCallback progress)
      : source_(source), zip_(zip), progress_(std::move(progress)) {}

  // The entry's data is to be written to `to` as it arrives (an entry may go to several places).
  void add(const ZipEntry& entry, const Destination& to) {
    const auto [it, added] = index_of_.try_emplace(entry.index, entries_.size());
    if (added) {
      StreamedEntry& e = entries_.emplace_back();
      e.entry = &entry;
      e.limit = zip_.limit_of(entry);
    }
    entries_[it->second].destinations.push_back(to);
  }

  // Streams every entry added, then checks that each arrived whole and its CRC-32.
  void run();

 private:
  class RangeSink;
  void fetch_range(std::uint64_t offset, std::uint64_t length);
  StreamedEntry* entry_at(std::uint64_t offset);
  void deliver(StreamedEntry& e, std::uint64_t at, ByteSpan bytes, RangeSink& sink);
  static void write_data(const StreamedEntry& e, std::uint64_t data_at, ByteSpan bytes);
  void advance(std::uint64_t count);
  void check_entry(const StreamedEntry& e) const;

  const HttpSource& source_;
  const ZipReader& zip_;
  const ProgressCallback progress_;
  std::vector<StreamedEntry> entries_;  // Sorted by file order when run() starts.
  std::unordered_map<std::size_t, std::size_t> index_of_;
  std::mutex mutex_;
  std::condition_variable located_;
  std::exception_ptr error_;  // Under mutex_: the first range that failed; nobody waits then.
  std::mutex progress_mutex_;
  std::uint64_t done_ = 0;
  std::uint64_t total_ = 0;
};

// The bytes of one range, in order. The CRC-32 of the run being received is kept here, without
// a lock, and handed to its entry when the run ends.
class RemoteWrite::RangeSink final {
 public:
  explicit RangeSink(RemoteWrite& write) : write_(write) {}

  void operator()(std::uint64_t at, ByteSpan piece) {
    const std::size_t count = piece.size();
    while (!piece.empty()) {
      StreamedEntry* const e = write_.entry_at(at);
      if (e == nullptr) break;  // Past the last entry's bytes.
      // Bytes before the entry belong to no streamed entry (a gap, an entry read apart).
      const std::uint64_t skip =
          std::min<std::uint64_t>(piece.size(), e->entry->local_header_offset -
                                                    std::min(at, e->entry->local_header_offset));
      const auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>(piece.size() - skip, e->limit - (at + skip)));
      if (n > 0) write_.deliver(*e, at + skip, piece.subspan(skip, n), *this);
      at += skip + n;
      piece = piece.subspan(static_cast<std::size_t>(skip) + n);
    }
    write_.advance(count);
  }

  // Data bytes [data_at, data_at + bytes.size()) of `e`; a range brings them in order.
  void data(StreamedEntry& e, std::uint64_t data_at, ByteSpan bytes) {
    if (run_entry_ != &e || run_.start + run_.length != data_at) {
      end_run();
      run_entry_ = &e;
      run_ = {data_at, 0, 0};
    }
    run_.crc = crc32(bytes, run_.crc);
    run_.length += bytes.size();
  }

  void end_run() {
    if (run_entry_ == nullptr) return;
    const std::lock_guard lock(write_.mutex_);
    run_entry_->runs.push_back(run_);
    run_entry_ = nullptr;
  }

 private:
  RemoteWrite& write_;
  StreamedEntry* run_entry_ = nullptr;
  Run run_;
};

StreamedEntry* RemoteWrite::entry_at(std::uint64_t offset) {
  // The first entry whose bytes end after `offset`.
  const auto it =
      std::upper_bound(entries_.begin(), entries_.end(), offset,
                       [](std::uint64_t at, const StreamedEntry& e) { return at < e.limit; });
  return it == entries_.end() ? nullptr : &*it;
}

// [at, at + bytes.size()) of the entry's bytes: its local header's, gathered until the entry is
// located, then its data's, written to its destinations.
void RemoteWrite::deliver(StreamedEntry& e, std::uint64_t at, ByteSpan bytes, RangeSink& sink) {
  const std::uint64_t start = e.entry->local_header_offset;
  ZipEntry located;
  {
    std::unique_lock lock(mutex_);
    // The header's bytes are gathered in order: a range that brings later bytes of the entry
    // first waits for the range that brings its start (which was asked for before it).
    located_.wait(lock, [&] { return e.located || error_ || at <= start + e.header.size(); });
    if (!e.located && error_) {
      throw Error(ErrorCode::kIo, {.file = source_.name()}, "stopped: another range failed");
    }
    if (!e.located) {
      const auto skip = static_cast<std::size_t>(start + e.header.size() - at);
      if (skip < bytes.size()) {
        const std::size_t room = kMaxLocalHeaderBytes - e.header.size();
        const ByteSpan more = bytes.subspan(skip, std::min(room, bytes.size() - skip));
        e.header.insert(e.header.end(), more.begin(), more.end());
        located_.notify_all();  // A range that starts inside the header may go on.
      }
      std::optional<ZipEntry> found = zip_.locate(*e.entry, e.header);
      if (!found) return;
      found->local_extra = {};  // It borrows from `header`, which goes now.
      e.located = std::move(found);
      std::vector<std::uint8_t>().swap(e.header);
      located_.notify_all();
    }
    located = *e.located;
  }
  // The data among these bytes: those in [data_offset, data_offset + size).
  const std::uint64_t data_begin = std::max(at, located.data_offset);
  const std::uint64_t data_end = std::min(at + bytes.size(), located.data_offset + located.size);
  if (data_begin >= data_end) return;
  const ByteSpan data = bytes.subspan(static_cast<std::size_t>(data_begin - at),
                                      static_cast<std::size_t>(data_end - data_begin));
  const std::uint64_t data_at = data_begin - located.data_offset;
  write_data(e, data_at, data);
  sink.data(e, data_at, data);
}

void RemoteWrite::write_data(const StreamedEntry& e, std::uint64_t data_at, ByteSpan bytes) {
  for (const Destination& to : e.destinations) {
    if (to.file != nullptr) {
      const std::lock_guard lock(*to.file_mutex);
      to.file->write_at(to.offset + data_at, bytes);
    } else {
      std::copy(bytes.begin(), bytes.end(), to.memory + data_at);
    }
  }
}

void RemoteWrite::advance(std::uint64_t count) {
  if (!progress_) return;
  const std::lock_guard lock(progress_mutex_);
  done_ += count;
  progress_(done_, total_);
}

void RemoteWrite::fetch_range(std::uint64_t offset, std::uint64_t length) {
  RangeSink sink(*this);
  source_.fetch(offset, length, [&](std::uint64_t at, ByteSpan piece) { sink(at, piece); });
  sink.end_run();
}

void RemoteWrite::run() {
  if (entries_.empty()) return;
  std::sort(entries_.begin(), entries_.end(), [](const StreamedEntry& a, const StreamedEntry& b) {
    return a.entry->local_header_offset < b.entry->local_header_offset;
  });
  index_of_.clear();
  const std::uint64_t begin = entries_.front().entry->local_header_offset;
  const std::uint64_t end = entries_.back().limit;
  total_ = end - begin;
  if (progress_) progress_(0, total_);
  const HttpOptions& http = source_.options();
  const std::uint64_t piece = std::max<std::uint64_t>(1, http.piece_size);
  const std::uint64_t ranges = (total_ + piece - 1) / piece;
  std::atomic<std::uint64_t> next{0};
  const auto work = [&] {
    for (std::uint64_t i = next++; i < ranges; i = next++) {
      {
        const std::lock_guard lock(mutex_);
        if (error_) return;
      }
      try {
        const std::uint64_t offset = begin + i * piece;
        fetch_range(offset, std::min(piece, end - offset));
      } catch (...) {
        const std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
        located_.notify_all();
        return;
      }
    }
  };
  {
    std::vector<std::jthread> threads;
    const std::uint64_t count = std::min<std::uint64_t>(ranges, std::max(1U, http.max_parallel));
    for (std::uint64_t t = 1; t < count; ++t) threads.emplace_back(work);
    work();
  }
  if (error_) std::rethrow_exception(error_);
  for (const StreamedEntry& e : entries_) check_entry(e);
}

// Every byte of the entry's data arrived (ranges cover them all, so this is a check of the code
// as much as of the server), and their CRC-32, the runs' combined in order, is the entry's.
void RemoteWrite::check_entry(const StreamedEntry& e) const {
  const ZipEntry& entry = *e.entry;
  const auto fail = [&](const std::string& problem) {
    throw Error(
        ErrorCode::kCorrupt,
        {.file = source_.name(), .entry = "entry " + quote(entry.name), .entry_name = entry.name},
        problem);
  };
  if (!e.located) fail("its local header did not arrive whole");
  std::vector<Run> runs = e.runs;
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.start < b.start; });
  std::uint64_t reached = 0;
  std::uint32_t crc = 0;
  for (const Run& run : runs) {
    if (run.start != reached) break;
    crc = static_cast<std::uint32_t>(
        crc32_combine64(crc, run.crc, static_cast<z_off64_t>(run.length)));
    reached += run.length;
  }
  if (reached != entry.size) {
    fail("only " + std::to_string(reached) + " of its " + std::to_string(entry.size) +
         " bytes arrived in order");
  }
  zip_.check_crc(entry, crc);
}

}  // namespace

ModelFormat detect_format(const HttpSource& source) {
  const ByteSpan tail = source.tail();
  const auto is = [](ByteSpan bytes, std::string_view signature) {
    return bytes.size() >= signature.size() &&
           std::equal(signature.begin(), signature.end(), bytes.begin(),
                      [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
  };
  constexpr std::string_view kLocal("PK\x03\x04", 4);
  constexpr std::string_view kEnd("PK\x05\x06", 4);
  if (source.tail_offset() == 0) {
    // The whole file: told as detect_format(path) tells it, by its first bytes.
    return is(tail, kLocal) || is(tail, kEnd) ? ModelFormat::kOnnxz : ModelFormat::kLegacy;
  }
  // An end record lies in the last 22 + 65,535 bytes; a legacy model with that signature there
  // by chance is then read as an archive, and refused as one.
  const std::size_t reach = std::min<std::size_t>(tail.size(), 22 + 0xFFFF);
  const ByteSpan end = tail.last(reach);
  for (std::size_t at = end.size() >= 22 ? end.size() - 22 + 1 : 0; at-- > 0;) {
    if (is(end.subspan(at), kEnd)) return ModelFormat::kOnnxz;
  }
  return ModelFormat::kLegacy;
}

namespace {

// One convert_remote call, told as its stories: the plan (the model, its external tensors and
// their entries, those read apart), then an inline output (every payload into memory) or an
// external one (payloads placed in data files, the rest into memory).
class RemoteConversion final {
 public:
  RemoteConversion(const std::shared_ptr<const HttpSource>& source, const fs::path& out,
                   const ConvertOptions& options);
  LegacyWriteResult run();

 private:
  void read_apart();
  void buffer(std::size_t i);
  LegacyWriteResult write_inline();
  LegacyWriteResult write_external();
  bool streamed(std::size_t i) const { return !apart_.contains(entries_[i]->index); }
  static void set_payload(TensorProto& tensor, ByteSpan bytes, OwnerToken owner) {
    tensor.raw_data = TensorBytes::borrowed(bytes, std::move(owner));
    tensor.external_data.clear();
    tensor.data_location.reset();
  }

  const HttpSource& source_;
  const fs::path& out_;
  const std::string& name_;
  LegacyWriteOptions legacy_;
  Archive archive_;
  ModelProto model_;
  // The external tensors (in for_each_tensor order, as Archive::tensors) and their entries.
  std::vector<TensorProto*> tensors_;
  std::vector<const ZipEntry*> entries_;
  std::uint64_t payload_bytes_ = 0;  // What an inline output holds, at least.
  std::uint64_t largest_ = 0;
  // Entries the stream cannot carry, read whole first.
  std::unordered_map<std::size_t, std::shared_ptr<const TensorBytes>> apart_;
  RemoteWrite write_;
  // Payloads held in memory until the model file is written: one buffer per entry.
  std::unordered_map<std::size_t, std::shared_ptr<OwnedBytes>> buffers_;
  std::uint64_t buffered_ = 0;
};

Archive open_remote(const std::shared_ptr<const HttpSource>& source, const LoadOptions& options) {
  LoadOptions load = options;
  load.verify_crc = false;  // Every payload's CRC-32 is checked as its bytes arrive.
  load.inflate_payloads = false;
  return Archive::open(source, load);
}

RemoteConversion::RemoteConversion(const std::shared_ptr<const HttpSource>& source,
                                   const fs::path& out, const ConvertOptions& options)
    : source_(*source),
      out_(out),
      name_(source->name()),
      legacy_(options.legacy),
      archive_(open_remote(source, options.load)),
      model_(archive_.model()),
      write_(*source, archive_.zip(), legacy_.progress) {
  legacy_.progress = nullptr;  // The bar follows the download, which is most of the work.
  for_each_tensor(model_, [&](TensorProto& tensor, const TensorSite&) {
    if (tensor.data_location == TensorProto::kExternal) tensors_.push_back(&tensor);
  });
  std::vector<const Archive::TensorInfo*> infos;
  for (const Archive::TensorInfo& info : archive_.tensors()) {
    if (!info.is_inline) infos.push_back(&info);
  }
  if (infos.size() != tensors_.size()) {
    throw Error(ErrorCode::kBadState, {.file = name_}, "the model's external tensors changed");
  }
  for (const Archive::TensorInfo* info : infos) {
    const ZipEntry& entry = archive_.zip().at(info->entry);
    entries_.push_back(&entry);
    payload_bytes_ = checked_add(payload_bytes_, entry.size, name_ + ": payload bytes");
    largest_ = std::max(largest_, entry.size);
  }
  read_apart();
}

// An entry the stream cannot carry (deflated, or with a data descriptor: not in a conforming
// archive) is read apart first, with its CRC-32 checked: one request each.
void RemoteConversion::read_apart() {
  for (const ZipEntry* entry : entries_) {
    if ((entry->is_stored() && !entry->has_data_descriptor) || apart_.contains(entry->index)) {
      continue;
    }
    apart_.emplace(entry->index,
                   std::make_shared<const TensorBytes>(archive_.zip().verified_data(*entry)));
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (streamed(i)) continue;
    const std::shared_ptr<const TensorBytes>& bytes = apart_.at(entries_[i]->index);
    set_payload(*tensors_[i], bytes->view(), bytes);
  }
}

void RemoteConversion::buffer(std::size_t i) {
  const ZipEntry& entry = *entries_[i];
  auto& slot = buffers_[entry.index];
  if (!slot) {
    buffered_ = checked_add(buffered_, entry.size, name_ + ": payload bytes");
    if (buffered_ > kMaxProtobufBytes) {
      throw Error(ErrorCode::kLimitExceeded, {.file = out_.string()},
                  "the payloads that stay inline take more than protobuf's limit of " +
                      std::to_string(kMaxProtobufBytes) +
                      " bytes; lower the threshold or externalize attributes and sparse tensors");
    }
    slot = std::make_shared<OwnedBytes>(static_cast<std::size_t>(entry.size));
    write_.add(entry, Destination{.memory = slot->data()});
  }
  set_payload(*tensors_[i], ByteSpan(slot->data(), slot->size()), slot);
}

LegacyWriteResult RemoteConversion::run() {
  using Mode = LegacyWriteOptions::Mode;
  if (legacy_.mode == Mode::kInline && payload_bytes_ > kMaxProtobufBytes) {
    throw Error(ErrorCode::kLimitExceeded, {.file = out_.string()},
                "the model's payloads alone take " + std::to_string(payload_bytes_) +
                    " bytes, more than protobuf's limit of " + std::to_string(kMaxProtobufBytes) +
                    "; write it with external data");
  }
  const bool external = legacy_.mode == Mode::kExternal ||
                        (legacy_.mode == Mode::kAuto && payload_bytes_ > kMaxProtobufBytes);
  return external ? write_external() : write_inline();
}

LegacyWriteResult RemoteConversion::write_inline() {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (streamed(i)) buffer(i);
  }
  detail::check_input_model(name_, model_);
  write_.run();
  return write_legacy_model(model_, out_, legacy_);
}

LegacyWriteResult RemoteConversion::write_external() {
  // Sized but never read: the writer places these payloads, and `write_` fills them in.
  const auto placeholder = std::make_shared<const Placeholder>(largest_);
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (streamed(i)) set_payload(*tensors_[i], placeholder->first(entries_[i]->size), placeholder);
  }
  detail::check_input_model(name_, model_);
  legacy_.mode = LegacyWriteOptions::Mode::kExternal;
  std::unordered_map<const TensorProto*, std::size_t> index_of;
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_of.emplace(tensors_[i], i);
  std::vector<bool> placed(tensors_.size(), false);
  for (const detail::LegacyPlacement& p : detail::plan_legacy_data_files(model_, out_, legacy_)) {
    if (const auto found = index_of.find(p.tensor); found != index_of.end()) {
      placed[found->second] = true;
    }
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (streamed(i) && !placed[i]) buffer(i);
  }
  return detail::write_legacy_model_filled(
      model_, out_, legacy_,
      [&](std::span<const detail::LegacyPlacement> placements,
          std::span<AtomicOutputFile* const> files) {
        std::vector<std::mutex> file_mutexes(files.size());
        for (const detail::LegacyPlacement& p : placements) {
          const auto found = index_of.find(p.tensor);
          if (found == index_of.end()) {
            // Inline in the archive's model: its bytes are at hand.
            files[p.file]->write_at(p.offset, RawPayload(*p.tensor).view());
            continue;
          }
          const std::size_t i = found->second;
          if (streamed(i)) {
            write_.add(*entries_[i], Destination{.file = files[p.file],
                                                 .file_mutex = &file_mutexes[p.file],
                                                 .offset = p.offset});
          } else {
            files[p.file]->write_at(p.offset, apart_.at(entries_[i]->index)->view());
          }
        }
        write_.run();
      });
}

}  // namespace

LegacyWriteResult convert_remote(const std::shared_ptr<const HttpSource>& source,
                                 const fs::path& out, const ConvertOptions& options) {
  if (source == nullptr) throw Error(ErrorCode::kInvalidArgument, "convert_remote: no source");
  check_output_name(out, ModelFormat::kLegacy);
  return RemoteConversion(source, out, options).run();
}

}  // namespace onnxzip
