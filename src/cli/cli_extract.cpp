// onnxzip extract and onnxzip view: an archive as a legacy model, copied out or in place.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <system_error>

#include "cli_common.h"
#include "cli_progress.h"
#include "cli_remote.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/internal/http_source.h"
#include "onnxzip/legacy.h"

namespace onnxzip::cli {
namespace {

namespace fs = std::filesystem;

// "model.onnxz" -> "model"; a name that is all extension keeps it ("x" for ".x").
std::string stem_of(const std::string& file) {
  const fs::path name = fs::path(file).filename();
  const std::string stem = name.stem().string();
  return stem.empty() ? name.string() : stem;
}

struct ExtractArgs {
  std::string archive;
  std::string dir;
  bool force = false;
  bool externalize_attributes = false;
  bool externalize_sparse = false;
  InflateLimits limits;
};

// DIR made if needed (returns whether it was), or refused when it is no folder; the files the
// extract writes refused unless --force.
bool prepare_folder(const fs::path& dir, std::initializer_list<fs::path> outputs, bool force) {
  std::error_code ec;
  bool created = false;
  if (!fs::exists(dir, ec)) {
    created = fs::create_directories(dir, ec);
    if (ec) {
      throw Error(ErrorCode::kIo, {.file = dir.string()},
                  "cannot create the folder: " + ec.message());
    }
  } else if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = dir.string()}, "not a folder");
  }
  if (force) return created;
  for (const fs::path& file : outputs) {
    if (fs::exists(fs::symlink_status(file, ec))) {
      throw Error(ErrorCode::kInvalidArgument,
                  file.string() + ": already exists (--force replaces it)");
    }
  }
  return created;
}

int run_extract(const ExtractArgs& args, const GlobalOptions& global) {
  const bool remote = is_remote(args.archive);
  if (!remote) require_archive(args.archive);
  const fs::path dir(args.dir);
  const fs::path model =
      dir / (stem_of(remote ? url_file_name(args.archive) : args.archive) + ".onnx");
  ConvertOptions options;
  options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
  options.load.verify_crc = true;
  options.legacy.output.follow_symlinks = global.follow_symlinks;
  options.legacy.externalize_attributes = args.externalize_attributes;
  options.legacy.externalize_sparse = args.externalize_sparse;
  options.load.limits = args.limits.zip_options();
  options.load.access = global.access();
  const fs::path data = dir / (model.filename().string() + ".data");

  const bool created = prepare_folder(dir, {model, data}, args.force);
  std::error_code ec;
  LegacyWriteResult written;
  try {
    if (remote) {
      // Written while it downloads (convert_remote).
      const std::shared_ptr<const HttpSource> source = open_remote(args.archive, global);
      if (detect_format(*source) != ModelFormat::kOnnxz) {
        throw Error(ErrorCode::kInvalidArgument,
                    source->name() +
                        ": not an .onnxz archive but a legacy model ('onnxzip convert' turns it "
                        "into one)");
      }
      ProgressBar bar("extracting", global.quiet);
      options.legacy.progress = bar.callback();
      written = convert_remote(source, model, options);
    } else {
      ProgressBar bar("extracting", global.quiet);
      options.legacy.progress = bar.callback();
      written = convert(args.archive, model, options).legacy;
    }
  } catch (...) {
    // Leave no trace: a folder made for the output goes again (if the writers left it empty).
    if (created) fs::remove(dir, ec);
    throw;
  }
  note_kept_inline(model.string(), written.kept_inline,
                   {.attribute = "--externalize-attributes", .sparse = "--externalize-sparse"},
                   global);
  if (written.data_files.empty() && !global.quiet) {
    std::fprintf(stderr, "onnxzip: note: %s: no data file: every tensor stays in the model\n",
                 printable(model.string()).c_str());
  }
  return kExitOk;
}

struct ViewArgs {
  std::string archive;
  std::string out;
  InflateLimits limits;
};

