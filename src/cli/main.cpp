// The onnxzip command-line tool. Prints and exits here, never in the library.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "onnxzip/error.h"

int main(int argc, char** argv) {
  CLI::App app{"onnxzip: the ONNX zip container (.onnxz)"};
  app.set_version_flag("--version", "onnxzip 0.1.0");
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return 0;
}
