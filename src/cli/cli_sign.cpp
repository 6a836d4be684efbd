// onnxzip sign: digests of every entry, and a signature of them, inside the archive (signing.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli_common.h"
#include "cli_progress.h"
#include "onnxzip/integrity.h"
#include "onnxzip/internal/s3.h"
#include "onnxzip/signing.h"

namespace onnxzip::cli {
namespace {

struct SignArgs {
  std::string archive;
  std::string key;
  bool digests_only = false;
  bool no_sync = false;
  LockWait wait;
  InflateLimits limits;
};

int run_sign(const SignArgs& args, const GlobalOptions& global) {
  if (args.key.empty() == !args.digests_only) {
    throw UsageError("give --key PRIVATE.pem to sign, or --digests-only (not both)");
  }
  // An object in a bucket is signed there (signing.h); its open says whether it is an archive.
  if (!is_s3_url(args.archive)) require_archive(args.archive);
  SignOptions options;
  if (!args.key.empty()) options.key = PrivateKey::load(args.key);
  options.output.durable = !args.no_sync;
  options.wait = args.wait.duration();
  options.limits = args.limits.zip_options();
  SignResult result;
  {
    ProgressBar bar("hashing", global.quiet);
    options.progress = bar.callback();
    result = sign_archive(args.archive, options);
  }
  if (!global.quiet) {
    if (result.entries_read) {
      std::fprintf(stderr,
                   "onnxzip: note: %s: no __DIGESTS: every entry was read from the bucket to be "
                   "hashed\n",
                   printable(args.archive).c_str());
    } else if (is_s3_url(args.archive)) {
      std::fprintf(stderr,
                   "onnxzip: note: %s: the __DIGESTS it holds were kept as they stand (only the "
                   "model hashed again); 'onnxzip verify' checks them against the bytes\n",
                   printable(args.archive).c_str());
    }
    if (result.signature_removed) {
      std::fprintf(stderr, "onnxzip: note: %s: the old __SIGNATURE was removed (no --key)\n",
                   printable(args.archive).c_str());
    }
    std::printf("%s: %llu entries digested%s%s\n", printable(args.archive).c_str(),
                static_cast<unsigned long long>(result.entries),
                result.key_id.empty() ? "" : ", signed by key ", result.key_id.c_str());
  }
  return kExitOk;
}

}  // namespace

Command add_sign_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* sub = app.add_subcommand(
      "sign", "Add SHA-256 digests of every entry, and a signature of them, to an archive");
  auto args = std::make_shared<SignArgs>();
  sub->add_option("ARCHIVE", args->archive,
                  "The .onnxz archive to sign, in place (or s3://bucket/key, signed in the bucket)")
      ->required();
  sub->add_option("--key", args->key,
                  "ECDSA P-256 private key (PEM) that signs the digests: __DIGESTS and "
                  "__SIGNATURE are added or replaced")
      ->type_name("PRIVATE.pem");
  sub->add_flag("--digests-only", args->digests_only,
                "Add __DIGESTS alone (an old __SIGNATURE goes: it would no longer verify)");
  sub->add_flag("--no-sync", args->no_sync,
                "Do not flush each step to disk: a crash still leaves the old or the new archive, "
                "a power loss may not");
  add_wait_option(*sub, args->wait);
  add_inflate_limit_options(*sub, args->limits);
  sub->footer(
      "__DIGESTS is an in-toto statement listing the SHA-256 of every entry, shaped as the\n"
      "OpenSSF model_signing tool describes a model folder; __SIGNATURE is a Sigstore bundle\n"
      "signing it (spec §12). Both go before __MODEL_PROTO; no weight moves. 'onnxzip edit'\n"
      "keeps them true: give it --key to sign again, else it removes the signature.\n"
      "\n"
      "Examples:\n"
      "  openssl ecparam -name prime256v1 -genkey -noout -out key.pem\n"
      "  openssl ec -in key.pem -pubout -out key.pub.pem\n"
      "  onnxzip sign model.onnxz --key key.pem\n"
      "  onnxzip verify model.onnxz --public-key key.pub.pem");
  return {sub, [args, &global] { return run_sign(*args, global); }};
}

}  // namespace onnxzip::cli
