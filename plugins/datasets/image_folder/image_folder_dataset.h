#ifndef PLUGINS_DATASETS_IMAGE_FOLDER_IMAGE_FOLDER_DATASET_H_
#define PLUGINS_DATASETS_IMAGE_FOLDER_IMAGE_FOLDER_DATASET_H_

// The image_folder dataset once its files are found: Get() reads and
// decodes one file, GetRegion() decodes only the region a transform asks
// for, and decoded images are kept while they fit the cache budget.
// Internal to the image_folder plugin.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"

namespace pipeline {
namespace image_folder_internal {

// Sample i is the file paths[i], labelled labels[i]; up to `cache_bytes` of
// decoded images are kept (0: none).
std::unique_ptr<Dataset> MakeImageFolderDataset(std::vector<std::string> paths,
                                                std::vector<int64_t> labels,
                                                std::vector<std::string> class_names,
                                                DecodeOptions decode_options,
                                                int64_t cache_bytes);

}  // namespace image_folder_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_IMAGE_FOLDER_IMAGE_FOLDER_DATASET_H_
