// The ONNX protobuf codec, expanded from the field lists of onnx_model.h.
//
// For every message the lists expand into four functions: parse_body (a switch on the field
// number whose cases call the field kind's inline parser), body_size (the sizing pass), write_body
// (the front-to-back writing pass) and write_body_reverse (the single back-to-front pass used for
// in-memory output; the fields are walked in reverse at compile time through FieldRef types).
// FieldCodec<kind> holds what one kind of field does in each of them, so the per-message code is
// straight-line, with no tables looked up or virtual calls per field.
//
// Sizes: body_size visits messages in the order write_body will, appending to a SizeTable the
// body size of every nested message (slot reserved before its children) and the payload size of
// every non-empty packed varint field. write_body consumes the table in the same order, so no size
// is computed twice and nothing is serialized to be measured.
#include "onnxzip/onnx_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "check.h"
#include "onnxzip/internal/mapped_file.h"
#include "onnxzip/internal/protobuf_wire.h"
#include "output_file.h"
#include "page_advice.h"

namespace onnxzip {
namespace {

using wire::ByteSink;
using wire::FieldTag;
using wire::WireContext;
using wire::WireReader;
using wire::WireType;
using wire::WireWriter;

constexpr bool kLittleEndian = std::endian::native == std::endian::little;

// --- Shared parse state and error helpers ---

struct ParseContext {
  const ParseOptions& options;
  OwnerToken owner;
  std::size_t copy_alignment;
  // Strings borrow from the input when payloads borrow from it without an owner token: the caller
  // keeps those bytes alive (no_copy from a caller's bytes). With a token (a mapped file), strings
  // are copied rather than each holding a reference to the token.
  bool borrow_text;
};

inline Text make_text(const ParseContext& ctx, ByteSpan payload) {
  const std::string_view view(reinterpret_cast<const char*>(payload.data()), payload.size());
  return ctx.borrow_text ? Text::borrow(view) : Text(view);
}

[[noreturn]] void fail_wire_type(const WireReader& r, const std::uint8_t* tag_at, WireType got,
                                 WireType expected, const WireContext& where) {
  r.fail(ErrorCode::kCorrupt, r.offset_of(tag_at), where,
         "wire type " + std::string(wire::to_string(got)) + ", expected " +
             std::string(wire::to_string(expected)));
}

[[noreturn]] void fail_too_many(const WireReader& r, const std::uint8_t* at,
                                const ParseContext& ctx, const WireContext& where) {
  r.fail(ErrorCode::kLimitExceeded, r.offset_of(at), where,
         "more than max_elements (" + std::to_string(ctx.options.max_elements) + ") elements");
}

[[noreturn]] void fail_too_deep(const WireReader& r, const std::uint8_t* at,
                                const ParseContext& ctx, const WireContext& where) {
  r.fail(ErrorCode::kLimitExceeded, r.offset_of(at), where,
         "messages nested deeper than max_depth (" + std::to_string(ctx.options.max_depth) + ")");
}

// Reports the malformed varint at `p` with the reader's own wording and offset.
[[noreturn]] void fail_varint_at(const WireReader& r, const std::uint8_t* p,
                                 const std::uint8_t* end, const WireContext& where) {
  WireReader at = r.sub_reader(ByteSpan(p, static_cast<std::size_t>(end - p)));
  at.read_varint(where);
  r.fail(ErrorCode::kCorrupt, r.offset_of(p), where, "invalid varint");
}

inline void expect_wire_type(const WireReader& r, const std::uint8_t* tag_at, WireType got,
                             WireType expected, const WireContext& where) {
  if (got != expected) fail_wire_type(r, tag_at, got, expected, where);
}

// --- Size table ---

// The sizing pass's output, and the substitutions it applies (SerializeOptions::substitutions).
struct SizeTable : std::vector<std::uint64_t> {
  const TensorSubstitutions* substitutions = nullptr;
};

struct SizeCursor {
  const std::uint64_t* next;
  const std::uint64_t* end;
  const TensorSubstitutions* substitutions = nullptr;  // The same map as when sizing.

  std::uint64_t take() {
    if (next == end) throw_changed();
    return *next++;
  }
  [[noreturn]] static void throw_changed() {
    throw Error(ErrorCode::kBadState,
                "serialization: the message changed between sizing and writing");
  }
};

template <std::uint32_t kNumber, WireType kType>
constexpr std::size_t kTagSize = wire::varint_size(wire::make_tag(kNumber, kType));

template <std::uint32_t kNumber, WireType kType>
inline void put_tag(WireWriter& w) {
  constexpr std::uint64_t kTag = wire::make_tag(kNumber, kType);
  if constexpr (kTag < 0x80) {
    w.reserve(1);
    *w.cursor()++ = static_cast<std::uint8_t>(kTag);
  } else {
    w.write_varint(kTag);
  }
}

// Writes a message back to front, so that each nested message's length is known (it has just
// been written) when its length prefix is: one pass over the model instead of a sizing pass and a
// writing pass, each of which touches every message. The output accumulates in a chain of chunks
// (never moved once written); payloads of kHoleBytes or more are not copied into them but kept as
// references ("holes") and copied once, straight into the final output or handed to a sink as
// they are. With a budget, a write that needs more chunk memory than that throws OverBudget (the
// streamed writers then fall back to sizing first). A snapshot (kept to be written later, by
// MessageSerializer) makes holes only of tensor payloads, remembering which TensorBytes each came
// from so that check_payloads() can tell whether the message changed meanwhile; everything else
// is copied.
class ReverseWriter final {
 public:
  static constexpr std::size_t kHoleBytes = 4096;
  struct OverBudget {};

  explicit ReverseWriter(const TensorSubstitutions* substitutions,
                         std::uint64_t budget = UINT64_MAX, bool snapshot = false) noexcept
      : substitutions_(substitutions), budget_(budget), snapshot_(snapshot) {}
  // Writes straight into the end of `destination` instead of chunks, payloads included: the
  // output is complete in place, with no copy. Running out of room throws OutOfRoom.
  struct OutOfRoom {};
  ReverseWriter(const TensorSubstitutions* substitutions, MutableByteSpan destination) noexcept
      : substitutions_(substitutions),
        begin_(destination.data()),
        cur_(destination.data() + destination.size()),
        run_end_(cur_),
        budget_(0),
        snapshot_(false),
        fixed_(true) {}
  ReverseWriter(const ReverseWriter&) = delete;
  ReverseWriter& operator=(const ReverseWriter&) = delete;

  const TensorSubstitutions* substitutions() const noexcept { return substitutions_; }

  // Bytes written so far, holes included.
  std::uint64_t written() const noexcept {
    return closed_bytes_ + static_cast<std::uint64_t>(run_end_ - cur_);
  }

