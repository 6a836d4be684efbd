#include "support/big_model.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"

namespace onnxzip::test_support {
namespace {

// splitmix64's finalizer: every bit of the word index reaches every byte.
std::uint64_t big_word(std::uint32_t seed, std::uint64_t word_index) {
  std::uint64_t z = word_index + std::uint64_t{seed} * 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

std::uint8_t byte_of(std::uint64_t word, std::uint64_t index) {
  return static_cast<std::uint8_t>(word >> (8 * (index % 8)));
}

}  // namespace

std::uint8_t big_byte(std::uint32_t seed, std::uint64_t index) {
  return byte_of(big_word(seed, index / 8), index);
}

void fill_big_bytes(std::uint32_t seed, std::uint64_t at, MutableByteSpan out) {
  std::size_t done = 0;
  while (done < out.size() && (at + done) % 8 != 0) {
    out[done] = big_byte(seed, at + done);
    ++done;
  }
  for (; done + 8 <= out.size(); done += 8) {
    const std::uint64_t word = big_word(seed, (at + done) / 8);
    std::uint8_t le[8];
    for (int b = 0; b < 8; ++b) le[b] = static_cast<std::uint8_t>(word >> (8 * b));
    std::memcpy(out.data() + done, le, 8);
  }
  for (; done < out.size(); ++done) out[done] = big_byte(seed, at + done);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> sample_ranges(std::uint64_t length,
                                                                   std::uint64_t window) {
  if (length <= 3 * window) return {{0, length}};
  const std::uint64_t middle = length / 2 - window / 2;
  return {{0, window}, {middle, middle + window}, {length - window, length}};
}

bool equals_big_bytes(std::uint32_t seed, std::uint64_t at, ByteSpan bytes) {
  std::vector<std::uint8_t> expected(bytes.size());
  fill_big_bytes(seed, at, expected);
  return std::equal(bytes.begin(), bytes.end(), expected.begin());
}

std::vector<BigTensor> write_big_external_model(const std::filesystem::path& dir,
                                                const std::vector<BigTensorSpec>& tensors,
                                                const std::string& data_file) {
  std::vector<BigTensor> layout;
  {
    std::ofstream out(dir / data_file, std::ios::binary);
    if (!out) throw std::runtime_error("cannot create " + (dir / data_file).string());
    std::vector<std::uint8_t> piece(std::size_t{8} << 20);
    std::uint64_t end = 0;
    std::uint32_t seed = 0;
    for (const BigTensorSpec& spec : tensors) {
      const std::uint64_t offset = align_up(end, 4096) + spec.gap_before;
      const std::vector<char> zeros(static_cast<std::size_t>(offset - end), '\0');
      out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
      const BigTensor& t = layout.emplace_back(BigTensor{spec.name, ++seed, offset, spec.length});
      for (std::uint64_t at = 0; at < t.length; at += piece.size()) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(piece.size(), t.length - at));
        fill_big_bytes(t.seed, at, MutableByteSpan(piece).first(n));
        out.write(reinterpret_cast<const char*>(piece.data()), static_cast<std::streamsize>(n));
      }
      end = offset + t.length;
    }
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + (dir / data_file).string());
  }
  ModelProto model;
  model.ir_version = 8;
  OperatorSetIdProto& opset = model.opset_import.emplace_back();
  opset.domain = "";
  opset.version = 17;
  GraphProto& graph = model.graph.ensure();
  graph.name = "big";
  for (const BigTensor& t : layout) {
    TensorProto& tensor = graph.initializer.emplace_back();
    tensor.name = t.name;
    tensor.data_type = TensorProto::kUint8;
    tensor.dims = {static_cast<std::int64_t>(t.length)};
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", data_file},
                                     {"offset", std::to_string(t.offset)},
                                     {"length", std::to_string(t.length)}}) {
      StringStringEntryProto& entry = tensor.external_data.emplace_back();
      entry.key = key;
      entry.value = value;
    }
    tensor.data_location = TensorProto::kExternal;
  }
  serialize_model_to_file(model, dir / "model.onnx");
  return layout;
}

}  // namespace onnxzip::test_support
