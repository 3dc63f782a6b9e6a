// train: runs one training job from a textproto config.
//
//   bazel run //tools:train -- --config=configs/single.textproto
//   bazel run //tools:train -- --config=single --set=trainer.epochs=1 --dry_run
//   bazel run //tools:train -- --list_plugins
//   bazel run //tools:train -- --plugin_library=path/to/libmy_plugin.so --config=...
//
// Exit status: 0 done, 2 the config or the data is wrong (the message says
// what to fix), 1 training failed, 128 + N stopped by signal N (130 SIGINT,
// 143 SIGTERM).

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/registry/plugin_library.h"
#include "pipeline/registry/registry.h"
#include "pipeline/trainer/run_info.h"
#include "pipeline/trainer/run_setup.h"
#include "pipeline/trainer/trainer.h"
#include "pipeline/launch/elastic_launch.h"
#include "pipeline/launch/elastic_rendezvous.h"
#include "pipeline/launch/launcher.h"

DEFINE_string(config, "",
              "The run's config: a path, or a bare name looked up in configs/ "
              "(e.g. --config=single)");
DEFINE_bool(dry_run, false,
            "Validate the config, build every plugin (and, under ddp, every worker and the "
            "process group) and check the data; train nothing");
DEFINE_string(resume, "",
              "Continue a run: \"auto\" = from the latest good checkpoint in output_dir (a "
              "fresh start when there is none), or a checkpoint's path");
DEFINE_bool(print_config, false, "Print the resolved config (every default filled in) and exit");
DEFINE_bool(list_plugins, false, "List every registered plugin with its options and exit");
DEFINE_int64(profile_steps, 0,
             "Time the first N training steps by phase (data wait, forward+backward, optimizer "
             "step) and print the breakdown, one line per rank");
DEFINE_int32(nproc_per_node, 0,
             "Multi-process strategies: worker processes to start on this machine "
             "(0 = the strategy's nproc_per_node option)");
DEFINE_string(nnodes, "1",
              "Multi-process strategies: machines taking part: a count (each with its "
              "--node_rank), or MIN:MAX for an elastic job whose nodes meet at --master_addr "
              "and go on with fewer (at least MIN) when one is lost");
DEFINE_int32(node_rank, 0,
             "Multi-process strategies: this machine's index, 0..nnodes-1 (not with MIN:MAX, "
             "where the rendezvous numbers the nodes)");
DEFINE_string(master_addr, "127.0.0.1",
              "Multi-process strategies: address of the machine with node_rank 0");
DEFINE_int32(master_port, 0,
             "Multi-process strategies: rendezvous port on master_addr (0 = a free port, "
             "single machine only)");
DEFINE_int32(rdzv_last_call_timeout, 30,
             "Elastic jobs (--nnodes=MIN:MAX): once MIN nodes have joined a rendezvous round, "
             "seconds it waits after the latest join for more, up to MAX");
DEFINE_int32(rdzv_join_timeout, 600,
             "Elastic jobs: seconds a node waits for its rendezvous round to form");

