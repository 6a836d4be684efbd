#include "onnxzip/ir_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "onnxzip/onnx_codec.h"
#include "onnxzip/onnx_model.h"
#include "support/external_tool.h"
#include "support/legacy_models.h"
#include "support/model_builder.h"
#include "support/scratch_dir.h"

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
  const std::vector<IrProblem> problems = check_ir(m);
  EXPECT_TRUE(mentions(problems, "opset_import",
                       "missing: from IR version 3 on, a model imports the operator sets it uses"))
      << all(problems);
  EXPECT_TRUE(
      mentions(problems, "graph/node[0](Relu 'relu')", "no opset_import for domain '' (ai.onnx)"))
      << all(problems);
  EXPECT_EQ(problems.size(), 2u) << all(problems);
  m.ir_version = 2;
  EXPECT_EQ(all(check_ir(m)), "");
  // IR versions 1 and 2 predate opset_import: a model of theirs may not have one.
  m.opset_import.push_back(opset("", 1));
  expect_one(m, "opset_import",
             "present, but IR version 2 predates opset_import (IR version 3 introduced it)");
}

TEST(IrCheck, AnEmptyModelLacksIrVersionOpsetImportAndGraph) {
  // What a 0-byte file parses as.
  const std::vector<IrProblem> problems = check_ir(ModelProto());
  EXPECT_EQ(all(problems),
            "ir_version: missing: a model must state the IR version it follows\n"
            "opset_import: missing: from IR version 3 on, a model imports the operator sets it "
            "uses\n"
            "graph: missing: a model must have a graph\n");
}

TEST(IrCheck, ModelFieldsOneAtATime) {
  ModelProto m = valid_model();
  m.ir_version.reset();
  expect_one(m, "ir_version", "missing: a model must state the IR version it follows");
  m.ir_version = 0;
  expect_one(m, "ir_version", "0 is no IR version (the first is 1)");
  m.ir_version = -3;
  expect_one(m, "ir_version", "-3 is no IR version (the first is 1)");

  m = valid_model();
  m.graph.reset();
  expect_one(m, "graph", "missing: a model must have a graph");

  m = valid_model();
  for (const char* key : {"author", "license", "author"}) {
    StringStringEntryProto& entry = m.metadata_props.emplace_back();
    entry.key = key;
    entry.value = "x";
  }
  expect_one(m, "metadata_props[2]", "key 'author' appears again (first at [0])");

  // Newer than this library knows: the rules checked here hold for every IR version so far.
  m = valid_model();
  m.ir_version = kIrVersion + 1;
  EXPECT_EQ(all(check_ir(m)), "");
}

// Each model-level rule next to the reference checker's verdict on the same model: both refuse
// it, or both accept it.
TEST(IrCheck, ModelFieldsAgreeWithTheReferenceChecker) {
  if (!test_support::python_onnx_available()) GTEST_SKIP() << "no /usr/bin/python3 with onnx";
  struct Case {
    std::string name;
    ModelProto model;
    std::string ours;     // all(check_ir(model)).
    std::string checker;  // A fragment of the checker's complaint, or "ok".
  };
  // One Identity node; what the checker wants of a main graph (typed inputs and outputs).
  ModelProto base = test_support::checker_model_typed_fields();
  base.graph->initializer.clear();  // IR versions < 4 would want each one to be an input too.
  std::vector<Case> cases;
  cases.push_back({"valid", base, "", "ok"});
  cases.push_back({"empty", ModelProto(), all(check_ir(ModelProto())), "ir_version"});
  ModelProto m = base;
  m.ir_version.reset();
  cases.push_back({"no_ir_version", m,
                   "ir_version: missing: a model must state the IR version it follows\n",
                   "does not have an ir_version set properly"});
  m.ir_version = 0;
  cases.push_back({"ir_version_0", m, "ir_version: 0 is no IR version (the first is 1)\n",
                   "does not have an ir_version set properly"});
  m = base;
  m.opset_import.clear();
  cases.push_back({"no_opset_import", m,
                   "opset_import: missing: from IR version 3 on, a model imports the operator "
                   "sets it uses\n"
                   "graph/node[0](Identity 'Identity_Y'): no opset_import for domain '' "
                   "(ai.onnx) (used by 1 node)\n",
                   "must specify opset_import"});
  m.ir_version = 2;
  cases.push_back({"ir_version_2_without_opset_import", m, "", "ok"});
  m.opset_import.push_back(opset("", 1));
  cases.push_back({"ir_version_2_with_opset_import", m,
                   "opset_import: present, but IR version 2 predates opset_import (IR version 3 "
                   "introduced it)\n",
                   "IR version < 3 cannot have opset_import"});
  m = base;
  m.graph.reset();
  // The checker finds a missing graph as an unnamed one.
  cases.push_back(
      {"no_graph", m, "graph: missing: a model must have a graph\n", "Field 'name' of 'graph'"});
  m = base;
  for (int i = 0; i < 2; ++i) {
    StringStringEntryProto& entry = m.metadata_props.emplace_back();
    entry.key = "author";
    entry.value = "x";
  }
  cases.push_back({"duplicate_metadata_key", m,
                   "metadata_props[1]: key 'author' appears again (first at [0])\n",
                   "duplicate keys in metadata_props"});

  // One python run: the checker's verdict on each file, a line each.
  const test_support::ScratchDir dir("ir_check_reference");
  std::string command = std::string(test_support::kPython) + " -c " +
                        test_support::shell_quote(
                            "import sys, onnx\n"
                            "for path in sys.argv[1:]:\n"
                            "    try:\n"
                            "        onnx.checker.check_model(path)\n"
                            "        print('ok')\n"
                            "    except Exception as e:\n"
                            "        print(str(e).replace('\\n', ' '))\n");
  for (const Case& c : cases) {
    const std::filesystem::path path = dir / (c.name + ".onnx");
    serialize_model_to_file(c.model, path);
    command += " " + test_support::shell_quote(path.string());
  }
  const test_support::ToolResult result = test_support::run_tool(command);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<std::string> verdicts;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) verdicts.push_back(line);
  ASSERT_EQ(verdicts.size(), cases.size()) << result.output;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    EXPECT_EQ(all(check_ir(c.model)), c.ours) << c.name;
    const std::string& verdict = verdicts[i];
    if (c.checker == "ok") {
      EXPECT_EQ(verdict, "ok") << c.name;
    } else {
      EXPECT_NE(verdict.find(c.checker), std::string::npos) << c.name << ": " << verdict;
    }
  }
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
    const ModelProto m = parse_model_file(item.path());
    for (const IrProblem& p : check_ir(m))
      report += item.path().string() + ": " + to_string(p) + "\n";
  }
  EXPECT_GT(models, 1000u);
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace onnxzip
