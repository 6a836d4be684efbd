// onnxzip extract and onnxzip view: an archive as a legacy model, copied out or in place.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "cli_common.h"
#include "cli_progress.h"
#include "cli_remote.h"
#include "onnxzip/archive.h"
#include "onnxzip/convert.h"
#include "onnxzip/error.h"
#include "onnxzip/legacy.h"

namespace onnxzip::cli {
namespace {

namespace fs = std::filesystem;

void require_archive(const std::string& file) {
  if (detect_format(file) != ModelFormat::kOnnxz) {
    throw Error(ErrorCode::kInvalidArgument,
                file +
                    ": not an .onnxz archive but a legacy model ('onnxzip convert' turns it "
                    "into one)");
  }
}

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
  InflateLimits limits;
};

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
  options.load.zip = args.limits.zip_options();
  options.load.access = global.access();
  const fs::path data = dir / (model.filename().string() + ".data");

  std::error_code ec;
  bool created = false;
  if (!fs::exists(dir, ec)) {
    created = fs::create_directories(dir, ec);
    if (ec) {
      throw Error(ErrorCode::kIo, {.file = args.dir}, "cannot create the folder: " + ec.message());
    }
  } else if (!fs::is_directory(dir, ec)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = args.dir}, "not a folder");
  }
  if (!args.force) {
    for (const fs::path& file : {model, data}) {
      if (fs::exists(fs::symlink_status(file, ec))) {
        throw Error(ErrorCode::kInvalidArgument,
                    file.string() + ": already exists (--force replaces it)");
      }
    }
  }
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
      options.progress = bar.callback();
      convert_remote(source, model, options);
    } else {
      ProgressBar bar("extracting", global.quiet);
      options.progress = bar.callback();
      convert(args.archive, model, options);
    }
  } catch (...) {
    // Leave no trace: a folder made for the output goes again (if the writers left it empty).
    if (created) fs::remove(dir, ec);
    throw;
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
  LoadOptions options;
  options.zip = args.limits.zip_options();
  options.access = global.access();
  write_view_model(args.archive, out, options, {.follow_symlinks = global.follow_symlinks});
  return kExitOk;
}

}  // namespace

Command add_extract_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "extract", "Write an archive as a legacy .onnx model with external data in a folder");
  auto args = std::make_shared<ExtractArgs>();
  sub->add_option("ARCHIVE", args->archive, "The .onnxz archive; never modified")->required();
  sub->add_option("DIR", args->dir, "The folder to write into")->required();
  sub->add_flag("-f,--force", args->force, "Replace <name>.onnx and <name>.onnx.data in DIR");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "Writes DIR/<name>.onnx and its weights in DIR/<name>.onnx.data (each tensor 4K-aligned),\n"
      "<name> being the archive's name without its extension. DIR is created if needed; other\n"
      "files in it are left alone. The reference onnx package and ONNX Runtime load the result.\n\n"
      "Example:\n"
      "  onnxzip extract model.onnxz out/    # writes out/model.onnx, out/model.onnx.data");
  return {sub, [args, &global] { return run_extract(*args, global); }};
}

Command add_view_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "view", "Write a small .onnx that uses the archive's weights in place (external data)");
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
      "next to the archive.\n\n"
      "Example:\n"
      "  onnxzip view model.onnxz    # writes model.view.onnx\n"
      "  python3 -c \"import onnxruntime as ort; ort.InferenceSession('model.view.onnx')\"");
  return {sub, [args, &global] { return run_view(*args, global); }};
}

}  // namespace onnxzip::cli
