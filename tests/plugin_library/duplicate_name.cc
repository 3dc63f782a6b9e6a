// A plugin library whose model takes a name train's own small_cnn has.
#include <memory>

#include "absl/status/status.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/model.h"

namespace {

absl::StatusOr<std::unique_ptr<pipeline::Model>> Create(const google::protobuf::Empty&,
                                                        const pipeline::ModelContext&) {
  return absl::UnimplementedError("never built");
}

PIPELINE_REGISTER_PLUGIN(pipeline::Model, "small_cnn", google::protobuf::Empty, "A second small_cnn",
                         Create);

}  // namespace
