#include "tools/bench/bench_context.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "tools/bench/or_die.h"
#include "tools/bench/plugin_options.h"
#include "pipeline/image/jpeg_corpus.h"

namespace pipeline {
namespace bench {
namespace {

namespace fs = std::filesystem;

// --corpus, or a corpus written to the work dir once per size.
std::string EnsureCorpus(const BenchOptions& options) {
  if (!options.corpus.empty()) return options.corpus;
  const std::string root = options.work_dir + "/jpeg_corpus";
  // Beside the folder, not in it: every entry inside is a class.
  const std::string stamp =
      root + ".complete_" + std::to_string(options.corpus_images_per_class);
  if (!fs::exists(stamp)) {
    std::cerr << "bench: writing a JPEG corpus of " << 2 * options.corpus_images_per_class
              << " photo crops (500x375, quality 75) to " << root << "\n";
    JpegCorpusOptions corpus;
    corpus.output_dir = root;
    corpus.images_per_class = options.corpus_images_per_class;
    OrDie(MakeJpegCorpus(corpus));
    std::ofstream(stamp) << "";
  }
  return root;
}

PipelineConfig JpegConfig(const BenchOptions& options, const std::string& corpus) {
  PipelineConfig jpeg = OrDie(LoadConfigFile(options.jpeg_config));
  if (!SetStringOption(*jpeg.mutable_train_data()->mutable_dataset(), "root", corpus)) {
    Die(absl::InvalidArgumentError(absl::StrCat(
        options.jpeg_config, ": train_data.dataset has no string option `root` to point at the "
        "JPEG corpus")));
  }
  jpeg.clear_validation_data();
  jpeg.mutable_trainer()->set_batch_size(options.batch_size);
  jpeg.mutable_train_data()->set_batch_size(options.batch_size);
  return OrDie(ResolveConfig(jpeg));
}

}  // namespace

BenchContext MakeBenchContext(const BenchOptions& options, std::set<std::string> chosen) {
  BenchContext context;
  context.options = options;
  context.chosen = std::move(chosen);
  context.corpus = EnsureCorpus(options);
  context.jpeg = JpegConfig(options, context.corpus);
  context.bf16 = CpuBf16Support(HostCpuFeatures());
  context.train_binary = fs::absolute("tools/train").string();
  return context;
}

ProcessResult RunChild(const BenchContext& context, const std::vector<std::string>& argv,
                       const std::vector<std::string>& env) {
  return RunProcess(argv, env, context.options.work_dir + "/child_output.txt");
}

}  // namespace bench
}  // namespace pipeline
