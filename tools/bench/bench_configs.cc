#include "tools/bench/bench_configs.h"

#include <fstream>
#include <vector>

#include "absl/strings/str_join.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "tools/bench/or_die.h"

namespace pipeline {
namespace bench {

PipelineConfig LoadResolved(const std::string& path) {
  PipelineConfig config = OrDie(LoadConfigFile(path));
  return OrDie(ResolveConfig(config));
}

std::string WriteConfig(const std::string& work_dir, const std::string& name,
                        const PipelineConfig& config) {
  const std::string path = work_dir + "/" + name;
  std::ofstream(path) << ConfigToText(config);
  return path;
}

std::string TransformNames(const PipelineConfig& config) {
  std::vector<std::string> names;
  for (const PluginConfig& transform : config.train_data().transforms()) {
    names.push_back(transform.name());
  }
  return absl::StrJoin(names, " + ");
}

}  // namespace bench
}  // namespace pipeline
