// finish_parts (parts.h, spec §13): checks the receipts against the plan, then hands the
// temporary, its entries and their digests to an ArchiveWriter that continues it, so that the
// tail (`__DIGESTS`, `__SIGNATURE`, `__MODEL_PROTO`, directory, end records) and the rename are
// the one writer's own.
#include <string>
#include <utility>
#include <vector>

#include "archive_internal.h"
#include "onnxzip/parts.h"
#include "output_file.h"
#include "parts_bucket.h"
#include "parts_codec.h"
#include "zip_layout.h"

namespace onnxzip {

using archive_detail::PartReceipt;
using archive_detail::PartsToken;
using archive_detail::quote;

namespace {

// Why `receipt` does not report exactly the entries the plan gives its part, or "".
std::string receipt_problem(const PartReceipt& receipt, const PartsPlan& plan, bool bucket) {
  if (receipt.hashed != plan.digests()) {
    return plan.digests() ? "has no SHA-256s, but the plan has digests"
                          : "has SHA-256s, but the plan has no digests";
  }
  if (!receipt.pieces.empty() && !bucket) return "lists uploaded pieces, but the archive is a file";
  const std::span<const PlannedEntry> planned = plan.part(receipt.part);
  if (receipt.entries.size() != planned.size()) {
    return "lists " + std::to_string(receipt.entries.size()) + " entries, the plan " +
           std::to_string(planned.size());
  }
  for (std::size_t i = 0; i < planned.size(); ++i) {
    const EntryDigest& entry = receipt.entries[i];
    if (entry.name != planned[i].entry || entry.size != planned[i].size) {
      return "entry " + std::to_string(i) + " is " + quote(entry.name) + " of " +
             std::to_string(entry.size) + " bytes, the plan's " + quote(planned[i].entry) + " of " +
             std::to_string(planned[i].size);
    }
  }
  return "";
}

// The receipts by part, each checked against the token and the plan.
std::vector<PartReceipt> check_receipts(const PartsToken& token, const PartsPlan& plan,
                                        std::span<const ByteSpan> receipts) {
  const auto fail = [&](const std::string& problem) {
    throw Error(ErrorCode::kInvalidArgument, {.file = token.destination}, problem);
  };
  std::vector<std::optional<PartReceipt>> by_part(plan.part_count());
  for (std::size_t i = 0; i < receipts.size(); ++i) {
    PartReceipt receipt =
        with_error_context([&] { return ErrorContext{.file = "receipt " + std::to_string(i)}; },
                           [&] { return archive_detail::decode_receipt(receipts[i]); });
    const std::string which =
        "receipt " + std::to_string(i) + " (part " + std::to_string(receipt.part) + ")";
    if (receipt.token_id != token.id) fail(which + " is of another archive or plan");
    if (receipt.part >= plan.part_count()) {
      fail(which + " names a part the plan of " + std::to_string(plan.part_count()) +
           " parts does not have");
    }
    if (by_part[receipt.part]) fail(which + " repeats the receipt of its part");
    if (std::string problem = receipt_problem(receipt, plan, !token.upload_id.empty());
        !problem.empty()) {
      fail(which + " disagrees with the plan: it " + problem);
    }
    by_part[receipt.part] = std::move(receipt);
  }
  std::string missing;
  std::size_t missing_count = 0;
  for (std::size_t p = 0; p < by_part.size(); ++p) {
    if (by_part[p]) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(p);
    ++missing_count;
  }
  if (missing_count > 0) {
    fail("no receipt for part" + std::string(missing_count > 1 ? "s " : " ") + missing +
         "; nothing is published");
  }
  std::vector<PartReceipt> checked;
  checked.reserve(by_part.size());
  for (std::optional<PartReceipt>& receipt : by_part) checked.push_back(std::move(*receipt));
  return checked;
}

}  // namespace

void finish_parts(ByteSpan token_bytes, const ModelProto& model, std::span<const ByteSpan> receipts,
                  const std::optional<PrivateKey>& key, const SaveOptions& save_options) {
  const PartsToken token = archive_detail::decode_token(token_bytes);
  const PartsPlan plan = PartsPlan::from_bytes(token.plan);
  if (key && !plan.digests()) {
    throw Error(ErrorCode::kInvalidArgument, {.file = token.destination},
                "a signature signs `__DIGESTS`: plan the parts with digests to sign");
  }
  const std::vector<PartReceipt> checked = check_receipts(token, plan, receipts);

  archive_detail::ResumedEntries entries;
  entries.written.reserve(plan.entries().size());
  std::uint64_t start = 0;
  for (const PartReceipt& receipt : checked) {
    for (const EntryDigest& entry : receipt.entries) {
      const PlannedEntry& planned = plan.entries()[entries.written.size()];
      const zip::EntryLayout layout =
          zip::plan_entry(start, planned.entry.size(), planned.size, plan.alignment());
      entries.written.push_back(zip::written_entry(layout, planned.entry, entry.crc32));
      entries.tensor_names.push_back(planned.name);
      if (plan.digests()) entries.digests.push_back(entry);
      start = layout.data_offset + layout.size;
    }
  }
  SaveOptions options = save_options;
  options.alignment = plan.alignment();
  options.digests = plan.digests();
  if (!token.upload_id.empty()) {
    archive_detail::finish_bucket_parts(token, plan, checked, std::move(entries), model, key,
                                        options);
    return;
  }
  options.output = {.durable = token.durable, .follow_symlinks = token.follow_symlinks};
  auto file = AtomicOutputFile::adopt(token.destination, token.temporary, options.output,
                                      plan.payload_end());
  ArchiveWriter writer = archive_detail::ResumedWriter::make(
      token.destination, ZipWriter(std::move(file), std::move(entries.written), plan.alignment()),
      options, entries.tensor_names, std::move(entries.digests), key);
  writer.finish(model);
}

}  // namespace onnxzip
