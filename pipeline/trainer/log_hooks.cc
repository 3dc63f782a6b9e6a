#include "pipeline/trainer/log_hooks.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "pipeline/trainer/json_object.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

std::string Duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// The figures named `prefix`..., with the prefix taken off.
std::vector<Figure> WithPrefix(const std::vector<Figure>& figures, const std::string& prefix) {
  std::vector<Figure> selected;
  for (const Figure& figure : figures) {
    if (!absl::StartsWith(figure.name, prefix)) continue;
    selected.push_back(figure);
    selected.back().name = figure.name.substr(prefix.size());
  }
  return selected;
}

double ImagesPerSecond(const EpochReport& epoch) {
  return epoch.images / std::max(epoch.seconds, 1e-9);
}

}  // namespace

std::string FormatFigure(const Figure& figure) {
  return figure.higher_is_better ? absl::StrFormat("%.2f%%", 100.0 * figure.value)
                                 : absl::StrFormat("%.4f", figure.value);
}

std::string FiguresText(const std::vector<Figure>& figures, const std::string& prefix) {
  std::vector<std::string> parts;
  for (const Figure& figure : figures) {
    if (figure.on_epoch_line) parts.push_back(prefix + figure.name + " " + FormatFigure(figure));
  }
  return absl::StrJoin(parts, " ");
}

absl::Status ProgressHook::OnStepEnd(TrainContext& context, const StepReport& step) {
  if (step.window.empty()) return absl::OkStatus();
  const TrainPosition& at = context.position;
  context.progress.Line(
      absl::StrFormat("epoch %d/%d step %d/%d %s %.1f img/s lr %.3g eta %s", at.epoch + 1,
                      at.epochs, at.epoch_step, at.steps_per_epoch, FiguresText(step.window),
                      step.images_per_sec, at.learning_rate, Duration(step.eta_seconds)),
      /*transient=*/true, static_cast<double>(at.epoch_step) / at.steps_per_epoch);
  return absl::OkStatus();
}

absl::Status ProgressHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  std::string validation;
  if (epoch.validated) {
    validation = absl::StrFormat(" %s (%d samples)",
                                 FiguresText(WithPrefix(epoch.figures, "val_"), "val_"),
                                 epoch.validation_samples);
  }
  context.progress.Line(absl::StrFormat(
      "epoch %d/%d done in %s: %s%s, %.1f img/s", epoch.epoch, context.position.epochs,
      Duration(epoch.seconds), FiguresText(WithPrefix(epoch.figures, "train_")), validation,
      ImagesPerSecond(epoch)));
  return absl::OkStatus();
}

