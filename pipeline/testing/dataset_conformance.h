#ifndef PIPELINE_TESTING_DATASET_CONFORMANCE_H_
#define PIPELINE_TESTING_DATASET_CONFORMANCE_H_

// What every dataset plugin must do:
//
//  - size() > 0, the same on every call and for a second instance built from
//    the same config;
//  - Get(i) deterministic (the same sample every call, from either
//    instance) and well-formed, and thread-safe: Get from several threads at
//    once gives what Get in turn gives;
//  - labels in [0, class_names().size());
//  - GetRegion calls its plan once, with Get's height and width, and the
//    pixels it returns at *region_in_image are Get's pixels cut to the
//    planned region;
//  - an index out of range is an error, not a crash.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "dataset_conformance_test")
//   dataset_conformance_test(
//       name = "conformance_test",
//       plugin = ":image_folder",
//       fixture = "image_tree",                # optional test data
//       options = "root: \"$FIXTURE_ROOT\"",   # or a list of them
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct DatasetConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message; $FIXTURE_ROOT is replaced
  // Test data written into a fresh temporary folder before the dataset is
  // built: "" (none), "image_tree" (class folders holding small PNG and
  // JPEG files of several sizes, gray and RGB) or "webdataset_shards" (the
  // same images as webdataset shards train-000000.tar .. train-000002.tar
  // with their .idx files, classes.txt, and shards.txt listing the shards).
  std::string fixture;
  std::string split;  // DatasetContext.split
};

void PrintTo(const DatasetConformanceParams& params, std::ostream* out);

class DatasetConformanceTest : public ::testing::TestWithParam<DatasetConformanceParams> {};

std::string DatasetConformanceTestName(
    const ::testing::TestParamInfo<DatasetConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_DATASET_CONFORMANCE_H_