  // Every put reserves exactly what it writes: a fixed destination must be filled to its start.
  void put_varint(std::uint64_t value) {
    const std::size_t size = wire::varint_size(value);
    reserve(size);
    cur_ -= size;
    wire::encode_varint(value, cur_);
  }
  template <std::uint32_t kNumber, WireType kType>
  void put_tag() {
    constexpr std::uint64_t kTag = wire::make_tag(kNumber, kType);
    if constexpr (kTag < 0x80) {
      reserve(1);
      *--cur_ = static_cast<std::uint8_t>(kTag);
    } else {
      put_varint(kTag);
    }
  }
  void put_fixed32(std::uint32_t value) {
    reserve(4);
    cur_ -= 4;
    wire::store_fixed32(value, cur_);
  }
  void put_fixed64(std::uint64_t value) {
    reserve(8);
    cur_ -= 8;
    wire::store_fixed64(value, cur_);
  }
  void put_bytes(ByteSpan bytes) {
    if (bytes.empty()) return;
    reserve(bytes.size());
    cur_ -= bytes.size();
    std::memcpy(cur_, bytes.data(), bytes.size());
  }
  // A length-delimited string or bytes field without its tag: payload, then length. One room
  // check for both.
  void put_length_delimited(ByteSpan bytes) {
    const std::size_t size = bytes.size();
    const std::size_t prefix = wire::varint_size(size);
    reserve(size + prefix);
    cur_ -= size;
    if (size != 0) std::memcpy(cur_, bytes.data(), size);
    cur_ -= prefix;
    wire::encode_varint(size, cur_);
  }

  // Tensor data (`source` is where it comes from, when it is a TensorBytes): large payloads
  // become holes.
  void put_payload(ByteSpan bytes, const TensorBytes* source = nullptr) {
    if (bytes.size() < kHoleBytes || fixed_ || (snapshot_ && source == nullptr)) {
      return put_bytes(bytes);
    }
    close_run();
    segments_.push_back(bytes);
    closed_bytes_ += bytes.size();
    if (snapshot_) payload_sources_.push_back({source, bytes});
  }

  // Throws Error(kBadState) when a payload a snapshot refers to was replaced or resized.
  void check_payloads() const {
    for (const PayloadSource& payload : payload_sources_) {
      if (payload.tensor->data() != payload.bytes.data() ||
          payload.tensor->size() != payload.bytes.size()) {
        SizeCursor::throw_changed();
      }
    }
  }

  // Hands the output to `emit_piece` front to back.
  template <class Emit>
  void emit(Emit&& emit_piece) const {
    emit_piece(ByteSpan(cur_, static_cast<std::size_t>(run_end_ - cur_)));
    for (auto segment = segments_.rbegin(); segment != segments_.rend(); ++segment) {
      emit_piece(*segment);
    }
  }

 private:
  void reserve(std::size_t size) {
    if (static_cast<std::size_t>(cur_ - begin_) < size) [[unlikely]] {
      if (fixed_) throw OutOfRoom{};
      new_chunk(size);
    }
    ONNXZIP_DCHECK(static_cast<std::size_t>(cur_ - begin_) >= size);
  }
  // Ends the run of bytes written contiguously in the current chunk.
  void close_run() {
    if (run_end_ != cur_) {
      segments_.emplace_back(cur_, static_cast<std::size_t>(run_end_ - cur_));
      closed_bytes_ += static_cast<std::uint64_t>(run_end_ - cur_);
    }
    run_end_ = cur_;
  }
  void new_chunk(std::size_t size) {
    close_run();
    const std::size_t capacity = std::max(next_chunk_size_, size);
    if (capacity > budget_ - std::min(budget_, chunk_bytes_)) throw OverBudget{};
    chunk_bytes_ += capacity;
    next_chunk_size_ = std::min(2 * next_chunk_size_, kMaxChunkSize);
    // Large chunks start on a 2 MiB boundary so that OwnedBytes' huge-page advice covers them.
    chunks_.emplace_back(capacity, capacity >= kMaxChunkSize ? kMaxChunkSize / 2 : 64);
    begin_ = chunks_.back().data();
    cur_ = run_end_ = begin_ + capacity;
  }

  struct PayloadSource {
    const TensorBytes* tensor;
    ByteSpan bytes;
  };

  static constexpr std::size_t kMaxChunkSize = std::size_t{4} << 20;
  const TensorSubstitutions* substitutions_;
  std::vector<OwnedBytes> chunks_;
  std::vector<PayloadSource> payload_sources_;  // Snapshots only.
  std::vector<ByteSpan> segments_;              // Closed runs and holes, back of the output first.
  std::uint8_t* begin_ = nullptr;
  std::uint8_t* cur_ = nullptr;
  std::uint8_t* run_end_ = nullptr;
  std::uint64_t closed_bytes_ = 0;
  std::uint64_t chunk_bytes_ = 0;
  std::uint64_t budget_;
  bool snapshot_;
  bool fixed_ = false;
  std::size_t next_chunk_size_ = std::size_t{1} << 14;
};

// --- Per-message functions, declared up front: messages nest recursively ---

#define ONNXZIP_DECLARE_BODY_FUNCTIONS_(Type, Id, Name)                            \
  void own_strings_body(Type& m);                                                  \
  void parse_body(ParseContext& ctx, WireReader& r, Type& m, std::uint32_t depth); \
  std::uint64_t body_size(const Type& m, SizeTable& sizes);                        \
  void write_body(const Type& m, WireWriter& w, SizeCursor& sizes);                \
  void write_body_reverse(const Type& m, ReverseWriter& w);
ONNXZIP_ONNX_MESSAGES(ONNXZIP_DECLARE_BODY_FUNCTIONS_)
#undef ONNXZIP_DECLARE_BODY_FUNCTIONS_

template <class M>
constexpr std::string_view kMessageName = {};
#define ONNXZIP_DEFINE_MESSAGE_NAME_(Type, Id, Name) \
  template <>                                        \
  constexpr std::string_view kMessageName<Type> = Name;
ONNXZIP_ONNX_MESSAGES(ONNXZIP_DEFINE_MESSAGE_NAME_)
#undef ONNXZIP_DEFINE_MESSAGE_NAME_

// Parses one nested message payload into `m` at depth + 1.
template <class M>
inline void parse_nested(ParseContext& ctx, WireReader& r, const std::uint8_t* tag_at,
                         ByteSpan payload, M& m, std::uint32_t depth, const WireContext& where) {
  if (depth >= ctx.options.max_depth) fail_too_deep(r, tag_at, ctx, where);
  WireReader sub = r.sub_reader(payload);
  parse_body(ctx, sub, m, depth + 1);
}

// What to write for `m`: the substitute SerializeOptions::substitutions gives a tensor, or `m`.
// Every pass goes through here, so sizing and writing agree.
template <class M>
inline const M& written_form(const M& m, const TensorSubstitutions* substitutions) {
  if constexpr (std::is_same_v<M, TensorProto>) {
    if (substitutions != nullptr) {
      const auto found = substitutions->find(&m);
      if (found != substitutions->end()) return found->second;
    }
  }
  return m;
}

// Reserves the message's slot, sizes its body; returns the bytes after the tag (length + body).
template <class M>
inline std::uint64_t nested_size(const M& m, SizeTable& sizes) {
  const std::size_t slot = sizes.size();
  sizes.push_back(0);
  const std::uint64_t body = body_size(written_form(m, sizes.substitutions), sizes);
  sizes[slot] = body;
  return wire::varint_size(body) + body;
}

template <class M>
inline void write_nested(const M& m, WireWriter& w, SizeCursor& sizes) {
  const std::uint64_t length = sizes.take();
  w.write_varint(length);
  const std::uint64_t start = w.position();
  write_body(written_form(m, sizes.substitutions), w, sizes);
  if (w.position() - start != length) SizeCursor::throw_changed();
}

template <class M>
inline void write_nested_reverse(const M& m, ReverseWriter& w) {
  const std::uint64_t end = w.written();
  write_body_reverse(written_form(m, w.substitutions()), w);
  w.put_varint(w.written() - end);
}

// --- Field kinds ---

template <class Kind>
struct FieldCodec;

template <>
struct FieldCodec<field::Int64> {
  static void parse(ParseContext&, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::optional<std::int64_t>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kVarint, where);
    v = static_cast<std::int64_t>(r.read_varint(where));
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::optional<std::int64_t>& v, SizeTable&) {
    if (!v) return 0;
    return kTagSize<N, WireType::kVarint> + wire::varint_size(static_cast<std::uint64_t>(*v));
  }
  template <std::uint32_t N>
  static void write(const std::optional<std::int64_t>& v, WireWriter& w, SizeCursor&) {
    if (!v) return;
    put_tag<N, WireType::kVarint>(w);
    w.write_varint(static_cast<std::uint64_t>(*v));
  }
  template <std::uint32_t N>
  static void write_reverse(const std::optional<std::int64_t>& v, ReverseWriter& w) {
    if (!v) return;
    w.put_varint(static_cast<std::uint64_t>(*v));
    w.put_tag<N, WireType::kVarint>();
  }
};

// int32 and enums: a negative value is sign-extended to 64 bits on the wire (10 bytes), and a
// wider value read is truncated to 32 bits, as libprotobuf does.
template <>
struct FieldCodec<field::Int32> {
  static std::uint64_t to_wire(std::int32_t v) {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  }
  static void parse(ParseContext&, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::optional<std::int32_t>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kVarint, where);
    v = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.read_varint(where)));
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::optional<std::int32_t>& v, SizeTable&) {
    if (!v) return 0;
    return kTagSize<N, WireType::kVarint> + wire::varint_size(to_wire(*v));
  }
  template <std::uint32_t N>
  static void write(const std::optional<std::int32_t>& v, WireWriter& w, SizeCursor&) {
    if (!v) return;
    put_tag<N, WireType::kVarint>(w);
    w.write_varint(to_wire(*v));
  }
  template <std::uint32_t N>
  static void write_reverse(const std::optional<std::int32_t>& v, ReverseWriter& w) {
    if (!v) return;
    w.put_varint(to_wire(*v));
    w.put_tag<N, WireType::kVarint>();
  }
};

