// Reading and writing ONNX messages in the protobuf wire format, without libprotobuf.
//
// parse_model / parse_message turn untrusted bytes into the structs of onnx_model.h. Every
// problem is an onnxzip::Error whose message reads "<source>: offset N: <Message>.<field>:
// <problem>", N being the byte offset in the input; the limits in ParseOptions bound nesting
// depth, sizes and element counts so that hostile input fails cleanly instead of exhausting the
// stack or memory. Sizes and offsets are 64-bit throughout: a single model over 2 GB (weights
// inline) parses and serializes.
//
// serialize_model / serialize_message write canonical protobuf: known fields in field-number
// order, each in the encoding onnx.proto declares (packed only where it says [packed = true]),
// then the unknown fields in the order they were read. This is what libprotobuf writes, so a model
// written by the reference onnx package parses and re-serializes to the same bytes. Two writers,
// generated from the same field declarations, produce identical bytes:
//   * single pass, back to front (serialize_model -> vector / OwnedBytes / ByteSink /
//     AtomicOutputFile / path, serialize_message): every nested length is known when it is
//     written. The structure accumulates in chunks; tensor payloads of 4 KiB or more are only
//     referred to, and copied once, straight into the result (or handed to the sink as they are).
//     Streamed output therefore holds the structure (not the tensors) in memory, up to
//     SerializeOptions::max_buffered_structure_bytes; a larger structure falls back to:
//   * sized, front to back (MessageSerializer, and the fallback above): one sizing pass stores
//     every nested size in a table, then a front-to-back pass writes through a fixed 1 MiB buffer
//     and hands large payloads to the output without copying them. Memory use is the size table
//     (8 bytes per nested message) plus the buffer, whatever the size of the model.
//
// Ownership of tensor payloads (TensorProto::raw_data) and strings (Text) when parsing:
//   * no_copy = false (default): every payload and string is copied; the model owns its bytes.
//   * no_copy = true, parse_model(bytes): payloads of at least raw_data_threshold bytes, and all
//     strings (names, op types, attribute strings...), borrow from `bytes` without an owner token:
//     the caller must keep `bytes` alive and unchanged as long as the model (or any copy of its
//     parts) is used; own_strings() detaches the strings. Smaller payloads are copied. Parsing a
//     graph then allocates no memory per name, which is most of what parsing a large graph costs.
//   * no_copy = true, parse_model_file(path): the file is mapped and payloads of at least
//     raw_data_threshold bytes borrow from the mapping with the mapping as owner token: the model
//     stays valid after the call, and the mapping lives until the last tensor referring to it is
//     gone. Smaller payloads and all strings are copied. (Without no_copy the mapping is released
//     on return.) The same holds for parse_message with a non-null owner token.
//   * alignment (when non-zero, a power of two): a payload that would be borrowed but does not
//     start on a multiple of `alignment` is copied instead into a buffer that does; copies are
//     aligned to max(alignment, 64).
//
// This module knows nothing of zip archives. Anyone may use it.
#ifndef ONNXZIP_ONNX_CODEC_H_
#define ONNXZIP_ONNX_CODEC_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "onnxzip/bytes.h"
#include "onnxzip/mapped_file.h"
#include "onnxzip/onnx_model.h"
#include "onnxzip/protobuf_wire.h"

namespace onnxzip {

class AtomicOutputFile;  // Internal to the library (src/io/output_file.h).

struct ParseOptions {
  // Borrow large raw_data payloads instead of copying them (see the header comment).
  bool no_copy = false;
  // Payloads of at least this many bytes are "large": borrowed by no_copy. 0: every payload.
  std::uint64_t raw_data_threshold = 1024;
  // When non-zero (a power of two), a payload that would be borrowed but does not start on a
  // multiple of it is copied instead (see the header comment). 0: no requirement.
  std::uint64_t alignment = 0;
  // Nesting depth of messages, the top-level message counting as 1 (libprotobuf's default
  // recursion limit). Deeper input fails with kLimitExceeded instead of exhausting the stack.
  std::uint32_t max_depth = 100;
  // Largest input, hence largest message or field: every length-delimited field must also fit
  // in what remains of its enclosing message (Error(kCorrupt) otherwise).
  std::uint64_t max_message_size = std::uint64_t{1} << 40;
  // Most elements of one repeated field in one message.
  std::uint64_t max_elements = std::uint64_t{1} << 32;
  // Largest raw_data payload of one tensor.
  std::uint64_t max_tensor_bytes = std::uint64_t{1} << 40;
};

// Tensors to write in place of others, keyed by the address of a TensorProto inside the message
// being serialized: each such tensor (the message itself included, if it is one) is written as
// the mapped TensorProto instead. Lets a writer change how a few tensors are written -- the
// archive writer replaces payloads with external references -- without copying or modifying a
// model whose weights may be gigabytes. Substitutes are not looked up again.
using TensorSubstitutions = std::unordered_map<const TensorProto*, TensorProto>;

// The protobuf serializer writes every payload inline (sending large ones to the output without
// copying them through its buffer): where payloads go outside the protobuf is the concern of the
// writers above it (SaveOptions, LegacyWriteOptions).
struct SerializeOptions {
  // Optional; must outlive the serialization (for MessageSerializer: its last write).
  const TensorSubstitutions* substitutions = nullptr;

