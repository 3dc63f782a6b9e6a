#ifndef TOOLS_BENCH_BENCH_OPTIONS_H_
#define TOOLS_BENCH_BENCH_OPTIONS_H_

// What the bench's command line says, for the sections. bench_main.cc
// defines the flags (their defaults and help are there) and fills this, so
// no section reads a flag itself.

#include <string>

namespace pipeline {
namespace bench {

struct BenchOptions {
  std::string jpeg_config;
  std::string fashion_mnist_config;
  std::string ddp_config;
  std::string corpus;
  int corpus_images_per_class = 0;
  int batch_size = 0;
  double min_seconds = 0;
  int end_to_end_steps = 0;
  int end_to_end_rounds = 0;
  int ddp_steps = 0;
  int torch2_rounds = 0;
  int models_batch_size = 0;
  std::string models;
  std::string python;
  std::string work_dir;
};

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_BENCH_OPTIONS_H_
