// Digests and signatures of an archive's entries, as bytes (spec §12): SHA-256, the `__DIGESTS`
// statement (an in-toto Statement v1 with model_signing's v1.0 predicate), the `__SIGNATURE`
// bundle (Sigstore bundle v0.3, a DSSE envelope signed with ECDSA P-256 / SHA-256) and the PEM
// keys that sign and verify it. Knows no ZIP and no ONNX: the archive layer (signing.h) decides
// which entries are hashed and where the two entries go. OpenSSL does every cryptographic step.
//
// Parsing is strict: every field the spec names is required with its type (the predicate's own
// `onnxzip` record included), duplicate object keys are refused, and the
// input's size is checked against IntegrityLimits before a byte is parsed. Every failure is an
// onnxzip::Error naming the entry. Any module above the integrity layer may use this header.
#ifndef ONNXZIP_INTEGRITY_H_
#define ONNXZIP_INTEGRITY_H_

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxzip/bytes.h"

namespace onnxzip {

inline constexpr std::string_view kDigestsEntryName = "__DIGESTS";
inline constexpr std::string_view kSignatureEntryName = "__SIGNATURE";
// The container version an archive with integrity entries follows (spec §11, §12).
inline constexpr std::string_view kIntegrityFormatVersion = "1.1";

using Sha256Digest = std::array<std::uint8_t, 32>;

// SHA-256 in pieces (OpenSSL EVP). Movable, not copyable.
class Sha256 final {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(ByteSpan bytes);
  // The digest of everything updated; the hasher is then reset.
  Sha256Digest finish();
  static Sha256Digest of(ByteSpan bytes);

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// Lower-case hex, two digits a byte.
std::string to_hex(ByteSpan bytes);

// Bounds on the integrity entries a reader parses: checked before parsing, so a huge entry costs
// no memory (a JSON document takes several times its size once parsed).
struct IntegrityLimits {
  // `__DIGESTS`: about 200 bytes an entry, so 64 MiB allows some 300,000 entries.
  std::uint64_t max_digests_size = std::uint64_t{64} << 20;
  // `__SIGNATURE`: the bundle holds `__DIGESTS` again in base64, 4/3 of its size.
  std::uint64_t max_signature_size = std::uint64_t{96} << 20;
};

// One resource of `__DIGESTS`: an entry of the archive and its bytes' SHA-256, with the size and
// CRC-32 of the ZIP entry (the predicate's `onnxzip` record).
struct EntryDigest {
  std::string name;
  Sha256Digest sha256{};
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;

  bool operator==(const EntryDigest&) const = default;
};

// What `__DIGESTS` states.
struct DigestStatement {
  // The subject's name: informative only, as in model_signing (the archive's file name, without
  // the extension, when it was first written).
  std::string model_name;
  // One per entry, in byte order of the names (model_signing's order of resources).
  std::vector<EntryDigest> entries;
  // The subject's sha256: SHA-256 of the entries' digests concatenated in that order.
  Sha256Digest root{};
};

// SHA-256 over the 32 bytes of each digest in turn: model_signing's subject digest.
Sha256Digest root_digest(std::span<const EntryDigest> entries);

// The `__DIGESTS` bytes (UTF-8 JSON) for `entries` in any order: they are sorted by name and the
// root computed. Error(kInvalidArgument) for two entries of one name or an empty name.
std::string encode_digests(std::string_view model_name, std::vector<EntryDigest> entries);

// Parses and checks `__DIGESTS` (spec §12.2): the statement type, predicate type, serialization,
// one subject whose sha256 equals root_digest of the resources, resources each
// {name, algorithm "sha256", digest 64 lower-case hex}, unique names, and the `onnxzip` record
// giving each resource's size and CRC-32. `source` names the file in errors. Error(kLimitExceeded)
// beyond limits.max_digests_size, Error(kCorrupt) for anything else, naming the field.
DigestStatement decode_digests(ByteSpan json, const IntegrityLimits& limits,
                               std::string_view source);

// --- Keys ---

class PublicKey;

// An ECDSA P-256 private key, from PEM as `openssl ecparam -name prime256v1 -genkey` or
// `openssl genpkey` write it (unencrypted). Immutable; copies share the key.
class PrivateKey final {
 public:
  // Error(kInvalidArgument) naming `source` for what is not an unencrypted PEM private key, or
  // a key of another type or curve.
  static PrivateKey from_pem(ByteSpan pem, std::string_view source = "<key>");
  // Error(kNotFound / kIo) when the file cannot be read, then as from_pem.
  static PrivateKey load(const std::filesystem::path& path);

