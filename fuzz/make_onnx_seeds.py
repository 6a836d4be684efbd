#!/usr/bin/python3
"""Writes the seed corpora of fuzz/onnx_parse_fuzzer.cpp and fuzz/onnx_roundtrip_fuzzer.cpp into
fuzz/corpus/onnx_parse/ and fuzz/corpus/onnx_roundtrip/.

Three kinds of seed, all under 8 KB:
  * reference models from Debian's libonnx-testdata, picked for variety: subgraphs (If, Loop,
    Scan, SequenceMap), optional and sequence types, string attributes, typed and raw
    initializers, symbolic dimensions, training operators;
  * models built with python3-onnx's helpers for what the testdata lacks: functions, sparse
    tensors, string tensors, training info, map / sparse / opaque types, every typed field,
    external-data references, metadata, quantization annotations, segments; inline payloads
    that disagree with their dims and type, and models lacking ir_version, graph or opset_import;
  * hand-made wire bytes: fields newer than onnx 1.12 (IR 13), unknown fields of every wire
    type, non-canonical and 10-byte varints, packed and unpacked forms, oneof switches, merged
    sub-messages, nesting just under and over the depth limit, and malformed inputs (truncated
    varint, length past the end, wrong wire type, broken group, field number 0).
Deterministic: rerunning rewrites identical files. Inputs found by fuzzing also live in those
folders (named crash-* / regression-*); this script leaves them alone.
Run with /usr/bin/python3 (Debian's python3-onnx).
"""
import os
import pathlib
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = pathlib.Path(__file__).resolve().parent
TESTDATA = pathlib.Path("/usr/share/libonnx-testdata/data")
PARSE = HERE / "corpus" / "onnx_parse"
ROUNDTRIP = HERE / "corpus" / "onnx_roundtrip"

TESTDATA_PICKS = [
    "node/test_if", "node/test_if_opt", "node/test_if_seq", "node/test_loop11",
    "node/test_loop13_seq", "node/test_loop16_seq_none", "node/test_scan9_sum", "node/test_scan_sum",
    "node/test_sequence_map_identity_1_sequence", "node/test_sequence_map_add_2_sequences",
    "node/test_optional_get_element", "node/test_optional_has_element_empty",
    "node/test_identity_opt", "node/test_identity_sequence", "node/test_tfidfvectorizer_tf_onlybigrams_levelempty",
    "node/test_constantofshape_int_zeros", "node/test_constant", "node/test_cast_FLOAT_to_STRING",
    "node/test_strnormalizer_export_monday_casesensintive_lower", "node/test_adagrad",
    "simple/test_sequence_model8", "simple/test_sequence_model7", "simple/test_gradient_of_add",
    "simple/test_strnorm_model_monday_casesensintive_nochangecase",
    "pytorch-converted/test_PReLU_1d", "pytorch-operator/test_operator_non_float_params",
    "pytorch-operator/test_operator_addconstant", "node/test_reshape_extended_dims",
    "node/test_layer_normalization_2d_axis0", "node/test_dequantizelinear",
]


# --- Wire-format helpers for the hand-made seeds ---

def varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number, wire_type):
    return varint(number << 3 | wire_type)


def f_varint(number, value):
    return tag(number, 0) + varint(value)


def f_len(number, payload):
    return tag(number, 2) + varint(len(payload)) + payload


def f_fixed32(number, value):
    return tag(number, 5) + struct.pack("<I", value)


def f_fixed64(number, value):
    return tag(number, 1) + struct.pack("<Q", value)


def nested_subgraphs(levels):
    """Model.graph -> (node -> attribute.g -> graph) `levels` times: depth 2 + 3 * levels."""
    body = b""
    for _ in range(levels):
        body = f_len(1, f_len(5, f_len(6, body)))
    return f_len(7, body)