int run_view(const ViewArgs& args, const GlobalOptions& global) {
  if (is_remote(args.archive)) {
    throw UsageError(display_url(args.archive) +
                     ": a view points into a local archive file, and this is a URL: download "
                     "it first, or use 'onnxzip extract' or 'onnxzip convert' on the URL");
  }
  require_archive(args.archive);
  const fs::path out = args.out.empty() ? fs::path(args.archive).parent_path() /
                                              (stem_of(args.archive) + ".view.onnx")
                                        : fs::path(args.out);
  // The archive itself as OUT is write_view_model's refusal, which says so.
  if (out.filename() != fs::path(args.archive).filename()) {
    check_output_name(out, ModelFormat::kLegacy);
  }
  LoadOptions options;
  options.limits = args.limits.zip_options();
  options.access = global.access();
  const ViewResult result =
      write_view_model(args.archive, out, options, {.follow_symlinks = global.follow_symlinks});
  // Runtimes refuse attribute and sparse tensors as external data: no flag moves them.
  note_kept_inline(out.string(), result.copied_inline, {}, global);
  if (result.referred_bytes == 0 && !global.quiet) {
    std::fprintf(stderr, "onnxzip: note: %s: a full copy: no weight could point into the archive\n",
                 printable(out.string()).c_str());
  }
  return kExitOk;
}

}  // namespace

Command add_extract_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "extract", "Write an archive as a legacy .onnx model with external data in a folder");
  auto args = std::make_shared<ExtractArgs>();
  sub->add_option("ARCHIVE", args->archive, "The .onnxz archive; never modified")->required();
  sub->add_option("DIR", args->dir, "The folder to write into")->required();
  sub->add_flag("-f,--force", args->force,
                "Replace <name>.onnx and <name>.onnx.data (and <name>.onnx.data.N) in DIR");
  sub->add_flag("--externalize-attributes", args->externalize_attributes,
                "Node attribute tensors (Constant values, weights inside If/Loop branches) go to "
                "the data file too (the reference checker and ONNX Runtime may refuse them)");
  sub->add_flag("--externalize-sparse", args->externalize_sparse,
                "Sparse tensors' values and indices go to the data file too");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "Writes DIR/<name>.onnx and its weights in DIR/<name>.onnx.data (each tensor 4K-aligned),\n"
      "<name> being the archive's name without its extension. DIR is created if needed; other\n"
      "files in it are left alone, but an earlier extract's data file that the new model does\n"
      "not use goes with the old model. Tensors in node attributes (Constant values) and\n"
      "sparse tensors stay in the model unless asked (a note says so). The reference onnx\n"
      "package and ONNX Runtime load the result.\n\n"
      "Example:\n"
      "  onnxzip extract model.onnxz out/    # writes out/model.onnx, out/model.onnx.data");
  return {sub, [args, &global] { return run_extract(*args, global); }};
}

Command add_view_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "view", "Write an .onnx that uses the archive's weights in place (external data)");
  auto args = std::make_shared<ViewArgs>();
  sub->add_option("ARCHIVE", args->archive, "The .onnxz archive; never modified")->required();
  sub->add_option("OUT", args->out,
                  "The view to write, in the archive's folder (default: <name>.view.onnx next "
                  "to the archive)");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "The view's initializers refer to their bytes inside the archive itself (external data\n"
      "with the archive as location, offset and length), so runtimes that know ONNX external\n"
      "data but not .onnxz load the archive in place, without extracting it. The view must stay\n"
      "next to the archive. Tensors runtimes refuse as external data (node attributes such as\n"
      "Constant values, sparse tensors), deflated ones and those under 1 KiB are copied into\n"
      "the view; a note says so.\n\n"
      "Example:\n"
      "  onnxzip view model.onnxz    # writes model.view.onnx\n"
      "  python3 -c \"import onnxruntime as ort; ort.InferenceSession('model.view.onnx')\"");
  return {sub, [args, &global] { return run_view(*args, global); }};
}

}  // namespace onnxzip::cli
