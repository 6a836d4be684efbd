#include "external_data.h"

#include <limits>

#include "message_text.h"

namespace onnxzip::detail {
namespace {

ExternalDataNumber read_number(std::string_view text) {
  ExternalDataNumber number{.text = text};
  if (text.empty()) return number;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return number;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return number;
    value = value * 10 + digit;
  }
  number.value = value;
  number.canonical = text.size() == 1 || text.front() != '0';
  return number;
}

std::string number_fault(std::string_view key, const std::optional<ExternalDataNumber>& number) {
  if (!number || number->value) return {};
  return quote(key) + " " + quote(number->text) +
         " is not a non-negative decimal number below 2^64";
}

}  // namespace

ExternalData read_external_data(const TensorProto& tensor) {
  ExternalData data;
  data.keys.reserve(tensor.external_data.size());
  std::size_t counts[3] = {0, 0, 0};  // location, offset, length
  for (const StringStringEntryProto& entry : tensor.external_data) {
    const std::string_view key = entry.key ? entry.key->view() : std::string_view();
    const std::string_view value = entry.value ? entry.value->view() : std::string_view();
    data.keys.push_back({key, value});
    if (key == kLocationKey) {
      if (counts[0]++ == 0) data.location = value;
    } else if (key == kOffsetKey) {
      if (counts[1]++ == 0) data.offset = read_number(value);
    } else if (key == kLengthKey) {
      if (counts[2]++ == 0) data.length = read_number(value);
    } else {
      data.other_keys.push_back(key);
    }
  }
  // In the order of each key's first entry.
  for (const ExternalDataKey& entry : data.keys) {
    const std::string_view names[3] = {kLocationKey, kOffsetKey, kLengthKey};
    for (std::size_t i = 0; i < 3; ++i) {
      if (entry.key == names[i] && counts[i] > 1) {
        data.repeated.push_back({names[i], counts[i]});
        counts[i] = 0;  // Named once.
      }
    }
  }
  return data;
}

std::string reference_fault(const ExternalData& data) {
  if (!data.repeated.empty()) {
    const RepeatedExternalKey& first = data.repeated.front();
    return "external_data has " + std::to_string(first.count) + " " + quote(first.key) + " keys";
  }
  if (!data.location) return "data_location is EXTERNAL but external_data has no 'location'";
  if (data.location->empty()) return "the location is empty";
  if (std::string fault = number_fault(kOffsetKey, data.offset); !fault.empty()) return fault;
  return number_fault(kLengthKey, data.length);
}

}  // namespace onnxzip::detail