def hand_made():
    seeds = {}
    unknown = (f_varint(1000, 1 << 63) + f_fixed64(1001, 0x0102030405060708) + f_len(1002, b"x")
               + tag(1003, 3) + f_varint(1, 5) + tag(1003, 4) + f_fixed32(1005, 0xDEADBEEF))
    seeds["unknown_fields_every_wire_type"] = (
        f_varint(1, 13) + f_len(7, f_len(1, f_len(4, b"Relu") + unknown) + unknown) + unknown)
    # Fields newer than onnx 1.12: node overload / metadata_props / device_configurations,
    # tensor and value-info metadata, function attribute_proto / value_info / overload, model
    # configuration, and the sharding messages.
    entry = f_len(1, b"k") + f_len(2, b"v")
    simple = f_len(2, b"batch") + f_varint(3, 2)
    sharded = f_varint(1, 0) + f_len(2, simple)
    spec = (f_len(1, b"x") + f_varint(2, 0) + f_varint(2, 1)
            + f_len(3, f_varint(1, 1) + f_varint(2, 0)) + f_len(4, sharded))
    node = (f_len(1, b"x") + f_len(2, b"y") + f_len(4, b"Relu") + f_len(8, b"v2") + f_len(9, entry)
            + f_len(10, f_len(1, b"cfg") + f_len(2, spec) + f_varint(3, 1)))
    tensor = f_varint(1, 1) + f_varint(2, 1) + f_len(8, b"w") + f_len(4, struct.pack("<f", 1.0)) \
        + f_len(16, entry)
    value_info = f_len(1, b"x") + f_len(2, f_len(1, f_varint(1, 1))) + f_len(4, entry)
    attribute = f_len(1, b"alpha") + f_fixed32(2, 0x3F000000) + f_varint(20, 1)
    function = (f_len(1, b"f") + f_len(4, b"x") + f_len(5, b"y") + f_len(7, node)
                + f_len(10, b"custom") + f_len(11, attribute) + f_len(12, value_info)
                + f_len(13, b"o") + f_len(14, entry))
    graph = (f_len(1, node) + f_len(2, b"g") + f_len(5, tensor) + f_len(11, value_info)
             + f_len(16, entry))
    seeds["ir13_fields"] = (f_varint(1, 13) + f_len(7, graph) + f_len(25, function)
                            + f_len(26, f_len(1, b"cfg") + f_varint(2, 2) + f_len(3, b"gpu0")))
    seeds["new_data_types"] = f_len(7, b"".join(
        f_len(5, f_varint(1, 3) + f_varint(2, t) + f_len(9, b"\x12\x34")) for t in range(17, 27)))
    seeds["noncanonical_varints"] = (tag(1, 0) + b"\x88\x80\x80\x00"
                                     + f_len(7, f_len(5, tag(2, 0) + b"\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00")))
    seeds["negative_int32_ten_bytes"] = f_len(7, f_len(5, f_varint(2, -5) + f_len(5, varint(-1) + varint(-(1 << 31)))))
    seeds["int32_wider_than_32_bits"] = f_len(7, f_len(5, f_varint(2, (1 << 40) + 7)))
    seeds["packed_and_unpacked"] = f_len(7, f_len(5, f_len(1, varint(2) + varint(3)) + f_varint(1, 4)
                                                   + f_len(5, varint(1)) + f_varint(5, 2)
                                                   + f_fixed32(4, 0x3F800000) + f_len(4, struct.pack("<2f", 2, 3))
                                                   + f_fixed64(10, 0) + f_len(11, varint(1 << 64 - 1))))
    seeds["oneof_switches"] = f_len(7, f_len(11, f_len(1, b"x") + f_len(2, f_len(1, f_varint(1, 1))
                                                                      + f_len(4, b"") + f_len(9, b"")
                                                                      + f_len(1, f_len(2, f_len(1, f_varint(1, 4) + f_len(2, b"n")))))))
    seeds["repeated_submessage_merges"] = f_len(7, f_len(2, b"a")) + f_len(7, f_len(2, b"b") + f_len(1, b""))
    seeds["empty"] = b""
    seeds["empty_present_messages"] = f_len(7, f_len(1, b"") + f_len(5, b"") + f_len(11, b""))
    seeds["depth_98"] = nested_subgraphs(32)  # 98 deep: parses.
    seeds["depth_101"] = nested_subgraphs(33)  # 101 deep: over the limit.
    seeds["group_nesting"] = f_varint(1, 1) + tag(900, 3) * 5 + tag(900, 4) * 5
    # Malformed inputs.
    seeds["bad_truncated_varint"] = b"\x08\x80"
    seeds["bad_length_past_end"] = b"\x08\x01\x12\x05a"
    seeds["bad_wire_type_known_field"] = b"\x08\x01\x3a\x00\x38\x01"
    seeds["bad_unclosed_group"] = f_varint(1, 1) + tag(900, 3) + f_varint(1, 1)
    seeds["bad_field_zero"] = f_len(7, b"\x00")
    seeds["bad_packed_float_length"] = f_len(7, f_len(5, f_len(4, b"\x00\x00\x80")))
    seeds["bad_eleven_byte_varint"] = b"\x08" + b"\x80" * 10 + b"\x01"
    return seeds


