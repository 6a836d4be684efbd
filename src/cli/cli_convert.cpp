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
#include "onnxzip/internal/http_source.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/internal/zip_reader.h"
#include "onnxzip/legacy.h"
#include "onnxzip/s3_options.h"

namespace onnxzip::cli {
namespace {

// The flags of a write into a bucket (OUT is s3://bucket/key).
struct S3WriteArgs {
  SizeOption part_size;
  bool fixed_part_size = false;
  unsigned parts_in_flight = S3Options{}.parts_in_flight;
  bool overwrite = false;
};

void add_s3_write_options(CLI::App& sub, S3WriteArgs& args) {
  add_size_option(sub, "--part-size", args.part_size,
                  "To s3://: the size of each part of the upload, 5M to 5G (default 64M); past "
                  "1,000 parts each next 1,000 are twice as large");
  sub.add_flag("--fixed-part-size", args.fixed_part_size,
               "To s3://: every part but the last exactly --part-size (Cloudflare R2 needs it); "
               "refuses an archive of more than 10,000 parts");
  sub.add_option("--parts-in-flight", args.parts_in_flight,
                 "To s3://: parts uploaded at once (default 4); memory stays within that many "
                 "parts plus two")
      ->check(CLI::Range(1U, 64U));
  sub.add_flag("--overwrite", args.overwrite,
               "To s3://: replace an existing object (by default the upload completes only if "
               "none has the key)");
}

// The upload's settings; the store, region and keys come from the AWS environment and files.
S3Options s3_write_options(const S3WriteArgs& args, const std::string& out) {
  S3Options options;
  if (const std::optional<std::uint64_t> part_size = args.part_size.value()) {
    if (*part_size < kS3MinPartSize || *part_size > kS3MaxPartSize) {
      throw UsageError("--part-size: must be from 5M to 5G (S3's limits for a part)");
    }
    options.part_size = *part_size;
  }
  options.fixed_part_size = args.fixed_part_size;
  options.parts_in_flight = args.parts_in_flight;
  options.overwrite = args.overwrite;
  const bool given = args.part_size.value() || args.fixed_part_size || args.overwrite ||
                     args.parts_in_flight != S3Options{}.parts_in_flight;
  if (given && !is_s3_url(out)) {
    throw UsageError(
        "--part-size, --fixed-part-size, --parts-in-flight and --overwrite apply to "
        "an s3:// OUT only");
  }
  return options;
}

struct ConvertArgs {
  std::string in;
  std::string out;
  SizeOption alignment;
  SizeOption threshold;
  std::vector<std::string> external_data;  // Empty, or one value ("" for the default name).
  SizeOption max_file_size;
  bool externalize_attributes = false;
  bool externalize_sparse = false;
  bool dedupe = false;
  bool digests = false;
  InflateLimits limits;
  S3WriteArgs s3;
};

// The flags' values, checked before the input is looked at (usage errors, whatever the input).
struct ConvertValues {
  std::optional<std::uint64_t> alignment;
  std::optional<std::uint64_t> threshold;
  std::optional<std::uint64_t> max_file_size;
  bool external = false;  // --external-data given, with or without a name.
  std::string data_file;
};

ConvertValues convert_values(const ConvertArgs& args, const CLI::Option& external_data_option) {
  ConvertValues values;
  values.alignment = args.alignment.value();
  values.threshold = args.threshold.value();
  values.max_file_size = args.max_file_size.value();
  if (values.max_file_size == 0) throw UsageError("--max-file-size: must be more than 0 bytes");
  values.external = external_data_option.count() > 0;
  values.data_file = args.external_data.empty() ? "" : args.external_data.front();
  if (!values.data_file.empty()) require_plain_file_name(values.data_file, "--external-data");
  return values;
}

// Flags for the other direction are usage errors naming the direction IN converts in.
void refuse_flag(bool given, const char* flag, const ConvertArgs& args, bool to_archive) {
  if (!given) return;
  throw UsageError(std::string(flag) +
                   (to_archive ? " applies to conversions to a legacy .onnx; " + args.in +
                                     " is a legacy model, so it converts to .onnxz"
                               : " applies to conversions to .onnxz; " + args.in +
                                     " is an .onnxz archive, so it converts to a legacy .onnx"));
}

void set_archive_options(const ConvertArgs& args, const ConvertValues& values,
                         SaveOptions& archive) {
  refuse_flag(values.external, "--external-data", args, true);
  refuse_flag(values.max_file_size.has_value(), "--max-file-size", args, true);
  refuse_flag(args.externalize_attributes, "--externalize-attributes", args, true);
  if (values.alignment) {
    require_power_of_two(*values.alignment, 64, 65536, "--alignment");
    archive.alignment = static_cast<std::uint32_t>(*values.alignment);
  }
  if (values.threshold) archive.threshold = *values.threshold;
  archive.dedupe = args.dedupe;
  archive.digests = args.digests;
  archive.externalize_sparse = args.externalize_sparse;
}

void set_legacy_options(const ConvertArgs& args, const ConvertValues& values,
                        LegacyWriteOptions& legacy) {
  refuse_flag(args.digests, "--digests", args, false);
  refuse_flag(args.dedupe, "--dedupe", args, false);
  if (values.alignment) {
    require_power_of_two(*values.alignment, 1, std::uint64_t{1} << 30, "--alignment");
    legacy.alignment = *values.alignment;
  }
  if (values.threshold) legacy.threshold = *values.threshold;
  if (values.external || values.max_file_size || args.externalize_attributes ||
      args.externalize_sparse) {
    legacy.mode = LegacyWriteOptions::Mode::kExternal;
  }
  legacy.data_file_name = values.data_file;
  if (values.max_file_size) legacy.max_file_size = *values.max_file_size;
  legacy.externalize_attributes = args.externalize_attributes;
  legacy.externalize_sparse = args.externalize_sparse;
}

// What the legacy writer did that the user may not expect: tensors it kept inline, data files
// of an earlier write it removed.
void note_legacy_write(const std::string& out, const LegacyWriteResult& result,
                       const GlobalOptions& global) {
  note_kept_inline(out, result.kept_inline,
                   {.attribute = "--externalize-attributes", .sparse = "--externalize-sparse"},
                   global);
  if (global.quiet) return;
  for (const std::string& name : result.removed_data_files) {
    std::fprintf(stderr, "onnxzip: note: %s: removed %s, an earlier model's data file\n",
                 printable(out).c_str(), printable(name).c_str());
  }
}

int run_convert(const ConvertArgs& args, const CLI::Option& external_data_option,
                const GlobalOptions& global) {
  const ConvertValues values = convert_values(args, external_data_option);
  // An archive at a URL is written while it downloads (convert_remote); a legacy model is
  // downloaded first (cli_remote.h) and converted as a local file.
  std::shared_ptr<const HttpSource> source;
  if (is_remote(args.in)) source = open_remote(args.in, global);
  const ModelFormat from = source ? detect_format(*source) : detect_format(args.in);
  const bool to_archive = from == ModelFormat::kLegacy;

  ConvertOptions options;
  options.load.verify_crc = true;  // A damaged archive must not convert into a damaged model.
  options.load.limits = args.limits.zip_options();
  options.load.access = global.access();
  options.read.access = global.access();
  options.archive.output.follow_symlinks = global.follow_symlinks;
  options.archive.s3 = s3_write_options(args.s3, args.out);
  options.legacy.output.follow_symlinks = global.follow_symlinks;
  if (to_archive) {
    set_archive_options(args, values, options.archive);
  } else {
    set_legacy_options(args, values, options.legacy);
  }
  // convert() applies the output name rule; a URL's input is checked here, before it downloads.
  if (source) check_output_name(args.out, to_archive ? ModelFormat::kOnnxz : ModelFormat::kLegacy);
  std::optional<Download> fetched;
  if (source && to_archive) {
    fetched = download(*source, global, "downloading");
    options.read.source_name = fetched->shown;  // Messages name the URL, not the download.
    source.reset();
  }
  LegacyWriteResult written;
  {
    ProgressBar bar("converting", global.quiet);
    options.archive.progress = bar.callback();
    options.legacy.progress = options.archive.progress;
    if (source) {
      written = convert_remote(source, args.out, options);
    } else {
      written = convert(fetched ? fetched->path : args.in, args.out, options).legacy;
    }
  }
  note_legacy_write(args.out, written, global);
  return kExitOk;
}

struct RepackArgs {
  std::string in;
  std::string out;
  SizeOption alignment;
  SizeOption threshold;
  bool digests = false;
  InflateLimits limits;
  S3WriteArgs s3;
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
  options.s3 = s3_write_options(args.s3, args.out);
  options.digests = args.digests;
  const ZipReaderOptions zip_options = args.limits.zip_options();
  RepackResult result;
  {
    ProgressBar bar("repacking", global.quiet);
    options.progress = bar.callback();
    result = repack(args.in, args.out,
                    {.save = options, .limits = zip_options, .access = global.access()});
  }
  if (!global.quiet) {
    for (const std::string& name : result.dropped_entries) {
      // A folder entry (what `zip -r` records for each folder) holds no data to refer to.
      const char* why = name.ends_with('/') ? "a folder" : "no tensor refers to it";
      std::fprintf(stderr, "onnxzip: note: %s: entry '%s' left out: %s\n",
                   printable(args.in).c_str(), printable(name).c_str(), why);
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
  sub->add_flag("--externalize-attributes", args->externalize_attributes,
                "To .onnx: node attribute tensors (Constant values, weights inside If/Loop "
                "branches) go to the data file too; implies --external-data. The reference "
                "checker's shape inference and ONNX Runtime may refuse such a model");
  sub->add_flag("--externalize-sparse", args->externalize_sparse,
                "To .onnx: sparse tensors' values and indices go to the data file too (implies "
                "--external-data); to .onnxz: they become entries");
  sub->add_flag("--dedupe", args->dedupe,
                "To .onnxz: store identical tensors once, all referring to one entry");
  sub->add_flag("--digests", args->digests,
                "To .onnxz: also write __DIGESTS, the SHA-256 of every entry, hashed as it is "
                "written (sign it with 'onnxzip sign')");
  add_inflate_limit_options(*sub, args->limits);
  add_s3_write_options(*sub, args->s3);
  sub->footer(
      "The direction comes from IN's content; OUT's name must agree with it: .onnxz names an\n"
      "archive, .onnx a legacy model (other names take either). A legacy model may keep its\n"
      "weights inline or in external data files; every form is read. A legacy output gets its\n"
      "weights inline when it fits protobuf's 2 GiB, otherwise in external data next to it;\n"
      "with external data, tensors in node attributes and sparse tensors stay inline unless\n"
      "asked (a note says so), and an earlier model's data file that the new one does not\n"
      "use is removed with the old model. OUT may be s3://bucket/key (to .onnxz): the archive\n"
      "is uploaded as it is written, in parts, and appears complete or not at all (Ctrl-C\n"
      "aborts the upload).\n" +
      std::string(kSizeSyntax) +
      ".\n\n"
      "Examples:\n"
      "  onnxzip convert model.onnx model.onnxz\n"
      "  onnxzip convert model.onnxz model.onnx --external-data weights.bin "
      "--max-file-size 2G\n"
      "  onnxzip convert model.onnx s3://models/resnet50.onnxz --part-size 128M");
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
  add_s3_write_options(*sub, args->s3);
  sub->footer(
      "IN holds the model in an entry named __MODEL_PROTO, at the top or in a folder at any\n"
      "depth (its locations are then relative to that folder); its entries may be deflated or\n"
      "unaligned, have data descriptors, come in any order. Entries keep their names; every\n"
      "CRC-32 is checked. Entries no tensor refers to are left out (with a note). OUT may be\n"
      "s3://bucket/key (uploaded as it is written).\n" +
      std::string(kSizeSyntax) +
      ".\n\n"
      "Example:\n"
      "  cd model_folder && zip -r ../model.zip . && cd ..\n"
      "  onnxzip repack model.zip model.onnxz");
  return {sub, [args, &global] { return run_repack(*args, global); }};
}

}  // namespace onnxzip::cli