template <>
struct FieldCodec<field::Float> {
  static void parse(ParseContext&, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::optional<float>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kFixed32, where);
    v = std::bit_cast<float>(r.read_fixed32(where));
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::optional<float>& v, SizeTable&) {
    return v ? kTagSize<N, WireType::kFixed32> + 4 : 0;
  }
  template <std::uint32_t N>
  static void write(const std::optional<float>& v, WireWriter& w, SizeCursor&) {
    if (!v) return;
    put_tag<N, WireType::kFixed32>(w);
    w.write_fixed32(std::bit_cast<std::uint32_t>(*v));
  }
  template <std::uint32_t N>
  static void write_reverse(const std::optional<float>& v, ReverseWriter& w) {
    if (!v) return;
    w.put_fixed32(std::bit_cast<std::uint32_t>(*v));
    w.put_tag<N, WireType::kFixed32>();
  }
};

inline std::uint64_t length_delimited_size(std::uint64_t length) {
  return wire::varint_size(length) + length;
}

template <>
struct FieldCodec<field::String> {
  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::optional<Text>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    v.emplace(make_text(ctx, r.read_length_delimited(where)));
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::optional<Text>& v, SizeTable&) {
    if (!v) return 0;
    return kTagSize<N, WireType::kLengthDelimited> + length_delimited_size(v->size());
  }
  template <std::uint32_t N>
  static void write(const std::optional<Text>& v, WireWriter& w, SizeCursor&) {
    if (!v) return;
    put_tag<N, WireType::kLengthDelimited>(w);
    w.write_varint(v->size());
    w.write_bytes(ByteSpan(reinterpret_cast<const std::uint8_t*>(v->data()), v->size()));
  }
  template <std::uint32_t N>
  static void write_reverse(const std::optional<Text>& v, ReverseWriter& w) {
    if (!v) return;
    w.put_length_delimited(ByteSpan(reinterpret_cast<const std::uint8_t*>(v->data()), v->size()));
    w.put_tag<N, WireType::kLengthDelimited>();
  }
};

template <>
struct FieldCodec<field::TensorData> {
  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::optional<TensorBytes>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    const std::uint8_t* const length_at = r.position();
    const ByteSpan payload = r.read_length_delimited(where);
    const ParseOptions& options = ctx.options;
    if (payload.size() > options.max_tensor_bytes) {
      r.fail(ErrorCode::kLimitExceeded, r.offset_of(length_at), where,
             "tensor payload of " + std::to_string(payload.size()) +
                 " bytes exceeds max_tensor_bytes (" + std::to_string(options.max_tensor_bytes) +
                 ")");
    }
    const bool aligned = options.alignment == 0 ||
                         reinterpret_cast<std::uintptr_t>(payload.data()) % options.alignment == 0;
    if (options.no_copy && payload.size() >= options.raw_data_threshold && aligned) {
      v = TensorBytes::borrowed(payload, ctx.owner);
    } else {
      v = TensorBytes::owned(OwnedBytes::copy_of(payload, ctx.copy_alignment));
    }
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::optional<TensorBytes>& v, SizeTable&) {
    if (!v) return 0;
    return kTagSize<N, WireType::kLengthDelimited> + length_delimited_size(v->size());
  }
  template <std::uint32_t N>
  static void write(const std::optional<TensorBytes>& v, WireWriter& w, SizeCursor&) {
    if (!v) return;
    put_tag<N, WireType::kLengthDelimited>(w);
    w.write_varint(v->size());
    w.write_bytes(v->view());
  }
  template <std::uint32_t N>
  static void write_reverse(const std::optional<TensorBytes>& v, ReverseWriter& w) {
    if (!v) return;
    w.put_payload(v->view(), &*v);
    w.put_varint(v->size());
    w.put_tag<N, WireType::kLengthDelimited>();
  }
};

