// onnxzip sign, verify --public-key, info and edit --key, run as a user would: exit codes and
// the words of each failure (spec §12; the library's side is signing_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnxzip/archive.h"
#include "support/cli_run.h"
#include "support/expect_contains.h"
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
  EXPECT_CONTAINS(run.out, archive +
                               ": ok (ZIP structure, layout, references, CRC-32s; digests "
                               "verified; signature verified (key ");
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

// repack --digests (and convert --digests) write __DIGESTS whose digests are what sha256sum says
// of the entries unzip extracts; the input's own integrity entries are not copied.
TEST(CliSignTest, RepackAndConvertWithDigestsAgreeWithSha256sum) {
  if (!test_support::find_tool("unzip") || !test_support::find_tool("sha256sum")) {
    GTEST_SKIP() << "no unzip or sha256sum";
  }
  const ScratchDir dir("cli_repack_digests");
  ModelProto model;
  model.ir_version = 8;
  model.opset_import.emplace_back().version = 17;
  model.graph.ensure().initializer.push_back(
      test_support::raw_tensor("w", TensorProto::kFloat, {300, 300}, 1));
  model.graph->initializer.push_back(test_support::raw_tensor("b", TensorProto::kFloat, {300}, 2));
  const std::string archive = (dir / "m.onnxz").string();
  save(model, archive);
  CliRun run = run_cli(dir, {"sign", archive, "--digests-only"});
  ASSERT_EQ(run.exit_code, 0) << run;
  const std::string legacy = (dir / "m.onnx").string();
  run = run_cli(dir, {"convert", archive, legacy, "--external-data"});
  ASSERT_EQ(run.exit_code, 0) << run;

  const std::vector<std::vector<std::string>> writes = {
      {"repack", archive, (dir / "repacked.onnxz").string(), "--digests"},
      {"convert", legacy, (dir / "converted.onnxz").string(), "--digests"}};
  for (const std::vector<std::string>& args : writes) {
    SCOPED_TRACE(args[0]);
    run = run_cli(dir, args);
    ASSERT_EQ(run.exit_code, 0) << run;
    run = run_cli(dir, {"verify", args[2]});
    EXPECT_EQ(run.exit_code, 0) << run;
    const fs::path out = dir / (args[0] + "_unzipped");
    const auto unzipped =
        run_tool("unzip -q " + shell_quote(args[2]) + " -d " + shell_quote(out.string()));
    ASSERT_EQ(unzipped.exit_code, 0) << unzipped.output;
    const auto checked = run_tool("cd " + shell_quote(out.string()) + R"( && /usr/bin/python3 -c '
import json, os, subprocess
resources = json.load(open("__DIGESTS"))["predicate"]["resources"]
names = sorted(n for n in os.listdir(".") if n != "__DIGESTS")
assert [r["name"] for r in resources] == names, (resources, names)
for r in resources:
    digest = subprocess.run(["sha256sum", r["name"]], capture_output=True, text=True).stdout
    assert digest.split()[0] == r["digest"], r["name"]
print("agree", len(resources))
')");
    EXPECT_EQ(checked.exit_code, 0) << checked.output;
    EXPECT_EQ(checked.output, "agree 3\n");
  }
}

}  // namespace
}  // namespace onnxzip
