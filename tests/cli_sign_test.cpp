// onnxzip sign, verify --public-key, info and edit --key, run as a user would: exit codes and
// the words of each failure (spec §12; the library's side is signing_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "support/cli_run.h"
#include "support/external_tool.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"
#include "support/test_keys.h"

namespace onnxzip {
namespace {

using test_support::CliRun;
using test_support::operator<<;

namespace fs = std::filesystem;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// run_cli(dir, args) with the scratch folder's path (support/cli_run.h).
CliRun run_cli(const ScratchDir& dir, const std::vector<std::string>& args) {
  return test_support::run_cli(dir.path(), args);
}

TEST(CliSignTest, SignVerifyInfoAndEditAsAUserWould) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("cli_sign");
  const test_support::KeyFiles key_a = test_support::make_key_pair(dir.path(), "a");
  const test_support::KeyFiles key_b = test_support::make_key_pair(dir.path(), "b");
  ASSERT_FALSE(::testing::Test::HasFailure());
  ModelProto model;
  model.ir_version = 8;
  model.opset_import.emplace_back().version = 17;
  model.graph.ensure().initializer.push_back(
      test_support::raw_tensor("w", TensorProto::kFloat, {64, 64}, 1));
  const std::string archive = (dir / "m.onnxz").string();
  save(model, archive);
  const std::string a = key_a.private_pem.string();
  const std::string b = key_b.private_pem.string();
  const std::string a_pub = key_a.public_pem.string();
  const std::string b_pub = key_b.public_pem.string();

  CliRun run = run_cli(dir, {"sign", archive});
  EXPECT_EQ(run.exit_code, 2) << run;
  EXPECT_CONTAINS(run.err, "give --key PRIVATE.pem to sign, or --digests-only");
  run = run_cli(dir, {"sign", archive, "--key", a_pub});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_CONTAINS(run.err, "a.pub.pem: not an unencrypted PEM private key");

  run = run_cli(dir, {"verify", archive, "--public-key", a_pub});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_CONTAINS(run.out, "no __DIGESTS and no __SIGNATURE entry");

  run = run_cli(dir, {"sign", archive, "--key", a});
  ASSERT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "2 entries digested, signed by key ");
  run = run_cli(dir, {"verify", archive, "--public-key", a_pub});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_EQ(run.out, archive + ": ok\n");
  run = run_cli(dir, {"verify", archive, "--public-key", b_pub});
  EXPECT_EQ(run.exit_code, 1) << run;
  EXPECT_CONTAINS(run.out, "entry '__SIGNATURE': signed by another key");
  run = run_cli(dir, {"info", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.out, "integrity       digests of 2 entries, signed by key ");
  run = run_cli(dir, {"info", "--json", archive});
  EXPECT_CONTAINS(run.out, "\"signature\": true");

  run = run_cli(dir, {"edit", archive, "--set-metadata", "k=v"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.err, "__SIGNATURE removed: it signed the old model");
  run = run_cli(dir, {"verify", archive});
  EXPECT_EQ(run.exit_code, 0) << run;
  run = run_cli(dir, {"edit", archive, "--set-metadata", "k=w", "--key", a});
  EXPECT_EQ(run.exit_code, 0) << run;
  run = run_cli(dir, {"verify", archive, "--public-key", a_pub});
  EXPECT_EQ(run.exit_code, 0) << run;
  run = run_cli(dir, {"sign", archive, "--digests-only"});
  EXPECT_EQ(run.exit_code, 0) << run;
  EXPECT_CONTAINS(run.err, "the old __SIGNATURE was removed");
  run = run_cli(dir, {"info", archive});
  EXPECT_CONTAINS(run.out, "integrity       digests of 2 entries, not signed");
}

}  // namespace
}  // namespace onnxzip