// Box<M> and Inline<M> alike.
template <class Holder>
struct SubMessageCodec {
  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    Holder& v, std::uint32_t depth, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    const ByteSpan payload = r.read_length_delimited(where);
    // A repeated occurrence merges into the message already there, as protobuf specifies.
    parse_nested(ctx, r, tag_at, payload, v.ensure(), depth, where);
  }
  template <std::uint32_t N>
  static std::uint64_t size(const Holder& v, SizeTable& sizes) {
    if (!v) return 0;
    return kTagSize<N, WireType::kLengthDelimited> + nested_size(*v, sizes);
  }
  template <std::uint32_t N>
  static void write(const Holder& v, WireWriter& w, SizeCursor& sizes) {
    if (!v) return;
    put_tag<N, WireType::kLengthDelimited>(w);
    write_nested(*v, w, sizes);
  }
  template <std::uint32_t N>
  static void write_reverse(const Holder& v, ReverseWriter& w) {
    if (!v) return;
    write_nested_reverse(*v, w);
    w.put_tag<N, WireType::kLengthDelimited>();
  }
};

template <class M>
struct FieldCodec<field::Message<M>> : SubMessageCodec<Box<M>> {};
template <class M>
struct FieldCodec<field::InlineMessage<M>> : SubMessageCodec<Inline<M>> {};

// How many fields with the tag starting at `tag_at` follow one another from there, counting that
// one, looking no further than kCountRunBytes: the capacity to reserve for a repeated field, so
// that its vector is allocated once instead of regrowing (a node's inputs). Encoders write a
// repeated field's elements together, so the run is usually all of them; when it is not, the
// vector simply grows later. The look-ahead is bounded because counting is a chain of dependent
// loads: over a graph's 200,000 nodes (tens of megabytes, more than the cache holds) it cost a
// quarter of the parse, while within the bound the bytes it reads are still cached when the
// parser gets to them. Stops quietly at anything malformed: the parse that follows reports it.
constexpr std::size_t kCountRunBytes = std::size_t{1} << 17;

struct RunAhead {
  std::size_t count;  // Elements seen, at least 1.
  std::size_t bytes;  // Bytes they span.
  bool more;          // The look-ahead ended inside the run: more elements may follow.
};

RunAhead count_run(const std::uint8_t* tag_at, const std::uint8_t* input_end) {
  // New elements are counted only before `stop`; each is checked against the whole input.
  const std::uint8_t* const stop = static_cast<std::size_t>(input_end - tag_at) > kCountRunBytes
                                       ? tag_at + kCountRunBytes
                                       : input_end;
  const std::uint8_t* const end = input_end;
  const wire::DecodedVarint wanted = wire::decode_varint(tag_at, end);
  if (wanted.status != wire::VarintStatus::kOk) return {1, 0, false};
  const auto tag_size = static_cast<std::size_t>(wanted.next - tag_at);
  std::size_t count = 0;
  const std::uint8_t* p = tag_at;
  const auto result = [&](bool complete) {
    return RunAhead{std::max<std::size_t>(count, 1), static_cast<std::size_t>(p - tag_at),
                    complete && p >= stop && stop != input_end};
  };
  const auto type = static_cast<WireType>(wanted.value & 7);
  // Steps over the element at `p` (its tag `tag_size` bytes long); false when it is cut short or
  // malformed.
  const auto step = [&](WireType value_type) {
    const wire::ScannedValue value = wire::scan_value(value_type, p + tag_size, end);
    if (value.status != wire::ScanStatus::kOk) return false;
    ++count;
    p = value.next;
    return true;
  };
  if (tag_size == 1 && (type == WireType::kLengthDelimited || type == WireType::kVarint)) {
    // The common cases, kept tight: strings and messages of fields 1 to 15, unpacked integers
    // (dims, ints).
    const std::uint8_t tag = *tag_at;
    if (type == WireType::kLengthDelimited) {
      while (p < stop && *p == tag) {
        if (!step(WireType::kLengthDelimited)) return result(false);
      }
    } else {
      while (p < stop && *p == tag) {
        if (!step(WireType::kVarint)) return result(false);
      }
    }
    return result(true);
  }
  // Tags are 1 or 2 bytes; comparing them byte by byte beats a call to memcmp.
  const auto same_tag = [&](const std::uint8_t* q) {
    for (std::size_t i = 0; i < tag_size; ++i) {
      if (q[i] != tag_at[i]) return false;
    }
    return true;
  };
  while (p<stop&& static_cast<std::size_t>(end - p)> tag_size && same_tag(p)) {
    if (!step(type)) return result(false);
  }
  return result(true);
}

// Makes room, in a full repeated field, for the run of elements starting at `tag_at`. An empty
// field whose run ends within count_run's look-ahead gets exactly its length. A longer run (a
// graph's nodes) gets an estimate from the bytes left in the enclosing message at the density of
// the elements seen, so that its vector is neither regrown nor moved: reserved memory that is
// never written is never faulted in either. The estimate is capped at 4 bytes of memory per byte
// of input left. A field that is full again (a run that outgrew the estimate, or elements
// interleaved with other fields) at least doubles, so that a field of n elements is moved O(n)
// times in all.
template <class T>
inline void reserve_run(std::vector<T>& v, const std::uint8_t* tag_at, const WireReader& r,
                        const ParseContext& ctx) {
  if (v.size() < v.capacity()) return;
  const RunAhead ahead = count_run(tag_at, r.end());
  std::uint64_t more = ahead.count;
  if (ahead.more) {
    const auto left = static_cast<std::uint64_t>(r.end() - tag_at);
    const auto estimate =
        static_cast<std::uint64_t>(static_cast<double>(ahead.count) * static_cast<double>(left) /
                                   static_cast<double>(std::max<std::size_t>(ahead.bytes, 1)));
    const std::uint64_t cap = std::max<std::uint64_t>(ahead.count, left * 4 / sizeof(T));
    more = std::min(estimate, cap);
  }
  const std::uint64_t wanted = v.size() + std::max<std::uint64_t>(more, v.size());
  v.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(
      wanted, std::max<std::uint64_t>(ctx.options.max_elements, v.size() + 1))));
  detail::advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

template <class M>
struct FieldCodec<field::Messages<M>> {
  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::vector<M>& v, std::uint32_t depth, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    // Sizing the vector once avoids moving every message on each regrowth (a graph's nodes).
    // The count is of fields actually present, so it is bounded by the input.
    reserve_run(v, tag_at, r, ctx);
    if (v.size() >= ctx.options.max_elements) fail_too_many(r, tag_at, ctx, where);
    const ByteSpan payload = r.read_length_delimited(where);
    parse_nested(ctx, r, tag_at, payload, v.emplace_back(), depth, where);
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::vector<M>& v, SizeTable& sizes) {
    std::uint64_t total = v.size() * kTagSize<N, WireType::kLengthDelimited>;
    for (const M& m : v) total += nested_size(m, sizes);
    return total;
  }
  template <std::uint32_t N>
  static void write(const std::vector<M>& v, WireWriter& w, SizeCursor& sizes) {
    for (const M& m : v) {
      put_tag<N, WireType::kLengthDelimited>(w);
      write_nested(m, w, sizes);
    }
  }
  template <std::uint32_t N>
  static void write_reverse(const std::vector<M>& v, ReverseWriter& w) {
    for (auto m = v.rbegin(); m != v.rend(); ++m) {
      write_nested_reverse(*m, w);
      w.put_tag<N, WireType::kLengthDelimited>();
    }
  }
};

