#include "pipeline/config/resolve.h"

#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/interfaces/metric.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/interfaces/schedule.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/weights/build_model.h"

namespace pipeline {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Checks one plugin slot (a PluginConfig, ModelConfig or OptimizerConfig) and rewrites its
// options with every default filled.
template <typename Interface, typename Config>
void ResolvePlugin(const std::string& path, Config* plugin, std::vector<std::string>& errors) {
  auto options = Registry<Interface>::Global().ResolveOptions(*plugin);
  if (!options.ok()) {
    errors.push_back(absl::StrCat(path, ".", options.status().message()));
    return;
  }
  FillDefaults(options->get());
  plugin->mutable_options()->PackFrom(**options);
}

// A slot the config leaves empty gets the plugin that declared itself its
// default (PIPELINE_DEFAULT_PLUGIN) where it registers.
template <typename Interface, typename Config>
void NameDefault(const std::string& slot, Config* plugin, std::vector<std::string>& errors) {
  if (plugin->has_name()) return;
  const std::string name = Registry<Interface>::Global().DefaultFor(slot);
  if (name.empty()) {
    errors.push_back(absl::StrCat(slot, ": none given, and no linked ",
                                  PluginKind<Interface>::kName,
                                  " is the default; choose one of: ",
                                  absl::StrJoin(Registry<Interface>::Global().Names(), ", ")));
    return;
  }
  plugin->set_name(name);
}

void ResolveData(const std::string& path, bool training, const TrainerConfig& trainer,
                 DataConfig* data, std::vector<std::string>& errors) {
  if (!data->has_dataset()) {
    errors.push_back(absl::StrCat(path, ".dataset: no dataset given; choose one of: ",
                                  absl::StrJoin(Registry<Dataset>::Global().Names(), ", ")));
  } else {
    ResolvePlugin<Dataset>(path + ".dataset", data->mutable_dataset(), errors);
  }
  for (int i = 0; i < data->transforms_size(); ++i) {
    ResolvePlugin<Transform>(absl::StrCat(path, ".transforms[", i, "]"),
                             data->mutable_transforms(i), errors);
  }
  for (int i = 0; i < data->batch_transforms_size(); ++i) {
    ResolvePlugin<BatchTransform>(absl::StrCat(path, ".batch_transforms[", i, "]"),
                                  data->mutable_batch_transforms(i), errors);
  }
  if (!training && data->batch_transforms_size() > 0) {
    errors.push_back(absl::StrCat(path, ".batch_transforms: \"",
                                  data->batch_transforms(0).name(),
                                  "\" on validation data; validation is never mixed: move it to "
                                  "train_data.batch_transforms"));
  }
  // Where no sampler is given, the defaults shuffle what is trained on and
  // keep the order of what is measured.
  NameDefault<Sampler>(path + ".sampler", data->mutable_sampler(), errors);
  ResolvePlugin<Sampler>(path + ".sampler", data->mutable_sampler(), errors);
  if (data->batch_size() == 0) data->set_batch_size(trainer.batch_size());
  if (data->batch_size() < 0) {
    errors.push_back(absl::StrCat(path, ".batch_size: ", data->batch_size(),
                                  "; must be at least 1 (0 = trainer.batch_size)"));
  }
  if (!data->has_drop_last()) data->set_drop_last(training);
  if (data->num_workers() < 0) {
    errors.push_back(absl::StrCat(path, ".num_workers: ", data->num_workers(),
                                  "; must be >= 0 (0 = automatic)"));
  }
  if (data->prefetch_batches() < 1) {
    errors.push_back(
        absl::StrCat(path, ".prefetch_batches: ", data->prefetch_batches(), "; must be >= 1"));
  }
}

// Clipping, EMA and early stopping: each out-of-range value names its
// field and the range.
void CheckRecipeOptions(const TrainerConfig& trainer, std::vector<std::string>& errors) {
  auto require = [&](bool ok, const char* field, double value, const char* range) {
    if (!ok) errors.push_back(absl::StrCat("trainer.", field, ": ", value, "; must be ", range));
  };
  const GradientClippingConfig& clip = trainer.clip_grad();
  require(clip.max_norm() >= 0, "clip_grad.max_norm", clip.max_norm(), ">= 0 (0 = off)");
  require(clip.norm_type() >= 0, "clip_grad.norm_type", clip.norm_type(),
          ">= 0 (2 = euclidean, 0 = the largest absolute value)");
  require(clip.max_value() >= 0, "clip_grad.max_value", clip.max_value(), ">= 0 (0 = off)");
  const EmaConfig& ema = trainer.ema();
  require(ema.decay() >= 0 && ema.decay() < 1, "ema.decay", ema.decay(),
          "in [0, 1) (0 = off; typical 0.9998)");
  require(ema.warmup_gamma() > 0, "ema.warmup_gamma", ema.warmup_gamma(), "> 0 (default 1)");
  require(ema.warmup_power() > 0, "ema.warmup_power", ema.warmup_power(),
          "> 0 (default 2/3)");
  require(ema.every_steps() >= 1, "ema.every_steps", ema.every_steps(), "at least 1");
  const EarlyStoppingConfig& early = trainer.early_stopping();
  require(early.patience() >= 0, "early_stopping.patience", early.patience(),
          ">= 0 (0 = never stop early)");
  require(early.min_delta() >= 0, "early_stopping.min_delta", early.min_delta(), ">= 0");
}

// The values of optimizer.param_groups, and layer_decay against what the
// model plugin declares; what depends on the built model (a pattern that
// matches nothing) is checked when the groups are formed
// (pipeline/trainer/parameter_groups.h).
void CheckParamGroups(const ParamGroupsConfig& groups, const std::string& model,
                      std::vector<std::string>& errors) {
  auto non_negative = [&](bool has, double value, const char* field) {
    if (has && !(value >= 0)) {
      errors.push_back(absl::StrCat("optimizer.param_groups.", field, ": ", value,
                                    "; must be >= 0 (leave it out to use the optimizer's)"));
    }
  };
  non_negative(groups.has_bias_weight_decay(), groups.bias_weight_decay(), "bias_weight_decay");
  non_negative(groups.has_embedding_weight_decay(), groups.embedding_weight_decay(),
               "embedding_weight_decay");
  non_negative(groups.has_norm_weight_decay(), groups.norm_weight_decay(), "norm_weight_decay");
  for (int i = 0; i < groups.lr_scales_size(); ++i) {
    const LearningRateScale& scale = groups.lr_scales(i);
    const std::string field = absl::StrCat("optimizer.param_groups.lr_scales[", i, "]");
    if (scale.pattern().empty()) {
      errors.push_back(absl::StrCat(field, ".pattern: empty; give a glob over parameter names, "
                                           "e.g. \"fc.*\""));
    }
    if (!(scale.lr_scale() > 0)) {
      errors.push_back(absl::StrCat(field, ".lr_scale: ", scale.lr_scale(), "; must be > 0"));
    }
  }
  if (!(groups.layer_decay() >= 0 && groups.layer_decay() <= 1)) {
    errors.push_back(absl::StrCat("optimizer.param_groups.layer_decay: ", groups.layer_decay(),
                                  "; must be in (0, 1] (0 = off)"));
  } else if (groups.layer_decay() > 0 && Registry<Model>::Global().DefaultOptions(model) &&
             !Registry<Model>::Global().TraitsOf(model).has_depth_order) {
    errors.push_back(absl::StrCat("optimizer.param_groups.layer_decay: ", groups.layer_decay(),
                                  "; model \"", model,
                                  "\" has no depth order for layer-wise decay; the models that "
                                  "have one: ",
                                  absl::StrJoin(ModelsWithDepthOrder(), ", "),
                                  " (or leave layer_decay out)"));
  }
}

void CheckTrainer(const TrainerConfig& trainer, std::vector<std::string>& errors) {
  auto at_least = [&](const char* field, int64_t value, int64_t minimum) {
    if (value < minimum) {
      errors.push_back(absl::StrCat("trainer.", field, ": ", value, "; must be at least ", minimum));
    }
  };
  at_least("epochs", trainer.epochs(), 1);
  at_least("batch_size", trainer.batch_size(), 1);
  at_least("threads", trainer.threads(), 0);
  at_least("max_steps", trainer.max_steps(), 0);
  at_least("log_interval", trainer.log_interval(), 1);
  at_least("validate_every_epochs", trainer.validate_every_epochs(), 1);
  at_least("max_validation_batches", trainer.max_validation_batches(), 0);
  at_least("accumulate_steps", trainer.accumulate_steps(), 1);
  at_least("max_consecutive_skipped_steps", trainer.max_consecutive_skipped_steps(), 0);
  if (trainer.has_label_smoothing()) {
    errors.push_back(absl::StrCat(
        "trainer.label_smoothing: moved to the loss; write loss { name: \"cross_entropy\" "
        "options { label_smoothing: ", trainer.label_smoothing(), " } } instead"));
  }
  if (trainer.has_channels_last()) {
    errors.push_back(absl::StrCat(
        "trainer.channels_last: moved; write trainer { memory_format: ",
        trainer.channels_last() ? "CHANNELS_LAST" : "CONTIGUOUS",
        " } instead (or memory_format: AUTO, channels-last where it runs faster)"));
  }
  const GradScalerConfig& scaler = trainer.grad_scaler();
  if (!(scaler.init_scale() > 0)) {
    errors.push_back(absl::StrCat("trainer.grad_scaler.init_scale: ", scaler.init_scale(),
                                  "; must be > 0 (PyTorch's default is 65536)"));
  }
  if (!(scaler.growth_factor() > 1)) {
    errors.push_back(absl::StrCat("trainer.grad_scaler.growth_factor: ", scaler.growth_factor(),
                                  "; must be > 1 (default 2)"));
  }
  if (!(scaler.backoff_factor() > 0 && scaler.backoff_factor() < 1)) {
    errors.push_back(absl::StrCat("trainer.grad_scaler.backoff_factor: ",
                                  scaler.backoff_factor(), "; must be in (0, 1) (default 0.5)"));
  }
  at_least("grad_scaler.growth_interval", scaler.growth_interval(), 1);
  CheckRecipeOptions(trainer, errors);
}

}  // namespace

