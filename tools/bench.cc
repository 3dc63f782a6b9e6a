// Side-by-side measurements on this machine, printed as Markdown tables with
// ratios, all from one run:
//
//   bazel run //tools:bench                    # the performance table
//   bazel run //tools:bench -- --sections=models   # every backbone
//
// Sections (--sections, comma-separated; default all but models):
//   compute     the model's forward+backward+step on in-memory tensors (the
//               ceiling end-to-end training can reach)
//   allocator   the same under glibc malloc, glibc with mallopt settings,
//               tcmalloc and jemalloc (each a child process)
//   data        the data pipeline alone, images/s per loader thread: JPEG
//               ImageFolder at 224 and Fashion-MNIST
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
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ATen/Parallel.h"
#include "ATen/TensorOperators.h"
#include "ATen/ops/cross_entropy_loss.h"
#include "ATen/ops/empty.h"
#include "ATen/ops/from_blob.h"
#include "ATen/ops/randint.h"
#include "ATen/ops/randn.h"
#include "ATen/ops/tensor.h"
#include "ATen/ops/upsample_bilinear2d.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gflags/gflags.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/metrics/multiply_adds.h"
#include "pipeline/registry/registry.h"
#include "pipeline/trainer/autocast.h"
#include "pipeline/trainer/compute_format.h"
#include "pipeline/util/cpu_features.h"
#include "pipeline/util/subprocess.h"
#include "pipeline/util/torch_version.h"
#include "pipeline/weights/build_model.h"
#include "tools/bench/child_output.h"
#include "tools/bench/markdown_table.h"
#include "tools/jpeg_corpus.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/optim/sgd.h"

DEFINE_string(sections, "compute,allocator,data,transforms,kernels,python,end_to_end,ddp",
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
namespace {

// "random_resized_crop + random_horizontal_flip + ...": a config's training
// transforms, as the table names the pipeline it measured.
std::string TransformNames(const PipelineConfig& config) {
  std::vector<std::string> names;
  for (const PluginConfig& transform : config.train_data().transforms()) {
    names.push_back(transform.name());
  }
  return absl::StrJoin(names, " + ");
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

[[noreturn]] void Die(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  std::exit(2);
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) Die(value.status());
  return std::move(*value);
}

// Repeats `step` (after `warmup` untimed calls) until min_seconds have
// passed and at least `min_steps` ran; returns steps per second.
double StepsPerSecond(const std::function<void()>& step, int warmup = 1, int min_steps = 3) {
  for (int i = 0; i < warmup; ++i) step();
  const Clock::time_point start = Clock::now();
  int steps = 0;
  while (steps < min_steps || Seconds(start) < FLAGS_min_seconds) {
    step();
    ++steps;
  }
  return steps / Seconds(start);
}

PipelineConfig LoadResolved(const std::string& path) {
  PipelineConfig config = OrDie(LoadConfigFile(path));
  return OrDie(ResolveConfig(config));
}

// ---- compute ----

struct ComputeResult {
  double images_per_sec = 0;
  int threads = 0;
};

// Forward, backward and the config's optimizer step on one in-memory batch:
// no loader, nothing else competing for the cores.
ComputeResult ComputeCeiling(const PipelineConfig& config, int64_t height, int64_t width,
                             int64_t channels, int64_t classes, int batch_size,
                             bool channels_last = false, bool bf16 = false) {
  at::set_num_threads(config.trainer().threads());
  auto model = OrDie(BuildModel(config.model(), {classes, channels}));
  model->train();
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : model->parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(format));
    }
  }
  auto optimizer =
      OrDie(Registry<torch::optim::Optimizer>::Global().Create(config.optimizer(),
                                                               {model->parameters()}));
  const at::Tensor images = at::randn({batch_size, channels, height, width}).contiguous(format);
  const at::Tensor labels = at::randint(classes, {batch_size}, at::kLong);
  const double steps = StepsPerSecond([&] {
    optimizer->zero_grad();
    {
      // As the trainer runs a step's forward and backward.
      AutocastScope autocast(bf16 ? TrainerConfig::BF16_AUTOCAST : TrainerConfig::FP32);
      at::cross_entropy_loss(model->forward(images), labels).backward();
    }
    optimizer->step();
  });
  return {steps * batch_size, config.trainer().threads()};
}

// ---- child processes ----

using bench::JsonNumber;
using bench::ProcessResult;
using bench::StartProcess;
using bench::Tail;
using bench::WaitProcess;

// One child at a time, logged to the work dir.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}) {
  return bench::RunProcess(argv, env, FLAGS_work_dir + "/child_output.txt");
}

// ---- data ----

struct DataResult {
  double images_per_sec = 0;  // one loader thread
  std::string sample_shape;
};

// The samples of `dataset` decoded once and kept in memory; Get hands out a
// copy, as a decoding dataset hands out a fresh image. Without GetRegion, so
// the loader runs the transforms on the whole decoded image.
class DecodedInMemory : public Dataset {
 public:
  explicit DecodedInMemory(const Dataset& dataset, int64_t samples) {
    for (int64_t i = 0; i < std::min(samples, dataset.size()); ++i) {
      samples_.push_back(OrDie(dataset.Get(i)));
    }
    class_names_ = dataset.class_names();
  }
  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    return samples_[static_cast<size_t>(index)];
  }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  const std::vector<Sample>& samples() const { return samples_; }

 private:
  std::vector<Sample> samples_;
  std::vector<std::string> class_names_;
};

// Images per second the loader (one thread) delivers from `dataset` through
// `config`'s training transforms; after one batch, or with
// `warm_whole_epoch` one epoch, untimed.
DataResult LoaderRate(const PipelineConfig& config, const Dataset& dataset,
                      bool warm_whole_epoch = false) {
  const DataConfig& data = config.train_data();
  std::vector<std::unique_ptr<Transform>> owned;
  std::vector<const Transform*> transforms;
  for (const PluginConfig& transform : data.transforms()) {
    owned.push_back(OrDie(Registry<Transform>::Global().Create(transform, {})));
    transforms.push_back(owned.back().get());
  }
  LoaderOptions options;
  options.batch_size = data.batch_size();
  options.num_workers = 1;
  options.prefetch_batches = data.prefetch_batches();
  options.seed = config.trainer().seed();
  Loader loader(&dataset, transforms, options);
  std::vector<int64_t> order(static_cast<size_t>(dataset.size()));
  std::iota(order.begin(), order.end(), 0);
  int64_t epoch = 0;
  auto next = [&] {
    while (true) {
      auto batch = OrDie(loader.Next());
      if (batch) return batch->labels.size(0);
      loader.StartEpoch(++epoch, order);
    }
  };
  loader.StartEpoch(epoch, order);
  if (warm_whole_epoch) {
    while (OrDie(loader.Next())) {
    }
    loader.StartEpoch(++epoch, order);
  }
  next();  // warm-up: the first batch pays for page faults and caches
  const Clock::time_point start = Clock::now();
  int64_t images = 0;
  while (Seconds(start) < FLAGS_min_seconds) images += next();
  DataResult result;
  result.images_per_sec = images / Seconds(start);
  result.sample_shape = OrDie(loader.LoadSample(0, 0)).image.ShapeString();
  return result;
}

