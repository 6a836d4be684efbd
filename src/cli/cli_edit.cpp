// onnxzip edit: a new model for an archive, in place (edit.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_progress.h"
#include "onnxzip/archive.h"
#include "onnxzip/edit.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/onnx_codec.h"

namespace onnxzip::cli {
namespace {

struct EditArgs {
  std::string archive;
  std::vector<std::string> set_metadata;
  std::vector<std::string> remove_metadata;
  std::string producer;
  std::string doc;
  std::string model;
  bool compact = false;
  bool no_sync = false;
  std::string key;
  LockWait wait;
};

struct MetadataSet {
  std::string key;
  std::string value;
};

std::vector<MetadataSet> parse_sets(const std::vector<std::string>& texts) {
  std::vector<MetadataSet> sets;
  for (const std::string& text : texts) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw UsageError("--set-metadata: '" + printable(text) + "' is not KEY=VALUE");
    }
    sets.push_back({text.substr(0, equals), text.substr(equals + 1)});
  }
  return sets;
}

void set_metadata(ModelProto& model, const MetadataSet& set) {
  auto& props = model.metadata_props;
  const auto is_key = [&](const StringStringEntryProto& entry) {
    return entry.key && *entry.key == set.key;
  };
  const auto first = std::find_if(props.begin(), props.end(), is_key);
  if (first == props.end()) {
    StringStringEntryProto& entry = props.emplace_back();
    entry.key = set.key;
    entry.value = set.value;
    return;
  }
  first->value = set.value;
  // A key given twice would leave readers to pick one: the value set is the only one.
  props.erase(std::remove_if(first + 1, props.end(), is_key), props.end());
}

// What the flags ask for, checked before anything is read.
struct EditPlan {
  std::vector<MetadataSet> sets;
  std::set<std::string> removed;
  std::optional<std::string> producer;  // NAME[:VERSION]
  std::optional<std::string> doc;
  std::optional<std::string> model_file;  // The model to store instead of the archive's own.
};

EditPlan plan_edit(const EditArgs& args, const CLI::Option& producer_option,
                   const CLI::Option& doc_option, const CLI::Option& model_option) {
  EditPlan plan;
  plan.sets = parse_sets(args.set_metadata);
  for (const std::string& key : args.remove_metadata) {
    if (key.empty()) throw UsageError("--remove-metadata: the key is empty");
    plan.removed.insert(key);
  }
  for (const MetadataSet& set : plan.sets) {
    if (plan.removed.contains(set.key)) {
      throw UsageError("metadata key '" + printable(set.key) +
                       "' is both set (--set-metadata) and removed (--remove-metadata)");
    }
  }
  if (producer_option.count() > 0) {
    if (args.producer.empty()) throw UsageError("--producer: the name is empty");
    plan.producer = args.producer;
  }
  if (doc_option.count() > 0) plan.doc = args.doc;
  if (model_option.count() > 0) plan.model_file = args.model;
  if (plan.sets.empty() && plan.removed.empty() && !plan.producer && !plan.doc &&
      !plan.model_file) {
    throw UsageError(
        "nothing to change: give --set-metadata, --remove-metadata, --producer, --doc or --model");
  }
  return plan;
}

void apply_edit(ModelProto& model, const EditPlan& plan, const std::string& archive) {
  for (const std::string& key : plan.removed) {
    const auto before = model.metadata_props.size();
    std::erase_if(model.metadata_props, [&](const StringStringEntryProto& entry) {
      return entry.key && *entry.key == key;
    });
    if (model.metadata_props.size() == before) {
      throw Error(ErrorCode::kNotFound,
                  archive + ": the model has no metadata key '" + printable(key) + "'");
    }
  }
  for (const MetadataSet& set : plan.sets) set_metadata(model, set);
  if (plan.producer) {
    // NAME[:VERSION]: a version is what follows the last colon.
    const std::size_t colon = plan.producer->rfind(':');
    model.producer_name = plan.producer->substr(0, colon);
    if (colon == std::string::npos) {
      model.producer_version.reset();
    } else {
      model.producer_version = plan.producer->substr(colon + 1);
    }
  }
  if (plan.doc) model.doc_string = *plan.doc;
}

