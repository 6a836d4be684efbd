// An object store's XML answer (an <Error>, <InitiateMultipartUploadResult>, <CopyPartResult>,
// ...), parsed with expat. The body comes from the network: its size is bounded before parsing,
// a document type declaration (and with it every entity that could expand) is refused, and so is
// nesting deeper than XmlLimits::max_depth.
#ifndef ONNXZIP_IO_XML_ANSWER_H_
#define ONNXZIP_IO_XML_ANSWER_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace onnxzip::s3 {

struct XmlLimits {
  std::size_t max_size = std::size_t{1} << 20;  // S3's answers here are a few hundred bytes.
  std::size_t max_depth = 16;
};

// A child of the root that holds elements, with the text of each of its own children:
// <Upload><Key>k</Key><UploadId>u</UploadId></Upload> is {"Upload", {{"Key", "k"}, ...}}.
struct XmlRecord {
  std::string name;
  std::map<std::string, std::string> fields;
};

// The root element's name and the text of each child of the root that holds text (the last one
// when a name repeats): <Error><Code>NoSuchKey</Code>...</Error> is {"Error", {{"Code",
// "NoSuchKey"}, ...}}; the children that hold elements as records, in order (a listing's
// <Upload>s). Deeper elements are parsed and checked but not kept.
struct XmlAnswer {
  std::string root;
  std::map<std::string, std::string> fields;
  std::vector<XmlRecord> records;

  // The child's text, "" when absent.
  std::string field(const std::string& name) const;
};

// Error(kCorrupt) "the store's XML answer ...: <what expat says> at line L" for a body that is
// not well-formed XML; Error(kLimitExceeded) for one larger or deeper than `limits`. No place is
// named: the caller, which knows the object, adds it.
XmlAnswer parse_xml_answer(std::string_view body, const XmlLimits& limits = {});

}  // namespace onnxzip::s3

#endif  // ONNXZIP_IO_XML_ANSWER_H_