std::unique_ptr<Dataset> TrainDataset(const PipelineConfig& config) {
  return OrDie(Registry<Dataset>::Global().Create(config.train_data().dataset(),
                                                  {"train", config.trainer().seed()}));
}

// The training data pipeline of `config` (dataset, transforms, loader with
// one worker thread).
DataResult DataPipelineRate(const PipelineConfig& config) {
  return LoaderRate(config, *TrainDataset(config));
}

// What comes after decoding -- random-resized-crop to 224, flip, uint8 to
// float, normalize, into the batch -- measured on images decoded once,
// both ways on one thread: through the runner's transforms and loader
// (image_ops' bilinear resize and the fused batch write), and through
// ATen's kernels as torchvision's tensor transforms call them
// (upsample_bilinear2d without antialias, rounded back to uint8 values,
// then flip and normalize as tensor ops), on crops random_resized_crop
// plans.
struct PostDecodeRates {
  double image_ops = 0;
  double aten = 0;
};

PostDecodeRates PostDecodeRate(const PipelineConfig& config) {
  const DecodedInMemory decoded(*TrainDataset(config), 200);
  PostDecodeRates rates;
  rates.image_ops = LoaderRate(config, decoded).images_per_sec;

  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const int64_t batch_size = config.train_data().batch_size();
  const at::Tensor mean = at::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
  const at::Tensor deviation = at::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  // The crops random_resized_crop (the config's first transform) plans.
  auto crop_transform =
      OrDie(Registry<Transform>::Global().Create(config.train_data().transforms(0), {}));
  const RegionCrop* planner = crop_transform->AsRegionCrop();
  if (planner == nullptr) {
    Die(absl::InvalidArgumentError(absl::StrCat(
        FLAGS_jpeg_config, ": the kernels section needs a region crop (random_resized_crop) as "
        "the first training transform")));
  }
  size_t next = 0;
  uint64_t sample = 0;
  auto batch = [&] {
    at::Tensor out = at::empty({batch_size, 3, 224, 224}, at::kFloat);
    for (int64_t i = 0; i < batch_size; ++i) {
      const Image& image = decoded.samples()[next++ % decoded.samples().size()].image;
      SampleRandom random(config.trainer().seed(), 0, sample++);
      const ImageRegion r = planner->PlanRegion(image.height, image.width, random);
      at::Tensor pixels =
          at::from_blob(const_cast<uint8_t*>(image.u8.data()), {image.height, image.width, 3},
                        at::kByte)
              .narrow(0, r.top, r.height)
              .narrow(1, r.left, r.width)
              .permute({2, 0, 1})
              .unsqueeze(0)
              .to(at::kFloat);
      at::Tensor resized =
          at::upsample_bilinear2d(pixels, {224, 224}, /*align_corners=*/false).round_().clamp_(0,
                                                                                             255);
      if (random.Bernoulli(0.5)) resized = resized.flip({3});
      out[i].copy_(((resized / 255 - mean) / deviation)[0]);
    }
  };
  rates.aten = StepsPerSecond(batch) * static_cast<double>(batch_size);
  at::set_num_threads(threads);
  return rates;
}

// ---- configs written for child runs ----

std::string WriteConfig(const std::string& name, const PipelineConfig& config) {
  const std::string path = FLAGS_work_dir + "/" + name;
  std::ofstream(path) << ConfigToText(config);
  return path;
}