namespace pipeline {
namespace {

constexpr char kUsage[] =
    "Trains an image classifier as a config file says.\n"
    "  train --config=<file> [--set=field.path=value ...] [--dry_run] [--print_config]\n"
    "  train --list_plugins\n"
    "--set may be repeated; e.g. --set=trainer.epochs=3 --set=model.options.depth=34\n"
    "--plugin_library=<lib.so> (repeatable, before the other flags take effect) loads plugins\n"
    "built as shared libraries (pipeline_plugin_library in plugins/plugin.bzl)";

// --set and --plugin_library may be given many times, which gflags does not
// support for one flag: take them out of argv before gflags sees it.
std::vector<std::string> TakeRepeatedFlag(const std::string& name, int& argc, char** argv) {
  std::vector<std::string> sets;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--" + name + "=") || absl::StartsWith(arg, "-" + name + "=")) {
      sets.push_back(arg.substr(arg.find('=') + 1));
    } else if ((arg == "--" + name || arg == "-" + name) && i + 1 < argc) {
      sets.push_back(argv[++i]);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return sets;
}

void ListPlugins() {
  std::string kind;
  for (const PluginInfo& info : RegistryIndex::Global().ListAll()) {
    if (info.kind != kind) {
      kind = info.kind;
      std::cout << kind << "s:\n";
    }
    std::cout << "  " << info.name << " — " << info.description << "\n"
              << "    options: [type.googleapis.com/" << info.options_type << "]\n"
              << info.default_options;
  }
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The first SIGINT or SIGTERM of a run with checkpoint.checkpoint_on_signal;
// the trainer stops after the step it is in.
std::atomic<int> g_stop_signal{0};
bool g_checkpoint_on_signal = false;

void WriteToStderr(const char* text) {
  // Only async-signal-safe calls from here on: write(2), strlen, _exit(2).
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void OnStopSignal(int signal) {
  const char* name = signal == SIGINT ? "SIGINT (Interrupt)" : "SIGTERM (Terminated)";
  int none = 0;
  if (g_checkpoint_on_signal && g_stop_signal.compare_exchange_strong(none, signal)) {
    WriteToStderr("train: ");
    WriteToStderr(name);
    WriteToStderr(": finishing this step and writing a checkpoint; send it again to stop at once\n");
    return;
  }
  // Checkpoints are written to a temporary file and renamed, so stopping
  // here never leaves a partial one.
  WriteToStderr("error: stopped by ");
  WriteToStderr(name);
  WriteToStderr("\n");
  ::_exit(128 + signal);
}

void InstallStopSignalHandlers(bool checkpoint_on_signal) {
  g_checkpoint_on_signal = checkpoint_on_signal;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  // Interrupted reads and waits carry on; the trainer looks at the flag
  // between steps.
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

int Fail(int code, const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return code;
}

// What the launcher needs of the configured strategy, as its StrategyTraits
// declare: a strategy with processes_per_node runs one process per replica,
// which train starts itself (processes > 0); one without runs here (0).
struct StrategyLaunch {
  int processes = 0;
  int max_restarts = 0;
};

StrategyLaunch LaunchOf(const PipelineConfig& config) {
  StrategyLaunch launch;
  const Registry<Strategy>& strategies = Registry<Strategy>::Global();
  const StrategyTraits& traits = strategies.TraitsOf(config.strategy().name());
  // The config is resolved: its strategy's options unpack and validate.
  auto options = strategies.ResolveOptions(config.strategy());
  if (!options.ok()) return launch;
  if (traits.processes_per_node) launch.processes = traits.processes_per_node(**options);
  if (traits.max_restarts) launch.max_restarts = traits.max_restarts(**options);
  return launch;
}

// Whether a launcher (this one, torchrun, srun, mpirun) already made this
// process one rank of a group.
// The rank a launcher gave this process, or "" when none did.
std::string LaunchedRank() {
  for (const char* name : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    if (!EnvOr(name, "").empty()) return EnvOr(name, "");
  }
  return "";
}

bool IsWorker() { return !LaunchedRank().empty(); }

// --nnodes, checked with the flags that go with it.
absl::StatusOr<NodeRange> NodesOfFlags() {
  auto nodes = ParseNodeRange(FLAGS_nnodes);
  if (!nodes.ok()) return nodes.status();
  if (nodes->elastic && FLAGS_master_port == 0) {
    return absl::InvalidArgumentError(
        "--nnodes=" + FLAGS_nnodes + ": the nodes of an elastic job meet at --master_addr:"
        "--master_port; set --master_port (the same on every node)");
  }
  if (nodes->elastic && FLAGS_node_rank != 0) {
    return absl::InvalidArgumentError(
        "--node_rank: an elastic job (--nnodes=" + FLAGS_nnodes + ") numbers its nodes as they "
        "join; leave --node_rank out");
  }
  if (!nodes->elastic && (FLAGS_node_rank < 0 || FLAGS_node_rank >= nodes->max)) {
    return absl::InvalidArgumentError(absl::StrCat("--node_rank=", FLAGS_node_rank,
                                                   ": must be 0..", nodes->max - 1,
                                                   " with --nnodes=", nodes->max));
  }
  for (const auto& [flag, seconds] : {std::pair{"rdzv_last_call_timeout",
                                                FLAGS_rdzv_last_call_timeout},
                                      std::pair{"rdzv_join_timeout", FLAGS_rdzv_join_timeout}}) {
    if (seconds < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", seconds, ": seconds, 0 or more"));
    }
  }
  return *nodes;
}

RendezvousOptions ElasticRendezvousOptions(const NodeRange& nodes, int nproc_per_node,
                                           const PipelineConfig& config) {
  RendezvousOptions options;
  options.host = FLAGS_master_addr;
  options.port = FLAGS_master_port;
  options.nodes = nodes;
  options.nproc_per_node = nproc_per_node;
  options.config_text = SharedConfigText(config);
  options.last_call = std::chrono::seconds(FLAGS_rdzv_last_call_timeout);
  options.join_timeout = std::chrono::seconds(FLAGS_rdzv_join_timeout);
  return options;
}

// Where a bare --config name (--config=single) is looked up in configs/:
// the workspace `bazel run` names; else the workspace the current folder
// is in (bazel-bin/tools/train started from the repository); else the
// configs the binary was built with (its runfiles), from any folder.
std::string ConfigSearchRoot() {
  const std::string bazel_run = EnvOr("BUILD_WORKSPACE_DIRECTORY", "");
  if (!bazel_run.empty()) return bazel_run;
  std::error_code error;
  auto is_workspace = [&error](const std::filesystem::path& dir) {
    return (std::filesystem::is_regular_file(dir / "WORKSPACE", error) ||
            std::filesystem::is_regular_file(dir / "WORKSPACE.bazel", error)) &&
           std::filesystem::is_directory(dir / "configs", error);
  };
  for (std::filesystem::path dir = std::filesystem::current_path(error); !dir.empty();
       dir = dir.parent_path()) {
    if (is_workspace(dir)) return dir.string();
    if (dir == dir.root_path()) break;
  }
  // <binary>.runfiles/<workspace name>/configs, or the runfiles of the test
  // or tool that started this binary.
  const std::filesystem::path executable = std::filesystem::canonical("/proc/self/exe", error);
  for (const std::string& runfiles :
       {error ? std::string() : executable.string() + ".runfiles", EnvOr("RUNFILES_DIR", "")}) {
    if (runfiles.empty() || !std::filesystem::is_directory(runfiles, error)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(runfiles, error)) {
      if (std::filesystem::is_directory(entry.path() / "configs", error)) {
        return entry.path().string();
      }
    }
  }
  return "";
}

int Main(int argc, char** argv) {
  const std::vector<std::string> original_arguments(argv, argv + argc);
  std::vector<std::string> sets = TakeRepeatedFlag("set", argc, argv);
  const std::vector<std::string> libraries = TakeRepeatedFlag("plugin_library", argc, argv);
  gflags::SetUsageMessage(kUsage);
  gflags::SetVersionString(VersionText());
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // `bazel run` starts the binary in its runfiles; the user's relative paths
  // (config, data, output_dir, plugin libraries) mean the folder bazel was
  // called from.
  const std::string working_dir = EnvOr("BUILD_WORKING_DIRECTORY", "");
  if (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0) {
    return Fail(1, absl::InternalError("cannot enter " + working_dir));
  }
  // Plugin libraries first: everything after, --list_plugins included,
  // sees their plugins as if they were linked in.
  if (absl::Status status = LoadPluginLibraries(libraries); !status.ok()) return Fail(2, status);
  if (FLAGS_list_plugins) {
    ListPlugins();
    return 0;
  }
  if (argc > 1) {
    return Fail(2, absl::InvalidArgumentError(
                       absl::StrCat("unexpected argument \"", argv[1], "\"; see --help")));
  }
  auto nodes = NodesOfFlags();
  if (!nodes.ok()) return Fail(2, nodes.status());
  auto path = ResolveConfigPath(FLAGS_config, ".", ConfigSearchRoot());
  if (!path.ok()) return Fail(2, path.status());
  // The config's own plugin_libraries must be loaded before the config can
  // be read properly: their plugins' option types are unknown until then.
  auto config_libraries = ReadPluginLibraries(*path);
  if (!config_libraries.ok()) return Fail(2, config_libraries.status());
  if (absl::Status status = LoadPluginLibraries(*config_libraries); !status.ok()) {
    return Fail(2, absl::Status(status.code(), absl::StrCat(*path, ": plugin_libraries: ",
                                                            status.message())));
  }
  auto config = LoadConfigFile(*path);
  if (!config.ok()) return Fail(2, config.status());
  // The resolved config (config.textproto in output_dir) records every
  // library the run used, so it can be run again as it is.
  for (const std::string& library : libraries) {
    if (std::find(config->plugin_libraries().begin(), config->plugin_libraries().end(),
                  library) == config->plugin_libraries().end()) {
      config->add_plugin_libraries(library);
    }
  }
  for (const std::string& set : sets) {
    if (absl::Status status = ApplyOverride(set, DefaultOptionsOf, &*config); !status.ok()) {
      return Fail(2, status);
    }
  }
  // A library added with --set=plugin_libraries=...; the others are loaded.
  if (absl::Status status = LoadPluginLibraries(
          {config->plugin_libraries().begin(), config->plugin_libraries().end()});
      !status.ok()) {
    return Fail(2, status);
  }
  auto resolved = ResolveConfig(*config);
  if (!resolved.ok()) {
    return Fail(2, absl::InvalidArgumentError(
                       absl::StrCat(*path, " is not a valid config:\n", resolved.status().message())));
  }
  if (FLAGS_print_config) {
    std::cout << ConfigToText(*resolved);
    return 0;
  }
  const StrategyLaunch strategy_launch = LaunchOf(*resolved);
  const int processes =
      FLAGS_nproc_per_node > 0 ? FLAGS_nproc_per_node : strategy_launch.processes;
  // A dry run of a multi-process strategy launches its workers too: each
  // forms the process group and checks its shard of the data, so the dry
  // run tests what the real one would do.
  if (processes > 0 && !IsWorker()) {
    LaunchOptions launch;
    launch.nproc_per_node = processes;
    launch.nnodes = nodes->max;
    launch.node_rank = FLAGS_node_rank;
    launch.master_addr = FLAGS_master_addr;
    launch.master_port = FLAGS_master_port;
    launch.command = original_arguments;
    launch.command[0] = "/proc/self/exe";
    // Workers finishing a step and writing a checkpoint get longer before
    // the launcher kills them.
    if (resolved->checkpoint().checkpoint_on_signal()) launch.stop_grace_seconds = 120;
    const absl::Status launched =
        nodes->elastic
            ? LaunchElastic(ElasticRendezvousOptions(*nodes, processes, *resolved), launch,
                            strategy_launch.max_restarts)
            : LaunchWithRestarts(launch, strategy_launch.max_restarts);
    if (!launched.ok()) {
      if (launched.code() == absl::StatusCode::kCancelled && LauncherStopSignal() != 0) {
        return Fail(128 + LauncherStopSignal(), launched);
      }
      return Fail(launched.code() == absl::StatusCode::kInvalidArgument ? 2 : 1, launched);
    }
    return 0;
  }
  const bool primary = LaunchedRank().empty() || LaunchedRank() == "0";
  // One line, not the ~100 of the resolved config: that is in output_dir
  // (and behind --print_config); the trainer's next line gives the model,
  // the data and the strategy.
  if (primary) {
    std::cerr << "config " << *path << "; "
              << (FLAGS_dry_run ? "a dry run; --print_config prints it resolved"
                                : absl::StrCat("the resolved config (every default filled in) "
                                               "is saved as ",
                                               (std::filesystem::path(resolved->output_dir()) /
                                                "config.textproto")
                                                   .string(),
                                               "; --print_config prints it"))
              << "\n";
  }
  RunOptions options;
  options.dry_run = FLAGS_dry_run;
  options.profile_steps = FLAGS_profile_steps;
  options.resume = FLAGS_resume;
  options.log = &std::cerr;
  options.events = &std::cout;
  options.command_line = original_arguments;
  options.source_dir = std::filesystem::path(*path).parent_path().string();
  options.stop_signal = &g_stop_signal;
  InstallStopSignalHandlers(resolved->checkpoint().checkpoint_on_signal());
  auto summary = Train(*resolved, options);
  if (!summary.ok()) {
    if (summary.status().code() == absl::StatusCode::kCancelled) {
      // A rank stopped by another rank's signal ends as if it had got it.
      const int signal = g_stop_signal.load();
      return Fail(128 + (signal != 0 ? signal : SIGTERM), summary.status());
    }
    const bool input_error = summary.status().code() == absl::StatusCode::kInvalidArgument ||
                             summary.status().code() == absl::StatusCode::kNotFound ||
                             summary.status().code() == absl::StatusCode::kFailedPrecondition ||
                             summary.status().code() == absl::StatusCode::kDataLoss ||
                             // An image format the decoder does not take, a
                             // file the run may not read.
                             summary.status().code() == absl::StatusCode::kUnimplemented ||
                             summary.status().code() == absl::StatusCode::kPermissionDenied;
    return Fail(input_error ? 2 : 1, summary.status());
  }
  return 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) { return pipeline::Main(argc, argv); }
