// Side-by-side measurements on this machine, printed as Markdown tables with
// ratios, all from one run:
//
//   bazel run //tools:bench                    # the performance table
//   bazel run //tools:bench -- --sections=models   # every backbone
//
// Sections (--sections, comma-separated; default all but models and
// torch2), each in its own <section>_section.cc beside this file:
//   compute     the model's forward+backward+step on in-memory tensors (the
//               ceiling end-to-end training can reach)
//   allocator   the same under glibc malloc, glibc with mallopt settings,
//               tcmalloc and jemalloc (each a child process)
//   data        the data pipeline alone, images/s per loader thread: JPEG
//               ImageFolder at 224 and Fashion-MNIST
//   loader_threads  the JPEG pipeline with 1, 2, 4, ... loader threads up
//               to every core: images/s and the share of N x one thread
//               (what a GPU machine's loader gets; data.num_workers)
//   transforms  each augmentation alone (color_jitter, random_erasing,
//               trivial_augment_wide, rand_augment, random_rotation,
//               random_crop with padding, gaussian_blur) on 224x224 images,
//               1 thread, against torchvision's on PIL images
//   kernels     what follows decoding (crop, resize, flip, normalize, batch
//               write) on decoded images: the runner's loops against ATen's
//               kernels, 1 thread each
//   python      the same pipelines in PIL + torchvision (tools/bench_reference.py)
//   end_to_end  `train` on the JPEG ImageFolder: images/s against the ceiling,
//               and its peak memory
//   ddp         `train` with ddp, 2 workers x 1 thread, against 1 process x 1
//               thread, with and without sync_batch_norm and
//               shard_optimizer_state, and PyTorch's DistributedDataParallel
//               on the same model and settings (tools/bench_reference.py
//               --ddp_steps)
//   models      parameters, forward multiply-adds at 224 and training images/s
//               of every backbone
//   torch2      the compute ceiling against PyTorch 2.x's own step (eager and
//               torch.compile, float32 and the precision AUTO picks here), in
//               the Debian 13 root (tools/debian13.sh, tools/bench_torch2.py),
//               rounds interleaved; not in the default set
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gflags/gflags.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "pipeline/util/cpu_features.h"
#include "tools/bench/bench_context.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/compute_ceiling.h"
#include "tools/bench/or_die.h"

DEFINE_string(sections, "compute,allocator,data,loader_threads,transforms,kernels,python,end_to_end,ddp",
              "comma-separated: compute, allocator, data, kernels, python, end_to_end, ddp, "
              "models, torch2");
DEFINE_int32(torch2_rounds, 2, "torch2: rounds of the interleaved runner and PyTorch rows");
DEFINE_string(jpeg_config, "configs/cats_vs_dogs.textproto",
              "config whose model, optimizer and training transforms are measured at 224");
DEFINE_string(fashion_mnist_config, "configs/single.textproto",
              "config of the Fashion-MNIST pipeline and of the ddp comparison");
DEFINE_string(ddp_config, "configs/ddp.textproto", "the ddp run of --fashion_mnist_config");
DEFINE_string(corpus, "", "JPEG ImageFolder to read; empty = generate one (make_jpeg_corpus)");
DEFINE_int32(corpus_images_per_class, 500, "size of a generated corpus");
DEFINE_int32(batch_size, 32, "batch size of the compute and end-to-end runs at 224");
DEFINE_double(min_seconds, 8, "each measurement runs at least this long after its warm-up");
DEFINE_int32(end_to_end_steps, 12, "training steps of the end-to-end run");
DEFINE_int32(end_to_end_rounds, 3, "end-to-end runs, each after its own compute ceiling");
DEFINE_int32(ddp_steps, 40, "training steps of each ddp-comparison run");
DEFINE_int32(models_batch_size, 8, "batch size of the models section");
DEFINE_string(models, "", "models section: only these labels (comma-separated); empty = all");
DEFINE_string(python, "/usr/bin/python3", "Python with Debian's python3-torchvision");
DEFINE_string(work_dir, "/tmp/pipeline_bench", "corpus, configs and run outputs");
DEFINE_bool(compute_child, false,
            "print the compute ceiling as one number and exit (tools/bench_libtorch.sh compares "
            "builds with it)");
