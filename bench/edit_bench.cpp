// onnxzip edit against cp (issue 11, part 2): changing one metadata string of a 1 GiB and a 4 GiB
// archive (1,000 tensors) takes the model entry and the central directory, not the weights, so
// its goal is at most 5% of the time cp takes to copy the archive. Edits (the tool as a user runs
// it, durable by default and with --no-sync; the library calls replace_model, durable and not, and
// edit_model_properties, which the tool's metadata flags call) and cp alternate in one loop so
// that both see the same moment of a shared machine; medians are printed with how cp copied.
//
//   build-rel/bench/edit_bench [ROUNDS]     (default 7; scratch under ONNXZIP_BENCH_DIR or TMPDIR)
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.h"
#include "onnxzip/archive.h"
#include "onnxzip/edit.h"
#include "onnxzip/onnx_codec.h"

namespace onnxzip::bench {
namespace {

constexpr std::size_t kTensorCount = 1000;
constexpr std::uint64_t kPiece = 4 * kMiB;

// An archive of `scale` GiB: 1,000 FLOAT tensors and a chain of Mul nodes, streamed.
void write_archive(const fs::path& path, std::uint64_t scale) {
  ModelProto model;
  model.ir_version = 8;
  model.producer_name = "onnxzip edit_bench";
  model.opset_import.emplace_back().version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = "chain";
  ArchiveWriter writer(path);
  std::vector<std::uint8_t> piece(kPiece);
  const std::uint64_t floats = scale * kGiB / 4 / kTensorCount;
  for (std::size_t i = 0; i < kTensorCount; ++i) {
    const std::string name = "weight_" + std::to_string(i);
    const std::vector<std::int64_t> dims = {static_cast<std::int64_t>(floats)};
    const TensorRef ref = writer.add_tensor(name, TensorProto::kFloat, dims, [&](EntrySink& sink) {
      for (std::uint64_t at = 0; at < floats * 4; at += kPiece) {
        const auto n = static_cast<std::size_t>(std::min(kPiece, floats * 4 - at));
        fill_random_ish(i, at, MutableByteSpan(piece).first(n));
        sink.write(ByteSpan(piece).first(n));
      }
    });
    TensorProto& t = graph.initializer.emplace_back();
    t.name = name;
    t.data_type = TensorProto::kFloat;
    t.dims = dims;
    ref.apply_to(t);
    NodeProto& node = graph.node.emplace_back();
    node.op_type = "Mul";
    node.input = {"x" + std::to_string(i), name};
    node.output = {"x" + std::to_string(i + 1)};
  }
  writer.finish(model);
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The onnxzip tool next to this program in the build tree.
fs::path cli_path() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  return self.parent_path().parent_path() / "src" / "cli" / "onnxzip";
}

void run(int rounds) {
  ScratchFolder folder("edit_bench");
  const fs::path cli = cli_path();
  const bool have_cli = fs::exists(cli);
  {
    // A 1 MiB probe file: cp_copy_method traces how cp copies it in this folder.
    const fs::path probe = folder / "cp_probe.bin";
    const std::vector<std::uint8_t> bytes(kMiB, 7);
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    if (f != nullptr) {
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    std::printf("cp copies with: %s\n", cp_copy_method(probe, folder.path()).c_str());
    fs::remove(probe);
  }
  if (!have_cli) std::printf("(no onnxzip tool at %s: library calls only)\n", cli.c_str());
  std::printf("%-8s %10s %12s %14s %12s %12s %12s %9s %9s\n", "archive", "cp", "edit (CLI)",
              "edit --no-sync", "lib replace", "lib no-sync", "lib props", "CLI / cp", "best/cp");
  for (const std::uint64_t scale : {std::uint64_t{1}, std::uint64_t{4}}) {
    const fs::path archive = folder / ("model_" + std::to_string(scale) + "g.onnxz");
    write_archive(archive, scale);
    folder.settle();
    ModelProto model =
        parse_model(Archive::open(archive).model_bytes(), ParseOptions{}, archive.string());
    std::vector<double> cp, cli_durable, cli_fast, library, library_fast, library_properties;
    const fs::path copy = folder / "cp_copy.onnxz";
    for (int round = 0; round < rounds; ++round) {
      const std::string value = "v" + std::to_string(round);
      if (have_cli) {
        cli_durable.push_back(seconds_of([&] {
          run_program({cli.string(), "edit", archive.string(), "--set-metadata", "k=" + value});
        }));
        cli_fast.push_back(seconds_of([&] {
          run_program({cli.string(), "edit", archive.string(), "--set-metadata", "k=" + value + "b",
                       "--no-sync"});
        }));
      }
      model.producer_version = value;
      library.push_back(seconds_of([&] { replace_model(archive, model); }));
      model.producer_version = value + "b";
      library_fast.push_back(seconds_of([&] {
        replace_model(archive, model, {.output = {.durable = false, .follow_symlinks = true}});
      }));
      // What the CLI's metadata flags call: the graph is kept as bytes, not parsed.
      library_properties.push_back(seconds_of([&] {
        edit_model_properties(archive, [&](ModelProto& m) { m.producer_version = value + "c"; });
      }));
      cp.push_back(seconds_of([&] { run_cp(archive, copy); }));
      fs::remove(copy);
      folder.settle();
    }
    const double cp_s = median(cp);
    const double cli_s = have_cli ? median(cli_durable) : 0;
    const double cli_fast_s = have_cli ? median(cli_fast) : 0;
    const double best = have_cli ? std::min(cli_s, cli_fast_s) : median(library);
    std::printf("%-8s %9.1fms %10.1fms %12.1fms %10.1fms %10.1fms %10.1fms %8.2f%% %8.2f%%\n",
                (std::to_string(scale) + " GiB").c_str(), cp_s * 1e3, cli_s * 1e3, cli_fast_s * 1e3,
                median(library) * 1e3, median(library_fast) * 1e3, median(library_properties) * 1e3,
                100 * cli_s / cp_s, 100 * best / cp_s);
    fs::remove(archive);
  }
  std::printf("goal: edit --set-metadata at most 5%% of cp (medians of %d alternating rounds)\n",
              rounds);
}

}  // namespace
}  // namespace onnxzip::bench

int main(int argc, char** argv) {
  try {
    onnxzip::bench::run(argc > 1 ? std::max(1, std::atoi(argv[1])) : 7);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edit_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