// The options are an Any of the dataset plugin's type; its `root` field is set
// through reflection, so this tool needs no plugin header.
void SetImageFolderRoot(PluginConfig& dataset, const std::string& root) {
  const std::string& url = dataset.options().type_url();
  const std::string type = url.substr(url.rfind('/') + 1);
  const google::protobuf::Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  const google::protobuf::FieldDescriptor* field =
      descriptor ? descriptor->FindFieldByName("root") : nullptr;
  if (field == nullptr || field->type() != google::protobuf::FieldDescriptor::TYPE_STRING) {
    Die(absl::InvalidArgumentError(absl::StrCat(
        FLAGS_jpeg_config, ": train_data.dataset has no string option `root` to point at the "
        "JPEG corpus")));
  }
  std::unique_ptr<google::protobuf::Message> options(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
  dataset.options().UnpackTo(options.get());
  options->GetReflection()->SetString(options.get(), field, root);
  dataset.mutable_options()->PackFrom(*options);
}

// ---- the Python DDP reference ----

constexpr int kReferenceWarmupSteps = 3;
// The allocator `train` links (//third_party:tcmalloc), preloaded into the
// reference: under glibc malloc, page faults would dominate its steps.
constexpr char kTcmalloc[] = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

// A plugin's options as one line of text ("lr: 0.002 weight_decay: 0.05"):
// every field of the resolved config, through reflection, as above.
std::string OptionsText(const google::protobuf::Any& any) {
  const std::string type = any.type_url().substr(any.type_url().rfind('/') + 1);
  const google::protobuf::Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  if (descriptor == nullptr) return "";
  std::unique_ptr<google::protobuf::Message> options(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
  any.UnpackTo(options.get());
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string text;
  printer.PrintToString(*options, &text);
  return text;
}

// tools/bench_reference.py --ddp_steps with `ddp`'s model, batch per rank,
// optimizer, loss, memory format, precision and ddp options.
std::vector<std::string> DdpReferenceArgs(const PipelineConfig& ddp) {
  // As train decides them on this CPU.
  const ComputeFormat compute = OrDie(ChooseComputeFormat(
      ddp.trainer(), DescribeDevice(torch::Device(torch::kCPU)), MeasureCpuBf16Slowdown));
  TrainerConfig trainer = ddp.trainer();
  ApplyComputeFormat(compute, trainer);
  std::vector<std::string> args = {
      FLAGS_python, "tools/bench_reference.py", absl::StrCat("--ddp_steps=", FLAGS_ddp_steps),
      absl::StrCat("--ddp_warmup_steps=", kReferenceWarmupSteps),
      absl::StrCat("--batch_size=", ddp.train_data().batch_size()),
      absl::StrCat("--seed=", trainer.seed()), "--model=" + ddp.model().name(),
      "--model_options=" + OptionsText(ddp.model().options()),
      "--optimizer=" + ddp.optimizer().name(),
      "--optimizer_options=" + OptionsText(ddp.optimizer().options()),
      "--loss=" + ddp.loss().name(), "--loss_options=" + OptionsText(ddp.loss().options()),
      "--precision=" + TrainerConfig::Precision_Name(trainer.precision()),
      "--ddp_options=" + OptionsText(ddp.strategy().options())};
  // 0: from the data, which for Fashion-MNIST is the script's default.
  if (ddp.model().in_channels() > 0) {
    args.push_back(absl::StrCat("--in_channels=", ddp.model().in_channels()));
  }
  if (ddp.model().num_classes() > 0) {
    args.push_back(absl::StrCat("--num_classes=", ddp.model().num_classes()));
  }
  if (trainer.memory_format() == MemoryFormat::CHANNELS_LAST) args.push_back("--channels_last");
  return args;
}

// What the Python DDP reference leaves out of `config`'s training step.
std::string NotMirrored(const PipelineConfig& config) {
  const TrainerConfig& trainer = config.trainer();
  std::vector<std::string> left;
  if (trainer.ema().decay() > 0) left.push_back("ema");
  if (trainer.clip_grad().max_norm() > 0 || trainer.clip_grad().max_value() > 0) {
    left.push_back("clip_grad");
  }
  if (trainer.accumulate_steps() > 1) left.push_back("accumulate_steps");
  if (config.train_data().batch_transforms_size() > 0) left.push_back("batch_transforms");
  if (config.model().freeze_backbone()) left.push_back("freeze_backbone");
  return left.empty() ? "" : ", without the config's " + absl::StrJoin(left, ", ");
}

std::string EnsureCorpus() {
  if (!FLAGS_corpus.empty()) return FLAGS_corpus;
  const std::string root = FLAGS_work_dir + "/jpeg_corpus";
  // Beside the folder, not in it: every entry inside is a class.
  const std::string stamp = root + ".complete_" + std::to_string(FLAGS_corpus_images_per_class);
  if (!fs::exists(stamp)) {
    std::cerr << "bench: writing a JPEG corpus of " << 2 * FLAGS_corpus_images_per_class
              << " photo crops (500x375, quality 75) to " << root << "\n";
    JpegCorpusOptions options;
    options.output_dir = root;
    options.images_per_class = FLAGS_corpus_images_per_class;
    OrDie(MakeJpegCorpus(options));
    std::ofstream(stamp) << "";
  }
  return root;
}

using bench::Ratio;
using Table = bench::MarkdownTable;

// ---- models ----

struct ModelCase {
  std::string label;
  std::string config;  // a PluginConfig in text
};

std::vector<ModelCase> AllModels() {
  auto options = [](const std::string& name, const std::string& type, const std::string& fields) {
    return absl::StrCat("name: \"", name, "\" options { [type.googleapis.com/pipeline.", type,
                        "] { ", fields, " } }");
  };
  std::vector<ModelCase> cases = {
      {"alexnet", "name: \"alexnet\""},
  };
  for (int depth : {11, 13, 16}) {
    for (bool bn : {false, true}) {
      cases.push_back({absl::StrCat("vgg", depth, bn ? "_bn" : ""),
                       options("vgg", "VggOptions",
                               absl::StrCat("depth: ", depth, " batch_norm: ", bn ? "true" : "false"))});
    }
  }
  for (int depth : {18, 34, 50, 101}) {
    cases.push_back({absl::StrCat("resnet", depth),
                     options("resnet", "ResNetOptions", absl::StrCat("depth: ", depth))});
  }
  cases.push_back({"mobilenet_v1", "name: \"mobilenet_v1\""});
  cases.push_back({"mobilenet_v2", "name: \"mobilenet_v2\""});
  cases.push_back({"mobilenet_v3_small",
                   options("mobilenet_v3", "MobileNetV3Options", "variant: SMALL")});
  cases.push_back({"mobilenet_v3_large",
                   options("mobilenet_v3", "MobileNetV3Options", "variant: LARGE")});
  cases.push_back({"efficientnet_b0", "name: \"efficientnet\""});
  cases.push_back({"small_cnn", "name: \"small_cnn\""});
  return cases;
}

// ---- torch2 ----

// tools/bench_torch2.py in the Debian 13 root (PyTorch 2.x): its images/s,
// or nullopt with the reason on stderr.
std::optional<double> Torch2Rate(const std::string& repo, int threads, bool bf16, bool compile) {
  std::vector<std::string> argv = {
      repo + "/tools/debian13.sh", "env",
      "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "python3",
      repo + "/tools/bench_torch2.py", absl::StrCat("--batch_size=", FLAGS_batch_size),
      absl::StrCat("--threads=", threads), bf16 ? "--precision=BF16" : "--precision=FP32"};
  if (compile) argv.push_back("--compile");
  const ProcessResult python = RunProcess(argv);
  const std::optional<double> rate = JsonNumber(python.output, "images_per_sec", "images_per_sec");
  if (python.exit_code != 0 || !rate) {
    std::cerr << "bench: tools/bench_torch2.py failed:\n" << Tail(python.output) << "\n";
  }
  return rate;
}

// The runner's compute ceiling (LibTorch 1.13 here) against PyTorch 2.x's
// eager and compiled step, in float32 and in the precision AUTO picks on
// this CPU, alternating round by round so the machine's drift hits all.
void Torch2Rows(const PipelineConfig& jpeg, Table& table) {
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  const std::string repo = workspace != nullptr ? workspace : fs::current_path().string();
  const ProcessResult probe = RunProcess(
      {repo + "/tools/debian13.sh", "python3", "-c", "import torch, torchvision; print(torch.__version__)"});
  if (probe.exit_code != 0) {
    std::cerr << "bench: " << Tail(probe.output) << "\n";
    table.Add({"PyTorch 2.x (Debian 13 root)", "skipped: tools/debian13.sh could not run python3 "
               "with torch and torchvision (needs root and Debian's archive)", "-", "-"});
    return;
  }
  const std::string version(absl::StripAsciiWhitespace(probe.output.substr(
      probe.output.find_last_of('\n', probe.output.size() - 2) + 1)));
  const ComputeFormat autopick = OrDie(ChooseComputeFormat(
      [] { TrainerConfig t; t.set_precision(TrainerConfig::AUTO); return t; }(),
      DescribeDevice(torch::Device(torch::kCPU)), MeasureCpuBf16Slowdown));
  const bool auto_bf16 = autopick.precision == TrainerConfig::BF16_AUTOCAST;
  const int threads = jpeg.trainer().threads();
  struct Row {
    std::string label;
    std::function<std::optional<double>()> measure;
    std::vector<double> rates;  // one a round
  };
  std::vector<Row> rows;
  for (const bool bf16 : auto_bf16 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    const std::string precision = bf16 ? "AUTO = bf16 autocast + channels-last" : "float32";
    rows.push_back({absl::StrCat("runner (LibTorch ", kLibTorchVersion, "), ", precision),
                    [&jpeg, bf16] {
                      return std::optional(ComputeCeiling(jpeg, 224, 224, 3, 2, FLAGS_batch_size,
                                                          bf16, bf16)
                                               .images_per_sec);
                    }});
    for (const bool compile : {false, true}) {
      rows.push_back({absl::StrCat("PyTorch ", version, compile ? " torch.compile" : " eager", ", ",
                                   precision),
                      [repo, threads, bf16, compile] {
                        return Torch2Rate(repo, threads, bf16, compile);
                      }});
    }
  }
  for (int round = 0; round < FLAGS_torch2_rounds; ++round) {
    for (Row& row : rows) {
      if (const std::optional<double> rate = row.measure()) row.rates.push_back(*rate);
    }
  }
  // Each row against the runner's row of the same precision.
  double runner = 0;
  for (const Row& row : rows) {
    std::vector<std::string> each;
    for (const double rate : row.rates) each.push_back(absl::StrFormat("%.1f", rate));
    const double mean =
        row.rates.empty() ? 0
                          : std::accumulate(row.rates.begin(), row.rates.end(), 0.0) /
                                row.rates.size();
    if (absl::StartsWith(row.label, "runner")) runner = mean;
    table.Add({absl::StrFormat("%s, %d threads, mean of %d rounds (%s)", row.label, threads,
                               row.rates.size(), absl::StrJoin(each, ", ")),
               row.rates.empty() ? "failed" : absl::StrFormat("%.1f", mean),
               Ratio(mean, runner), "the runner's row above"});
  }
  if (!auto_bf16) {
    table.Add({"AUTO picks float32 on this CPU (" + autopick.reason + "): no bf16 rows", "-", "-",
               "-"});
  }
}

void ModelsSection() {
  std::set<std::string> only;
  for (absl::string_view label : absl::StrSplit(FLAGS_models, ',', absl::SkipEmpty())) {
    only.insert(std::string(label));
  }
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  std::cout << absl::StrFormat(
      "## Models at 224x224, 1000 classes (training: batch %d, SGD with momentum, %d threads)\n\n",
      FLAGS_models_batch_size, threads);
  Table table({"model", "parameters", "forward GMACs", "training images/s"});
  for (const ModelCase& c : AllModels()) {
    if (!only.empty() && !only.count(c.label)) continue;
    PluginConfig plugin;
    if (!google::protobuf::TextFormat::ParseFromString(c.config, &plugin)) {
      Die(absl::InternalError("bad model case " + c.label));
    }
    auto model = OrDie(Registry<Model>::Global().Create(plugin, {1000, 3}));
    int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    model->eval();
    int64_t macs = 0;
    {
      torch::NoGradGuard no_grad;
      const at::Tensor image = at::randn({1, 3, 224, 224});
      macs = CountMultiplyAdds([&] { model->forward(image); });
    }
    model->train();
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    const at::Tensor images = at::randn({FLAGS_models_batch_size, 3, 224, 224});
    const at::Tensor labels = at::randint(1000, {FLAGS_models_batch_size}, at::kLong);
    const double steps = StepsPerSecond(
        [&] {
          sgd.zero_grad();
          at::cross_entropy_loss(model->forward(images), labels).backward();
          sgd.step();
        },
        1, 2);
    table.Add({c.label, absl::StrFormat("%.2fM", parameters / 1e6),
               absl::StrFormat("%.3f", macs / 1e9),
               absl::StrFormat("%.1f", steps * FLAGS_models_batch_size)});
    std::cerr << "bench: " << c.label << " done\n";
  }
  table.Print(std::cout);
}

// ---- ddp ----

// One of the runner's ddp runs: its config and images/s (unset: failed).
struct DdpRun {
  PipelineConfig config;
  std::optional<double> images_per_sec;
};

// What ddp's options cost: the shipped ddp run again with each turned on,
// against the same run without.
void DdpOptionRows(
    Table& table, const DdpRun& plain,
    const std::function<std::optional<double>(const ProcessResult&, const std::string&)>& rate_of) {
  if (!plain.images_per_sec) return;
  const std::string train = fs::absolute("tools/train").string();
  for (const auto& [option, what] :
       {std::pair{"sync_batch_norm", "BatchNorm statistics all-gathered in every layer's "
                                     "forward, and their gradients all-reduced in backward"},
        std::pair{"shard_optimizer_state", "ZeRO-1: each rank steps half the optimizer state, "
                                           "then broadcasts its new weights"}}) {
    PipelineConfig run = plain.config;
    run.set_output_dir(absl::StrCat(FLAGS_work_dir, "/ddp_", option));
    const absl::Status set =
        ApplyOverride(absl::StrCat("strategy.options.", option, "=true"), DefaultOptionsOf, &run);
    if (!set.ok()) Die(set);
    const std::string label =
        absl::StrFormat("  ddp as above (%d each) + %s (%s)", run.train_data().batch_size(),
                        option, what);
    const std::optional<double> rate = rate_of(
        RunProcess({train, "--config=" + WriteConfig(absl::StrCat("ddp_", option, ".textproto"),
                                                     run)}),
        label);
    if (!rate) continue;
    table.Add({label, absl::StrFormat("%.1f", *rate), Ratio(*rate, *plain.images_per_sec),
               "the same ddp run without it"});
  }
}

// PyTorch's DistributedDataParallel (tools/bench_reference.py --ddp_steps) on
// each of `runs`' settings: against 2 x single process, and the runner's ddp
// against it.
void PytorchDdpRows(Table& table, const std::vector<DdpRun>& runs,
                    std::optional<double> single_rate) {
  const std::string name = "PyTorch DDP reference (tools/bench_reference.py --ddp_steps)";
  ProcessResult probe =
      RunProcess({FLAGS_python, "-c", "import torch, torchvision; print(torch.__version__)"});
  if (probe.exit_code != 0) {
    table.Add({name, "skipped: " + FLAGS_python + " has no torch or torchvision; apt-get install "
               "python3-torch python3-torchvision", "-", "-"});
    return;
  }
  const std::string dataset = runs.front().config.train_data().dataset().name();
  if (dataset != "fashion_mnist") {
    table.Add({name, "skipped: it trains on Fashion-MNIST tensors, the config on " + dataset,
               "-", "-"});
    return;
  }
  for (const PluginConfig& transform : runs.front().config.train_data().transforms()) {
    if (transform.name() == "resize" || transform.name() == "random_resized_crop") {
      table.Add({name, "skipped: it trains on 28x28 tensors, and the config's " +
                           transform.name() + " changes the size", "-", "-"});
      return;
    }
  }
  const absl::string_view output = absl::StripAsciiWhitespace(probe.output);
  const std::string version(output.substr(output.rfind('\n') + 1));
  const bool tcmalloc = fs::exists(kTcmalloc);
  for (const DdpRun& run : runs) {
    const int batch = run.config.train_data().batch_size();
    const std::string label = absl::StrFormat(
        "PyTorch DDP (torch %s, gloo), 2 processes x 1 thread, %d steps of %d each after %d "
        "untimed; in-memory tensors, no loader; %s%s",
        version, FLAGS_ddp_steps, batch, kReferenceWarmupSteps,
        tcmalloc ? "tcmalloc preloaded, as train links it" : "glibc malloc",
        NotMirrored(run.config));
    ProcessResult python = RunProcess(
        DdpReferenceArgs(run.config),
        tcmalloc ? std::vector<std::string>{absl::StrCat("LD_PRELOAD=", kTcmalloc)}
                 : std::vector<std::string>{});
    const auto rate = JsonNumber(python.output, "ddp_images_per_sec", "ddp_images_per_sec");
    if (python.exit_code != 0 || !rate) {
      std::cerr << "bench: tools/bench_reference.py --ddp_steps failed:\n"
                << Tail(python.output) << "\n";
      table.Add({label, "failed", "-", "-"});
      continue;
    }
    table.Add({label, absl::StrFormat("%.1f", *rate),
               single_rate ? Ratio(*rate, 2 * *single_rate) : "-", "2 x single process"});
    if (run.images_per_sec) {
      table.Add({absl::StrFormat("  runner's ddp against PyTorch's DDP, %d per rank", batch), "-",
                 Ratio(*run.images_per_sec, *rate), "PyTorch DDP"});
    }
  }
}

// ---- transforms ----

// Each augmentation alone on 224x224 RGB images, 1 thread, against the same
// torchvision transform on PIL images (tools/bench_reference.py
// --transforms): the runner's spec, torchvision's call, as the row says.
struct TransformCase {
  const char* label;  // also bench_reference.py's key
  const char* spec;   // a transforms { } body
};
constexpr TransformCase kTransformCases[] = {
    {"color_jitter", R"pb(name: "color_jitter" options { [type.googleapis.com/pipeline.ColorJitterOptions] { brightness: 0.4 contrast: 0.4 saturation: 0.4 hue: 0.1 } })pb"},
    {"random_erasing", R"pb(name: "random_erasing" options { [type.googleapis.com/pipeline.RandomErasingOptions] { p: 1 } })pb"},
    {"trivial_augment_wide", R"pb(name: "trivial_augment_wide")pb"},
    {"rand_augment", R"pb(name: "rand_augment")pb"},
    {"random_rotation", R"pb(name: "random_rotation" options { [type.googleapis.com/pipeline.RandomRotationOptions] { degrees: 30 } })pb"},
    {"random_affine", R"pb(name: "random_affine" options { [type.googleapis.com/pipeline.RandomAffineOptions] { degrees: 10 translate: [0.1, 0.1] scale: [0.9, 1.1] shear: 5 } })pb"},
    {"random_crop_padding_4", R"pb(name: "random_crop" options { [type.googleapis.com/pipeline.RandomCropOptions] { size: 224 padding: 4 } })pb"},
    {"gaussian_blur", R"pb(name: "gaussian_blur" options { [type.googleapis.com/pipeline.GaussianBlurOptions] { kernel_size: 23 sigma: [0.1, 2.0] } })pb"},
};
constexpr char kTorchvisionCalls[] =
    "ColorJitter(0.4, 0.4, 0.4, 0.1) | RandomErasing(p=1) on a uint8 tensor | "
    "TrivialAugmentWide() | RandAugment() | RandomRotation(30) | "
    "RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5) | RandomCrop(224, padding=4) | "
    "GaussianBlur(23, (0.1, 2.0))";

// The transform a transforms { } body describes.
std::unique_ptr<Transform> TransformOf(const std::string& spec_text) {
  PluginConfig spec;
  if (absl::Status parsed = ParseTextProto(spec_text, "transform", &spec); !parsed.ok()) {
    Die(parsed);
  }
  return OrDie(Registry<Transform>::Global().Create(spec, {}));
}

// The first `count` corpus images, resized to 224x224 by the runner's
// resize transform.
std::vector<Image> Images224(const PipelineConfig& config, int count) {
  const DecodedInMemory decoded(*TrainDataset(config), count);
  auto resizer = TransformOf(
      R"pb(name: "resize" options { [type.googleapis.com/pipeline.ResizeOptions] { height: 224 width: 224 } })pb");
  std::vector<Image> images;
  for (const Sample& sample : decoded.samples()) {
    Image image = sample.image;
    SampleRandom random(0, 0, images.size());
    if (absl::Status status = resizer->Apply(image, random); !status.ok()) Die(status);
    images.push_back(std::move(image));
  }
  return images;
}

// Images per second of `spec` applied to copies of `images`, 1 thread (the
// copy, 150 KB, is part of each).
double TransformRate(const std::string& spec_text, const std::vector<Image>& images) {
  auto transform = TransformOf(spec_text);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  uint64_t sample = 0;
  constexpr int kBatch = 32;
  const double rate = StepsPerSecond([&] {
    for (int i = 0; i < kBatch; ++i) {
      Image image = images[sample % images.size()];
      SampleRandom random(7, 0, sample++);
      if (absl::Status status = transform->Apply(image, random); !status.ok()) Die(status);
    }
  }) * kBatch;
  at::set_num_threads(threads);
  return rate;
}

// torchvision's rate for each case (bench_reference.py --transforms), or
// nullopt with the reason printed.
std::map<std::string, double> TorchvisionTransformRates(const std::string& corpus) {
  std::map<std::string, double> rates;
  ProcessResult python = RunProcess({FLAGS_python, "tools/bench_reference.py",
                                     "--transforms", "--jpeg_root=" + corpus});
  for (const TransformCase& c : kTransformCases) {
    if (auto rate = JsonNumber(python.output, "transform_images_per_sec", c.label)) {
      rates[c.label] = *rate;
    }
  }
  if (auto rate = JsonNumber(python.output, "transform_images_per_sec",
                             "jpeg_rand_augment_images_per_sec")) {
    rates["jpeg_rand_augment"] = *rate;
  }
  if (python.exit_code != 0 || rates.empty()) {
    std::cerr << "bench: tools/bench_reference.py --transforms failed:\n"
              << Tail(python.output) << "\n";
  }
  return rates;
}

void TransformRows(Table& table, const PipelineConfig& jpeg, const std::string& corpus) {
  const std::vector<Image> images = Images224(jpeg, 64);
  const std::map<std::string, double> torchvision = TorchvisionTransformRates(corpus);
  for (const TransformCase& c : kTransformCases) {
    const double rate = TransformRate(c.spec, images);
    const auto reference = torchvision.find(c.label);
    table.Add({absl::StrCat("transform alone, 1 thread, 224x224 RGB: ", c.label),
               absl::StrFormat("%.1f", rate),
               reference == torchvision.end() ? "-" : Ratio(rate, reference->second),
               reference == torchvision.end()
                   ? "torchvision: not measured"
                   : absl::StrFormat("torchvision 0.14 on PIL (%.1f/s)", reference->second)});
  }
  table.Add({absl::StrCat("  (torchvision's, in that order: ", kTorchvisionCalls, ")"), "-", "-",
             "-"});
  // The whole JPEG training pipeline with RandAugment in the place of
  // trivial_augment_wide, against the same in PIL + torchvision.
  PipelineConfig rand_augment = jpeg;
  bool replaced = false;
  for (PluginConfig& transform : *rand_augment.mutable_train_data()->mutable_transforms()) {
    if (transform.name() != "trivial_augment_wide") continue;
    transform.set_name("rand_augment");
    transform.clear_options();
    replaced = true;
  }
  const std::string label = absl::StrCat("data pipeline, 1 thread: JPEG 500x375 -> ",
                                         TransformNames(rand_augment));
  if (!replaced) {
    table.Add({label, "skipped: the JPEG config has no trivial_augment_wide to replace", "-", "-"});
    return;
  }
  const double rate = DataPipelineRate(rand_augment).images_per_sec;
  const auto reference = torchvision.find("jpeg_rand_augment");
  table.Add({label, absl::StrFormat("%.1f", rate),
             reference == torchvision.end() ? "-" : Ratio(rate, reference->second),
             reference == torchvision.end()
                 ? "PIL + torchvision: not measured"
                 : absl::StrFormat("PIL + torchvision, RandAugment() (%.1f/s)", reference->second)});
}

// ---- the performance table ----

struct Allocator {
  std::string name;
  std::vector<std::string> env;
};

int Main() {
  std::set<std::string> sections;
  for (absl::string_view s : absl::StrSplit(FLAGS_sections, ',', absl::SkipEmpty())) {
    sections.insert(std::string(s));
  }
  for (const std::string& s : sections) {
    static const std::set<std::string> known = {"compute", "allocator",  "data", "transforms",
                                                "kernels", "python",     "end_to_end", "ddp",
                                                "models", "torch2"};
    if (!known.count(s)) {
      Die(absl::InvalidArgumentError(absl::StrCat(
          "--sections: unknown section \"", s,
          "\"; choose from compute, allocator, data, transforms, kernels, python, end_to_end, "
          "ddp, models, torch2")));
    }
  }
  fs::create_directories(FLAGS_work_dir);
  if (sections.count("models")) ModelsSection();
  sections.erase("models");
  if (sections.empty()) return 0;

  if (FLAGS_compute_child) {
    // The model and optimizer of the config only; no data is read.
    const PipelineConfig config = OrDie(ResolveConfig(OrDie(LoadConfigFile(FLAGS_jpeg_config))));
    std::cout << ComputeCeiling(config, 224, 224, 3, /*classes=*/2, FLAGS_batch_size,
                                FLAGS_compute_channels_last, FLAGS_compute_bf16)
                     .images_per_sec
              << "\n";
    return 0;
  }
  const std::string corpus = EnsureCorpus();
  PipelineConfig jpeg = OrDie(LoadConfigFile(FLAGS_jpeg_config));
  SetImageFolderRoot(*jpeg.mutable_train_data()->mutable_dataset(), corpus);
  jpeg.clear_validation_data();
  jpeg.mutable_trainer()->set_batch_size(FLAGS_batch_size);
  jpeg.mutable_train_data()->set_batch_size(FLAGS_batch_size);
  jpeg = OrDie(ResolveConfig(jpeg));
  const int64_t classes = 2;

  const CpuFeatures& cpu = HostCpuFeatures();
  const Bf16Support bf16 = CpuBf16Support(cpu);
  std::cout << absl::StrFormat(
      "## Performance: %s at 224x224 on %s, batch %d, %d cores\n\nCPU: %s with %s; oneDNN "
      "cap %s; bf16 %s (%s)\n\n",
      jpeg.model().name(), corpus, FLAGS_batch_size, std::thread::hardware_concurrency(),
      CpuDescription(cpu), CpuIsaSummary(cpu),
      cpu.onednn_max_isa.empty() ? "none" : cpu.onednn_max_isa,
      bf16.native ? "native" : "emulated", bf16.detail);
  Table table({"measurement", "images/s", "ratio", "to"});
  double ceiling = 0;
  if (sections.count("compute") || sections.count("end_to_end")) {
    const ComputeResult compute = ComputeCeiling(jpeg, 224, 224, 3, classes, FLAGS_batch_size);
    ceiling = compute.images_per_sec;
    table.Add({absl::StrFormat("compute ceiling: forward+backward+%s step, in-memory batch, %d "
                               "threads",
                               jpeg.optimizer().name(), compute.threads),
               absl::StrFormat("%.1f", ceiling), "1.00", "compute ceiling"});
    if (sections.count("compute")) {
      for (const auto& [channels_last, with_bf16] :
           {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
        const std::string label = absl::StrCat(
            "compute, ", channels_last ? "memory_format: CHANNELS_LAST" : "",
            channels_last && with_bf16 ? " + " : "",
            with_bf16 ? "precision: BF16_AUTOCAST" : "");
        if (with_bf16 && !bf16.native) {
          // Emulated bf16 would take the bench hours (over 100x float32).
          table.Add({label, "skipped: this CPU has no native bf16", "", ""});
          continue;
        }
        const double rate = ComputeCeiling(jpeg, 224, 224, 3, classes, FLAGS_batch_size,
                                           channels_last, with_bf16)
                                .images_per_sec;
        table.Add({label, absl::StrFormat("%.1f", rate), Ratio(rate, ceiling), "compute ceiling"});
      }
    }
  }
  if (sections.count("allocator")) {
    const std::vector<Allocator> allocators = {
        {"glibc malloc (default settings)", {}},
        {"glibc malloc, mallopt: no mmap, no trim (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=-1)",
         {"MALLOC_MMAP_MAX_=0", "MALLOC_TRIM_THRESHOLD_=18446744073709551615"}},
        {"tcmalloc (libtcmalloc_minimal.so.4, linked into train)",
         {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"}},
        {"jemalloc (libjemalloc.so.2)", {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}},
        // ATen picks AVX2 kernels on this CPU unless told otherwise.
        {"tcmalloc + ATEN_CPU_CAPABILITY=avx512",
         {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
          "ATEN_CPU_CAPABILITY=avx512"}},
    };
    double glibc = 0;
    for (const Allocator& allocator : allocators) {
      const std::string preload =
          allocator.env.empty() || allocator.env[0].rfind("LD_PRELOAD=", 0) != 0
              ? ""
              : allocator.env[0].substr(11);
      if (!preload.empty() && !fs::exists(preload)) {
        table.Add({"compute ceiling, " + allocator.name, "not installed", "-", "-"});
        continue;
      }
      ProcessResult child = RunProcess(
          {fs::absolute("tools/bench_any_allocator").string(), "--compute_child", "--jpeg_config=" + FLAGS_jpeg_config,
           "--corpus=" + corpus, "--batch_size=" + std::to_string(FLAGS_batch_size),
           absl::StrCat("--min_seconds=", FLAGS_min_seconds), "--work_dir=" + FLAGS_work_dir},
          allocator.env);
      double rate = 0;
      if (child.exit_code != 0 || !absl::SimpleAtod(absl::StripAsciiWhitespace(
                                                        child.output.substr(
                                                            child.output.rfind('\n', child.output.size() - 2) + 1)),
                                                    &rate)) {
        std::cerr << "bench: allocator child failed:\n" << Tail(child.output) << "\n";
        table.Add({"compute ceiling, " + allocator.name, "failed", "-", "-"});
        continue;
      }
      if (glibc == 0) glibc = rate;
      table.Add({absl::StrFormat("compute ceiling, %s (peak RSS %.0f MB)", allocator.name,
                                 child.peak_rss_mb),
                 absl::StrFormat("%.1f", rate), Ratio(rate, glibc), "glibc malloc"});
    }
  }
  std::optional<DataResult> jpeg_data, fmnist_data;
  PipelineConfig fmnist = LoadResolved(FLAGS_fashion_mnist_config);
  if (sections.count("data")) {
    jpeg_data = DataPipelineRate(jpeg);
    table.Add({absl::StrFormat("data pipeline, 1 thread: JPEG 500x375 -> %s (%s)",
                               TransformNames(jpeg), jpeg_data->sample_shape),
               absl::StrFormat("%.1f", jpeg_data->images_per_sec),
               Ratio(jpeg_data->images_per_sec, ceiling), "compute ceiling"});
    // Every image of the corpus kept (0.54 MiB each) after the
    // untimed first epoch.
    PipelineConfig kept = jpeg;
    const absl::Status set = ApplyOverride(
        "train_data.dataset.options.cache_decoded_mb=4096",
        [](const std::string&, const std::string&) { return nullptr; }, &kept);
    if (!set.ok()) Die(set);
    const DataResult kept_data = LoaderRate(kept, *TrainDataset(kept), /*warm_whole_epoch=*/true);
    table.Add({"data pipeline, 1 thread: the same after the first epoch with image_folder "
               "cache_decoded_mb (every image kept decoded)",
               absl::StrFormat("%.1f", kept_data.images_per_sec),
               Ratio(kept_data.images_per_sec, jpeg_data->images_per_sec),
               "JPEG data pipeline"});
    fmnist_data = DataPipelineRate(fmnist);
    table.Add({absl::StrFormat("data pipeline, 1 thread: Fashion-MNIST %s (in memory) + normalize",
                               fmnist_data->sample_shape),
               absl::StrFormat("%.1f", fmnist_data->images_per_sec), "-", "-"});
  }
  if (sections.count("transforms")) TransformRows(table, jpeg, corpus);
  if (sections.count("kernels")) {
    const PostDecodeRates rates = PostDecodeRate(jpeg);
    table.Add({"after decoding, 1 thread: random_resized_crop 224 + flip + normalize into the "
               "batch, runner's transforms and loader (image_ops)",
               absl::StrFormat("%.1f", rates.image_ops), Ratio(rates.image_ops, rates.aten),
               "ATen kernels"});
    table.Add({"after decoding, 1 thread: the same with ATen's upsample_bilinear2d, flip and "
               "tensor arithmetic",
               absl::StrFormat("%.1f", rates.aten), "1.00", "ATen kernels"});
  }
  if (sections.count("python")) {
    const std::string script = "tools/bench_reference.py";
    ProcessResult probe = RunProcess({FLAGS_python, "-c", "import torchvision, PIL"});
    if (probe.exit_code != 0) {
      table.Add({"Python reference (PIL + torchvision)", "skipped: " + FLAGS_python +
                 " has no torchvision; apt-get install python3-torchvision", "-", "-"});
    } else {
      ProcessResult python = RunProcess({FLAGS_python, script, "--jpeg_root=" + corpus});
      const auto jpeg_rate = JsonNumber(python.output, "jpeg_images_per_sec", "jpeg_images_per_sec");
      const auto fmnist_rate =
          JsonNumber(python.output, "jpeg_images_per_sec", "fashion_mnist_images_per_sec");
      if (python.exit_code != 0 || !jpeg_rate || !fmnist_rate) {
        std::cerr << "bench: " << script << " failed:\n" << Tail(python.output) << "\n";
        table.Add({"Python reference (PIL + torchvision)", "failed", "-", "-"});
      } else {
        table.Add({"Python reference, 1 thread: JPEG, PIL + torchvision, the same transforms "
                   "(tools/bench_reference.py)",
                   absl::StrFormat("%.1f", *jpeg_rate),
                   jpeg_data ? Ratio(jpeg_data->images_per_sec, *jpeg_rate) : "-",
                   "C++ pipeline / Python"});
        table.Add({"Python reference, 1 thread: Fashion-MNIST, PIL Image + ToTensor + Normalize",
                   absl::StrFormat("%.1f", *fmnist_rate),
                   fmnist_data ? Ratio(fmnist_data->images_per_sec, *fmnist_rate) : "-",
                   "C++ pipeline / Python"});
      }
    }
  }
  const std::string train = fs::absolute("tools/train").string();
  if (sections.count("end_to_end")) {
    // This machine's speed drifts over minutes, so each training run is
    // set against a compute ceiling measured just before it, and the
    // median of the rounds' ratios is reported.
    PipelineConfig run = jpeg;
    run.mutable_trainer()->set_max_steps(FLAGS_end_to_end_steps);
    run.mutable_trainer()->set_epochs(1000);
    run.mutable_checkpoint()->set_every_epochs(0);
    run.set_output_dir(FLAGS_work_dir + "/end_to_end");
    const std::string config = WriteConfig("end_to_end.textproto", run);
    std::vector<std::pair<double, double>> rounds;  // {ratio, images/s}
    double peak_rss_mb = 0;
    for (int round = 0; round < FLAGS_end_to_end_rounds; ++round) {
      const double before =
          ComputeCeiling(jpeg, 224, 224, 3, classes, FLAGS_batch_size).images_per_sec;
      ProcessResult child = RunProcess({train, "--config=" + config});
      const auto rate = JsonNumber(child.output, "\"summary\"", "images_per_sec");
      if (child.exit_code != 0 || !rate) {
        std::cerr << "bench: train failed:\n" << Tail(child.output) << "\n";
        rounds.clear();
        break;
      }
      rounds.push_back({*rate / before, *rate});
      peak_rss_mb = std::max(peak_rss_mb, child.peak_rss_mb);
    }
    if (rounds.empty()) {
      table.Add({"end-to-end training", "failed", "-", "-"});
    } else {
      std::vector<std::pair<double, double>> sorted = rounds;
      std::sort(sorted.begin(), sorted.end());
      const std::pair<double, double> median = sorted[sorted.size() / 2];
      std::vector<std::string> each;
      for (const auto& [ratio, rate] : rounds) each.push_back(absl::StrFormat("%.2f", ratio));
      table.Add({absl::StrFormat("end-to-end: train on the JPEG folder, %d steps, median of %d "
                                 "rounds (ratios %s) (peak RSS %.0f MB)",
                                 FLAGS_end_to_end_steps, rounds.size(),
                                 absl::StrJoin(each, ", "), peak_rss_mb),
                 absl::StrFormat("%.1f", median.second), absl::StrFormat("%.2f", median.first),
                 "compute ceiling just before each run"});
    }
  }
  if (sections.count("ddp")) {
    // 1 process, then 2 independent processes at once (the same run twice,
    // no communication: what two processes get from this machine's cores,
    // caches and memory, so the most 2 ddp ranks could reach), then ddp.
    auto config_for = [&](bool ddp, const std::string& output) {
      PipelineConfig run = LoadResolved(ddp ? FLAGS_ddp_config : FLAGS_fashion_mnist_config);
      run.clear_validation_data();
      run.mutable_trainer()->set_threads(1);
      run.mutable_trainer()->set_max_steps(FLAGS_ddp_steps);
      run.mutable_checkpoint()->set_every_epochs(0);
      run.set_output_dir(FLAGS_work_dir + "/" + output);
      return run;
    };
    auto rate_of = [&](const ProcessResult& child, const std::string& label) {
      std::optional<double> rate = JsonNumber(child.output, "\"summary\"", "images_per_sec");
      if (child.exit_code != 0 || !rate) {
        std::cerr << "bench: train failed:\n" << Tail(child.output) << "\n";
        table.Add({label, "failed", "-", "-"});
        return std::optional<double>();
      }
      return rate;
    };
    const PipelineConfig single = config_for(false, "single");
    const std::string single_label =
        absl::StrFormat("%s, 1 process x 1 thread, %d steps of %d", single.model().name(),
                        FLAGS_ddp_steps, single.train_data().batch_size());
    const std::optional<double> single_rate = rate_of(
        RunProcess({train, "--config=" + WriteConfig("single.textproto", single)}), single_label);
    if (single_rate) table.Add({single_label, absl::StrFormat("%.1f", *single_rate), "-", "-"});

    std::vector<std::unique_ptr<Subprocess>> children;
    std::vector<std::string> logs;
    for (int i = 0; i < 2; ++i) {
      const std::string name = absl::StrCat("independent", i);
      logs.push_back(FLAGS_work_dir + "/" + name + "_output.txt");
      children.push_back(StartProcess(
          {train, "--config=" + WriteConfig(name + ".textproto", config_for(false, name))}, {},
          logs.back()));
    }
    std::optional<double> independent_rate = 0.0;
    const std::string independent_label =
        "the same, 2 independent processes at once (no communication)";
    for (int i = 0; i < 2; ++i) {
      const std::optional<double> rate = rate_of(WaitProcess(std::move(children[i]), logs[i]), independent_label);
      independent_rate = rate && independent_rate ? std::optional(*independent_rate + *rate)
                                                   : std::nullopt;
    }
    if (independent_rate && single_rate) {
      table.Add({independent_label + ", total", absl::StrFormat("%.1f", *independent_rate),
                 Ratio(*independent_rate, 2 * *single_rate), "2 x single process"});
    }

    // The shipped ddp config splits the single run's batch over the ranks
    // (the same global batch, so the same training); the second run keeps
    // the single run's batch on each rank, as scaling is usually measured.
    std::vector<DdpRun> ddp_runs;
    for (const bool same_per_rank : {false, true}) {
      PipelineConfig ddp = config_for(true, same_per_rank ? "ddp_per_rank" : "ddp");
      if (same_per_rank) ddp.mutable_train_data()->set_batch_size(single.train_data().batch_size());
      const std::string ddp_label = absl::StrFormat(
          "ddp (gloo), 2 processes x 1 thread, %d steps of %d each%s", FLAGS_ddp_steps,
          ddp.train_data().batch_size(),
          same_per_rank ? " (the single run's batch on each rank)" : "");
      const std::optional<double> ddp_rate = rate_of(
          RunProcess({train, "--config=" + WriteConfig("ddp.textproto", ddp)}), ddp_label);
      ddp_runs.push_back({ddp, ddp_rate});
      if (!ddp_rate || !single_rate) continue;
      table.Add({ddp_label, absl::StrFormat("%.1f", *ddp_rate),
                 Ratio(*ddp_rate, 2 * *single_rate), "2 x single process"});
      if (independent_rate) {
        table.Add({"  the same against the 2 independent processes", "-",
                   Ratio(*ddp_rate, *independent_rate), "2 independent processes"});
      }
    }
    DdpOptionRows(table, ddp_runs.front(), rate_of);
    PytorchDdpRows(table, ddp_runs, single_rate);
  }
  if (sections.count("torch2")) Torch2Rows(jpeg, table);
  table.Print(std::cout);
  return 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::SetUsageMessage("bazel run //tools:bench [-- --sections=...]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return pipeline::Main();
}