void FillDefaults(Message* message) {
  const auto* descriptor = message->GetDescriptor();
  const auto* reflection = message->GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated() || field->containing_oneof() != nullptr) continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (reflection->HasField(*message, field) &&
          field->message_type()->full_name() != "google.protobuf.Any") {
        FillDefaults(reflection->MutableMessage(message, field));
      }
      continue;
    }
    // proto3 fields without presence print anyway; and a field whose absence
    // means something (documented "Default: ..." without a value) is filled
    // by ResolveConfig itself before this runs.
    if (!field->has_presence() || reflection->HasField(*message, field)) continue;
    // A field declared without a default has none to show, and setting it
    // would change its meaning: "height and width win over size" reads
    // has_height(), and a filled-in 0 would be taken as set.
    if (!field->has_default_value()) continue;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        reflection->SetInt32(message, field, field->default_value_int32());
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        reflection->SetInt64(message, field, field->default_value_int64());
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(message, field, field->default_value_uint32());
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        reflection->SetUInt64(message, field, field->default_value_uint64());
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        reflection->SetDouble(message, field, field->default_value_double());
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        reflection->SetFloat(message, field, field->default_value_float());
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        reflection->SetBool(message, field, field->default_value_bool());
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        reflection->SetEnum(message, field, field->default_value_enum());
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(message, field, field->default_value_string());
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }
}