template <>
struct FieldCodec<field::Strings> {
  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::vector<Text>& v, std::uint32_t, const WireContext& where) {
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    reserve_run(v, tag_at, r, ctx);
    if (v.size() >= ctx.options.max_elements) fail_too_many(r, tag_at, ctx, where);
    v.push_back(make_text(ctx, r.read_length_delimited(where)));
  }
  template <std::uint32_t N>
  static std::uint64_t size(const std::vector<Text>& v, SizeTable&) {
    std::uint64_t total = v.size() * kTagSize<N, WireType::kLengthDelimited>;
    for (const Text& s : v) total += length_delimited_size(s.size());
    return total;
  }
  template <std::uint32_t N>
  static void write(const std::vector<Text>& v, WireWriter& w, SizeCursor&) {
    for (const Text& s : v) {
      put_tag<N, WireType::kLengthDelimited>(w);
      w.write_varint(s.size());
      w.write_bytes(ByteSpan(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
    }
  }
  template <std::uint32_t N>
  static void write_reverse(const std::vector<Text>& v, ReverseWriter& w) {
    for (auto s = v.rbegin(); s != v.rend(); ++s) {
      w.put_length_delimited(ByteSpan(reinterpret_cast<const std::uint8_t*>(s->data()), s->size()));
      w.put_tag<N, WireType::kLengthDelimited>();
    }
  }
};

// Repeated scalars, read in both the packed and the unpacked form, written as declared.
enum class Encoding { kVarint, kFixed32, kFixed64 };

template <class T, Encoding kEncoding, bool kPacked>
struct RepeatedScalarCodec {
  static constexpr WireType kElementType = kEncoding == Encoding::kVarint    ? WireType::kVarint
                                           : kEncoding == Encoding::kFixed32 ? WireType::kFixed32
                                                                             : WireType::kFixed64;
  static constexpr std::size_t kFixedSize = kEncoding == Encoding::kFixed32 ? 4 : 8;

  static T from_varint(std::uint64_t raw) {
    if constexpr (std::is_same_v<T, std::int32_t>) {
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(raw));
    } else {
      return static_cast<T>(raw);
    }
  }
  static std::uint64_t to_varint(T value) {
    if constexpr (std::is_signed_v<T>) {
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    } else {
      return static_cast<std::uint64_t>(value);
    }
  }
  static T read_one(WireReader& r, const WireContext& where) {
    if constexpr (kEncoding == Encoding::kVarint) {
      return from_varint(r.read_varint(where));
    } else if constexpr (kEncoding == Encoding::kFixed32) {
      return std::bit_cast<T>(r.read_fixed32(where));
    } else {
      return std::bit_cast<T>(r.read_fixed64(where));
    }
  }

  static void parse(ParseContext& ctx, WireReader& r, WireType type, const std::uint8_t* tag_at,
                    std::vector<T>& v, std::uint32_t, const WireContext& where) {
    if (type == kElementType) {
      reserve_run(v, tag_at, r, ctx);
      if (v.size() >= ctx.options.max_elements) fail_too_many(r, tag_at, ctx, where);
      v.push_back(read_one(r, where));
      return;
    }
    expect_wire_type(r, tag_at, type, WireType::kLengthDelimited, where);
    const ByteSpan payload = r.read_length_delimited(where);
    if constexpr (kEncoding == Encoding::kVarint) {
      parse_packed_varints(ctx, r, tag_at, payload, v, where);
    } else {
      parse_packed_fixed(ctx, r, tag_at, payload, v, where);
    }
  }

  static void parse_packed_varints(const ParseContext& ctx, const WireReader& r,
                                   const std::uint8_t* tag_at, ByteSpan payload, std::vector<T>& v,
                                   const WireContext& where) {
    // Every varint ends with exactly one byte below 0x80, so counting those sizes the vector
    // exactly (and cheaply) before decoding; a block that ends mid-varint fails in the loop.
    std::size_t count = 0;
    for (const std::uint8_t byte : payload) count += byte < 0x80;
    if (count >
        ctx.options.max_elements - std::min<std::uint64_t>(v.size(), ctx.options.max_elements)) {
      fail_too_many(r, tag_at, ctx, where);
    }
    const std::size_t old_size = v.size();
    v.resize(old_size + count);
    T* out = v.data() + old_size;
    const std::uint8_t* p = payload.data();
    const std::uint8_t* const end = p + payload.size();
    while (p < end) {
      const wire::DecodedVarint d = wire::decode_varint(p, end);
      if (d.status != wire::VarintStatus::kOk) fail_varint_at(r, p, end, where);
      *out++ = from_varint(d.value);
      p = d.next;
    }
  }

  static void parse_packed_fixed(const ParseContext& ctx, const WireReader& r,
                                 const std::uint8_t* tag_at, ByteSpan payload, std::vector<T>& v,
                                 const WireContext& where) {
    if (payload.size() % kFixedSize != 0) {
      r.fail(ErrorCode::kCorrupt, r.offset_of(tag_at), where,
             "packed length " + std::to_string(payload.size()) + " is not a multiple of " +
                 std::to_string(kFixedSize));
    }
    const std::size_t count = payload.size() / kFixedSize;
    if (count >
        ctx.options.max_elements - std::min<std::uint64_t>(v.size(), ctx.options.max_elements)) {
      fail_too_many(r, tag_at, ctx, where);
    }
    const std::size_t old_size = v.size();
    v.resize(old_size + count);
    if constexpr (kLittleEndian) {
      if (count != 0) std::memcpy(v.data() + old_size, payload.data(), payload.size());
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint8_t* p = payload.data() + i * kFixedSize;
        if constexpr (kFixedSize == 4) {
          v[old_size + i] = std::bit_cast<T>(wire::load_fixed32(p));
        } else {
          v[old_size + i] = std::bit_cast<T>(wire::load_fixed64(p));
        }
      }
    }
  }

  static std::uint64_t varint_payload(const std::vector<T>& v) {
    std::uint64_t total = 0;
    for (const T value : v) total += wire::varint_size(to_varint(value));
    return total;
  }

  template <std::uint32_t N>
  static std::uint64_t size(const std::vector<T>& v, SizeTable& sizes) {
    if (v.empty()) return 0;
    if constexpr (kPacked) {
      std::uint64_t payload;
      if constexpr (kEncoding == Encoding::kVarint) {
        payload = varint_payload(v);
        sizes.push_back(payload);
      } else {
        payload = v.size() * kFixedSize;
      }
      return kTagSize<N, WireType::kLengthDelimited> + length_delimited_size(payload);
    } else {
      const std::uint64_t tags = v.size() * kTagSize<N, kElementType>;
      if constexpr (kEncoding == Encoding::kVarint) {
        return tags + varint_payload(v);
      } else {
        return tags + v.size() * kFixedSize;
      }
    }
  }

  static void write_one(T value, WireWriter& w) {
    if constexpr (kEncoding == Encoding::kVarint) {
      w.write_varint(to_varint(value));
    } else if constexpr (kEncoding == Encoding::kFixed32) {
      w.write_fixed32(std::bit_cast<std::uint32_t>(value));
    } else {
      w.write_fixed64(std::bit_cast<std::uint64_t>(value));
    }
  }

  template <std::uint32_t N>
  static void write(const std::vector<T>& v, WireWriter& w, SizeCursor& sizes) {
    if (v.empty()) return;
    if constexpr (kPacked) {
      put_tag<N, WireType::kLengthDelimited>(w);
      if constexpr (kEncoding == Encoding::kVarint) {
        const std::uint64_t payload = sizes.take();
        w.write_varint(payload);
        const std::uint64_t start = w.position();
        for (const T value : v) write_one(value, w);
        if (w.position() - start != payload) SizeCursor::throw_changed();
      } else {
        w.write_varint(v.size() * kFixedSize);
        if constexpr (kLittleEndian) {
          w.write_bytes(
              ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * kFixedSize));
        } else {
          for (const T value : v) write_one(value, w);
        }
      }
    } else {
      for (const T value : v) {
        put_tag<N, kElementType>(w);
        write_one(value, w);
      }
    }
  }

  static void put_one(T value, ReverseWriter& w) {
    if constexpr (kEncoding == Encoding::kVarint) {
      w.put_varint(to_varint(value));
    } else if constexpr (kEncoding == Encoding::kFixed32) {
      w.put_fixed32(std::bit_cast<std::uint32_t>(value));
    } else {
      w.put_fixed64(std::bit_cast<std::uint64_t>(value));
    }
  }

  template <std::uint32_t N>
  static void write_reverse(const std::vector<T>& v, ReverseWriter& w) {
    if (v.empty()) return;
    if constexpr (kPacked) {
      const std::uint64_t end = w.written();
      if constexpr (kEncoding != Encoding::kVarint && kLittleEndian) {
        w.put_payload(
            ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * kFixedSize));
      } else {
        for (auto value = v.rbegin(); value != v.rend(); ++value) put_one(*value, w);
      }
      w.put_varint(w.written() - end);
      w.put_tag<N, WireType::kLengthDelimited>();
    } else {
      for (auto value = v.rbegin(); value != v.rend(); ++value) {
        put_one(*value, w);
        w.put_tag<N, kElementType>();
      }
    }
  }
};

