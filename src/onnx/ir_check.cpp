// The IR rules of ir_check.h. One walk over the model; each graph or function body is checked in
// a Scope that sees the names its enclosing graphs had defined before the node holding it.
#include "onnxzip/ir_check.h"

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "message_text.h"

namespace onnxzip {
namespace {

using detail::quote;

constexpr std::string_view kDefaultDomainAlias = "ai.onnx";
constexpr std::size_t kMaxNodesListed = 5;

std::string_view text_of(const std::optional<Text>& text) {
  return text ? std::string_view(*text) : std::string_view();
}

std::string_view normalized_domain(const std::optional<Text>& domain) {
  const std::string_view text = text_of(domain);
  return text == kDefaultDomainAlias ? std::string_view() : text;
}

std::string domain_label(std::string_view domain) {
  return domain.empty() ? std::string("'' (ai.onnx)") : quote(domain);
}

std::string node_label(const NodeProto& node, std::size_t index) {
  std::string label = "node[" + std::to_string(index) + "](";
  label += text_of(node.op_type);
  if (node.name && !node.name->empty()) label += " " + quote(*node.name);
  return label + ")";
}

std::string join(std::string_view where, std::string_view component) {
  std::string out(where);
  if (!out.empty()) out += '/';
  out += component;
  return out;
}

std::string indexed(std::string_view component, std::size_t index) {
  return std::string(component) + "[" + std::to_string(index) + "]";
}

// The opset imports nodes resolve against: the model's, or a function's own. A domain without
// an import is reported once, at its first use.
class OpsetContext final {
 public:
  OpsetContext(const std::vector<OperatorSetIdProto>& imports, bool implicit_default)
      : implicit_default_(implicit_default) {
    for (const OperatorSetIdProto& import : imports) {
      domains_.insert(normalized_domain(import.domain));
    }
  }

  void use(std::string_view domain, const std::string& where) {
    if (domains_.count(domain) != 0 || (implicit_default_ && domain.empty())) return;
    const auto [entry, added] = missing_.try_emplace(domain, Missing{where, 0});
    ++entry->second.count;
  }

  void report(std::vector<IrProblem>& problems) const {
    for (const auto& [domain, missing] : missing_) {
      problems.push_back({missing.first_where,
                          "no opset_import for domain " + domain_label(domain) + " (used by " +
                              std::to_string(missing.count) +
                              (missing.count == 1 ? " node)" : " nodes; this is the first)")});
    }
  }

