#ifndef PLUGINS_DATASETS_WEBDATASET_WEBDATASET_DATASET_H_
#define PLUGINS_DATASETS_WEBDATASET_WEBDATASET_DATASET_H_

// The webdataset dataset once its shards are indexed: Get(i) reads sample
// i's image member with one pread (its tar header and data together; the
// header is checked, so a shard rewritten since it was indexed is an error,
// not another sample's pixels) and decodes it; GetRegion decodes only the
// region a transform asks for, as image_folder does. Internal to the
// webdataset plugin.

#include <memory>
#include <string>
#include <vector>

#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "plugins/datasets/webdataset/shard_set.h"

namespace pipeline {
namespace webdataset_internal {

std::unique_ptr<Dataset> MakeWebDataset(ShardSet shards, std::vector<std::string> class_names,
                                        DecodeOptions decode_options);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_WEBDATASET_DATASET_H_