template <>
struct FieldCodec<field::Int64s> : RepeatedScalarCodec<std::int64_t, Encoding::kVarint, false> {};
template <>
struct FieldCodec<field::Floats> : RepeatedScalarCodec<float, Encoding::kFixed32, false> {};
template <>
struct FieldCodec<field::PackedInt32s>
    : RepeatedScalarCodec<std::int32_t, Encoding::kVarint, true> {};
template <>
struct FieldCodec<field::PackedInt64s>
    : RepeatedScalarCodec<std::int64_t, Encoding::kVarint, true> {};
template <>
struct FieldCodec<field::PackedUint64s>
    : RepeatedScalarCodec<std::uint64_t, Encoding::kVarint, true> {};
template <>
struct FieldCodec<field::PackedFloats> : RepeatedScalarCodec<float, Encoding::kFixed32, true> {};
template <>
struct FieldCodec<field::PackedDoubles> : RepeatedScalarCodec<double, Encoding::kFixed64, true> {};

// --- Unknown fields and oneofs ---

void keep_unknown(const ParseContext& ctx, WireReader& r, FieldTag tag, const std::uint8_t* tag_at,
                  UnknownFields& unknown, std::uint32_t depth, std::string_view message_name) {
  const std::string number = std::to_string(tag.number);  // Errors name the field "Message.N".
  // Groups count against the nesting limit like messages.
  r.skip_value(tag, WireContext(message_name, number),
               ctx.options.max_depth - std::min(depth, ctx.options.max_depth));
  unknown.append(ByteSpan(tag_at, static_cast<std::size_t>(r.position() - tag_at)));
}

template <class T>
void reset_field(std::optional<T>& v) {
  v.reset();
}
template <class T>
void reset_field(Box<T>& v) {
  v.reset();
}
template <class T>
void reset_field(Inline<T>& v) {
  v.reset();
}
// Only oneof members are ever reset; this overload lets the expansion compile for the others.
template <class T>
void reset_field(std::vector<T>& v) {
  v.clear();
}

// --- Turning borrowed strings into owned ones (own_strings) ---

inline void own_field(std::optional<Text>& v) {
  if (v) v->own();
}
inline void own_field(std::vector<Text>& v) {
  for (Text& text : v) text.own();
}
template <class M>
void own_field(Box<M>& v) {
  if (v) own_strings_body(*v);
}
template <class M>
void own_field(Inline<M>& v) {
  if (v) own_strings_body(*v);
}
template <class T>
void own_field(std::vector<T>& v) {
  if constexpr (OnnxMessage<T>) {
    for (T& m : v) own_strings_body(m);
  }
}
template <class T>
void own_field(T&) {}  // Numbers, tensor payloads.

#define ONNXZIP_OWN_FIELD_(kind, name, number, oneof) own_field(m.name);

// --- The per-message functions, expanded from the field lists ---

// A field as a type, so that a message's fields can be walked in reverse at compile time.
template <class Kind, auto kMember, std::uint32_t kNumber>
struct FieldRef {
  template <class M>
  static void write_reverse(const M& m, ReverseWriter& w) {
    FieldCodec<Kind>::template write_reverse<kNumber>(m.*kMember, w);
  }
};

// Fields in declaration order; the leading void lets the X-macro put a comma before each field.
template <class... Fields>
struct FieldList;

template <class M, class... Fields>
inline void write_fields_reverse(const M& m, ReverseWriter& w, FieldList<void, Fields...>*) {
  using Tuple = std::tuple<Fields...>;
  [&]<std::size_t... kIndex>(std::index_sequence<kIndex...>) {
    (std::tuple_element_t<sizeof...(Fields) - 1 - kIndex, Tuple>::write_reverse(m, w), ...);
  }
  (std::index_sequence_for<Fields...>{});
}

constexpr bool strictly_ascending(std::initializer_list<std::uint32_t> numbers) {
  std::uint32_t previous = 0;
  for (const std::uint32_t n : numbers) {
    if (n <= previous) return false;
    previous = n;
  }
  return true;
}

#define ONNXZIP_FIELD_NUMBER_(kind, name, number, oneof) number,

