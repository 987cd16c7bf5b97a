"""The few ONNX messages and fields the integer rewrite reads or writes, as protobuf classes.

Why not the `onnx` package: its import would cost every CLI recall more than the rewrite saves
(docs/performance.md), and `protobuf` is already there (onnxruntime depends on it).  The field
numbers are onnx.proto's; every field not named here is kept as an unknown field and written back
unchanged, and the messages live in a private descriptor pool, so they never clash with `onnx`'s.
"""

from __future__ import annotations

from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "factledger_onnx_subset"
FLOAT, UINT8, INT8 = 1, 2, 3       # TensorProto.DataType
ATTRIBUTE_INT = 2                  # AttributeProto.AttributeType
EXTERNAL = 1                       # TensorProto.DataLocation

_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
# message -> (number, name, type, label, message type or "", packed)
_SCHEMA = {
    "OperatorSetIdProto": [(1, "domain", _F.TYPE_STRING, _ONE, "", False),
                           (2, "version", _F.TYPE_INT64, _ONE, "", False)],
    "AttributeProto": [(1, "name", _F.TYPE_STRING, _ONE, "", False),
                       (3, "i", _F.TYPE_INT64, _ONE, "", False),
                       (20, "type", _F.TYPE_INT32, _ONE, "", False)],
    "ValueInfoProto": [(1, "name", _F.TYPE_STRING, _ONE, "", False)],
    "TensorProto": [(1, "dims", _F.TYPE_INT64, _MANY, "", False),
                    (2, "data_type", _F.TYPE_INT32, _ONE, "", False),
                    (4, "float_data", _F.TYPE_FLOAT, _MANY, "", True),
                    (5, "int32_data", _F.TYPE_INT32, _MANY, "", True),
                    (8, "name", _F.TYPE_STRING, _ONE, "", False),
                    (9, "raw_data", _F.TYPE_BYTES, _ONE, "", False),
                    (14, "data_location", _F.TYPE_INT32, _ONE, "", False)],
    "NodeProto": [(1, "input", _F.TYPE_STRING, _MANY, "", False),
                  (2, "output", _F.TYPE_STRING, _MANY, "", False),
                  (3, "name", _F.TYPE_STRING, _ONE, "", False),
                  (4, "op_type", _F.TYPE_STRING, _ONE, "", False),
                  (5, "attribute", _F.TYPE_MESSAGE, _MANY, "AttributeProto", False),
                  (7, "domain", _F.TYPE_STRING, _ONE, "", False)],
    "GraphProto": [(1, "node", _F.TYPE_MESSAGE, _MANY, "NodeProto", False),
                   (5, "initializer", _F.TYPE_MESSAGE, _MANY, "TensorProto", False),
                   (11, "input", _F.TYPE_MESSAGE, _MANY, "ValueInfoProto", False),
                   (12, "output", _F.TYPE_MESSAGE, _MANY, "ValueInfoProto", False),
                   (13, "value_info", _F.TYPE_MESSAGE, _MANY, "ValueInfoProto", False)],
    "ModelProto": [(7, "graph", _F.TYPE_MESSAGE, _ONE, "GraphProto", False),
                   (8, "opset_import", _F.TYPE_MESSAGE, _MANY, "OperatorSetIdProto", False)],
}


@lru_cache(maxsize=1)
def messages() -> dict:
    """Message name -> protobuf class (built once per process)."""
    schema = descriptor_pb2.FileDescriptorProto(name=f"{PACKAGE}.proto", package=PACKAGE, syntax="proto2")
    for name, fields in _SCHEMA.items():
        message = schema.message_type.add(name=name)
        for number, field_name, kind, label, type_name, packed in fields:
            field = message.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
            if packed:
                field.options.packed = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(schema)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
            for name in _SCHEMA}
