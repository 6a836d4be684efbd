// The ONNX IR rules a model and its graphs must follow (onnx/docs/IR.md, "Models", "Graphs" and
// "Names Within a Graph"), checked without operator schemas: what `verify` reports for legacy
// files and archives alike.
//
// check_ir reports, never throws for, a rule violation: real exported models break these rules
// at times (nodes out of topological order, duplicate node names) and still run, so conversion
// does not refuse them (only a file with neither ir_version nor graph, which is no model at all;
// convert.h); verification reports them. Anyone may use this header.
#ifndef ONNXZIP_IR_CHECK_H_
#define ONNXZIP_IR_CHECK_H_

#include <string>
#include <vector>

#include "onnxzip/onnx_model.h"

namespace onnxzip {

// One violation. `where` spells the place like the tensor visitor's paths, with each node's op
// type and name: "graph/node[3](Loop 'loop_1')/body/node[0](Add)". `message` says what is wrong
// and names the values involved.
struct IrProblem {
  std::string where;
  std::string message;
};

// "where: message", one line.
std::string to_string(const IrProblem& problem);

// Checks the model's own fields, where each problem's `where` is the field's name:
//   * ir_version is present and at least 1;
//   * opset_import is non-empty from IR version 3 on (or when ir_version is missing), and empty
//     for IR versions 1 and 2, which predate it;
//   * there is a graph;
//   * metadata_props keys are distinct.
// The reference checker (onnx.checker.check_model) refuses each of these. It also refuses an
// ir_version newer than its own, which check_ir does not report: that says how old the checker
// is, not what is wrong with the model, and the rules here hold for every IR version so far.
// Then, for the main graph, every subgraph (node attributes g and graphs, at any depth), every
// function (in its own scope) and the training graphs:
//   * SSA: each value name is assigned once: graph inputs, initializers (an initializer may
//     share its name with a graph input, which IR versions < 4 require), sparse initializers,
//     node outputs; a subgraph may not assign a name visible from an enclosing graph (as the
//     reference checker rules), but its inputs may.
//   * references and topological order: every node input is "" (an omitted optional input), a
//     graph input, an initializer, an earlier node's output, or for a subgraph a value of an
//     enclosing graph defined before the node that holds the subgraph; an input produced by a
//     later node is reported as out of order, one produced by nothing as undefined. Graph and
//     function outputs must be defined.
//   * acyclic: a graph whose nodes cannot be ordered at all (a cycle, counting the values
//     subgraphs take from their enclosing graph) is reported once, naming the nodes involved.
//   * unique names: non-empty node names within a graph or function body; attribute names within
//     a node; functions by (domain, name, overload); opset_import domains within the model and
//     within each function; a function's attribute names.
//   * opset imports: every node's domain ("" and "ai.onnx" are the same) is imported by the
//     model, or by the function whose body holds the node; IR versions < 3 predate
//     opset_import and import the default domain implicitly. Reported once per domain and scope.
std::vector<IrProblem> check_ir(const ModelProto& model);

}  // namespace onnxzip

#endif  // ONNXZIP_IR_CHECK_H_