def built_with_helpers():
    """Models using what the testdata lacks, built with onnx's own helpers."""
    seeds = {}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])

    body = helper.make_node("Mul", ["a", "alpha_t"], ["b"])
    alpha = helper.make_node("Constant", [], ["alpha_t"], value_float=0.0)
    alpha.attribute[0].ref_attr_name = "alpha"
    function = helper.make_function("custom", "Scale", ["a"], ["b"], [alpha, body],
                                    [helper.make_opsetid("", 17)], ["alpha"])
    function.doc_string = "scales"
    graph = helper.make_graph([helper.make_node("Scale", ["x"], ["y"], domain="custom", alpha=2.0)],
                              "with_function", [x], [y])
    seeds["function"] = helper.make_model(graph, functions=[function], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)])

    values = helper.make_tensor("values", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    indices = helper.make_tensor("indices", TensorProto.INT64, [3], [0, 5, 9])
    sparse = helper.make_sparse_tensor(values, indices, [10])
    node = helper.make_node("Constant", [], ["s"], sparse_value=sparse)
    graph = helper.make_graph([node], "sparse", [], [helper.make_tensor_value_info("s", TensorProto.FLOAT, [10])],
                              sparse_initializer=[sparse])
    graph.output.append(helper.make_sparse_tensor_value_info("z", TensorProto.FLOAT, [10]))
    seeds["sparse"] = helper.make_model(graph)

    strings = helper.make_tensor("names", TensorProto.STRING, [3], [b"alpha", b"", b"\xff\x00bytes"])
    node = helper.make_node("Constant", [], ["c"], value=strings)
    node.attribute.append(helper.make_attribute("labels", [b"a", b"b"]))
    graph = helper.make_graph([node], "strings", [], [helper.make_tensor_value_info("c", TensorProto.STRING, [3])],
                              initializer=[strings])
    seeds["strings"] = helper.make_model(graph)

    typed = [
        helper.make_tensor("f", TensorProto.FLOAT, [2], [1.5, float("nan")]),
        helper.make_tensor("i8", TensorProto.INT8, [3], [-128, 0, 127]),
        helper.make_tensor("u16", TensorProto.UINT16, [1], [65535]),
        helper.make_tensor("i32", TensorProto.INT32, [2], [-1, 1 << 30]),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-(1 << 62), 7]),
        helper.make_tensor("d", TensorProto.DOUBLE, [1], [3.25]),
        helper.make_tensor("u32", TensorProto.UINT32, [1], [1 << 31]),
        helper.make_tensor("u64", TensorProto.UINT64, [1], [(1 << 64) - 1]),
        helper.make_tensor("c64", TensorProto.COMPLEX64, [1], [1 + 2j]),
        helper.make_tensor("c128", TensorProto.COMPLEX128, [1], [3 - 4j]),
        helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1.0, -2.0], dtype=np.float16)),
        helper.make_tensor("bf", TensorProto.BFLOAT16, [1], [1.0]),
        helper.make_tensor("b", TensorProto.BOOL, [2], [True, False]),
        helper.make_tensor("raw", TensorProto.FLOAT, [2], np.array([1, 2], np.float32).tobytes(), raw=True),
    ]
    external = TensorProto(name="ext", data_type=TensorProto.FLOAT, dims=[4],
                           data_location=TensorProto.EXTERNAL)
    for key, value in (("location", "weights.bin"), ("offset", "64"), ("length", "16")):
        external.external_data.add(key=key, value=value)
    typed.append(external)
    segmented = helper.make_tensor("seg", TensorProto.FLOAT, [4], [1, 2, 3, 4])
    segmented.segment.begin = 0
    segmented.segment.end = 2
    segmented.doc_string = "first half"
    typed.append(segmented)
    graph = helper.make_graph([], "typed", [], [], initializer=typed, doc_string="every typed field")
    annotation = graph.quantization_annotation.add(tensor_name="f")
    annotation.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="i8")
    model = helper.make_model(graph, producer_name="seeds", doc_string="typed")
    helper.set_model_props(model, {"author": "onnxzip", "license": "none"})
    seeds["typed_data"] = model

    map_type = onnx.TypeProto()
    map_type.map_type.key_type = TensorProto.INT64
    map_type.map_type.value_type.CopyFrom(helper.make_sequence_type_proto(
        helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [None, 3]))))
    opaque = onnx.TypeProto(denotation="THING")
    opaque.opaque_type.domain = "ai.onnx.ml"
    opaque.opaque_type.name = "thing"
    graph = helper.make_graph([], "types", [helper.make_value_info("m", map_type),
                                            helper.make_value_info("o", opaque)], [])
    graph.input[0].type.map_type.value_type.sequence_type.elem_type.optional_type.elem_type \
        .tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    node = helper.make_node("Cast", ["x"], ["y"], to=1)
    node.attribute.append(helper.make_attribute("tp", map_type))
    node.attribute.append(helper.make_attribute("tps", [opaque, map_type]))
    graph.node.append(node)
    seeds["types"] = helper.make_model(graph)

    init = helper.make_graph([helper.make_node("Constant", [], ["w0"], value_float=0.5)], "init", [],
                             [helper.make_tensor_value_info("w0", TensorProto.FLOAT, [])])
    algo = helper.make_graph([helper.make_node("Add", ["w", "x"], ["w_new"])], "algo",
                             [x], [helper.make_tensor_value_info("w_new", TensorProto.FLOAT, [])])
    training = helper.make_training_info(algo, [("w", "w_new")], init, [("w", "w0")])
    model = helper.make_model(helper.make_graph([], "main", [], []))
    model.training_info.append(training)
    seeds["training_info"] = model

    # What verify reports and convert refuses (issue 9 items 5, 6): inline payloads that disagree
    # with their dims and type, and models without the fields every model needs.
    def tensor(name, data_type, dims, **fields):
        t = TensorProto(name=name, data_type=data_type, dims=dims)
        for field, value in fields.items():
            if field == "raw_data":
                t.raw_data = value
            else:
                getattr(t, field).extend(value)
        return t
    payloads = [
        tensor("short_raw", TensorProto.FLOAT, [4, 3], raw_data=b"\0" * 10),
        tensor("long_raw", TensorProto.FLOAT, [2], raw_data=b"\0" * 9),
        tensor("short_typed", TensorProto.FLOAT, [3], float_data=[1.0]),
        tensor("raw_and_typed", TensorProto.INT64, [1], raw_data=b"\0" * 8, int64_data=[1]),
        tensor("two_typed", TensorProto.FLOAT, [1], float_data=[1.0], int32_data=[1]),
        tensor("wrong_field", TensorProto.FLOAT, [2], int32_data=[1, 2]),
        tensor("no_data", TensorProto.INT64, [3]),
        tensor("packed", 21, [5], int32_data=[0x21]),  # UINT4, newer than onnx 1.12.
        tensor("complex", TensorProto.COMPLEX64, [2], float_data=[1.0, 2.0]),
        tensor("strings_raw", TensorProto.STRING, [1], raw_data=b"\x01a"),
        tensor("strings_short", TensorProto.STRING, [3], string_data=[b"a"]),
        tensor("negative_dim", TensorProto.FLOAT, [3, -1], raw_data=b""),
        tensor("zero_elements", TensorProto.FLOAT, [0, 4], float_data=[1.0]),
    ]
    node = helper.make_node("Constant", [], ["c"], value=tensor("attr", TensorProto.INT32, [2], raw_data=b"\0"))
    graph = helper.make_graph([node], "payloads", [], [helper.make_tensor_value_info("c", TensorProto.INT32, [2])],
                              initializer=payloads)
    seeds["inconsistent_payloads"] = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    seeds["metadata_only"] = onnx.ModelProto(producer_name="no ir_version, no graph")
    seeds["ir_version_only"] = onnx.ModelProto(ir_version=8)
    model = helper.make_model(helper.make_graph([], "old", [], []), opset_imports=[helper.make_opsetid("", 1)])
    model.ir_version = 2  # Predates opset_import.
    helper.set_model_props(model, {"author": "a"})
    model.metadata_props.add(key="author", value="b")  # A duplicate key.
    seeds["ir2_with_opset_import"] = model
    return {name: model.SerializeToString() for name, model in seeds.items()}


def write(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def main():
    picks = {}
    for pick in TESTDATA_PICKS:
        path = TESTDATA / pick / "model.onnx"
        data = path.read_bytes()
        assert len(data) < 8192, pick
        picks["testdata_" + pick.replace("/", "_").replace("-", "_")] = data
    generated = built_with_helpers()
    made = hand_made()
    for name, data in {**picks, **generated, **made}.items():
        assert len(data) < 8192, name
        write(PARSE, name + ".onnx", data)
        if not name.startswith("bad_"):  # Round trips need models that parse.
            write(ROUNDTRIP, name + ".onnx", data)
    print(f"{len(picks)} testdata models, {len(generated)} built, {len(made)} hand-made")


if __name__ == "__main__":
    main()
