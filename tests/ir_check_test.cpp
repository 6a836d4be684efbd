#include "onnxzip/ir_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"

namespace onnxzip {
namespace {

NodeProto node(const std::string& op, std::initializer_list<std::string> inputs,
               std::initializer_list<std::string> outputs, const std::string& name = "") {
  NodeProto n;
  n.op_type = op;
  n.input.assign(inputs.begin(), inputs.end());
  n.output.assign(outputs.begin(), outputs.end());
  if (!name.empty()) n.name = name;
  return n;
}

ValueInfoProto value(const std::string& name) {
  ValueInfoProto v;
  v.name = name;
  return v;
}

OperatorSetIdProto opset(const std::string& domain, std::int64_t version) {
  OperatorSetIdProto o;
  o.domain = domain;
  o.version = version;
  return o;
}

AttributeProto graph_attribute(const std::string& name, GraphProto g) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeProto::kGraph;
  a.g = std::move(g);
  return a;
}

// x -> Relu -> a -> Add(a, w) -> y, w an initializer.
ModelProto valid_model() {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back(opset("", 13));
  GraphProto& g = m.graph.ensure();
  g.name = "main";
  g.input.push_back(value("x"));
  TensorProto w;
  w.name = "w";
  w.data_type = TensorProto::kFloat;
  w.float_data = {1.0f};
  g.initializer.push_back(w);
  g.node.push_back(node("Relu", {"x"}, {"a"}, "relu"));
  g.node.push_back(node("Add", {"a", "w"}, {"y"}, "add"));
  g.output.push_back(value("y"));
  return m;
}

std::string all(const std::vector<IrProblem>& problems) {
  std::string text;
  for (const IrProblem& p : problems) text += to_string(p) + "\n";
  return text;
}

// Exactly one problem, at `where`, whose message holds `fragment`.
void expect_one(const ModelProto& m, const std::string& where, const std::string& fragment) {
  const std::vector<IrProblem> problems = check_ir(m);
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_EQ(problems[0].where, where) << all(problems);
  EXPECT_NE(problems[0].message.find(fragment), std::string::npos) << all(problems);
}

bool mentions(const std::vector<IrProblem>& problems, const std::string& where,
              const std::string& fragment) {
  for (const IrProblem& p : problems) {
    if (p.where == where && p.message.find(fragment) != std::string::npos) return true;
  }
  return false;
}

TEST(IrCheck, ValidModelHasNoProblem) {
  EXPECT_EQ(all(check_ir(valid_model())), "");
  // An omitted optional input, an initializer that is also a graph input (IR < 4 style) and
  // the "ai.onnx" spelling of the default domain are all fine.
  ModelProto m = valid_model();
  m.graph->input.push_back(value("w"));
  m.graph->node[1].input.push_back("");
  m.graph->node[1].domain = "ai.onnx";
  EXPECT_EQ(all(check_ir(m)), "");
}

TEST(IrCheck, DuplicateOutputBreaksSsa) {
  ModelProto m = valid_model();
  m.graph->node.push_back(node("Neg", {"x"}, {"a"}, "neg"));
  expect_one(m, "graph/node[2](Neg 'neg')", "output 'a' is already assigned by node[0](Relu");
}

TEST(IrCheck, InitializerShadowingInputIsAllowedButDuplicateInitializerIsNot) {
  ModelProto m = valid_model();
  m.graph->initializer.push_back(m.graph->initializer[0]);
  expect_one(m, "graph/initializer[1]", "initializer 'w' is defined twice");
}

TEST(IrCheck, OutOfOrderNodesAreReportedWithoutCycle) {
  ModelProto m = valid_model();
  std::swap(m.graph->node[0], m.graph->node[1]);
  const std::vector<IrProblem> problems = check_ir(m);
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  EXPECT_EQ(problems[0].where, "graph/node[0](Add 'add')");
  EXPECT_NE(problems[0].message.find("input 'a' is produced by node[1], a later node"),
            std::string::npos)
      << all(problems);
  EXPECT_NE(problems[0].message.find("topological order"), std::string::npos);
}

TEST(IrCheck, CycleIsReportedOnce) {
  ModelProto m = valid_model();
  // relu takes b, which add2 computes from relu's output: relu -> a -> add2 -> b -> relu.
  m.graph->node[0].input = {"b"};
  m.graph->node.push_back(node("Add", {"a", "x"}, {"b"}, "add2"));
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(mentions(problems, "graph/node[0](Relu 'relu')", "produced by node[2], a later"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "graph",
                       "cycle: 2 nodes depend on their own outputs (node[0](Relu 'relu'), "
                       "node[2](Add 'add2'))"))
      << all(problems);
  EXPECT_EQ(problems.size(), 2u) << all(problems);
}

TEST(IrCheck, SelfLoopIsACycle) {
  ModelProto m = valid_model();
  m.graph->node[1].input = {"a", "y"};
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(mentions(problems, "graph/node[1](Add 'add')", "produced by this node itself"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "graph", "cycle: 1 node depends")) << all(problems);
}

TEST(IrCheck, UndefinedInputAndOutput) {
  ModelProto m = valid_model();
  m.graph->node[1].input[1] = "nowhere";
  m.graph->output.push_back(value("ghost"));
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(mentions(problems, "graph/node[1](Add 'add')", "input 'nowhere' is not defined"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "graph/output[1]", "output 'ghost' is not defined"))
      << all(problems);
  EXPECT_EQ(problems.size(), 2u);
}

TEST(IrCheck, MissingOpsetImportReportedOncePerDomain) {
  ModelProto m = valid_model();
  m.graph->node[0].domain = "com.example";
  m.graph->node[1].domain = "com.example";
  expect_one(m, "graph/node[0](Relu 'relu')",
             "no opset_import for domain 'com.example' (used by 2 nodes");
  m.opset_import.push_back(opset("com.example", 1));
  EXPECT_EQ(all(check_ir(m)), "");
  m.opset_import.push_back(opset("ai.onnx", 13));
  expect_one(m, "opset_import[2]", "domain '' (ai.onnx) is imported again (first at [0])");
}

TEST(IrCheck, OldIrVersionsImportTheDefaultDomainImplicitly) {
  ModelProto m = valid_model();
  m.opset_import.clear();
  expect_one(m, "graph/node[0](Relu 'relu')", "no opset_import for domain '' (ai.onnx)");
  m.ir_version = 2;
  EXPECT_EQ(all(check_ir(m)), "");
}

TEST(IrCheck, DuplicateNodeAndAttributeNames) {
  ModelProto m = valid_model();
  m.graph->node[1].name = "relu";
  AttributeProto alpha;
  alpha.name = "alpha";
  alpha.type = AttributeProto::kFloat;
  alpha.f = 1.0f;
  m.graph->node[0].attribute = {alpha, alpha};
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(mentions(problems, "graph/node[1](Add 'relu')",
                       "node name 'relu' is used again (first by node[0])"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "graph/node[0](Relu 'relu')", "attribute 'alpha' appears twice"))
      << all(problems);
  EXPECT_EQ(problems.size(), 2u);
}

// If(cond) whose branches read the outer values named in `then_reads`.
ModelProto model_with_if(const std::string& then_reads, std::size_t if_position) {
  ModelProto m = valid_model();
  m.graph->input.push_back(value("cond"));
  GraphProto then_branch;
  then_branch.name = "then";
  then_branch.node.push_back(node("Identity", {then_reads}, {"t_out"}));
  then_branch.output.push_back(value("t_out"));
  GraphProto else_branch;
  else_branch.name = "else";
  else_branch.node.push_back(node("Identity", {"x"}, {"e_out"}));
  else_branch.output.push_back(value("e_out"));
  NodeProto if_node = node("If", {"cond"}, {"z"}, "if");
  if_node.attribute.push_back(graph_attribute("then_branch", then_branch));
  if_node.attribute.push_back(graph_attribute("else_branch", else_branch));
  m.graph->node.insert(m.graph->node.begin() + static_cast<std::ptrdiff_t>(if_position), if_node);
  m.graph->output.push_back(value("z"));
  return m;
}

TEST(IrCheck, SubgraphSeesOuterValuesDefinedBeforeItsNode) {
  EXPECT_EQ(all(check_ir(model_with_if("a", 2))), "");  // a: output of node[0].
  EXPECT_EQ(all(check_ir(model_with_if("w", 0))), "");  // An initializer: visible everywhere.
}

TEST(IrCheck, SubgraphUsingAnUndefinedName) {
  expect_one(model_with_if("nowhere", 2), "graph/node[2](If 'if')/then_branch/node[0](Identity)",
             "input 'nowhere' is not defined: no input, initializer or earlier node output here "
             "or in an enclosing graph");
}

TEST(IrCheck, SubgraphUsingAValueOfALaterOuterNode) {
  // The If comes first but its branch reads y, produced by node[2] of the main graph.
  expect_one(model_with_if("y", 0), "graph/node[0](If 'if')/then_branch/node[0](Identity)",
             "input 'y' is produced by node[2] of the enclosing graph graph, which is not before");
}

TEST(IrCheck, SubgraphMayNotReassignAnOuterValue) {
  ModelProto m = model_with_if("a", 2);
  m.graph->node[2].attribute[0].g->node[0].output = {"y"};
  m.graph->node[2].attribute[0].g->output[0].name = "y";
  expect_one(m, "graph/node[2](If 'if')/then_branch/node[0](Identity)",
             "output 'y' reassigns a value of the enclosing graph graph");
}

TEST(IrCheck, NestedSubgraphsResolveThroughEveryLevel) {
  // Loop body (depth 1) holding an If (depth 2) whose branch reads the main graph's `a` and the
  // body's `v`.
  ModelProto m = valid_model();
  GraphProto then_branch;
  then_branch.name = "then";
  then_branch.node.push_back(node("Add", {"a", "v"}, {"t_out"}));
  then_branch.output.push_back(value("t_out"));
  GraphProto body;
  body.name = "body";
  body.input = {value("i"), value("c"), value("v")};
  NodeProto if_node = node("If", {"c"}, {"r"});
  if_node.attribute.push_back(graph_attribute("then_branch", then_branch));
  if_node.attribute.push_back(graph_attribute("else_branch", then_branch));
  body.node.push_back(if_node);
  body.node.push_back(node("Identity", {"c"}, {"c_out"}));
  body.output = {value("c_out"), value("r")};
  NodeProto loop = node("Loop", {"", "", "a"}, {"loop_out"}, "loop");
  loop.attribute.push_back(graph_attribute("body", body));
  m.graph->node.push_back(loop);
  EXPECT_EQ(all(check_ir(m)), "");

  m.graph->node[2].attribute[0].g->node[0].attribute[0].g->node[0].input[1] = "gone";
  expect_one(m, "graph/node[2](Loop 'loop')/body/node[0](If)/then_branch/node[0](Add)",
             "input 'gone' is not defined");
}

TEST(IrCheck, FunctionsAreCheckedInTheirOwnScope) {
  ModelProto m = valid_model();
  m.opset_import.push_back(opset("local", 1));
  FunctionProto f;
  f.domain = "local";
  f.name = "Twice";
  f.input = {"p"};
  f.output = {"q"};
  f.opset_import.push_back(opset("", 13));
  f.node.push_back(node("Add", {"p", "p"}, {"q"}));
  m.functions.push_back(f);
  NodeProto call = node("Twice", {"y"}, {"out"});
  call.domain = "local";
  m.graph->node.push_back(call);
  EXPECT_EQ(all(check_ir(m)), "");

  // The function body cannot see the graph's values, and has its own opset imports.
  m.functions[0].node[0].input[1] = "x";
  m.functions[0].node.push_back(node("Custom", {"q"}, {"r"}));
  m.functions[0].node[1].domain = "elsewhere";
  m.functions.push_back(m.functions[0]);
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(
      mentions(problems, "functions[0](local:Twice)/node[0](Add)", "input 'x' is not defined"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "functions[0](local:Twice)/node[1](Custom)",
                       "no opset_import for domain 'elsewhere'"))
      << all(problems);
  EXPECT_TRUE(mentions(problems, "functions[1](local:Twice)",
                       "function 'local:Twice' is defined again (first at functions[0])"))
      << all(problems);
}

TEST(IrCheck, EveryModelOfTheOnnxTestData) {
  const std::filesystem::path root = "/usr/share/libonnx-testdata";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::size_t models = 0;
  std::string report;
  for (const auto& item : std::filesystem::recursive_directory_iterator(root)) {
    if (item.path().extension() != ".onnx") continue;
    ++models;
    const ModelProto m = parse_model(item.path());
    for (const IrProblem& p : check_ir(m))
      report += item.path().string() + ": " + to_string(p) + "\n";
  }
  EXPECT_GT(models, 1000u);
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace onnxzip