absl::Status ProgressHook::OnRunEnd(TrainContext& context, TrainSummary& summary) {
  if (summary.skipped_steps == 0) return absl::OkStatus();
  context.progress.Line(absl::StrCat(
      "train: ", summary.skipped_steps, " of ", summary.steps,
      " optimizer steps skipped for non-finite values (",
      context.scaler() != nullptr ? "loss scale too large for them, or " : "",
      "trainer.on_nonfinite: SKIP_STEP)"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<JsonEventsHook>> JsonEventsHook::Create(
    const std::string& output_dir) {
  auto hook = std::unique_ptr<JsonEventsHook>(
      new JsonEventsHook((std::filesystem::path(output_dir) / "metrics.jsonl").string()));
  // A start after a torn last line (a full disk, a killed run) begins a
  // line of its own, or its first line would be lost with the fragment.
  bool torn = false;
  if (std::ifstream existing(hook->path_, std::ios::binary | std::ios::ate);
      existing && existing.tellg() > 0) {
    existing.seekg(-1, std::ios::end);
    torn = existing.get() != '\n';
  }
  hook->file_.open(hook->path_, std::ios::app);
  if (torn) hook->file_ << "\n" << std::flush;
  RETURN_IF_ERROR(StreamWriteStatus(hook->file_, hook->path_));
  return hook;
}

absl::Status JsonEventsHook::Emit(TrainContext& context, const std::string& line) {
  if (context.events != nullptr) *context.events << line << "\n" << std::flush;
  if (!file_.is_open()) return absl::OkStatus();
  file_ << line << "\n" << std::flush;
  return context.write_errors.Log(StreamWriteStatus(file_, path_), path_);
}

absl::Status JsonEventsHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  JsonObject event;
  event.Add("event", "epoch").Add("epoch", epoch.epoch).Add("step", context.position.step);
  for (const Figure& figure : epoch.figures) event.Add(figure.name, figure.value);
  event.Add("validated", epoch.validated)
      .Add("lr", context.position.learning_rate)
      .Add("seconds", epoch.seconds);
  if (context.stop_after_epoch) event.Add("stopped_early", true);
  return Emit(context, event.ToString());
}

absl::Status JsonEventsHook::OnRunEnd(TrainContext& context, TrainSummary& summary) {
  JsonObject event;
  event.Add("event", "summary").Add("images_per_sec", summary.images_per_sec);
  for (const auto& [name, value] : summary.figures) event.Add(name, value);
  event.Add("epochs", summary.epochs)
      .Add("steps", summary.steps)
      .Add("wall_s", summary.wall_seconds)
      .Add("skipped_steps", summary.skipped_steps)
      .Add("skipped_samples", summary.skipped_samples);
  return Emit(context, event.ToString());
}

absl::Status TensorBoardHook::OnStepEnd(TrainContext& context, const StepReport& step) {
  if (step.window.empty()) return absl::OkStatus();
  Scalars scalars;
  for (const Figure& figure : step.window) scalars.push_back({"train/" + figure.name, figure.value});
  scalars.push_back({"train/learning_rate", context.position.learning_rate});
  scalars.push_back({"train/images_per_sec", step.images_per_sec});
  return context.write_errors.Log(writer_->Write(context.position.step, scalars),
                                  writer_->path());
}

absl::Status TensorBoardHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  Scalars scalars;
  for (const Figure& figure : WithPrefix(epoch.figures, "train_")) {
    scalars.push_back({"epoch/train_" + figure.name, figure.value});
  }
  scalars.push_back({"epoch/images_per_sec", ImagesPerSecond(epoch)});
  if (epoch.validated) {
    for (const Figure& figure : WithPrefix(epoch.figures, "val_")) {
      scalars.push_back({"validation/" + figure.name, figure.value});
    }
  }
  return context.write_errors.Log(writer_->Write(context.position.step, scalars),
                                  writer_->path());
}

absl::Status CurvesHook::OnRunStart(TrainContext& context) {
  if (resumed_epochs_ > 0) {
    points_ = EpochPointsOf((context.output_dir / "metrics.jsonl").string(), resumed_epochs_);
  }
  return absl::OkStatus();
}

absl::Status CurvesHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  EpochPoint point{epoch.epoch, epoch.Value("train_loss"), epoch.Value("train_acc")};
  if (epoch.validated) {
    point.val_loss = epoch.Value("val_loss");
    point.val_accuracy = epoch.Value("val_acc");
  }
  points_.push_back(point);
  const std::string path = (context.output_dir / "curves.svg").string();
  const PipelineConfig& config = context.config();
  return context.write_errors.Log(
      WriteCurvesSvg(path, points_,
                     absl::StrCat(config.model().name(), " on ",
                                  config.train_data().dataset().name())),
      path);
}

std::vector<EpochPoint> EpochPointsOf(const std::string& metrics_path, int64_t completed_epochs) {
  std::map<int64_t, EpochPoint> points;
  std::ifstream file(metrics_path);
  for (std::string line; std::getline(file, line);) {
    google::protobuf::Struct event;
    // A torn last line (a full disk, a killed run) is passed over.
    if (!google::protobuf::util::JsonStringToMessage(line, &event).ok()) continue;
    const auto& fields = event.fields();
    auto number = [&](const char* name) {
      auto it = fields.find(name);
      return it == fields.end() ? 0.0 : it->second.number_value();
    };
    auto it = fields.find("event");
    if (it == fields.end() || it->second.string_value() != "epoch") continue;
    EpochPoint point{static_cast<int64_t>(number("epoch")), number("train_loss"),
                     number("train_acc")};
    if (point.epoch < 1 || point.epoch > completed_epochs) continue;
    auto validated = fields.find("validated");
    if (validated != fields.end() && validated->second.bool_value()) {
      point.val_loss = number("val_loss");
      point.val_accuracy = number("val_acc");
    }
    points[point.epoch] = point;
  }
  std::vector<EpochPoint> result;
  for (const auto& [epoch, point] : points) result.push_back(point);
  return result;
}

}  // namespace pipeline
