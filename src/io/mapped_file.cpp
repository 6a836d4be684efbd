// MappedFile: the one place the library maps files, and the registry of live mappings that a
// SIGBUS handler may read (describe_address).
#include "onnxzip/internal/mapped_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "file_extent.h"
#include "onnxzip/error.h"
#include "posix_file.h"
#include "posix_file_testing.h"

namespace onnxzip {
namespace {

using detail::Fd;
using detail::FileVersion;

// --- The registry of live mappings ---
//
// A signal handler may run at any instant, on any thread, even inside a registration: it can
// take no lock and allocate nothing. So the registry is a set of fixed blocks of slots that are
// allocated once and never freed, published through atomic pointers; each slot is a sequence
// lock (odd while a writer changes it: the reader skips it, or reads again the version it began
// with after copying, and discards the copy when it changed). Writers serialize on a mutex.

constexpr std::size_t kNameCapacity = 1024;
// Block b holds slots_in_block(b) slots: 4, 8, 16... up to 256, so that a process with a few
// mappings zeroes a few KiB of slots, not 256 KiB (a tool run pays for every page it touches).
constexpr std::size_t kSlotsPerBlock = 256;
constexpr std::size_t kMaxBlocks = 256;  // About 64,000 live mappings; past that, they go unnamed.
constexpr std::size_t slots_in_block(std::size_t b) noexcept {
  return b < 6 ? std::size_t{4} << b : kSlotsPerBlock;
}

struct Slot {
  std::atomic<std::uint32_t> version{0};
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};  // 0: the slot is free.
  std::atomic<int> descriptor{-1};     // The mapped file's, for file_extent_of().
  std::array<std::atomic<char>, kNameCapacity> name{};
};
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<char>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

struct Block {
  explicit Block(std::size_t slot_count) : count(slot_count), slots(new Slot[slot_count]) {}
  const std::size_t count;
  const std::unique_ptr<Slot[]> slots;
};

// Constant-initialized, so usable by a handler before and after any constructor runs.
constinit std::array<std::atomic<Block*>, kMaxBlocks> g_blocks{};

struct RegistryWriters {
  std::mutex mutex;
  std::vector<Slot*> free_slots;
  std::size_t blocks = 0;
};

RegistryWriters& writers() {
  // Never destroyed: a mapping held by a static object may be released after exit begins.
  static RegistryWriters* const instance = new RegistryWriters;
  return *instance;
}

// Writes a slot as one sequence-lock update.
template <typename Change>
void update_slot(Slot& slot, Change&& change) {
  const std::uint32_t version = slot.version.load(std::memory_order_relaxed);
  slot.version.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  change();
  slot.version.store(version + 2, std::memory_order_release);
}

// The slot now describing [begin, begin + size) as `name`, the mapping of the file open as
// `descriptor`, or nullptr when the registry is full.
Slot* register_mapping(const void* begin, std::size_t size, const std::string& name,
                       int descriptor) {
  RegistryWriters& w = writers();
  const std::lock_guard<std::mutex> lock(w.mutex);
  if (w.free_slots.empty()) {
    if (w.blocks == kMaxBlocks) return nullptr;
    const std::size_t count = slots_in_block(w.blocks);
    w.free_slots.reserve(w.free_slots.capacity() + count);
    Block* const block = new Block(count);  // Never freed (see above).
    for (std::size_t i = count; i-- > 0;) w.free_slots.push_back(&block->slots[i]);
    g_blocks[w.blocks++].store(block, std::memory_order_release);
  }
  Slot* const slot = w.free_slots.back();
  w.free_slots.pop_back();
  const auto first = reinterpret_cast<std::uintptr_t>(begin);
  update_slot(*slot, [&] {
    const std::size_t length = std::min(name.size(), kNameCapacity - 1);
    for (std::size_t i = 0; i < length; ++i)
      slot->name[i].store(name[i], std::memory_order_relaxed);
    slot->name[length].store('\0', std::memory_order_relaxed);
    slot->begin.store(first, std::memory_order_relaxed);
    slot->end.store(first + size, std::memory_order_relaxed);
    slot->descriptor.store(descriptor, std::memory_order_relaxed);
  });
  return slot;
}

void unregister_mapping(Slot* slot) noexcept {
  if (slot == nullptr) return;
  RegistryWriters& w = writers();
  const std::lock_guard<std::mutex> lock(w.mutex);
  update_slot(*slot, [&] { slot->end.store(0, std::memory_order_relaxed); });
  w.free_slots.push_back(slot);  // Never allocates: room for every slot is reserved.
}

// Reads `slot` for `address` (see the registry comment); true with `name` filled on a match.
bool read_slot(const Slot& slot, std::uintptr_t address, char* name,
               std::size_t capacity) noexcept {
  const std::uint32_t version = slot.version.load(std::memory_order_acquire);
  if (version % 2 != 0) return false;
  const std::uintptr_t begin = slot.begin.load(std::memory_order_relaxed);
  const std::uintptr_t end = slot.end.load(std::memory_order_relaxed);
  if (end == 0 || address < begin || address >= end) return false;
  const std::size_t limit = std::min(capacity, kNameCapacity) - 1;
  std::size_t i = 0;
  for (; i < limit; ++i) {
    const char c = slot.name[i].load(std::memory_order_relaxed);
    if (c == '\0') break;
    name[i] = c;
  }
  name[i] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  return slot.version.load(std::memory_order_relaxed) == version;
}

// --- Getting the bytes ---

[[noreturn]] void fail_io(const std::string& name, const std::string& problem) {
  throw Error(ErrorCode::kIo, {.file = name}, problem);
}

std::uint64_t regular_size(const Fd& fd, const std::string& name, struct stat& status) {
  if (::fstat(fd.get(), &status) != 0)
    fail_io(name, "cannot examine: " + std::string(std::strerror(errno)));
  if (!S_ISREG(status.st_mode)) {
    fail_io(name,
            std::string("not a regular file (") + detail::file_type_name(status.st_mode) + ")");
  }
  return static_cast<std::uint64_t>(status.st_size);
}

std::size_t checked_size(std::uint64_t size, const std::string& name) {
  if (size > std::numeric_limits<std::size_t>::max()) {
    fail_io(name,
            "too large for this machine's address space (" + std::to_string(size) + " bytes)");
  }
  return static_cast<std::size_t>(size);
}

// Reads the whole file (`size` bytes by fstat) with pread. A file that ends early shrank while
// it was read: an Error, the point of FileAccess::kRead.
OwnedBytes read_whole(const Fd& fd, std::size_t size, const std::string& name) {
  // Page-aligned like a mapping, so that aligned entries are aligned in memory too.
  OwnedBytes bytes(size, 4096);
  constexpr std::size_t kChunk = std::size_t{64} << 20;
  std::size_t done = 0;
  while (done < size) {
    detail::run_file_read_hook(done, std::min(kChunk, size - done));
    const ssize_t n = ::pread(fd.get(), bytes.data() + done, std::min(kChunk, size - done),
                              static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_io(name, "cannot read at offset " + std::to_string(done) + ": " + std::strerror(errno));
    }
    if (n == 0) {
      throw Error(ErrorCode::kChanged, {.file = name},
                  "the file changed while it was being read: it shrank (" + std::to_string(done) +
                      " of " + std::to_string(size) + " bytes)");
    }
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace

struct MappedFile::Impl {
  Fd fd;
  void* mapping = nullptr;  // kMap, kMapPrivate: mmap's, of `mapped` bytes.
  std::size_t mapped = 0;
  OwnedBytes owned;      // kRead
  Slot* slot = nullptr;  // The mapping's registry entry, if any.
  FileVersion opened{};  // The file's version when its bytes were taken.

  ~Impl() {
    unregister_mapping(slot);  // Before the pages go.
    if (mapping != nullptr) ::munmap(mapping, mapped);
  }
};

MappedFile::MappedFile(std::filesystem::path path, FileAccess access, std::unique_ptr<Impl> impl)
    : path_(std::move(path)), access_(access), impl_(std::move(impl)) {}

MappedFile::~MappedFile() = default;

int MappedFile::descriptor() const noexcept { return impl_->fd.get(); }

bool MappedFile::changed() const noexcept {
  const std::optional<FileVersion> now = detail::version_of_descriptor(impl_->fd.get());
  return !now || !(*now == impl_->opened);
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path,
                                                   FileAccess access) {
  detail::RegularFile file = detail::open_regular_file(path);
  if (access != FileAccess::kRead) return adopt(file.fd.release(), path, access);
  // A whole read of a file an edit rewrites could mix its old and new tail (spec §9.6 step 3):
  // it is made under the readers' lock, and refused when the file changed all the same.
  const std::string label = path.string();
  const detail::SharedFileLock lock(file.fd.get(), label);
  auto read = adopt(file.fd.release(), path, access);
  if (read->changed()) {
    throw Error(ErrorCode::kChanged, {.file = label}, "the file changed while it was being read");
  }
  return read;
}

std::shared_ptr<const MappedFile> MappedFile::adopt(int fd, std::filesystem::path name,
                                                    FileAccess access) {
  auto impl = std::make_unique<Impl>();
  impl->fd = Fd(fd);
  const std::string label = name.string();
  if (fd < 0) {
    throw Error(ErrorCode::kInvalidArgument, {.file = label}, "adopt: no file descriptor");
  }
  struct stat status {};
  const std::size_t size = checked_size(regular_size(impl->fd, label, status), label);
  impl->opened = detail::version_of(status);

  std::shared_ptr<MappedFile> file(new MappedFile(std::move(name), access, std::move(impl)));
  Impl& held = *file->impl_;
  if (access == FileAccess::kRead) {
    held.owned = read_whole(held.fd, size, label);
    file->bytes_ = held.owned.span();
    return file;
  }
  // Read in ranges through descriptor() (ByteSource::of_file): no bytes to lend.
  if (access == FileAccess::kRanges) return file;
  // mmap refuses an empty mapping; an empty span describes the file exactly.
  if (size == 0) return file;
  // The descriptor itself is mapped, not its path, which may name another file by now.
  const bool private_copy = access == FileAccess::kMapPrivate;
  void* const data = ::mmap(nullptr, size, private_copy ? PROT_READ | PROT_WRITE : PROT_READ,
                            private_copy ? MAP_PRIVATE : MAP_SHARED, held.fd.get(), 0);
  if (data == MAP_FAILED) fail_io(label, std::string("cannot map: ") + std::strerror(errno));
  held.mapping = data;
  held.mapped = size;
  file->bytes_ = ByteSpan(static_cast<const std::uint8_t*>(held.mapping), size);
  // A private mapping's pages may differ from the file once written: no descriptor, so that no
  // writer copies the file's extent (file_extent_of) in place of the bytes the caller sees.
  held.slot = register_mapping(held.mapping, size, label, private_copy ? -1 : held.fd.get());
  return file;
}

bool MappedFile::describe_address(const void* address, char* name, std::size_t capacity) noexcept {
  if (name == nullptr || capacity == 0) return false;
  const auto wanted = reinterpret_cast<std::uintptr_t>(address);
  for (const std::atomic<Block*>& published : g_blocks) {
    const Block* const block = published.load(std::memory_order_acquire);
    if (block == nullptr) break;
    for (std::size_t i = 0; i < block->count; ++i) {
      if (read_slot(block->slots[i], wanted, name, capacity)) return true;
    }
  }
  name[0] = '\0';
  return false;
}

std::optional<detail::FileExtent> detail::file_extent_of(ByteSpan bytes) {
  if (bytes.empty()) return std::nullopt;
  const auto first = reinterpret_cast<std::uintptr_t>(bytes.data());
  // Slots change only under the writers' mutex, so holding it, plain reads see whole slots.
  RegistryWriters& w = writers();
  const std::lock_guard<std::mutex> lock(w.mutex);
  for (std::size_t b = 0; b < w.blocks; ++b) {
    const Block* const block = g_blocks[b].load(std::memory_order_acquire);
    for (std::size_t i = 0; i < block->count; ++i) {
      const Slot& slot = block->slots[i];
      const std::uintptr_t begin = slot.begin.load(std::memory_order_relaxed);
      const std::uintptr_t end = slot.end.load(std::memory_order_relaxed);
      if (end == 0 || first < begin || first >= end || bytes.size() > end - first) continue;
      if (slot.descriptor.load(std::memory_order_relaxed) < 0) return std::nullopt;
      return FileExtent{slot.descriptor.load(std::memory_order_relaxed), first - begin};
    }
  }
  return std::nullopt;
}

}  // namespace onnxzip
