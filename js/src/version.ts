// The package's version: the same as package.json's and as the C++ project's (CMakeLists.txt
// project VERSION), which `onnxzip --version` prints; test/unit/package.test.mjs holds them equal.

export const version = '0.1.0';