  PublicKey public_key() const;
  // Its public key's key_id().
  std::string key_id() const;

  struct Key;
  const Key& key() const noexcept { return *key_; }

 private:
  explicit PrivateKey(std::shared_ptr<const Key> key) noexcept : key_(std::move(key)) {}
  std::shared_ptr<const Key> key_;
};

// An ECDSA P-256 public key, from PEM (SubjectPublicKeyInfo, as `openssl ec -pubout` writes it).
class PublicKey final {
 public:
  static PublicKey from_pem(ByteSpan pem, std::string_view source = "<key>");
  static PublicKey load(const std::filesystem::path& path);

  // Lower-case hex SHA-256 of the key's PEM SubjectPublicKeyInfo as OpenSSL writes it (64
  // columns, LF line ends): the `hint` model_signing puts in a bundle's verification material.
  const std::string& key_id() const noexcept { return key_id_; }

  struct Key;
  const Key& key() const noexcept { return *key_; }

 private:
  friend class PrivateKey;
  PublicKey(std::shared_ptr<const Key> key, std::string key_id) noexcept
      : key_(std::move(key)), key_id_(std::move(key_id)) {}
  std::shared_ptr<const Key> key_;
  std::string key_id_;
};

// --- Signatures ---

inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";

// DSSE's pre-authentication encoding of a payload: "DSSEv1 <len> <type> <len> <payload>".
std::vector<std::uint8_t> dsse_pae(std::string_view payload_type, ByteSpan payload);

// The `__SIGNATURE` bytes: a Sigstore bundle v0.3 (JSON) whose DSSE envelope has `digests` (the
// `__DIGESTS` bytes) as payload, signed by `key` over its PAE (ECDSA P-256, SHA-256, DER), and
// whose verification material names the key by its key id.
std::string encode_signature(ByteSpan digests, const PrivateKey& key);

// Sets up, ahead of a first encode_signature, the OpenSSL state it would set up itself: the
// random generator its ECDSA nonce comes from, whose first use is most of a first signature's
// time. For a caller with time to spare while its statement is still on the way (an edit reading
// `__DIGESTS` on another core); encode_signature needs no call of it. Never throws (a failure
// here is encode_signature's to report).
void prepare_signing() noexcept;

// What `__SIGNATURE` holds.
struct SignatureBundle {
  std::string key_hint;  // verificationMaterial.publicKey.hint: the signer's key id.
  std::string payload_type;
  std::vector<std::uint8_t> payload;
  std::vector<std::uint8_t> signature;  // DER ECDSA signature over dsse_pae(payload).
};

// Parses `__SIGNATURE` (spec §12.3): media type, public-key verification material, one DSSE
// signature, base64 fields. Error(kLimitExceeded) beyond limits.max_signature_size,
// Error(kCorrupt) naming the field for anything else. Verifies nothing.
SignatureBundle decode_signature(ByteSpan json, const IntegrityLimits& limits,
                                 std::string_view source);

// Why `bundle` is not a valid signature of `digests` by `key`, in words ("signed by another key
// (key id ...)", "the signature does not verify", "its payload is not the __DIGESTS entry"), or
// "" when it is one.
std::string signature_problem(const SignatureBundle& bundle, ByteSpan digests,
                              const PublicKey& key);

}  // namespace onnxzip

#endif  // ONNXZIP_INTEGRITY_H_
