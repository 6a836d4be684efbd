// Archive::open and load() of a local file (src/archive/archive_reader.cpp) while an in-place
// edit rewrites it (spec §9.6): every interleaving of the reader's reads with the edit's steps
// gives the old archive, the new one, or Error(kChanged) -- never kCorrupt, never a model of
// neither, never SIGBUS (which would end this test binary) -- and what an open archive hands out
// afterwards stays right when the edit then finishes and truncates the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "onnxzip/archive.h"
#include "onnxzip/edit.h"
#include "onnxzip/error.h"
#include "onnxzip/onnx_codec.h"
#include "posix_file.h"
#include "posix_file_testing.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "tail_edit.h"

namespace onnxzip {
namespace {

namespace fs = std::filesystem;
using archive_detail::TailStep;
using Bytes = std::vector<std::uint8_t>;
using test_support::raw_tensor;
using test_support::read_file_bytes;
using test_support::ScratchDir;

// A model of a few initializers whose producer names it, and whose doc_string makes its
// __MODEL_PROTO entry `padding` bytes longer (edits that grow and shrink the tail).
ModelProto model_named(const std::string& producer, std::size_t padding) {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = producer;
  model.doc_string = std::string(padding, 'd');
  GraphProto& graph = model.graph.emplace();
  graph.name = "g";
  graph.initializer.push_back(raw_tensor("w0", TensorProto::kFloat, {16, 16}, 1));
  graph.initializer.push_back(raw_tensor("w1", TensorProto::kFloat, {64, 256}, 2));
  graph.initializer.push_back(raw_tensor("w2", TensorProto::kInt8, {3000}, 3));
  return model;
}

// The file's bytes before an edit of `path` to the properties of `edited` and after each of its
// four steps (record, new tail past the end, final tail, truncation): what a reader can meet.
std::vector<Bytes> edit_states(const fs::path& path, const ModelProto& edited) {
  std::vector<Bytes> states{read_file_bytes(path)};
  archive_detail::set_tail_step_hook([&](TailStep, bool synced) {
    if (!synced) states.push_back(read_file_bytes(path));
  });
  edit_model(path, [&](ModelProto& model) {
    model.producer_name = edited.producer_name;
    model.doc_string = edited.doc_string;
  });
  archive_detail::set_tail_step_hook(nullptr);
  return states;
}

// Writes `bytes` over the file in place (the same inode, as an editor writes) and sets its
// modification time to a new second: the clock ticks between the reader's reads, so that the
// reader's check of the file's version sees every write, whatever the file system's clock.
void rewrite_in_place(const fs::path& path, const Bytes& bytes, int tick) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  const timespec times[2] = {{.tv_sec = 1'000'000 + tick, .tv_nsec = 0},
                             {.tv_sec = 1'000'000 + tick, .tv_nsec = 0}};
  ASSERT_EQ(::futimens(fd, times), 0);
  ::close(fd);
}

// Runs a hook before each read of a file's bytes while it lives.
class ReadHook final {
 public:
  explicit ReadHook(detail::FileReadHook hook) {
    detail::set_file_read_hook_for_testing(std::move(hook));
  }
  ~ReadHook() { detail::set_file_read_hook_for_testing(nullptr); }
  ReadHook(const ReadHook&) = delete;
  ReadHook& operator=(const ReadHook&) = delete;
};

// Every payload of `archive` by entry, and the producer of its model, read now.
struct Seen {
  std::string producer;
  std::map<std::string, Bytes> payloads;
};
Seen seen_in(const Archive& archive) {
  Seen seen;
  const ModelProto model = parse_model(archive.model_bytes(), ParseOptions{}, "model");
  seen.producer = std::string(model.producer_name.value_or(""));
  EXPECT_EQ(archive.model().producer_name, model.producer_name);
  for (const Archive::TensorInfo& info : archive.tensors()) {
    const ByteSpan bytes = archive.payload(info).view();
    seen.payloads[info.entry] = Bytes(bytes.begin(), bytes.end());
  }
  return seen;
}

class ArchiveReaderDuringEdit : public ::testing::TestWithParam<FileAccess> {};

INSTANTIATE_TEST_SUITE_P(Access, ArchiveReaderDuringEdit,
                         ::testing::Values(FileAccess::kMap, FileAccess::kRead,
                                           FileAccess::kMapPrivate));

// Issue 32 defects 1 to 4: for each step of an edit (growing the model, then shrinking it) and
// each of the reader's reads, the step lands just before that read; then the edit finishes.
TEST_P(ArchiveReaderDuringEdit, GetsTheOldOrTheNewArchiveOrChangedAtEveryRead) {
  ScratchDir dir("reader_edit");
  const fs::path path = dir / "m.onnxz";
  const ModelProto small = model_named("small", 10);
  const ModelProto big = model_named("big", 300'000);
  std::map<std::string, Bytes> expected_payloads;
  for (const auto& [from, to] : {std::pair{&small, &big}, std::pair{&big, &small}}) {
    save(*from, path);
    const std::vector<Bytes> states = edit_states(path, *to);
    ASSERT_EQ(states.size(), 5u);
    rewrite_in_place(path, states.front(), 0);
    expected_payloads = seen_in(Archive::open(path)).payloads;
    const std::string old_producer = std::string(from->producer_name.value_or(""));
    const std::string new_producer = std::string(to->producer_name.value_or(""));
    std::map<std::string, int> outcomes;
    for (std::size_t step = 1; step < states.size(); ++step) {
      for (int at_read = 0;; ++at_read) {
        SCOPED_TRACE("step " + std::to_string(step) + ", read " + std::to_string(at_read));
        rewrite_in_place(path, states[step - 1], 1);
        int reads = 0;
        bool fired = false;
        std::optional<Seen> seen;
        {
          const ReadHook hook([&](std::uint64_t, std::uint64_t) {
            if (reads++ != at_read) return;
            fired = true;
            rewrite_in_place(path, states[step], 2);
          });
          try {
            const Archive archive = Archive::open(path, {.access = GetParam()});
            // The edit finishes, the file is truncated to its new end: what the open archive
            // hands out is still the archive it opened.
            rewrite_in_place(path, states.back(), 3);
            seen = seen_in(archive);
          } catch (const Error& error) {
            EXPECT_EQ(error.code(), ErrorCode::kChanged) << error.what();
            EXPECT_NE(std::string(error.what()).find(path.string()), std::string::npos);
            ++outcomes["changed"];
          }
        }
        if (seen) {
          EXPECT_TRUE(seen->producer == old_producer || seen->producer == new_producer)
              << seen->producer;
          EXPECT_EQ(seen->payloads, expected_payloads);
          ++outcomes[seen->producer];
        }
        if (!fired) break;  // The open made fewer reads: every read of this step was tried.
      }
    }
    EXPECT_GT(outcomes[old_producer] + outcomes[new_producer], 0);
  }
}

// The tail is read under a shared lock, which an editor's exclusive lock (held for the whole
// edit, spec §9.6) excludes: no edit can run between the reads.
TEST_P(ArchiveReaderDuringEdit, HoldsTheReadersLockWhileItReadsTheTail) {
  ScratchDir dir("reader_lock");
  const fs::path path = dir / "m.onnxz";
  save(model_named("old", 10), path);
  int reads = 0;
  int refused = 0;
  {
    const ReadHook hook([&](std::uint64_t, std::uint64_t) {
      ++reads;
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) ++refused;
      ::close(fd);
    });
    (void)Archive::open(path, {.access = GetParam()});
  }
  EXPECT_GT(reads, 0);
  EXPECT_EQ(refused, reads);
  // And released once the archive is open.
  const Archive archive = Archive::open(path, {.access = GetParam()});
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ::close(fd);
}

// An edit in progress elsewhere (its exclusive lock held) makes the open wait, then fail as
// changed rather than read half an edit.
TEST(SharedFileLock, WaitsForAnEditThenSaysItIsBeingEdited) {
  ScratchDir dir("reader_lock");
  const fs::path path = dir / "m.onnxz";
  save(model_named("old", 10), path);
  const int editor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(editor, 0);
  ASSERT_EQ(::flock(editor, LOCK_EX | LOCK_NB), 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  try {
    const detail::SharedFileLock lock(reader, path.string(), std::chrono::milliseconds(50));
    ADD_FAILURE() << "locked while an edit holds the file";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kChanged);
    EXPECT_EQ(error.message(), path.string() +
                                   ": it is being edited (another process holds its lock for "
                                   "longer than 50 ms)");
  }
  ::flock(editor, LOCK_UN);
  const detail::SharedFileLock lock(reader, path.string(), std::chrono::milliseconds(50));
  EXPECT_TRUE(lock.held());
  ::close(reader);
  ::close(editor);
}

// flock alone would let readers whose shared locks overlap keep an editor out for ever: an editor
// waiting for its lock claims the file, and a reader arriving meanwhile waits behind it.
TEST(SharedFileLock, AReaderArrivingWhileAnEditorWaitsWaitsBehindIt) {
  ScratchDir dir("reader_behind_editor");
  const fs::path path = dir / "m.onnxz";
  save(model_named("old", 10), path);
  const int first_reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int next_reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(first_reader, 0);
  ASSERT_GE(next_reader, 0);
  auto held = std::make_unique<detail::SharedFileLock>(first_reader, path.string());
  ASSERT_TRUE(held->held());

  EditOptions options;
  options.wait = std::chrono::minutes(5);  // It gets the lock once the first reader is done.
  std::thread editor([&] {
    edit_model_properties(
        path, [](ModelProto& model) { model.producer_name = "edited"; }, options);
  });
  // The editor has claimed the file once a reader sees the claim (bounded, for a broken build).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!detail::claimed_for_editing(next_reader) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(detail::claimed_for_editing(next_reader));
  // The file is not locked exclusively yet (the first reader holds it shared), and still the
  // next reader is held back.
  EXPECT_THROW(detail::SharedFileLock(next_reader, path.string(), std::chrono::milliseconds(50)),
               Error);
  held.reset();
  editor.join();
  EXPECT_FALSE(detail::claimed_for_editing(next_reader));
  EXPECT_EQ(load(path).producer_name, "edited");
  ::close(next_reader);
  ::close(first_reader);
}

// A file truncated below the archive's tail but not below its payloads (what an edit to a
// smaller model leaves, spec §9.6) after the open: the model was read at open, the payloads
// lie below the cut, and nothing touches the mapping past it.
TEST_P(ArchiveReaderDuringEdit, ATruncationAfterTheOpenLeavesWhatWasOpened) {
  ScratchDir dir("reader_cut");
  const fs::path path = dir / "m.onnxz";
  save(model_named("old", 300'000), path);
  const std::uint64_t payload_end = [&] {
    std::uint64_t end = 0;
    const ZipReader zip = ZipReader::open(path);
    for (const ZipEntry& e : zip.entries()) {
      if (e.name != kModelEntryName) end = std::max(end, e.end_offset);
    }
    return end;
  }();
  const Seen before = seen_in(Archive::open(path));
  const Archive archive = Archive::open(path, {.access = GetParam()});
  fs::resize_file(path, payload_end);
  const Seen after = seen_in(archive);
  EXPECT_EQ(after.producer, "old");
  EXPECT_EQ(after.payloads, before.payloads);
}

// Issue 32 defect 7: one descriptor per open archive (the mapping's own; none re-opened).
TEST_P(ArchiveReaderDuringEdit, HoldsOneDescriptorPerOpenArchive) {
  ScratchDir dir("reader_fds");
  const fs::path path = dir / "m.onnxz";
  save(model_named("old", 10), path);
  const auto open_descriptors = [] {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
    return count - 1;  // The listing's own.
  };
  const std::size_t before = open_descriptors();
  std::vector<Archive> archives;
  for (int i = 0; i < 8; ++i) archives.push_back(Archive::open(path, {.access = GetParam()}));
  EXPECT_EQ(open_descriptors(), before + 8);
  archives.clear();
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace
}  // namespace onnxzip
