#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

const Figure* EpochReport::Find(const std::string& name) const {
  for (const Figure& figure : figures) {
    if (figure.name == name) return &figure;
  }
  return nullptr;
}

double EpochReport::Value(const std::string& name) const {
  const Figure* figure = Find(name);
  return figure == nullptr ? 0.0 : figure->value;
}

}  // namespace pipeline