absl::StatusOr<PipelineConfig> ResolveConfig(const PipelineConfig& config) {
  PipelineConfig resolved = config;
  std::vector<std::string> errors;
  TrainerConfig* trainer = resolved.mutable_trainer();
  FillDefaults(trainer);
  CheckTrainer(*trainer, errors);
  // Parallel reductions split work by thread count; one thread is the
  // setting whose results never depend on the machine.
  if (trainer->deterministic() && trainer->threads() == 0) trainer->set_threads(1);
  if (trainer->threads() == 0) {
    // Processes started together on one machine share its cores
    // (LOCAL_WORLD_SIZE is set by `train`'s launcher and by torchrun).
    int local_processes = 1;
    if (const char* local = std::getenv("LOCAL_WORLD_SIZE")) local_processes = std::atoi(local);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    trainer->set_threads(std::max(1, cores / std::max(1, local_processes)));
  }

  if (!resolved.has_model()) {
    errors.push_back(absl::StrCat("model: no model given; choose one of: ",
                                  absl::StrJoin(Registry<Model>::Global().Names(), ", ")));
  } else {
    ResolvePlugin<Model>("model", resolved.mutable_model(), errors);
    if (absl::Status status = ValidateModelConfig(resolved.model()); !status.ok()) {
      errors.push_back(std::string(status.message()));
    }
  }
  if (!resolved.has_train_data()) {
    errors.push_back("train_data: missing; a run needs training data (train_data { dataset { ... } })");
  } else {
    ResolveData("train_data", true, *trainer, resolved.mutable_train_data(), errors);
  }
  if (resolved.has_validation_data()) {
    ResolveData("validation_data", false, *trainer, resolved.mutable_validation_data(), errors);
  }
  // Unnamed slots take their declared defaults (the plain choice: one
  // device, SGD, a constant rate, cross-entropy, top-1 accuracy).
  NameDefault<Strategy>("strategy", resolved.mutable_strategy(), errors);
  ResolvePlugin<Strategy>("strategy", resolved.mutable_strategy(), errors);
  NameDefault<Optimizer>("optimizer", resolved.mutable_optimizer(), errors);
  ResolvePlugin<Optimizer>("optimizer", resolved.mutable_optimizer(), errors);
  CheckParamGroups(resolved.optimizer().param_groups(), resolved.model().name(), errors);
  NameDefault<Loss>("loss", resolved.mutable_loss(), errors);
  ResolvePlugin<Loss>("loss", resolved.mutable_loss(), errors);
  if (resolved.metrics_size() == 0) NameDefault<Metric>("metrics", resolved.add_metrics(), errors);
  for (int i = 0; i < resolved.metrics_size(); ++i) {
    ResolvePlugin<Metric>(absl::StrCat("metrics[", i, "]"), resolved.mutable_metrics(i), errors);
  }
  LearningRateConfig* learning_rate = resolved.mutable_learning_rate();
  NameDefault<LearningRateSchedule>("learning_rate.schedule", learning_rate->mutable_schedule(),
                                    errors);
  ResolvePlugin<LearningRateSchedule>("learning_rate.schedule", learning_rate->mutable_schedule(),
                                      errors);
  FillDefaults(learning_rate);
  if (learning_rate->warmup_steps() < 0 || learning_rate->warmup_epochs() < 0) {
    errors.push_back("learning_rate.warmup_steps, warmup_epochs: must be >= 0");
  }
  if (learning_rate->warmup_start_factor() <= 0 || learning_rate->warmup_start_factor() > 1) {
    errors.push_back(absl::StrCat("learning_rate.warmup_start_factor: ",
                                  learning_rate->warmup_start_factor(), "; must be in (0, 1]"));
  }
  FillDefaults(resolved.mutable_checkpoint());
  if (resolved.checkpoint().every_epochs() < 0 || resolved.checkpoint().keep_last() < 0 ||
      resolved.checkpoint().every_steps() < 0) {
    errors.push_back("checkpoint.every_epochs, keep_last, every_steps: must be >= 0");
  }
  FillDefaults(&resolved);
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  }
  return resolved;
}

const google::protobuf::Message* DefaultOptionsOf(const std::string& kind,
                                                  const std::string& name) {
  if (kind == "model") return Registry<Model>::Global().DefaultOptions(name);
  if (kind == "dataset") return Registry<Dataset>::Global().DefaultOptions(name);
  if (kind == "transform") return Registry<Transform>::Global().DefaultOptions(name);
  if (kind == "sampler") return Registry<Sampler>::Global().DefaultOptions(name);
  if (kind == "strategy") return Registry<Strategy>::Global().DefaultOptions(name);
  if (kind == "optimizer") return Registry<Optimizer>::Global().DefaultOptions(name);
  if (kind == "schedule") return Registry<LearningRateSchedule>::Global().DefaultOptions(name);
  if (kind == "loss") return Registry<Loss>::Global().DefaultOptions(name);
  if (kind == "metric") return Registry<Metric>::Global().DefaultOptions(name);
  return nullptr;
}

}  // namespace pipeline
