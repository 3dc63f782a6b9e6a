# Offline stand-in for rules_proto (unused by this project's protos, which go through
# //third_party:proto.bzl and the system protoc).
def proto_library(**kwargs):
    native.proto_library(**kwargs)
