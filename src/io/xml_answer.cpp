#include "xml_answer.h"

#include <expat.h>

#include <memory>
#include <optional>

#include "onnxzip/error.h"

namespace onnxzip::s3 {
namespace {

struct ParserDeleter {
  void operator()(XML_ParserStruct* parser) const noexcept { XML_ParserFree(parser); }
};

struct ParseState {
  XML_Parser parser = nullptr;
  const XmlLimits* limits = nullptr;
  XmlAnswer answer;
  std::size_t depth = 0;
  std::string child;  // The root's child being read (depth 2), "" elsewhere.
  std::string text;
  XmlRecord record;        // The root's child, when it holds elements.
  std::string grandchild;  // Its child being read (depth 3).
  std::string grandchild_text;
  std::optional<Error> refusal;

  void refuse(Error error) {
    if (!refusal) refusal = std::move(error);
    XML_StopParser(parser, XML_FALSE);
  }
};

extern "C" void on_start(void* user, const XML_Char* name, const XML_Char** /*attributes*/) {
  auto& state = *static_cast<ParseState*>(user);
  ++state.depth;
  if (state.depth > state.limits->max_depth) {
    state.refuse(Error(ErrorCode::kLimitExceeded, "the store's XML answer nests deeper than " +
                                                      std::to_string(state.limits->max_depth) +
                                                      " elements"));
    return;
  }
  if (state.depth == 1) state.answer.root = name;
  if (state.depth == 2) {
    state.child = name;
    state.text.clear();
    state.record = XmlRecord{name, {}};
  }
  if (state.depth == 3) {
    state.grandchild = name;
    state.grandchild_text.clear();
  }
}

extern "C" void on_end(void* user, const XML_Char* /*name*/) {
  auto& state = *static_cast<ParseState*>(user);
  if (state.depth == 3) state.record.fields[state.grandchild] = state.grandchild_text;
  if (state.depth == 2) {
    if (state.record.fields.empty()) {
      state.answer.fields[state.child] = state.text;
    } else {
      state.answer.records.push_back(std::move(state.record));
    }
    state.child.clear();
  }
  --state.depth;
}

extern "C" void on_text(void* user, const XML_Char* text, int length) {
  auto& state = *static_cast<ParseState*>(user);
  // Text directly inside a child of the root; a nested element's text is not the child's.
  if (state.depth == 2) state.text.append(text, static_cast<std::size_t>(length));
  if (state.depth == 3) state.grandchild_text.append(text, static_cast<std::size_t>(length));
}

extern "C" void on_doctype(void* user, const XML_Char* /*name*/, const XML_Char* /*system_id*/,
                           const XML_Char* /*public_id*/, int /*has_internal_subset*/) {
  auto& state = *static_cast<ParseState*>(user);
  state.refuse(Error(ErrorCode::kCorrupt,
                     "the store's XML answer has a document type declaration (refused: its "
                     "entities could expand without bound)"));
}

}  // namespace

std::string XmlAnswer::field(const std::string& name) const {
  const auto found = fields.find(name);
  return found == fields.end() ? "" : found->second;
}

XmlAnswer parse_xml_answer(std::string_view body, const XmlLimits& limits) {
  if (body.size() > limits.max_size) {
    throw Error(ErrorCode::kLimitExceeded, "the store's XML answer is larger than " +
                                               std::to_string(limits.max_size) + " bytes");
  }
  const std::unique_ptr<XML_ParserStruct, ParserDeleter> parser(XML_ParserCreate("UTF-8"));
  if (!parser) throw Error(ErrorCode::kIo, "cannot start an XML parser (expat)");
  ParseState state;
  state.parser = parser.get();
  state.limits = &limits;
  XML_SetUserData(parser.get(), &state);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  XML_SetStartDoctypeDeclHandler(parser.get(), on_doctype);
  // No external entity is ever fetched or parsed.
  XML_SetParamEntityParsing(parser.get(), XML_PARAM_ENTITY_PARSING_NEVER);
  const XML_Status status =
      XML_Parse(parser.get(), body.data(), static_cast<int>(body.size()), XML_TRUE);
  if (state.refusal) throw *state.refusal;
  if (status != XML_STATUS_OK) {
    throw Error(ErrorCode::kCorrupt, std::string("the store's XML answer is not well-formed: ") +
                                         XML_ErrorString(XML_GetErrorCode(parser.get())) +
                                         " at line " +
                                         std::to_string(XML_GetCurrentLineNumber(parser.get())));
  }
  return std::move(state.answer);
}

}  // namespace onnxzip::s3
