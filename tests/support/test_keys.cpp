#include "support/test_keys.h"

#include <gtest/gtest.h>

#include "support/external_tool.h"

namespace onnxzip::test_support {

KeyFiles make_key_pair(const std::filesystem::path& dir, const std::string& tag) {
  KeyFiles keys{dir / (tag + ".pem"), dir / (tag + ".pub.pem")};
  const ToolResult made = run_tool("openssl ecparam -name prime256v1 -genkey -noout -out " +
                                   shell_quote(keys.private_pem.string()) + " && openssl ec -in " +
                                   shell_quote(keys.private_pem.string()) + " -pubout -out " +
                                   shell_quote(keys.public_pem.string()) + " 2>/dev/null");
  EXPECT_EQ(made.exit_code, 0) << made.output;
  return keys;
}

}  // namespace onnxzip::test_support
