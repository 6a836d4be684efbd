// The integrity layer (integrity.h): SHA-256, the __DIGESTS statement, the __SIGNATURE bundle
// and PEM keys, checked against independent implementations (tests/support/sha256.cpp, the
// openssl command line, python3-cryptography) and against every malformed input of issue 24.
#include "onnxzip/integrity.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "onnxzip/error.h"
#include "onnxzip/internal/zip_reader.h"
#include "support/external_tool.h"
#include "support/scratch_dir.h"
#include "support/sha256.h"
#include "support/test_keys.h"

namespace onnxzip {
namespace {

using test_support::KeyFiles;
using test_support::make_key_pair;
using test_support::read_file_bytes;
using test_support::run_tool;
using test_support::ScratchDir;
using test_support::shell_quote;

ByteSpan bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

std::vector<EntryDigest> sample_entries() {
  std::vector<EntryDigest> entries;
  for (const char* name : {"weight", "__MODEL_PROTO", "Bias", "w_2"}) {
    const std::string text = std::string("bytes of ") + name;
    entries.push_back({name, Sha256::of(bytes_of(text)), text.size(), 0x01020304});
  }
  return entries;
}

void expect_error(const std::function<void()>& call, ErrorCode code, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.message();
    EXPECT_NE(error.message().find(part), std::string::npos) << error.message();
  }
}

TEST(Sha256Test, MatchesAnIndependentImplementationOverSizesAndPieces) {
  for (const std::size_t size : {0, 1, 55, 56, 63, 64, 65, 1000, 100000}) {
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 31 + 7);
    EXPECT_EQ(to_hex(Sha256::of(bytes)), test_support::sha256_hex(bytes)) << size;
    Sha256 pieces;
    for (std::size_t at = 0; at < size; at += 17) {
      pieces.update(ByteSpan(bytes).subspan(at, std::min<std::size_t>(17, size - at)));
    }
    EXPECT_EQ(to_hex(pieces.finish()), test_support::sha256_hex(bytes)) << size;
  }
  EXPECT_EQ(to_hex(Sha256::of(bytes_of("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DigestsTest, RoundTripsSortedByNameWithTheModelSigningRootDigest) {
  const std::string json = encode_digests("model", sample_entries());
  const DigestStatement statement = decode_digests(bytes_of(json), {}, "a.onnxz");
  EXPECT_EQ(statement.model_name, "model");
  ASSERT_EQ(statement.entries.size(), 4u);
  // Byte order, as model_signing sorts its resources: upper case, '_', lower case.
  EXPECT_EQ(statement.entries[0].name, "Bias");
  EXPECT_EQ(statement.entries[1].name, "__MODEL_PROTO");
  EXPECT_EQ(statement.entries[2].name, "w_2");
  EXPECT_EQ(statement.entries[3].name, "weight");
  // The subject digest: SHA-256 of the 32-byte digests concatenated in that order.
  std::vector<std::uint8_t> concatenated;
  for (const EntryDigest& entry : statement.entries) {
    concatenated.insert(concatenated.end(), entry.sha256.begin(), entry.sha256.end());
    EXPECT_EQ(entry.size, std::string("bytes of ").size() + entry.name.size());
    EXPECT_EQ(entry.crc32, 0x01020304u);
  }
  EXPECT_EQ(to_hex(statement.root), test_support::sha256_hex(concatenated));
  EXPECT_NE(json.find("\"sha256\": \"" + test_support::sha256_hex(concatenated) + "\""),
            std::string::npos);
  EXPECT_NE(json.find(R"("predicateType": "https://model_signing/signature/v1.0")"),
            std::string::npos);
  EXPECT_NE(json.find(R"("ignore_paths": [)"), std::string::npos);
}

// The signature path stays byte-exact: the __DIGESTS of archives written and signed before (the
// conformance vectors) is what encode_digests writes for their statements again, byte for byte,
// so an edit or a new signature of such an archive signs the same bytes.
TEST(DigestsTest, EncodesTheDigestsOfArchivesSignedBeforeByteForByte) {
  const std::filesystem::path vectors = std::filesystem::path(ONNXZIP_CONFORMANCE_DIR) / "vectors";
  for (const char* name : {"valid_digests.onnxz", "valid_signed.onnxz"}) {
    SCOPED_TRACE(name);
    const ZipReader zip = ZipReader::open(vectors / name);
    const ZipEntry* entry = zip.find("__DIGESTS");
    ASSERT_NE(entry, nullptr);
    const TensorBytes bytes = zip.verified_data(*entry);
    const DigestStatement statement = decode_digests(bytes.view(), {}, name);
    EXPECT_EQ(encode_digests(statement.model_name, statement.entries),
              std::string(bytes.view().begin(), bytes.view().end()));
  }
}

TEST(DigestsTest, EncodeRefusesTwoEntriesOfOneName) {
  std::vector<EntryDigest> entries = sample_entries();
  entries.push_back(entries[0]);
  expect_error([&] { encode_digests("m", entries); }, ErrorCode::kInvalidArgument,
               "entry 'weight' given twice");
}

// The statement with one textual change, which must be refused with `expected` in the message.
struct BadDigests {
  std::string from;
  std::string to;
  std::string expected;
};

TEST(DigestsTest, RefusesEachMalformedStatementNamingTheField) {
  const std::string good = encode_digests("model", sample_entries());
  const std::string weight_digest = to_hex(Sha256::of(bytes_of("bytes of weight")));
  const std::vector<BadDigests> cases = {
      {R"("_type": "https://in-toto.io/Statement/v1")", R"("_type": 1)",
       "_type is a number, expected a string"},
      {"https://model_signing/signature/v1.0", "https://model_signing/Digests/v0.1",
       "predicateType is 'https://model_signing/Digests/v0.1'"},
      {R"("method": "files")", R"("method": "shards")", "predicate.serialization.method"},
      {R"("allow_symlinks": false)", R"("allow_symlinks": "false")",
       "allow_symlinks is \"false\", expected false"},
      {R"("hash_type": "sha256")", R"("hash_type": "sha1")", "hash_type is 'sha1'"},
      {R"("algorithm": "sha256")", R"("algorithm": "blake2")", "algorithm is 'blake2'"},
      {weight_digest, weight_digest.substr(0, 63) + "G", "not 64 lower-case hex digits"},
      {weight_digest, weight_digest.substr(0, 62), "not 64 lower-case hex digits"},
      {R"("size": )", R"("size": -)", "size is a number that is not a whole number"},
      {R"("crc32": "01020304")", R"("crc32": 16909060)", "crc32 is a number, expected a string"},
      {R"("name": "Bias")", R"("name": "Bias", "name": "Bias")", "the key 'name' appears twice"},
      {R"("format_version": "1.1")", R"("format_version": "2")", "format_version is '2'"},
      {"\"subject\": [", "\"subject\": [], \"x\": [", "subject has 0 items, expected 1"},
      {"\"resources\"", "\"resourcez\"", "predicate.resources is missing"},
  };
  for (const BadDigests& bad : cases) {
    std::string json = good;
    const std::size_t at = json.find(bad.from);
    ASSERT_NE(at, std::string::npos) << bad.from;
    json.replace(at, bad.from.size(), bad.to);
    expect_error([&] { decode_digests(bytes_of(json), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 bad.expected);
    expect_error([&] { decode_digests(bytes_of(json), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 "a.onnxz: entry '__DIGESTS': ");
  }
}

TEST(DigestsTest, RefusesAResourceListedTwiceAndAWrongSubjectDigest) {
  std::vector<EntryDigest> entries = sample_entries();
  const std::string good = encode_digests("model", entries);
  // The same resource twice, with the subject digest made right for it: only the duplicate is
  // wrong.
  entries.push_back(entries[0]);
  std::string json = good;
  {
    const std::size_t resources = json.find("\"resources\": [") + 14;
    const std::size_t end = json.find('}', resources) + 1;
    json.insert(resources, json.substr(resources, end - resources) + ",");
  }
  expect_error([&] { decode_digests(bytes_of(json), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "is listed twice");

  std::string changed = good;
  const std::string bias = to_hex(Sha256::of(bytes_of("bytes of Bias")));
  changed.replace(changed.find(bias), 64, std::string(64, '0'));
  expect_error([&] { decode_digests(bytes_of(changed), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "but the resources' digests hash to");
}

using Ordered = nlohmann::ordered_json;

// Every object of `value` with its members in reverse order, as another writer may put them.
Ordered reversed(const Ordered& value) {
  if (value.is_array()) {
    Ordered items = Ordered::array();
    for (const Ordered& item : value) items.push_back(reversed(item));
    return items;
  }
  if (!value.is_object()) return value;
  std::vector<std::pair<std::string, Ordered>> members;
  for (const auto& [key, member] : value.items()) members.emplace_back(key, reversed(member));
  Ordered object = Ordered::object();
  for (auto member = members.rbegin(); member != members.rend(); ++member) {
    object[member->first] = member->second;
  }
  return object;
}

TEST(DigestsTest, ReadsMembersInAnyOrderAndSkipsUnknownOnes) {
  const std::string good = encode_digests("model", sample_entries());
  const DigestStatement expected = decode_digests(bytes_of(good), {}, "a.onnxz");
  // The `onnxzip` record before the resources, every key reversed, members of later versions.
  Ordered document = reversed(Ordered::parse(good));
  ASSERT_EQ(document["predicate"].begin().key(), "onnxzip");
  document["predicate"]["later"] = {{"nested", Ordered::array({1, {{"k", {{"v", nullptr}}}}})}};
  document["subject"][0]["annotations"] = {{"k", "v"}};
  const std::string text = document.dump(2);
  const DigestStatement statement = decode_digests(bytes_of(text), {}, "a.onnxz");
  EXPECT_EQ(statement.model_name, "model");
  EXPECT_EQ(statement.entries, expected.entries);
  EXPECT_EQ(statement.root, expected.root);
}

TEST(DigestsTest, RefusesAWrongValueAnywhereNamingItsPlace) {
  const Ordered good = Ordered::parse(encode_digests("model", sample_entries()));
  struct Case {
    std::function<void(Ordered&)> change;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](Ordered& d) { d = "text"; }, "the document is a string, expected an object"},
      {[](Ordered& d) { d["predicate"] = "x"; }, "predicate is a string, expected an object"},
      {[](Ordered& d) { d["subject"][0]["digest"].erase("sha256"); },
       "subject[0].digest.sha256 is missing"},
      {[](Ordered& d) { d["subject"].push_back(d["subject"][0]); },
       "subject has 2 items, expected 1"},
      {[](Ordered& d) {
         d["predicate"]["serialization"]["allow_symlinks"] = {{"a", {1}}};
       },
       R"(predicate.serialization.allow_symlinks is {"a":[1]}, expected false)"},
      {[](Ordered& d) { d["predicate"]["serialization"]["ignore_paths"] = "__DIGESTS"; },
       "predicate.serialization.ignore_paths is a string, expected an array"},
      {[](Ordered& d) { d["predicate"]["serialization"]["ignore_paths"] = {"__DIGESTS"}; },
       R"(ignore_paths is ["__DIGESTS"], expected ["__DIGESTS","__SIGNATURE"])"},
      {[](Ordered& d) { d["predicate"]["resources"][2]["name"] = ""; },
       "predicate.resources[2].name is empty"},
      {[](Ordered& d) { d["predicate"]["resources"][3] = 3; },
       "predicate.resources[3] is a number, expected an object"},
      {[](Ordered& d) { d["predicate"]["onnxzip"]["entries"][0]["size"] = "9"; },
       "predicate.onnxzip.entries[0].size is a string, expected an unsigned integer"},
      {[](Ordered& d) { d["predicate"]["onnxzip"]["entries"][1]["size"] = 1.5; },
       "entries[1].size is a number that is not a whole number from 0 to 2^64 - 1"},
      {[](Ordered& d) { d["predicate"]["onnxzip"]["entries"].erase(3); },
       "predicate.onnxzip.entries has 3 items, predicate.resources 4"},
      {[](Ordered& d) { d["predicate"]["onnxzip"]["entries"][1]["name"] = "other"; },
       "predicate.onnxzip.entries[1].name is 'other', but predicate.resources[1].name "
       "'__MODEL_PROTO'"},
  };
  for (const Case& bad : cases) {
    Ordered document = good;
    bad.change(document);
    const std::string text = document.dump(2);
    expect_error([&] { decode_digests(bytes_of(text), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 "a.onnxz: entry '__DIGESTS': ");
    expect_error([&] { decode_digests(bytes_of(text), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 bad.expected);
  }
  // A key twice in an object nothing reads, or in a value read whole, is refused all the same.
  const std::string text = good.dump(2);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"("predicate": {)", R"("predicate": {"later": {"y": 1, "y": 2}, )"},
           {R"("allow_symlinks": false)", R"("allow_symlinks": {"q": 1, "q": 2})"}}) {
    std::string changed = text;
    changed.replace(changed.find(from), from.size(), to);
    expect_error([&] { decode_digests(bytes_of(changed), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 "appears twice in one object");
  }
}

TEST(DigestsTest, BadJsonAndHugeInputGiveClearErrorsBeforeParsing) {
  expect_error([] { decode_digests(bytes_of("{\"_type\": "), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "not valid JSON at byte");
  expect_error([] { decode_digests(bytes_of("\xff\xfe"), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "not valid JSON");
  // A limit smaller than the input refuses it unread: a 1 GB entry costs nothing.
  const std::string json = encode_digests("model", sample_entries());
  IntegrityLimits limits;
  limits.max_digests_size = json.size() - 1;
  expect_error([&] { decode_digests(bytes_of(json), limits, "a.onnxz"); },
               ErrorCode::kLimitExceeded,
               std::to_string(json.size()) + " bytes, more than the limit of " +
                   std::to_string(json.size() - 1) + " (IntegrityLimits::max_digests_size)");
  // Deep nesting: refused at the 65th level, not a crash (NestingDeeperThan64... has the rest).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error([&] { decode_digests(bytes_of(deep), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "nested more than 64 deep");
}

TEST(KeysTest, LoadsOpensslKeysAndRefusesOthers) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("keys");
  const KeyFiles keys = make_key_pair(dir.path(), "a");
  const PrivateKey private_key = PrivateKey::load(keys.private_pem);
  const PublicKey public_key = PublicKey::load(keys.public_pem);
  EXPECT_EQ(private_key.key_id(), public_key.key_id());
  // The key id is SHA-256 of the PEM SubjectPublicKeyInfo, which `openssl ec -pubout` writes.
  EXPECT_EQ(public_key.key_id(), test_support::sha256_hex(read_file_bytes(keys.public_pem)));

  expect_error([&] { PublicKey::load(keys.private_pem); }, ErrorCode::kInvalidArgument,
               "not a PEM public key");
  expect_error([&] { PrivateKey::load(keys.public_pem); }, ErrorCode::kInvalidArgument,
               "not an unencrypted PEM private key");
  expect_error([&] { PrivateKey::load(dir / "missing.pem"); }, ErrorCode::kNotFound,
               "missing.pem: cannot read the key");
  const auto rsa = run_tool("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out " +
                            shell_quote((dir / "rsa.pem").string()) + " 2>&1");
  ASSERT_EQ(rsa.exit_code, 0) << rsa.output;
  expect_error([&] { PrivateKey::load(dir / "rsa.pem"); }, ErrorCode::kInvalidArgument,
               "not an ECDSA P-256 (prime256v1) private key (an RSA key)");
  const auto p384 = run_tool("openssl ecparam -name secp384r1 -genkey -noout -out " +
                             shell_quote((dir / "p384.pem").string()));
  ASSERT_EQ(p384.exit_code, 0) << p384.output;
  expect_error([&] { PrivateKey::load(dir / "p384.pem"); }, ErrorCode::kInvalidArgument,
               "(an EC key on secp384r1)");
}

// Runs an openssl command line in `dir`, which must succeed.
void openssl_in(const std::filesystem::path& dir, const std::string& arguments) {
  const auto result =
      run_tool("cd " + shell_quote(dir.string()) + " && openssl " + arguments + " 2>&1");
  ASSERT_EQ(result.exit_code, 0) << arguments << "\n" << result.output;
}

TEST(KeysTest, EveryPemShapeOfAP256KeyHasTheIdOfWhatOpensslWritesForIt) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("key_shapes");
  // SEC1 after an EC PARAMETERS block (ecparam without -noout), PKCS #8 (genpkey), explicit
  // curve parameters; a public key with its point compressed. OpenSSL writes each public key
  // back in its own shape, and the key id is the SHA-256 of that text.
  openssl_in(dir.path(), "ecparam -name prime256v1 -genkey -out with_params.pem");
  openssl_in(dir.path(), "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out pkcs8.pem");
  openssl_in(dir.path(), "ec -in pkcs8.pem -param_enc explicit -out explicit.pem");
  openssl_in(dir.path(), "ec -in pkcs8.pem -pubout -conv_form compressed -out compressed.pem");
  for (const std::string name : {"with_params", "pkcs8", "explicit"}) {
    openssl_in(dir.path(), "pkey -in " + name + ".pem -pubout -out " + name + ".pub");
    EXPECT_EQ(PrivateKey::load(dir / (name + ".pem")).key_id(),
              test_support::sha256_hex(read_file_bytes(dir / (name + ".pub"))))
        << name;
  }
  openssl_in(dir.path(), "pkey -pubin -in compressed.pem -pubout -out compressed.pub");
  EXPECT_EQ(PublicKey::load(dir / "compressed.pem").key_id(),
            test_support::sha256_hex(read_file_bytes(dir / "compressed.pub")));
  // Each private key signs what its public key, as openssl wrote it, verifies.
  const std::string data = "signed";
  for (const std::string name : {"with_params", "pkcs8", "explicit"}) {
    const SignatureBundle bundle = decode_signature(
        bytes_of(encode_signature(bytes_of(data), PrivateKey::load(dir / (name + ".pem")))), {},
        "x");
    EXPECT_EQ(signature_problem(bundle, bytes_of(data), PublicKey::load(dir / (name + ".pub"))), "")
        << name;
  }

  openssl_in(dir.path(), "pkcs8 -topk8 -in pkcs8.pem -out encrypted.pem -passout pass:secret");
  expect_error([&] { PrivateKey::load(dir / "encrypted.pem"); }, ErrorCode::kInvalidArgument,
               "not an unencrypted PEM private key");
}

TEST(SignatureTest, SignsVerifiesAndNamesEachFailure) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("sign");
  const KeyFiles a = make_key_pair(dir.path(), "a");
  const KeyFiles b = make_key_pair(dir.path(), "b");
  const PrivateKey key = PrivateKey::load(a.private_pem);
  const std::string digests = encode_digests("model", sample_entries());
  const std::string json = encode_signature(bytes_of(digests), key);
  const SignatureBundle bundle = decode_signature(bytes_of(json), {}, "a.onnxz");
  EXPECT_EQ(bundle.key_hint, key.key_id());
  EXPECT_EQ(bundle.payload_type, "application/vnd.in-toto+json");
  EXPECT_EQ(std::string(bundle.payload.begin(), bundle.payload.end()), digests);
  EXPECT_EQ(signature_problem(bundle, bytes_of(digests), PublicKey::load(a.public_pem)), "");

  EXPECT_EQ(signature_problem(bundle, bytes_of(digests), PublicKey::load(b.public_pem)),
            "signed by another key (key id " + key.key_id() + ", the key given has " +
                PublicKey::load(b.public_pem).key_id() + ")");
  std::string other = digests;
  other[other.size() / 2] ^= 1;
  EXPECT_EQ(signature_problem(bundle, bytes_of(other), PublicKey::load(a.public_pem)),
            "its payload is not the __DIGESTS entry");
  SignatureBundle forged = bundle;
  forged.signature[forged.signature.size() - 3] ^= 1;
  EXPECT_EQ(signature_problem(forged, bytes_of(digests), PublicKey::load(a.public_pem)),
            "the signature does not verify with the key given");
  // A bundle claiming key a, signed by key b: the hint matches, the signature does not.
  SignatureBundle by_b = decode_signature(
      bytes_of(encode_signature(bytes_of(digests), PrivateKey::load(b.private_pem))), {},
      "a.onnxz");
  by_b.key_hint = key.key_id();
  EXPECT_EQ(signature_problem(by_b, bytes_of(digests), PublicKey::load(a.public_pem)),
            "the signature does not verify with the key given");
}

TEST(SignatureTest, TheSignatureVerifiesWithOpensslOverThePae) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("pae");
  const KeyFiles a = make_key_pair(dir.path(), "a");
  const std::string digests = encode_digests("model", sample_entries());
  const SignatureBundle bundle = decode_signature(
      bytes_of(encode_signature(bytes_of(digests), PrivateKey::load(a.private_pem))), {}, "x");
  // The PAE written out by hand, as DSSE defines it, not by dsse_pae().
  const std::string pae =
      "DSSEv1 28 application/vnd.in-toto+json " + std::to_string(digests.size()) + " " + digests;
  EXPECT_EQ(dsse_pae("application/vnd.in-toto+json", bytes_of(digests)),
            std::vector<std::uint8_t>(pae.begin(), pae.end()));
  test_support::write_file_bytes(dir / "pae.bin", pae);
  test_support::write_file_bytes(dir / "sig.der",
                                 std::string(bundle.signature.begin(), bundle.signature.end()));
  const auto verified = run_tool(
      "openssl dgst -sha256 -verify " + shell_quote(a.public_pem.string()) + " -signature " +
      shell_quote((dir / "sig.der").string()) + " " + shell_quote((dir / "pae.bin").string()));
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_NE(verified.output.find("Verified OK"), std::string::npos) << verified.output;
}

TEST(SignatureTest, APayloadOfSeveralBase64PiecesIsTheOneBase64Text) {
  if (!test_support::find_tool("openssl")) GTEST_SKIP() << "no openssl tool";
  const ScratchDir dir("pieces");
  const KeyFiles a = make_key_pair(dir.path(), "a");
  // Base64 is written in pieces of 3 MiB: sizes across a piece's end, each byte value in turn.
  for (const std::size_t size :
       {std::size_t{3} << 20, (std::size_t{3} << 20) + 1, (std::size_t{6} << 20) + 2}) {
    std::vector<std::uint8_t> payload(size);
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<std::uint8_t>(i * 7 + i / 251);
    const std::string json = encode_signature(payload, PrivateKey::load(a.private_pem));
    const SignatureBundle bundle = decode_signature(bytes_of(json), {}, "x");
    EXPECT_EQ(bundle.payload, payload) << size;
    EXPECT_EQ(signature_problem(bundle, payload, PublicKey::load(a.public_pem)), "") << size;
  }
}

TEST(DigestsTest, NestingDeeperThan64IsRefusedBeforeItCostsMemory) {
  // 64 levels are read (an unknown member); 65 are refused, in both entries. 16 MiB of '[' (within
  // the size limits) would cost the readers a frame per byte, gigabytes, without the bound.
  const std::string good = encode_digests("model", sample_entries());
  const auto nested = [&good](std::size_t levels) {
    std::string text = good;
    text.insert(1, "\"nested\": " + std::string(levels, '[') + std::string(levels, ']') + ",");
    return text;
  };
  EXPECT_EQ(decode_digests(bytes_of(nested(63)), {}, "a.onnxz").entries.size(),
            sample_entries().size());
  expect_error([&] { decode_digests(bytes_of(nested(64)), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "nested more than 64 deep (spec §12.1 item 3)");
  const std::string hostile(std::size_t{16} << 20, '[');
  expect_error([&] { decode_digests(bytes_of(hostile), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "nested more than 64 deep");
  expect_error([&] { decode_signature(bytes_of(hostile), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
               "nested more than 64 deep");
}

TEST(SignatureTest, RefusesMalformedBundlesNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", "the document is an array"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.2+json"})", "mediaType is"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
           "verificationMaterial": {"certificate": {}}})",
       "verificationMaterial.publicKey is missing"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
           "verificationMaterial": {"publicKey": {"hint": "k"}},
           "dsseEnvelope": {"payloadType": "t", "payload": "!!!!", "signatures": []}})",
       "dsseEnvelope.payload is not base64"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
           "verificationMaterial": {"publicKey": {"hint": "k"}},
           "dsseEnvelope": {"payloadType": "t", "payload": "YQ==", "signatures": []}})",
       "dsseEnvelope.signatures has 0 items, expected 1"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
           "verificationMaterial": {"publicKey": {"hint": "k"}},
           "dsseEnvelope": {"payloadType": "t", "payload": "YQ=a", "signatures": [{"sig": "YQ=="}]}})",
       "dsseEnvelope.payload is not base64"},
      {R"({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
           "verificationMaterial": {"publicKey": {"hint": 5}}})",
       "verificationMaterial.publicKey.hint is a number, expected a string"},
  };
  for (const auto& bad : cases) {
    const auto& json = bad.first;  // Not a structured binding: clang 14 cannot capture one.
    expect_error([&] { decode_signature(bytes_of(json), {}, "a.onnxz"); }, ErrorCode::kCorrupt,
                 "a.onnxz: entry '__SIGNATURE': " + bad.second);
  }
  IntegrityLimits limits;
  limits.max_signature_size = 10;
  expect_error([&] { decode_signature(bytes_of(cases[1].first), limits, "a.onnxz"); },
               ErrorCode::kLimitExceeded, "IntegrityLimits::max_signature_size");
}

}  // namespace
}  // namespace onnxzip