 private:
  struct Missing {
    std::string first_where;
    std::size_t count;
  };
  bool implicit_default_;
  std::unordered_set<std::string_view> domains_;
  std::map<std::string_view, Missing> missing_;
};

// Names a graph or function body defines, as the bodies nested in it see them.
struct Scope {
  const Scope* parent = nullptr;
  std::string where;
  // Defined so far (inputs, initializers, outputs of the nodes before the current one), each
  // with what assigned it.
  std::unordered_map<std::string_view, std::string> defined;
  // Every node output of the body, with the index of its first producer.
  std::unordered_map<std::string_view, std::size_t> producers;
  // Some input, here or in a nested body, refers to a later node of this body.
  mutable bool misordered = false;
};

// A named value a body receives or returns, and where it is declared.
struct NamedValue {
  std::string_view name;
  bool present;
  std::string where;
};

// What check_body needs of a graph or a function.
struct BodyView {
  std::vector<NamedValue> inputs;
  std::vector<NamedValue> initializers;
  const std::vector<NodeProto>& nodes;
  std::vector<NamedValue> outputs;
};

// Every value name a graph uses, at any depth (node inputs and graph outputs): what a node
// takes from its enclosing graph through its subgraphs, for the cycle check.
void collect_uses(const GraphProto& graph, std::vector<std::string_view>& uses) {
  for (const NodeProto& node : graph.node) {
    for (const Text& input : node.input) uses.push_back(input);
    for (const AttributeProto& attribute : node.attribute) {
      if (attribute.g) collect_uses(*attribute.g, uses);
      for (const GraphProto& g : attribute.graphs) collect_uses(g, uses);
    }
  }
  for (const ValueInfoProto& output : graph.output) uses.push_back(text_of(output.name));
}

// IR versions 1 and 2 had no opset_import: they imported the default domain implicitly.
bool predates_opset_import(const ModelProto& m) {
  return m.ir_version && *m.ir_version >= 1 && *m.ir_version < 3;
}

const Scope* find_visible(const Scope* scope, std::string_view name) {
  for (; scope != nullptr; scope = scope->parent) {
    if (scope->defined.count(name) != 0) return scope;
  }
  return nullptr;
}

// Which nodes of a body use which others' outputs (directly, or in their subgraphs).
struct NodeDependencies {
  std::vector<std::vector<std::size_t>> successors;  // Per node, the nodes that use its outputs.
  std::vector<std::size_t> pending;                  // Per node, the producers it waits for.
};

NodeDependencies node_dependencies(const std::vector<NodeProto>& nodes, const Scope& scope) {
  const std::size_t n = nodes.size();
  NodeDependencies d{std::vector<std::vector<std::size_t>>(n), std::vector<std::size_t>(n, 0)};
  std::vector<std::string_view> uses;
  for (std::size_t i = 0; i < n; ++i) {
    uses.clear();
    for (const Text& input : nodes[i].input) uses.push_back(input);
    for (const AttributeProto& attribute : nodes[i].attribute) {
      if (attribute.g) collect_uses(*attribute.g, uses);
      for (const GraphProto& g : attribute.graphs) collect_uses(g, uses);
    }
    for (const std::string_view use : uses) {
      if (use.empty()) continue;
      const auto producer = scope.producers.find(use);
      if (producer == scope.producers.end()) continue;
      d.successors[producer->second].push_back(i);
      ++d.pending[i];
    }
  }
  return d;
}

// Kahn's algorithm: true when every node can be placed. Nodes left with pending != 0 are on a
// cycle or depend on one.
bool place_in_order(NodeDependencies& d) {
  const std::size_t n = d.pending.size();
  std::deque<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (d.pending[i] == 0) ready.push_back(i);
  }
  std::size_t placed = 0;
  while (!ready.empty()) {
    const std::size_t i = ready.front();
    ready.pop_front();
    ++placed;
    for (const std::size_t next : d.successors[i]) {
      if (--d.pending[next] == 0) ready.push_back(next);
    }
  }
  return placed == n;
}

// After place_in_order: peels off, back to front, the unplaced nodes that only depend on a
// cycle; what remains lies on a cycle (or between two).
std::vector<bool> nodes_on_cycles(const NodeDependencies& d) {
  const std::size_t n = d.pending.size();
  std::vector<std::vector<std::size_t>> predecessors(n);
  std::vector<std::size_t> feeding(n, 0);  // Unplaced successors of each unplaced node.
  for (std::size_t i = 0; i < n; ++i) {
    if (d.pending[i] == 0) continue;
    for (const std::size_t next : d.successors[i]) {
      if (d.pending[next] == 0) continue;
      predecessors[next].push_back(i);
      ++feeding[i];
    }
  }
  std::deque<std::size_t> ready;
  std::vector<bool> on_cycle(n);
  for (std::size_t i = 0; i < n; ++i) {
    on_cycle[i] = d.pending[i] != 0;
    if (on_cycle[i] && feeding[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const std::size_t i = ready.front();
    ready.pop_front();
    on_cycle[i] = false;
    for (const std::size_t previous : predecessors[i]) {
      if (--feeding[previous] == 0) ready.push_back(previous);
    }
  }
  return on_cycle;
}

class Checker final {
 public:
  explicit Checker(std::vector<IrProblem>& problems) : problems_(problems) {}

  void model(const ModelProto& m) {
    model_fields(m);
    const bool implicit_default = predates_opset_import(m) && m.opset_import.empty();
    unique_domains(m.opset_import, "opset_import");
    OpsetContext opsets(m.opset_import, implicit_default);
    Scope main_scope;
    if (m.graph) graph(*m.graph, "graph", nullptr, opsets, &main_scope);
    for (std::size_t i = 0; i < m.training_info.size(); ++i) {
      // Training graphs may use the main graph's values (its initializers, typically).
      const TrainingInfoProto& info = m.training_info[i];
      const std::string where = indexed("training_info", i);
      if (info.initialization) {
        graph(*info.initialization, join(where, "initialization"), &main_scope, opsets, nullptr);
      }
      if (info.algorithm) {
        graph(*info.algorithm, join(where, "algorithm"), &main_scope, opsets, nullptr);
      }
    }
    opsets.report(problems_);
    functions(m);
  }

 private:
  void add(std::string where, std::string message) {
    problems_.push_back({std::move(where), std::move(message)});
  }

  // What every model must state, in the reference checker's order (onnx/checker.cc,
  // check_model): its IR version, which decides how opset_import is read, and its graph.
  void model_fields(const ModelProto& m) {
    if (!m.ir_version) {
      add("ir_version", "missing: a model must state the IR version it follows");
    } else if (*m.ir_version < 1) {
      add("ir_version", std::to_string(*m.ir_version) + " is no IR version (the first is 1)");
    }
    const bool before_opset_import = predates_opset_import(m);
    if (m.opset_import.empty() && !before_opset_import) {
      add("opset_import",
          "missing: from IR version 3 on, a model imports the operator sets it uses");
    } else if (!m.opset_import.empty() && before_opset_import) {
      add("opset_import", "present, but IR version " + std::to_string(*m.ir_version) +
                              " predates opset_import (IR version 3 introduced it)");
    }
    if (!m.graph) add("graph", "missing: a model must have a graph");
    std::unordered_map<std::string_view, std::size_t> keys;
    for (std::size_t i = 0; i < m.metadata_props.size(); ++i) {
      const std::string_view key = text_of(m.metadata_props[i].key);
      const auto [entry, added] = keys.try_emplace(key, i);
      if (!added) {
        add(indexed("metadata_props", i), "key " + quote(key) + " appears again (first at [" +
                                              std::to_string(entry->second) + "])");
      }
    }
  }

  void unique_domains(const std::vector<OperatorSetIdProto>& imports, const std::string& where) {
    std::unordered_map<std::string_view, std::size_t> first;
    for (std::size_t i = 0; i < imports.size(); ++i) {
      const std::string_view domain = normalized_domain(imports[i].domain);
      const auto [entry, added] = first.try_emplace(domain, i);
      if (!added) {
        add(where + "[" + std::to_string(i) + "]", "domain " + domain_label(domain) +
                                                       " is imported again (first at [" +
                                                       std::to_string(entry->second) + "])");
      }
    }
  }

  void functions(const ModelProto& m) {
    std::map<std::tuple<std::string_view, std::string_view, std::string_view>, std::size_t> seen;
    for (std::size_t i = 0; i < m.functions.size(); ++i) {
      const FunctionProto& f = m.functions[i];
      std::string id = std::string(text_of(f.domain)) + ":" + std::string(text_of(f.name));
      if (f.overload && !f.overload->empty()) id += ":" + *f.overload;
      const std::string where = indexed("functions", i) + "(" + id + ")";
      const auto [entry, added] = seen.try_emplace(
          std::make_tuple(text_of(f.domain), text_of(f.name), text_of(f.overload)), i);
      if (!added) {
        add(where, "function " + quote(id) + " is defined again (first at functions[" +
                       std::to_string(entry->second) + "])");
      }
      unique_domains(f.opset_import, join(where, "opset_import"));

      std::unordered_set<std::string_view> attributes;
      auto attribute_name = [&](std::string_view name, const std::string& at) {
        if (name.empty()) {
          add(at, "function attribute has no name");
        } else if (!attributes.insert(name).second) {
          add(at, "function attribute " + quote(name) + " is declared twice");
        }
      };
      for (std::size_t a = 0; a < f.attribute.size(); ++a) {
        attribute_name(f.attribute[a], join(where, indexed("attribute", a)));
      }
      for (std::size_t a = 0; a < f.attribute_proto.size(); ++a) {
        attribute_name(text_of(f.attribute_proto[a].name),
                       join(where, indexed("attribute_proto", a)));
      }

      BodyView view{{}, {}, f.node, {}};
      for (std::size_t k = 0; k < f.input.size(); ++k) {
        view.inputs.push_back({f.input[k], true, join(where, indexed("input", k))});
      }
      for (std::size_t k = 0; k < f.output.size(); ++k) {
        view.outputs.push_back({f.output[k], true, join(where, indexed("output", k))});
      }
      OpsetContext opsets(f.opset_import, false);
      check_body(view, where, nullptr, opsets, nullptr);
      opsets.report(problems_);
    }
  }

  void graph(const GraphProto& g, const std::string& where, const Scope* parent,
             OpsetContext& opsets, Scope* keep) {
    BodyView view{{}, {}, g.node, {}};
    for (std::size_t k = 0; k < g.input.size(); ++k) {
      view.inputs.push_back({text_of(g.input[k].name), g.input[k].name.has_value(),
                             join(where, indexed("input", k))});
    }
    for (std::size_t k = 0; k < g.initializer.size(); ++k) {
      view.initializers.push_back({text_of(g.initializer[k].name),
                                   g.initializer[k].name.has_value(),
                                   join(where, indexed("initializer", k))});
    }
    for (std::size_t k = 0; k < g.sparse_initializer.size(); ++k) {
      const SparseTensorProto& sparse = g.sparse_initializer[k];
      const bool named = sparse.values && sparse.values->name;
      view.initializers.push_back({named ? std::string_view(*sparse.values->name) : "", named,
                                   join(where, indexed("sparse_initializer", k))});
    }
    for (std::size_t k = 0; k < g.output.size(); ++k) {
      view.outputs.push_back({text_of(g.output[k].name), g.output[k].name.has_value(),
                              join(where, indexed("output", k))});
    }
    check_body(view, where, parent, opsets, keep);
  }

  void check_body(const BodyView& view, const std::string& where, const Scope* parent,
                  OpsetContext& opsets, Scope* keep) {
    Scope scope;
    scope.parent = parent;
    scope.where = where;
    for (std::size_t i = 0; i < view.nodes.size(); ++i) {
      for (const Text& output : view.nodes[i].output) {
        if (!output.empty()) scope.producers.try_emplace(output, i);
      }
    }
    const std::unordered_set<std::string_view> input_names = declare_inputs(view.inputs, scope);
    declare_initializers(view.initializers, input_names, scope);
    std::unordered_map<std::string_view, std::size_t> node_names;
    for (std::size_t i = 0; i < view.nodes.size(); ++i) {
      const NodeProto& node = view.nodes[i];
      const std::string node_where = join(where, node_label(node, i));
      if (node.name && !node.name->empty()) {
        const auto [entry, added] = node_names.try_emplace(*node.name, i);
        if (!added) {
          add(node_where, "node name " + quote(*node.name) + " is used again (first by node[" +
                              std::to_string(entry->second) + "])");
        }
      }
      opsets.use(normalized_domain(node.domain), node_where);
      check_node(node, i, node_where, scope, opsets);
    }
    check_outputs(view.outputs, scope);
    if (scope.misordered) check_cycles(view.nodes, scope);
    if (keep != nullptr) *keep = std::move(scope);
  }

  // Defines the body's inputs in `scope`; returns their names.
  std::unordered_set<std::string_view> declare_inputs(const std::vector<NamedValue>& inputs,
                                                      Scope& scope) {
    std::unordered_set<std::string_view> input_names;
    for (const NamedValue& input : inputs) {
      if (input.name.empty()) {
        add(input.where, "input has no name");
        continue;
      }
      input_names.insert(input.name);
      if (!scope.defined.try_emplace(input.name, "an input").second) {
        add(input.where, "input " + quote(input.name) + " is declared twice (SSA)");
      }
    }
    return input_names;
  }

  void declare_initializers(const std::vector<NamedValue>& initializers,
                            const std::unordered_set<std::string_view>& input_names, Scope& scope) {
    std::unordered_set<std::string_view> initializer_names;
    for (const NamedValue& init : initializers) {
      if (init.name.empty()) {
        add(init.where, "initializer has no name");
        continue;
      }
      if (!initializer_names.insert(init.name).second) {
        add(init.where, "initializer " + quote(init.name) + " is defined twice (SSA)");
      } else if (input_names.count(init.name) != 0) {
        // An initializer may give a graph input its default value.
      } else if (const Scope* outer = find_visible(scope.parent, init.name)) {
        add(init.where, "initializer " + quote(init.name) +
                            " reassigns a value of the enclosing graph " + outer->where + " (SSA)");
      } else {
        scope.defined.try_emplace(init.name, "an initializer");
      }
    }
  }

  // Node `index` of the body of `scope`: its attributes, its inputs, the subgraphs it holds (which
  // see the values defined before it) and the values it defines.
  void check_node(const NodeProto& node, std::size_t index, const std::string& node_where,
                  Scope& scope, OpsetContext& opsets) {
    check_attribute_names(node, node_where);
    for (const Text& input : node.input) {
      if (!input.empty()) resolve(input, scope, index, node_where, "input");
    }
    for (std::size_t a = 0; a < node.attribute.size(); ++a) {
      const AttributeProto& attribute = node.attribute[a];
      const std::string name = attribute.name ? attribute.name->str() : indexed("attribute", a);
      if (attribute.g) graph(*attribute.g, join(node_where, name), &scope, opsets, nullptr);
      for (std::size_t k = 0; k < attribute.graphs.size(); ++k) {
        graph(attribute.graphs[k], join(node_where, indexed(name, k)), &scope, opsets, nullptr);
      }
    }
    for (const Text& output : node.output) {
      if (output.empty()) continue;  // An omitted optional output.
      if (const auto known = scope.defined.find(output); known != scope.defined.end()) {
        add(node_where,
            "output " + quote(output) + " is already assigned by " + known->second + " (SSA)");
      } else if (const Scope* outer = find_visible(scope.parent, output)) {
        add(node_where, "output " + quote(output) + " reassigns a value of the enclosing graph " +
                            outer->where + " (SSA)");
      } else {
        scope.defined.emplace(output, node_label(node, index));
      }
    }
  }

  void check_attribute_names(const NodeProto& node, const std::string& node_where) {
    std::unordered_set<std::string_view> attribute_names;
    for (std::size_t a = 0; a < node.attribute.size(); ++a) {
      const std::string_view name = text_of(node.attribute[a].name);
      if (name.empty()) {
        add(join(node_where, indexed("attribute", a)), "attribute has no name");
      } else if (!attribute_names.insert(name).second) {
        add(node_where, "attribute " + quote(name) + " appears twice");
      }
    }
  }

  void check_outputs(const std::vector<NamedValue>& outputs, const Scope& scope) {
    for (const NamedValue& output : outputs) {
      if (output.name.empty()) {
        add(output.where, "output has no name");
      } else if (scope.defined.count(output.name) == 0 &&
                 find_visible(scope.parent, output.name) == nullptr) {
        add(output.where, "output " + quote(output.name) + " is not defined");
      }
    }
  }

  // Reports an input that no earlier definition provides: out of order when a later node of
  // this or an enclosing body produces it, undefined otherwise.
  void resolve(std::string_view name, const Scope& scope, std::size_t node_index,
               const std::string& where, std::string_view what) {
    if (scope.defined.count(name) != 0) return;
    if (const auto producer = scope.producers.find(name); producer != scope.producers.end()) {
      scope.misordered = true;
      const std::string by = producer->second == node_index
                                 ? std::string("this node itself")
                                 : "node[" + std::to_string(producer->second) + "], a later node";
      add(where, std::string(what) + " " + quote(name) + " is produced by " + by +
                     ": the nodes are not in topological order");
      return;
    }
    for (const Scope* outer = scope.parent; outer != nullptr; outer = outer->parent) {
      if (outer->defined.count(name) != 0) return;
      if (const auto producer = outer->producers.find(name); producer != outer->producers.end()) {
        outer->misordered = true;
        add(where, std::string(what) + " " + quote(name) + " is produced by node[" +
                       std::to_string(producer->second) + "] of the enclosing graph " +
                       outer->where + ", which is not before the node holding this subgraph");
        return;
      }
    }
    add(where, std::string(what) + " " + quote(name) +
                   " is not defined: no input, initializer or earlier node output" +
                   (scope.parent != nullptr ? " here or in an enclosing graph" : "") +
                   " has that name");
  }

  // Some input refers to a later node: the nodes may still have an order (a misordered list) or
  // none (a cycle). Kahn's algorithm finds the nodes no order can place; removing those that
  // merely depend on a cycle leaves the nodes on cycles.
  void check_cycles(const std::vector<NodeProto>& nodes, const Scope& scope) {
    NodeDependencies dependencies = node_dependencies(nodes, scope);
    if (place_in_order(dependencies)) return;
    const std::vector<bool> on_cycle = nodes_on_cycles(dependencies);
    std::string listed;
    std::size_t count = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!on_cycle[i]) continue;
      if (count < kMaxNodesListed) listed += (count == 0 ? "" : ", ") + node_label(nodes[i], i);
      ++count;
    }
    if (count > kMaxNodesListed) listed += ", ...";
    add(scope.where, "the graph has a cycle: " + std::to_string(count) +
                         (count == 1 ? " node depends" : " nodes depend") +
                         " on their own outputs (" + listed + ")");
  }

  std::vector<IrProblem>& problems_;
};

}  // namespace

std::string to_string(const IrProblem& problem) { return problem.where + ": " + problem.message; }

std::vector<IrProblem> check_ir(const ModelProto& model) {
  std::vector<IrProblem> problems;
  Checker(problems).model(model);
  return problems;
}

}  // namespace onnxzip
