"""The protobuf message `CartPoleObservation` (RLlib's `cartpole_observations.proto`):

    syntax = "proto3";
    message CartPoleObservation {
      double x_pos = 1;
      double x_veloc = 2;
      double angle_pos = 3;
      double angle_veloc = 4;
    }

RLlib ships this as `protoc` output; here the same message is built from its descriptor at import
(in a pool of its own, so it cannot clash with another registration of the same file name).
Needs the `protobuf` package.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

FIELD_NAMES = ("x_pos", "x_veloc", "angle_pos", "angle_veloc")


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="cartpole_observations.proto", syntax="proto3")
    message = proto.message_type.add(name="CartPoleObservation")
    for number, name in enumerate(FIELD_NAMES, start=1):
        message.field.add(
            name=name,
            number=number,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    return proto


_POOL = descriptor_pool.DescriptorPool()
DESCRIPTOR = _POOL.Add(_file_descriptor())
CartPoleObservation = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("CartPoleObservation")
)