int run_edit(const EditArgs& args, const CLI::Option& producer_option,
             const CLI::Option& doc_option, const CLI::Option& model_option,
             const GlobalOptions& global) {
  const EditPlan plan = plan_edit(args, producer_option, doc_option, model_option);
  // An object in a bucket is edited there (edit.h); its open says whether it is an archive.
  if (!is_s3_url(args.archive)) require_archive(args.archive);
  // --model FILE: a legacy .onnx whose tensors refer to the archive's entries, parsed into owned
  // memory (the edit rewrites its bytes).
  std::optional<ModelProto> replacement;
  if (plan.model_file) {
    replacement = parse_model_file(*plan.model_file);
    apply_edit(*replacement, plan, args.archive);
  }

  EditOptions options;
  options.compact = args.compact;
  options.output.durable = !args.no_sync;
  options.wait = args.wait.duration();
  if (!args.key.empty()) options.signing_key = PrivateKey::load(args.key);
  EditResult result;
  {
    ProgressBar bar("editing", global.quiet);
    options.progress = bar.callback();
    // The archive's own model is read, changed and replaced under one open of the file; the
    // flags other than --model change its properties only, so its graph is neither parsed nor
    // rewritten.
    result = replacement
                 ? replace_model(args.archive, *replacement, options)
                 : edit_model_properties(
                       args.archive,
                       [&](ModelProto& model) { apply_edit(model, plan, args.archive); }, options);
  }
  if (!global.quiet) {
    if (result.signature_removed) {
      std::fprintf(stderr,
                   "onnxzip: note: %s: __SIGNATURE removed: it signed the old model (give --key "
                   "to sign again)\n",
                   printable(args.archive).c_str());
    }
    if (result.object_rewritten) {
      std::fprintf(stderr,
                   "onnxzip: note: %s: uploaded whole: the bytes before the model are under the "
                   "5 MiB a copied part must have\n",
                   printable(args.archive).c_str());
    }
    if (result.digests_removed) {
      std::fprintf(stderr, "onnxzip: note: %s: __DIGESTS removed by the compaction\n",
                   printable(args.archive).c_str());
    }
    for (const std::string& name : result.dropped_entries) {
      std::fprintf(stderr, "onnxzip: note: %s: entry '%s' left out: no tensor refers to it\n",
                   args.archive.c_str(), printable(name).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

Command add_edit_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "edit",
      "Change an .onnxz archive's model (metadata, graph) in place, without moving a weight");
  auto args = std::make_shared<EditArgs>();
  sub->add_option("ARCHIVE", args->archive,
                  "The .onnxz archive to edit, in place (or s3://bucket/key, edited in the "
                  "bucket)")
      ->required();
  sub->add_option("--set-metadata", args->set_metadata,
                  "Set the model's metadata KEY to VALUE, replacing the key's value if it has one "
                  "(repeatable)")
      ->type_name("KEY=VALUE");
  sub->add_option("--remove-metadata", args->remove_metadata,
                  "Remove the metadata KEY (an error when the model has none; repeatable)")
      ->type_name("KEY");
  CLI::Option* producer =
      sub->add_option("--producer", args->producer,
                      "Set producer_name, and producer_version to what follows the last ':' "
                      "(without one, the version is removed)")
          ->type_name("NAME[:VERSION]");
  CLI::Option* doc =
      sub->add_option("--doc", args->doc, "Set the model's doc_string")->type_name("TEXT");
  CLI::Option* model =
      sub->add_option("--model", args->model,
                      "Start from this model instead of the archive's: an ONNX file whose "
                      "tensors refer to the archive's entries by name (e.g. the __MODEL_PROTO "
                      "that unzip leaves, edited and saved without its data)")
          ->type_name("FILE");
  sub->add_flag("--compact", args->compact,
                "When the new model refers to no tensor in some entries, rewrite the archive "
                "without them (instead of refusing the edit)");
  sub->add_option("--key", args->key,
                  "A signed archive: sign its new __DIGESTS with this ECDSA P-256 private key "
                  "(PEM); without it the old signature is removed")
      ->type_name("PRIVATE.pem");
  sub->add_flag("--no-sync", args->no_sync,
                "Do not flush each step to disk: a crash still leaves the old or the new model, "
                "a power loss may not");
  add_wait_option(*sub, args->wait);
  sub->footer(
      "Only __MODEL_PROTO, the central directory and the end records are rewritten: every\n"
      "weight keeps its bytes and offset, so an edit takes milliseconds whatever the archive's\n"
      "size. At every instant the file holds the old model or the new one. The new model's\n"
      "tensors must refer to every entry of the archive (see --compact), with the right sizes.\n"
      "An archive in a bucket (s3://bucket/key) is edited there: the store copies the bytes\n"
      "before the model, the new tail is uploaded, and the edit fails if another client wrote\n"
      "the object meanwhile.\n"
      "\n"
      "Examples:\n"
      "  onnxzip edit model.onnxz --set-metadata license=MIT --producer mytool:1.2\n"
      "  unzip model.onnxz __MODEL_PROTO -d m && (edit m/__MODEL_PROTO with any ONNX tool)\n"
      "  onnxzip edit model.onnxz --model m/__MODEL_PROTO\n"
      "  onnxzip edit s3://models/resnet50.onnxz --set-metadata license=MIT");
  return {sub, [args, producer, doc, model, &global] {
            return run_edit(*args, *producer, *doc, *model, global);
          }};
}

}  // namespace onnxzip::cli