DEFINE_bool(compute_channels_last, false, "--compute_child: with trainer.memory_format: CHANNELS_LAST");
DEFINE_bool(compute_bf16, false, "--compute_child: with trainer.precision: BF16_AUTOCAST");

namespace pipeline {
namespace bench {
namespace {

BenchOptions OptionsFromFlags() {
  BenchOptions options;
  options.jpeg_config = FLAGS_jpeg_config;
  options.fashion_mnist_config = FLAGS_fashion_mnist_config;
  options.ddp_config = FLAGS_ddp_config;
  options.corpus = FLAGS_corpus;
  options.corpus_images_per_class = FLAGS_corpus_images_per_class;
  options.batch_size = FLAGS_batch_size;
  options.min_seconds = FLAGS_min_seconds;
  options.end_to_end_steps = FLAGS_end_to_end_steps;
  options.end_to_end_rounds = FLAGS_end_to_end_rounds;
  options.ddp_steps = FLAGS_ddp_steps;
  options.torch2_rounds = FLAGS_torch2_rounds;
  options.models_batch_size = FLAGS_models_batch_size;
  options.models = FLAGS_models;
  options.python = FLAGS_python;
  options.work_dir = FLAGS_work_dir;
  return options;
}

// --sections as a set; the bench stops at a name that is no section.
std::set<std::string> ChosenSections() {
  std::set<std::string> known;
  for (const BenchSection& section : BenchSections()) known.insert(section.name);
  std::set<std::string> chosen;
  for (absl::string_view name : absl::StrSplit(FLAGS_sections, ',', absl::SkipEmpty())) {
    if (!known.count(std::string(name))) {
      std::vector<std::string> names;
      for (const BenchSection& section : BenchSections()) names.push_back(section.name);
      Die(absl::InvalidArgumentError(absl::StrCat("--sections: unknown section \"", name,
                                                  "\"; choose from ",
                                                  absl::StrJoin(names, ", "))));
    }
    chosen.insert(std::string(name));
  }
  return chosen;
}

// --compute_child: the compute ceiling of --jpeg_config's model and
// optimizer, as one number; no data is read.
void PrintComputeCeiling(const BenchOptions& options) {
  const PipelineConfig config = OrDie(ResolveConfig(OrDie(LoadConfigFile(options.jpeg_config))));
  std::cout << ComputeCeiling(config, options.batch_size, options.min_seconds,
                              FLAGS_compute_channels_last, FLAGS_compute_bf16)
                   .images_per_sec
            << "\n";
}

void PrintHeader(const BenchContext& context) {
  const CpuFeatures& cpu = HostCpuFeatures();
  std::cout << absl::StrFormat(
      "## Performance: %s at 224x224 on %s, batch %d, %d cores\n\nCPU: %s with %s; oneDNN "
      "cap %s; bf16 %s (%s)\n\n",
      context.jpeg.model().name(), context.corpus, context.options.batch_size,
      std::thread::hardware_concurrency(), CpuDescription(cpu), CpuIsaSummary(cpu),
      cpu.onednn_max_isa.empty() ? "none" : cpu.onednn_max_isa,
      context.bf16.native ? "native" : "emulated", context.bf16.detail);
}

int Main() {
  const std::set<std::string> chosen = ChosenSections();
  const BenchOptions options = OptionsFromFlags();
  std::filesystem::create_directories(options.work_dir);
  bool table_rows = false;
  for (const BenchSection& section : BenchSections()) {
    if (!Runs(section, chosen)) continue;
    if (section.print_own_table != nullptr) section.print_own_table(options);
    if (section.add_rows != nullptr) table_rows = true;
  }
  if (!table_rows) return 0;
  if (FLAGS_compute_child) {
    PrintComputeCeiling(options);
    return 0;
  }
  BenchContext context = MakeBenchContext(options, chosen);
  PrintHeader(context);
  for (const BenchSection& section : BenchSections()) {
    if (section.add_rows != nullptr && Runs(section, chosen)) section.add_rows(context);
  }
  context.table.Print(std::cout);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::SetUsageMessage("bazel run //tools:bench [-- --sections=...]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return pipeline::bench::Main();
}