  // The streamed writers (to a ByteSink, an AtomicOutputFile, a path) build the structure of the
  // message (every byte but the large tensor payloads, which are only referred to) in memory in
  // one pass when it takes at most this many bytes; beyond, they size the message first and then
  // write it front to back through a fixed buffer (two passes, memory independent of the model).
  std::uint64_t max_buffered_structure_bytes = std::uint64_t{256} << 20;
};

// --- Models ---

// Parses a serialized ModelProto. `source` names the input in error messages.
ModelProto parse_model(ByteSpan bytes, const ParseOptions& options = {},
                       std::string_view source = "<memory>");
// Parses the file at `path` (memory-mapped, or read whole with FileAccess::kRead; see
// mapped_file.h). Errors name the path; one that is not a regular file is Error(kIo). A name of
// its own, not an overload of parse_model: a std::string converts to a path, so bytes held in
// one would be taken for a file name.
ModelProto parse_model_file(const std::filesystem::path& path, const ParseOptions& options = {},
                            FileAccess access = FileAccess::kMap);

std::vector<std::uint8_t> serialize_model(const ModelProto& model,
                                          const SerializeOptions& options = {});
OwnedBytes serialize_model_to_owned_bytes(const ModelProto& model,
                                          const SerializeOptions& options = {});
// Streams the model to `sink` / appends it to `out` (not committed: the caller commits).
void serialize_model(const ModelProto& model, wire::ByteSink& sink,
                     const SerializeOptions& options = {});
// Writes the model into the start of `out` in one pass, straight into place (no intermediate
// buffer, no copy of the structure), and returns its size. `out` must be at least that large:
// serialized_size() tells; a span that is too small is Error(kInvalidArgument), its contents then
// unspecified.
std::size_t serialize_model(const ModelProto& model, MutableByteSpan out,
                            const SerializeOptions& options = {});
void serialize_model(const ModelProto& model, AtomicOutputFile& out,
                     const SerializeOptions& options = {});
// Writes the model to `path` atomically: the file appears complete or not at all.
void serialize_model_to_file(const ModelProto& model, const std::filesystem::path& path,
                             const SerializeOptions& options = {});

// --- Any message type of onnx_model.h (a TensorProto alone, a GraphProto...) ---

// Parses `bytes` as one M. With options.no_copy, borrowed payloads carry `owner` as their owner
// token (see the header comment); the overload without one borrows as parse_model(bytes) does,
// with kNoOwner: the caller keeps `bytes` alive.
template <OnnxMessage M>
M parse_message(ByteSpan bytes, OwnerToken owner, const ParseOptions& options,
                std::string_view source);
template <OnnxMessage M>
M parse_message(ByteSpan bytes, const ParseOptions& options = {},
                std::string_view source = "<memory>") {
  return parse_message<M>(bytes, kNoOwner, options, source);
}
// Parses `bytes` into an existing message with protobuf merge semantics: present scalars
// replace, repeated fields append, sub-messages merge. Borrows as parse_message does.
template <OnnxMessage M>
void merge_message(ByteSpan bytes, M& message, OwnerToken owner, const ParseOptions& options,
                   std::string_view source);
template <OnnxMessage M>
void merge_message(ByteSpan bytes, M& message, const ParseOptions& options = {},
                   std::string_view source = "<memory>") {
  merge_message(bytes, message, kNoOwner, options, source);
}

// Makes every borrowed string of `message` (see no_copy above) an owned copy, so that the message
// no longer depends on the bytes it was parsed from for its strings. Tensor payloads are left as
// they are (TensorBytes::make_owned detaches one).
template <OnnxMessage M>
void own_strings(M& message);

template <OnnxMessage M>
std::vector<std::uint8_t> serialize_message(const M& message, const SerializeOptions& options = {});
template <OnnxMessage M>
void serialize_message(const M& message, wire::ByteSink& sink,
                       const SerializeOptions& options = {});
template <OnnxMessage M>
std::size_t serialize_message(const M& message, MutableByteSpan out,
                              const SerializeOptions& options = {});
// The exact size serialize_message would produce (one sizing pass).
template <OnnxMessage M>
std::uint64_t serialized_size(const M& message);

// Sizes a message once, then writes it any number of times: for writers that must know the size
// before the bytes (a zip local header, a length prefix). The message must not change between
// construction and the last write. When the structure (everything but tensor payloads of 4 KiB or
// more) takes at most options.max_buffered_structure_bytes, construction serializes it (one pass)
// and the writes copy that snapshot, reading the large payloads from the message: a payload
// replaced or resized meanwhile is reported as kBadState. Otherwise construction sizes the message
// and each write serializes it again; a change that alters the size is reported as kBadState.
template <OnnxMessage M>
class MessageSerializer final {
 public:
  explicit MessageSerializer(const M& message, const SerializeOptions& options = {});

  std::uint64_t size() const noexcept { return size_; }
  // Streams the bytes to `sink`.
  void write(wire::ByteSink& sink) const;
  // Writes the bytes into `out`, which must be exactly size() bytes.
  void write(MutableByteSpan out) const;

 private:
  const M* message_;
  SerializeOptions options_;
  std::shared_ptr<const void> snapshot_;  // The serialized structure, when it fit the budget.
  std::vector<std::uint64_t> sizes_;      // Otherwise nested and packed sizes, in write order.
  std::uint64_t size_ = 0;
};

}  // namespace onnxzip

#endif  // ONNXZIP_ONNX_CODEC_H_