#define ONNXZIP_PARSE_CASE_(kind, name, number, oneof)                             \
  case number:                                                                     \
    FieldCodec<field::kind>::parse(ctx, r, tag.type, tag_at, m.name, depth,        \
                                   WireContext(kMessageName<MessageType>, #name)); \
    if constexpr (oneof != 0) clear_oneof_except(m, number, oneof);                \
    break;

#define ONNXZIP_CLEAR_ONEOF_MEMBER_(kind, name, number, oneof) \
  if constexpr (oneof != 0) {                                  \
    if (oneof == group && number != kept) reset_field(m.name); \
  }

#define ONNXZIP_SIZE_FIELD_(kind, name, number, oneof) \
  total += FieldCodec<field::kind>::template size<number>(m.name, sizes);

#define ONNXZIP_FIELD_REF_(kind, name, number, oneof) \
  , FieldRef<field::kind, &MessageType::name, number>

#define ONNXZIP_WRITE_FIELD_(kind, name, number, oneof) \
  FieldCodec<field::kind>::template write<number>(m.name, w, sizes);

#define ONNXZIP_DEFINE_BODY_FUNCTIONS_(Type, Id, Name)                                         \
  static_assert(strictly_ascending({ONNXZIP_FIELDS_##Id(ONNXZIP_FIELD_NUMBER_)}),              \
                Name ": fields must be listed in field-number order");                         \
                                                                                               \
  void own_strings_body(Type& m) { ONNXZIP_FIELDS_##Id(ONNXZIP_OWN_FIELD_) }                   \
                                                                                               \
  [[maybe_unused]] void clear_oneof_except(Type& m, std::uint32_t kept, int group) {           \
    ONNXZIP_FIELDS_##Id(ONNXZIP_CLEAR_ONEOF_MEMBER_)                                           \
  }                                                                                            \
                                                                                               \
  void parse_body(ParseContext& ctx, WireReader& r, Type& m, std::uint32_t depth) {            \
    using MessageType = Type;                                                                  \
    while (!r.at_end()) {                                                                      \
      const std::uint8_t* const tag_at = r.position();                                         \
      const FieldTag tag = r.read_tag(WireContext(Name));                                      \
      switch (tag.number) {                                                                    \
        ONNXZIP_FIELDS_##Id(ONNXZIP_PARSE_CASE_) default                                       \
            : keep_unknown(ctx, r, tag, tag_at, m.unknown_fields, depth, Name);                \
        break;                                                                                 \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  std::uint64_t body_size(const Type& m, SizeTable& sizes) {                                   \
    std::uint64_t total = m.unknown_fields.size();                                             \
    ONNXZIP_FIELDS_##Id(ONNXZIP_SIZE_FIELD_) return total;                                     \
  }                                                                                            \
                                                                                               \
  void write_body(const Type& m, WireWriter& w, SizeCursor& sizes) {                           \
    ONNXZIP_FIELDS_##Id(ONNXZIP_WRITE_FIELD_) if (!m.unknown_fields.empty()) {                 \
      w.write_bytes(m.unknown_fields.bytes());                                                 \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  void write_body_reverse(const Type& m, ReverseWriter& w) {                                   \
    using MessageType = Type;                                                                  \
    w.put_bytes(m.unknown_fields.bytes());                                                     \
    write_fields_reverse(                                                                      \
        m, w, static_cast<FieldList<void ONNXZIP_FIELDS_##Id(ONNXZIP_FIELD_REF_)>*>(nullptr)); \
  }

ONNXZIP_ONNX_MESSAGES(ONNXZIP_DEFINE_BODY_FUNCTIONS_)

#undef ONNXZIP_DEFINE_BODY_FUNCTIONS_
#undef ONNXZIP_WRITE_FIELD_
#undef ONNXZIP_FIELD_REF_
#undef ONNXZIP_SIZE_FIELD_
#undef ONNXZIP_CLEAR_ONEOF_MEMBER_
#undef ONNXZIP_PARSE_CASE_
#undef ONNXZIP_FIELD_NUMBER_

// --- Entry points ---

void check_options(const ParseOptions& options, std::string_view what) {
  if (options.alignment != 0 && !is_power_of_two(options.alignment)) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(what)},
                "alignment " + std::to_string(options.alignment) + " is not a power of two");
  }
}

std::size_t copy_alignment(const ParseOptions& options) {
  return static_cast<std::size_t>(
      std::max<std::uint64_t>(options.alignment, kDefaultBufferAlignment));
}

// Streaming writes go through a buffer of this size; payloads of kDirectWriteBytes or more
// bypass it.
constexpr std::size_t kStreamBufferBytes = std::size_t{1} << 20;
constexpr std::uint64_t kDirectWriteBytes = std::uint64_t{1} << 18;

class FileSink final : public ByteSink {
 public:
  explicit FileSink(AtomicOutputFile& file) noexcept : file_(file) {}
  void write(ByteSpan bytes) override { file_.write(bytes); }

 private:
  AtomicOutputFile& file_;
};

}  // namespace

template <OnnxMessage M>
void merge_message(ByteSpan bytes, M& message, OwnerToken owner, const ParseOptions& options,
                   std::string_view source) {
  check_options(options, source);
  if (options.max_depth == 0) {
    throw Error(ErrorCode::kInvalidArgument, {.file = std::string(source)},
                "max_depth must be >= 1");
  }
  WireReader reader(bytes, source);
  if (bytes.size() > options.max_message_size) {
    reader.fail(ErrorCode::kLimitExceeded, 0, WireContext(kMessageName<M>),
                "input of " + std::to_string(bytes.size()) + " bytes exceeds max_message_size (" +
                    std::to_string(options.max_message_size) + ")");
  }
  const bool borrow_text = options.no_copy && owner == nullptr;
  ParseContext ctx{options, options.no_copy ? std::move(owner) : nullptr, copy_alignment(options),
                   borrow_text};
  try {
    parse_body(ctx, reader, message, 1);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kLimitExceeded, {.file = std::string(source)},
                "out of memory while parsing " + std::string(kMessageName<M>));
  } catch (const std::length_error&) {
    throw Error(
        ErrorCode::kLimitExceeded, {.file = std::string(source)},
        "a container grew past its maximum size while parsing " + std::string(kMessageName<M>));
  }
}

template <OnnxMessage M>
M parse_message(ByteSpan bytes, OwnerToken owner, const ParseOptions& options,
                std::string_view source) {
  M message;
  merge_message(bytes, message, std::move(owner), options, source);
  return message;
}

template <OnnxMessage M>
MessageSerializer<M>::MessageSerializer(const M& message, const SerializeOptions& options)
    : message_(&message), options_(options) {
  const M& written = written_form(message, options.substitutions);
  auto snapshot = std::make_shared<ReverseWriter>(options.substitutions,
                                                  options.max_buffered_structure_bytes, true);
  try {
    write_body_reverse(written, *snapshot);
    size_ = snapshot->written();
    snapshot_ = std::move(snapshot);
    return;
  } catch (const ReverseWriter::OverBudget&) {
  }
  snapshot.reset();
  SizeTable sizes;
  sizes.substitutions = options.substitutions;
  sizes.push_back(0);
  sizes[0] = body_size(written, sizes);
  size_ = sizes[0];
  sizes_ = std::move(static_cast<std::vector<std::uint64_t>&>(sizes));
}

template <OnnxMessage M>
void MessageSerializer<M>::write(wire::ByteSink& sink) const {
  if (snapshot_) {
    const auto& snapshot = *static_cast<const ReverseWriter*>(snapshot_.get());
    snapshot.check_payloads();
    snapshot.emit([&](ByteSpan piece) {
      if (!piece.empty()) sink.write(piece);
    });
    return;
  }
  const auto buffer_size = static_cast<std::size_t>(
      std::clamp<std::uint64_t>(size_, wire::kMaxFieldHeaderSize, kStreamBufferBytes));
  const auto buffer = std::make_unique_for_overwrite<std::uint8_t[]>(buffer_size);
  WireWriter writer(MutableByteSpan(buffer.get(), buffer_size), &sink, kDirectWriteBytes);
  SizeCursor cursor{sizes_.data() + 1, sizes_.data() + sizes_.size(), options_.substitutions};
  write_body(written_form(*message_, cursor.substitutions), writer, cursor);
  writer.flush();
  if (writer.position() != size_ || cursor.next != cursor.end) SizeCursor::throw_changed();
}

template <OnnxMessage M>
void MessageSerializer<M>::write(MutableByteSpan out) const {
  if (out.size() != size_) {
    throw Error(ErrorCode::kInvalidArgument,
                "serialize: output span of " + std::to_string(out.size()) +
                    " bytes for a message of " + std::to_string(size_));
  }
  if (snapshot_) {
    const auto& snapshot = *static_cast<const ReverseWriter*>(snapshot_.get());
    snapshot.check_payloads();
    std::uint8_t* p = out.data();
    snapshot.emit([&](ByteSpan piece) {
      if (piece.empty()) return;  // memcpy takes no null pointer, even for 0 bytes.
      std::memcpy(p, piece.data(), piece.size());
      p += piece.size();
    });
    return;
  }
  WireWriter writer(out, nullptr);
  SizeCursor cursor{sizes_.data() + 1, sizes_.data() + sizes_.size(), options_.substitutions};
  write_body(written_form(*message_, cursor.substitutions), writer, cursor);
  if (writer.position() != size_ || cursor.next != cursor.end) SizeCursor::throw_changed();
}

template <OnnxMessage M>
std::vector<std::uint8_t> serialize_message(const M& message, const SerializeOptions& options) {
  ReverseWriter writer(options.substitutions);
  write_body_reverse(written_form(message, options.substitutions), writer);
  std::vector<std::uint8_t> out;
  out.reserve(static_cast<std::size_t>(writer.written()));
  detail::advise_huge_pages(out.data(), out.capacity());
  writer.emit([&](ByteSpan piece) { out.insert(out.end(), piece.begin(), piece.end()); });
  ONNXZIP_DCHECK(out.size() == writer.written());
  return out;
}

template <OnnxMessage M>
void serialize_message(const M& message, wire::ByteSink& sink, const SerializeOptions& options) {
  MessageSerializer<M>(message, options).write(sink);
}

template <OnnxMessage M>
std::uint64_t serialized_size(const M& message) {
  SizeTable sizes;
  sizes.push_back(0);
  return body_size(message, sizes);
}

template <OnnxMessage M>
std::size_t serialize_message(const M& message, MutableByteSpan out,
                              const SerializeOptions& options) {
  ReverseWriter writer(options.substitutions, out);
  try {
    write_body_reverse(written_form(message, options.substitutions), writer);
  } catch (const ReverseWriter::OutOfRoom&) {
    throw Error(ErrorCode::kInvalidArgument,
                "serialize: the " + std::string(kMessageName<M>) +
                    " does not fit in an output span of " + std::to_string(out.size()) +
                    " bytes (serialized_size() gives the size it needs)");
  }
  // Written back to front: a message shorter than the span ends at the span's end.
  const auto size = static_cast<std::size_t>(writer.written());
  ONNXZIP_DCHECK(size <= out.size());
  if (size != out.size()) std::memmove(out.data(), out.data() + (out.size() - size), size);
  return size;
}

template <OnnxMessage M>
void own_strings(M& message) {
  own_strings_body(message);
}

#define ONNXZIP_INSTANTIATE_(Type, Id, Name)                                                      \
  template Type parse_message<Type>(ByteSpan, OwnerToken, const ParseOptions&, std::string_view); \
  template void merge_message<Type>(ByteSpan, Type&, OwnerToken, const ParseOptions&,             \
                                    std::string_view);                                            \
  template std::vector<std::uint8_t> serialize_message<Type>(const Type&,                         \
                                                             const SerializeOptions&);            \
  template void serialize_message<Type>(const Type&, wire::ByteSink&, const SerializeOptions&);   \
  template std::uint64_t serialized_size<Type>(const Type&);                                      \
  template void own_strings<Type>(Type&);                                                         \
  template std::size_t serialize_message<Type>(const Type&, MutableByteSpan,                      \
                                               const SerializeOptions&);                          \
  template class MessageSerializer<Type>;
ONNXZIP_ONNX_MESSAGES(ONNXZIP_INSTANTIATE_)
#undef ONNXZIP_INSTANTIATE_

ModelProto parse_model(ByteSpan bytes, const ParseOptions& options, std::string_view source) {
  return parse_message<ModelProto>(bytes, options, source);
}

ModelProto parse_model_file(const std::filesystem::path& path, const ParseOptions& options,
                            FileAccess access) {
  std::shared_ptr<const MappedFile> mapping = MappedFile::open(path, whole_file_access(access));
  const std::string source = path.string();
  const ByteSpan bytes = mapping->bytes();
  return parse_message<ModelProto>(bytes, std::move(mapping), options, source);
}

std::vector<std::uint8_t> serialize_model(const ModelProto& model,
                                          const SerializeOptions& options) {
  return serialize_message(model, options);
}

OwnedBytes serialize_model_to_owned_bytes(const ModelProto& model,
                                          const SerializeOptions& options) {
  ReverseWriter writer(options.substitutions);
  write_body_reverse(written_form(model, options.substitutions), writer);
  OwnedBytes out(static_cast<std::size_t>(writer.written()));
  std::uint8_t* p = out.data();
  writer.emit([&](ByteSpan piece) {
    if (piece.empty()) return;  // memcpy takes no null pointer, even for 0 bytes.
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  });
  return out;
}

void serialize_model(const ModelProto& model, wire::ByteSink& sink,
                     const SerializeOptions& options) {
  serialize_message(model, sink, options);
}

std::size_t serialize_model(const ModelProto& model, MutableByteSpan out,
                            const SerializeOptions& options) {
  return serialize_message(model, out, options);
}

void serialize_model(const ModelProto& model, AtomicOutputFile& out,
                     const SerializeOptions& options) {
  FileSink sink(out);
  serialize_message(model, sink, options);
}

void serialize_model_to_file(const ModelProto& model, const std::filesystem::path& path,
                             const SerializeOptions& options) {
  // The serializer already buffers; a small file buffer lets its full buffers go straight to
  // the kernel instead of being copied a second time.
  AtomicOutputFile out(path, OutputFileOptions{}, std::size_t{1} << 16);
  serialize_model(model, out, options);
  out.commit();
}

}  // namespace onnxzip
