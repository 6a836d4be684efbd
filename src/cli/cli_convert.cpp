// onnxzip convert and onnxzip repack.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_progress.h"
#include "cli_remote.h"
#include "onnxzip/convert.h"

namespace onnxzip::cli {
namespace {

struct ConvertArgs {
  std::string in;
  std::string out;
  SizeOption alignment;
  SizeOption threshold;
  std::vector<std::string> external_data;  // Empty, or one value ("" for the default name).
  SizeOption max_file_size;
  bool dedupe = false;
  bool digests = false;
  InflateLimits limits;
};

int run_convert(const ConvertArgs& args, const CLI::Option& external_data_option,
                const GlobalOptions& global) {
  // Values first (usage errors, whatever the input), then the direction (which needs the input).
  const std::optional<std::uint64_t> alignment = args.alignment.value();
  const std::optional<std::uint64_t> threshold = args.threshold.value();
  const std::optional<std::uint64_t> max_file_size = args.max_file_size.value();
  if (max_file_size == 0) throw UsageError("--max-file-size: must be more than 0 bytes");
  const bool external = external_data_option.count() > 0;
  const std::string data_file = args.external_data.empty() ? "" : args.external_data.front();
  if (!data_file.empty()) require_plain_file_name(data_file, "--external-data");

  ConvertOptions options;
  options.load.verify_crc = true;  // A damaged archive must not convert into a damaged model.
  options.load.zip = args.limits.zip_options();
  options.load.access = global.access();
  options.read.access = global.access();
  // An archive at a URL is written while it downloads (convert_remote); a legacy model is
  // downloaded first (cli_remote.h) and converted as a local file.
  std::shared_ptr<const HttpSource> source;
  std::optional<Download> fetched;
  if (is_remote(args.in)) {
    source = open_remote(args.in, global);
    if (detect_format(*source) == ModelFormat::kLegacy) {
      fetched = download(*source, global, "downloading");
      source.reset();
    }
  }
  const std::string in = fetched ? fetched->path : args.in;
  const ModelFormat from = source ? ModelFormat::kOnnxz : detect_format(in);
  if (from == ModelFormat::kLegacy) {
    if (external || max_file_size) {
      throw UsageError(std::string(external ? "--external-data" : "--max-file-size") +
                       " applies to conversions to a legacy .onnx; " + args.in +
                       " is a legacy model, so it converts to .onnxz");
    }
    if (alignment) {
      require_power_of_two(*alignment, 64, 65536, "--alignment");
      options.archive.alignment = static_cast<std::uint32_t>(*alignment);
    }
    if (threshold) options.archive.threshold = *threshold;
    options.archive.dedupe = args.dedupe;
    options.archive.digests = args.digests;
  } else {
    if (args.digests) {
      throw UsageError("--digests applies to conversions to .onnxz; " + args.in +
                       " is an .onnxz archive, so it converts to a legacy .onnx");
    }
    if (args.dedupe) {
      throw UsageError("--dedupe applies to conversions to .onnxz; " + args.in +
                       " is an .onnxz archive, so it converts to a legacy .onnx");
    }
    if (alignment) {
      require_power_of_two(*alignment, 1, std::uint64_t{1} << 30, "--alignment");
      options.legacy.alignment = *alignment;
    }
    if (threshold) options.legacy.threshold = *threshold;
    if (external || max_file_size) options.legacy.mode = LegacyWriteOptions::Mode::kExternal;
    options.legacy.data_file_name = data_file;
    if (max_file_size) options.legacy.max_file_size = *max_file_size;
  }

  options.archive.output.follow_symlinks = global.follow_symlinks;
  options.legacy.output.follow_symlinks = global.follow_symlinks;
  ProgressBar bar("converting", global.quiet);
  options.progress = bar.callback();
  if (source) {
    convert_remote(source, args.out, options);
  } else {
    convert(in, args.out, options);
  }
  return kExitOk;
}

struct RepackArgs {
  std::string in;
  std::string out;
  SizeOption alignment;
  SizeOption threshold;
  bool digests = false;
  InflateLimits limits;
};

int run_repack(const RepackArgs& args, const GlobalOptions& global) {
  SaveOptions options;
  if (const std::optional<std::uint64_t> alignment = args.alignment.value()) {
    require_power_of_two(*alignment, 64, 65536, "--alignment");
    options.alignment = static_cast<std::uint32_t>(*alignment);
  }
  if (const std::optional<std::uint64_t> threshold = args.threshold.value()) {
    options.threshold = *threshold;
  }
  options.output.follow_symlinks = global.follow_symlinks;
  options.digests = args.digests;
  const ZipReaderOptions zip_options = args.limits.zip_options();
  RepackResult result;
  {
    ProgressBar bar("repacking", global.quiet);
    options.progress = bar.callback();
    result = repack(args.in, args.out, options, zip_options, global.access());
  }
  if (!global.quiet) {
    for (const std::string& name : result.dropped_entries) {
      std::fprintf(stderr, "onnxzip: note: %s: entry '%s' left out: no tensor refers to it\n",
                   args.in.c_str(), printable(name).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

Command add_convert_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "convert", "Convert a legacy .onnx model to .onnxz, or an .onnxz archive to a legacy .onnx");
  auto args = std::make_shared<ConvertArgs>();
  sub->add_option("IN", args->in, "The model to convert (.onnx or .onnxz); never modified")
      ->required();
  sub->add_option("OUT", args->out, "The file to write (replaced if it exists)")->required();
  add_size_option(*sub, "--alignment", args->alignment,
                  "To .onnxz: the entries' data alignment, a power of two from 64 to 64K "
                  "(default 64). To .onnx: the alignment of each tensor's offset in the data "
                  "file (default 4K)");
  add_size_option(*sub, "--threshold", args->threshold,
                  "Tensors smaller than this stay inline in the model (default 1K)");
  CLI::Option* external_data =
      sub->add_option("--external-data", args->external_data,
                      "To .onnx: put the weights in an external data file even when they would "
                      "fit inline; FILE (a plain file name, written next to OUT) defaults to "
                      "'<OUT name>.data'")
          ->expected(0, 1)
          ->type_name("[FILE]");
  add_size_option(*sub, "--max-file-size", args->max_file_size,
                  "To .onnx: start a new data file (FILE.1, FILE.2...) before one would grow past "
                  "SIZE; implies --external-data. A tensor is never split");
  sub->add_flag("--dedupe", args->dedupe,
                "To .onnxz: store identical tensors once, all referring to one entry");
  sub->add_flag("--digests", args->digests,
                "To .onnxz: also write __DIGESTS, the SHA-256 of every entry, hashed as it is "
                "written (sign it with 'onnxzip sign')");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "The direction comes from IN's content, not its name. A legacy model may keep its\n"
      "weights inline or in external data files; every form is read. A legacy output gets its\n"
      "weights inline when it fits protobuf's 2 GiB, otherwise in external data next to it.\n" +
      std::string(kSizeSyntax) +
      ".\n\n"
      "Examples:\n"
      "  onnxzip convert model.onnx model.onnxz\n"
      "  onnxzip convert model.onnxz model.onnx --external-data weights.bin "
      "--max-file-size 2G");
  return {sub,
          [args, external_data, &global] { return run_convert(*args, *external_data, global); }};
}

Command add_repack_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "repack", "Make a conforming .onnxz from a ZIP of an ONNX model that another tool made");
  auto args = std::make_shared<RepackArgs>();
  sub->add_option("IN", args->in, "The ZIP archive; never modified")->required();
  sub->add_option("OUT", args->out, "The .onnxz to write (replaced if it exists)")->required();
  add_size_option(*sub, "--alignment", args->alignment,
                  "The entries' data alignment, a power of two from 64 to 64K (default 64)");
  add_size_option(*sub, "--threshold", args->threshold,
                  "Inline tensors of at least this size become entries (default 1K)");
  sub->add_flag("--digests", args->digests,
                "Also write __DIGESTS, the SHA-256 of every entry, hashed as it is written (sign "
                "it with 'onnxzip sign'); IN's own __DIGESTS and __SIGNATURE are never copied");
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "IN holds the model in an entry named __MODEL_PROTO, at the top or in a folder at any\n"
      "depth (its locations are then relative to that folder); its entries may be deflated or\n"
      "unaligned, have data descriptors, come in any order. Entries keep their names; every\n"
      "CRC-32 is checked. Entries no tensor refers to are left out (with a note).\n" +
      std::string(kSizeSyntax) +
      ".\n\n"
      "Example:\n"
      "  cd model_folder && zip -r ../model.zip . && cd ..\n"
      "  onnxzip repack model.zip model.onnxz");
  return {sub, [args, &global] { return run_repack(*args, global); }};
}

}  // namespace onnxzip::cli
